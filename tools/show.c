// SPDX-License-Identifier: MIT
#include "show.h"

#include "ibenum.h"

#include <arpa/inet.h>
#include <endian.h>
#include <inttypes.h>
#include <string.h>

const char *show_gid(const void *gid, char buf[GID_STRLEN])
{
	if (!inet_ntop(AF_INET6, gid, buf, GID_STRLEN))
		strcpy(buf, "?");
	return buf;
}

const char *show_state(uint8_t state)
{
	static const char *const names[] = {
		[IBRES_STATE_INIT] = "init",	     [IBRES_STATE_QUERYING] = "querying",
		[IBRES_STATE_RESOLVED] = "resolved", [IBRES_STATE_ROUTED] = "routed",
		[IBRES_STATE_NEGATIVE] = "negative",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

const char *show_origin(uint8_t origin)
{
	static const char *const names[] = {
		[IBRES_ORIGIN_LOCAL] = "local",
		[IBRES_ORIGIN_STATIC] = "static",
		[IBRES_ORIGIN_FABRIC] = "fabric",
	};

	return origin < sizeof(names) / sizeof(names[0]) ? names[origin] : "?";
}

const char *show_keytype(uint8_t type)
{
	static const char *const names[] = {
		[IBRES_KEY_NAME] = "name", [IBRES_KEY_IPV4] = "ipv4", [IBRES_KEY_IPV6] = "ipv6",
		[IBRES_KEY_GID] = "gid",   [IBRES_KEY_LID] = "lid",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] ? names[type] : "?";
}

static const char *const path_flag_names[] = {
	"gmp", "primary", "alternate", "outbound", "inbound", "inbound-reverse",
};

const char *show_path_flags(uint32_t flags, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(path_flag_names) / sizeof(path_flag_names[0]); i++) {
		if (!(flags & (1u << i)) || off >= len)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? " " : "",
					path_flag_names[i]);
	}
	return buf;
}

void show_host_text(FILE *f, const struct ibres_hostrec *h, const char *indent)
{
	char b[GID_STRLEN];
	unsigned i;

	fprintf(f, "%s\n", h->names[0]);
	for (i = 1; i < h->n_names; i++)
		fprintf(f, "%salias    %s\n", indent, h->names[i]);
	for (i = 0; i < h->n_v4; i++)
		fprintf(f, "%sipv4     %s\n", indent, inet_ntop(AF_INET, &h->v4[i], b, sizeof(b)));
	for (i = 0; i < h->n_v6; i++)
		fprintf(f, "%sipv6     %s\n", indent, inet_ntop(AF_INET6, &h->v6[i], b, sizeof(b)));
	for (i = 0; i < h->n_gids; i++)
		fprintf(f, "%sgid      %s\n", indent, show_gid(h->gids[i], b));
	fprintf(f, "%slid      %u\n", indent, h->lid);
	fprintf(f, "%sqpn      0x%x\n", indent, h->qpn);
	fprintf(f, "%spkey     0x%04x\n", indent, h->pkey);
	if (h->ttl == UINT32_MAX)
		fprintf(f, "%sttl      never expires\n", indent);
	else if (h->ttl)
		fprintf(f, "%sttl      %u s\n", indent, h->ttl);
	else
		fprintf(f, "%sttl      unknown\n", indent);
}

void show_host_json(struct json *j, const struct ibres_hostrec *h)
{
	char b[GID_STRLEN];
	unsigned i;

	json_str(j, "name", h->names[0]);
	json_arr_begin(j, "aliases");
	for (i = 1; i < h->n_names; i++)
		json_str(j, NULL, h->names[i]);
	json_arr_end(j);
	json_arr_begin(j, "ipv4");
	for (i = 0; i < h->n_v4; i++)
		json_str(j, NULL, inet_ntop(AF_INET, &h->v4[i], b, sizeof(b)));
	json_arr_end(j);
	json_arr_begin(j, "ipv6");
	for (i = 0; i < h->n_v6; i++)
		json_str(j, NULL, inet_ntop(AF_INET6, &h->v6[i], b, sizeof(b)));
	json_arr_end(j);
	json_arr_begin(j, "gids");
	for (i = 0; i < h->n_gids; i++)
		json_str(j, NULL, show_gid(h->gids[i], b));
	json_arr_end(j);
	json_u64(j, "lid", h->lid);
	json_u64(j, "qpn", h->qpn);
	json_u64(j, "pkey", h->pkey);
	json_u64(j, "ttl", h->ttl);
}

/* The decoded fields of a path record, in wire order. */
struct path_fields {
	uint64_t service_id;
	uint16_t dlid, slid, pkey, qos_class;
	uint32_t flow_label;
	uint8_t hop_limit, tclass, reversible, numpath, sl, preference;
	uint8_t mtu_sel, mtu, rate_sel, rate, life_sel, life;
};

