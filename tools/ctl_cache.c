// SPDX-License-Identifier: MIT
/*
 * ibresctl cache: list the daemon's cache a page at a time (CACHE_LIST), or
 * flush it, or one key of it (CACHE_FLUSH). See ibresctl(1).
 */
#include "ctl.h"

#include <errno.h>
#include <string.h>

#include "hostrec.h"
#include "show.h"
#include "tlv.h"

/* ---- cache -------------------------------------------------------------- */

struct cache_row {
	uint8_t keytype, state, origin;
	char key[IBRES_NAME_MAX + 1];
	uint32_t ttl;
	bool has_host, has_path;
	struct ibres_hostrec host;
	struct ibres_path_record path;
};

static int parse_row(const struct tlv_item *nest, struct cache_row *row)
{
	struct tlv_reader r;
	struct tlv_item it;
	int ret;

	memset(row, 0, sizeof(*row));
	tlv_reader_init(&r, nest->value, nest->length);
	while ((ret = tlv_next(&r, &it)) > 0) {
		switch (it.type) {
		case IBRES_T_KEYTYPE:
			ret = tlv_get_u8(&it, &row->keytype);
			break;
		case IBRES_T_KEY:
			ret = tlv_get_str(&it, row->key, sizeof(row->key));
			break;
		case IBRES_T_STATE:
			ret = tlv_get_u8(&it, &row->state);
			break;
		case IBRES_T_ORIGIN:
			ret = tlv_get_u8(&it, &row->origin);
			break;
		case IBRES_T_TTL:
			ret = tlv_get_u32(&it, &row->ttl);
			break;
		case IBRES_T_NAME:
			row->has_host = true;
			break;
		case IBRES_T_PATH:
			if (it.length != sizeof(row->path))
				return -EBADMSG;
			memcpy(&row->path, it.value, sizeof(row->path));
			row->has_path = true;
			break;
		}
		if (ret < 0)
			return -EBADMSG;
	}
	if (ret < 0)
		return -EBADMSG;
	/* the host items are the entry's own TTL item too: decode, then keep the entry's */
	if (row->has_host && hostrec_decode(nest->value, nest->length, &row->host))
		return -EBADMSG;
	return 0;
}

static void show_row(struct ctl *c, const struct cache_row *row)
{
	char ttl[16], gid[GID_STRLEN];

	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_str(&c->j, "key_type", show_keytype(row->keytype));
		json_str(&c->j, "key", row->key);
		json_str(&c->j, "state", show_state(row->state));
		json_str(&c->j, "origin", show_origin(row->origin));
		if (row->ttl == UINT32_MAX)
			json_null(&c->j, "ttl");
		else
			json_u64(&c->j, "ttl", row->ttl);
		if (row->has_host) {
			json_obj_begin(&c->j, "host");
			show_host_json(&c->j, &row->host);
			json_obj_end(&c->j);
		}
		if (row->has_path)
			show_path_json(&c->j, "path", IBRES_PATH_FLAGS_ACM, &row->path);
		json_obj_end(&c->j);
		return;
	}
	if (row->ttl == UINT32_MAX)
		strcpy(ttl, "never");
	else
		snprintf(ttl, sizeof(ttl), "%us", row->ttl);
	printf("%-5s %-28s %-9s %-7s %-7s %-16s %s\n", show_keytype(row->keytype), row->key,
	       show_state(row->state), show_origin(row->origin), ttl,
	       row->has_host ? row->host.names[0] : "-",
	       row->has_host && row->host.n_gids ? show_gid(row->host.gids[0], gid) : "-");
}

static void cache_list_begin(struct ctl *c)
{
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_arr_begin(&c->j, "entries");
	} else {
		printf("%-5s %-28s %-9s %-7s %-7s %-16s %s\n", "TYPE", "KEY", "STATE", "ORIGIN",
		       "TTL", "HOST", "GID");
	}
}