static void decode_path(const struct ibres_path_record *p, struct path_fields *d)
{
	uint32_t fl = be32toh(p->flowlabel_hoplimit);
	uint16_t qs = be16toh(p->qosclass_sl);

	d->service_id = be64toh(p->service_id);
	d->dlid = be16toh(p->dlid);
	d->slid = be16toh(p->slid);
	d->flow_label = (fl >> 8) & 0xfffff;
	d->hop_limit = fl & 0xff;
	d->tclass = p->tclass;
	d->reversible = p->reversible_numpath >> 7;
	d->numpath = p->reversible_numpath & 0x7f;
	d->pkey = be16toh(p->pkey);
	d->qos_class = qs >> 4;
	d->sl = qs & 0xf;
	d->mtu_sel = p->mtu >> 6;
	d->mtu = p->mtu & 0x3f;
	d->rate_sel = p->rate >> 6;
	d->rate = p->rate & 0x3f;
	d->life_sel = p->packetlifetime >> 6;
	d->life = p->packetlifetime & 0x3f;
	d->preference = p->preference;
}

void show_path_text(FILE *f, uint32_t flags, const struct ibres_path_record *p, const char *indent)
{
	struct path_fields d;
	char b[GID_STRLEN], fb[96];

	decode_path(p, &d);
	fprintf(f, "%sflags            0x%x (%s)\n", indent, flags,
		show_path_flags(flags, fb, sizeof(fb)));
	fprintf(f, "%sservice_id       0x%016" PRIx64 "\n", indent, d.service_id);
	fprintf(f, "%sdgid             %s\n", indent, show_gid(p->dgid, b));
	fprintf(f, "%ssgid             %s\n", indent, show_gid(p->sgid, b));
	fprintf(f, "%sdlid             %u\n", indent, d.dlid);
	fprintf(f, "%sslid             %u\n", indent, d.slid);
	fprintf(f, "%sflow_label       0x%x\n", indent, d.flow_label);
	fprintf(f, "%shop_limit        %u\n", indent, d.hop_limit);
	fprintf(f, "%stclass           %u\n", indent, d.tclass);
	fprintf(f, "%sreversible       %u\n", indent, d.reversible);
	fprintf(f, "%snumpath          %u\n", indent, d.numpath);
	fprintf(f, "%spkey             0x%04x\n", indent, d.pkey);
	fprintf(f, "%sqos_class        %u\n", indent, d.qos_class);
	fprintf(f, "%ssl               %u\n", indent, d.sl);
	fprintf(f, "%smtu              %u (%u bytes), selector %u\n", indent, d.mtu,
		ib_mtu_to_bytes(d.mtu), d.mtu_sel);
	fprintf(f, "%srate             %u (%s Gb/s), selector %u\n", indent, d.rate,
		ib_rate_to_gbps(d.rate), d.rate_sel);
	fprintf(f, "%spacket_lifetime  %u, selector %u\n", indent, d.life, d.life_sel);
	fprintf(f, "%spreference       %u\n", indent, d.preference);
}

void show_path_json(struct json *j, const char *key, uint32_t flags,
		    const struct ibres_path_record *p)
{
	struct path_fields d;
	char b[GID_STRLEN];
	size_t i;

	decode_path(p, &d);
	json_obj_begin(j, key);
	json_u64(j, "flags", flags);
	json_arr_begin(j, "flag_names");
	for (i = 0; i < sizeof(path_flag_names) / sizeof(path_flag_names[0]); i++)
		if (flags & (1u << i))
			json_str(j, NULL, path_flag_names[i]);
	json_arr_end(j);
	snprintf(b, sizeof(b), "0x%016" PRIx64, d.service_id);
	json_str(j, "service_id", b);
	json_str(j, "dgid", show_gid(p->dgid, b));
	json_str(j, "sgid", show_gid(p->sgid, b));
	json_u64(j, "dlid", d.dlid);
	json_u64(j, "slid", d.slid);
	json_u64(j, "flow_label", d.flow_label);
	json_u64(j, "hop_limit", d.hop_limit);
	json_u64(j, "tclass", d.tclass);
	json_bool(j, "reversible", d.reversible);
	json_u64(j, "numpath", d.numpath);
	json_u64(j, "pkey", d.pkey);
	json_u64(j, "qos_class", d.qos_class);
	json_u64(j, "sl", d.sl);
	json_u64(j, "mtu_selector", d.mtu_sel);
	json_u64(j, "mtu", d.mtu);
	json_u64(j, "mtu_bytes", ib_mtu_to_bytes(d.mtu));
	json_u64(j, "rate_selector", d.rate_sel);
	json_u64(j, "rate", d.rate);
	json_str(j, "rate_gbps", ib_rate_to_gbps(d.rate));
	json_u64(j, "packet_lifetime_selector", d.life_sel);
	json_u64(j, "packet_lifetime", d.life);
	json_u64(j, "preference", d.preference);
	json_obj_end(j);
}