/* @withheld: the daemon left negative answers and queries in flight out (not root). */
static void cache_list_end(struct ctl *c, uint64_t count, bool withheld)
{
	if (c->json) {
		json_arr_end(&c->j);
		json_u64(&c->j, "count", count);
		json_bool(&c->j, "withheld", withheld);
		json_obj_end(&c->j);
		json_end(&c->j);
	} else if (withheld) {
		printf("negative entries and queries in flight: shown to root only\n");
	}
}

static int cache_list(struct ctl *c)
{
	static struct cache_row row; /* large */
	const uint8_t *body;
	struct tlv_reader r;
	struct tlv_item it;
	uint32_t offset = 0, next;
	uint32_t flags;
	uint64_t count = 0;
	unsigned pages;
	size_t len;
	uint8_t status;
	bool more = true, withheld = false;
	int ret;

	for (pages = 0; more && pages < CACHE_PAGES_MAX; pages++) {
		ret = ctl_ext_call(c, IBRES_OP_CACHE_LIST, NULL, IBRES_T_OFFSET, offset, &status,
				   &body, &len);
		if (ret || status) {
			if (pages)
				cache_list_end(c, count, withheld); /* close what was printed */
			return ctl_failed(c, "cache list", ret, ret ? -1 : status);
		}
		if (!pages)
			cache_list_begin(c);
		more = false;
		tlv_reader_init(&r, body, len);
		while ((ret = tlv_next(&r, &it)) > 0) {
			if (it.type == IBRES_T_NEST) {
				ret = parse_row(&it, &row);
				if (ret)
					break;
				show_row(c, &row);
				count++;
			} else if (it.type == IBRES_T_NEXT) {
				/* must move forward, or a broken daemon loops us */
				if (tlv_get_u32(&it, &next) || next <= offset) {
					ret = -EBADMSG;
					break;
				}
				offset = next;
				more = true;
			} else if (it.type == IBRES_T_FLAGS) {
				if (tlv_get_u32(&it, &flags)) {
					ret = -EBADMSG;
					break;
				}
				withheld |= flags & IBRES_LIST_WITHHELD;
			}
		}
		if (ret < 0) {
			cache_list_end(c, count, withheld);
			return ctl_failed(c, "cache list", ret, -1);
		}
	}
	cache_list_end(c, count, withheld);
	return 0;
}

static int cache_flush(struct ctl *c, const char *arg)
{
	const uint8_t *body;
	struct tlv_reader r;
	struct tlv_item it;
	struct key k;
	uint64_t n = 0;
	size_t len;
	uint8_t status;
	int ret;
	bool got = false;

	if (arg && ctl_parse_key(arg, &k))
		return ctl_usage_error("not a host name, address or GID: '%s'", arg);
	ret = ctl_ext_call(c, IBRES_OP_CACHE_FLUSH, arg ? &k : NULL, 0, 0, &status, &body, &len);
	if (!ret && status == IBRES_STATUS_ENODATA && arg && k.maybe_gid) {
		k.type = IBRES_T_GID;
		ret = ctl_ext_call(c, IBRES_OP_CACHE_FLUSH, &k, 0, 0, &status, &body, &len);
	}
	if (ret || status)
		return ctl_failed(c, "cache flush", ret, ret ? -1 : status);
	tlv_reader_init(&r, body, len);
	while ((ret = tlv_next(&r, &it)) > 0)
		if (it.type == IBRES_T_COUNT && !tlv_get_u64(&it, &n))
			got = true;
	if (ret < 0 || !got)
		return ctl_failed(c, "cache flush", -EBADMSG, -1);
	if (c->json) {
		json_obj_begin(&c->j, NULL);
		json_u64(&c->j, "flushed", n);
		json_obj_end(&c->j);
		json_end(&c->j);
	} else {
		printf("flushed %llu entr%s\n", (unsigned long long)n, n == 1 ? "y" : "ies");
	}
	return 0;
}

int cmd_cache(struct ctl *c, int argc, char **argv)
{
	if (argc == 1 && !strcmp(argv[0], "list"))
		return cache_list(c);
	if ((argc == 1 || argc == 2) && !strcmp(argv[0], "flush"))
		return cache_flush(c, argc == 2 ? argv[1] : NULL);
	return ctl_usage_error("%s", "usage: cache list | cache flush [KEY]");
}
