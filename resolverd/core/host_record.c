// SPDX-License-Identifier: MIT
/* The host store's compact record: packing, its keys, reading it back, and
 * the directory digest's terms (see hoststore_impl.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/hoststore_impl.h"

/* ---- the directory digest (hoststore.h, struct store_digest) ------------ */

uint64_t hs_digest_term(const struct host *h)
{
	struct host_key k;

	hs_key(h, 0, &k); /* the canonical name, lower case */
	return host_digest_term(&k);
}

/* A host came (@sign 1) or went (-1): the digest follows. The endpoints of
 * one host share the canonical name, so any of them gives its term. */
void hs_digest_count(struct host_store *s, const struct host *h, int sign)
{
	if (!hs_digest_counts(h))
		return;
	if (sign > 0) {
		s->digest.hosts++;
		s->digest.sum += hs_digest_term(h);
	} else {
		s->digest.hosts--;
		s->digest.sum -= hs_digest_term(h);
	}
}

void hs_fabric_count(struct host_store *s, const struct host *h, uint32_t was, uint32_t now)
{
	uint32_t others = 0, gone, came;
	uint64_t term;

	if (!hs_digest_counts(h) || was == now)
		return;
	for (const struct host *e = h->sib_next; e && e != h; e = e->sib_next)
		if (hs_digest_counts(e))
			others |= e->heard_on;
	gone = was & ~now & ~others;
	came = now & ~was & ~others;
	if (!gone && !came)
		return;
	term = hs_digest_term(h);
	for (unsigned f = 0; f < STORE_FABRICS; f++) {
		if (gone >> f & 1) {
			s->fabric_digest[f].hosts--;
			s->fabric_digest[f].sum -= term;
		} else if (came >> f & 1) {
			s->fabric_digest[f].hosts++;
			s->fabric_digest[f].sum += term;
		}
	}
}

void store_digest(const struct host_store *s, struct store_digest *out)
{
	*out = s->digest;
}

void store_fabric_digest(const struct host_store *s, int fabric, struct store_digest *out)
{
	if (fabric == STORE_ALL_FABRICS)
		*out = s->digest;
	else if (fabric >= 0 && fabric < STORE_FABRICS)
		*out = s->fabric_digest[fabric];
	else
		*out = (struct store_digest){0, 0};
}

/* ---- the compact record ------------------------------------------------ */

/* Key @i of @h into @k. */
void hs_key(const struct host *h, unsigned i, struct host_key *k)
{
	if (i < h->n_names) {
		struct h_name_ref n;

		h_name_at(h, i, &n);
		k->type = IBRES_KEY_NAME;
		k->len = (uint8_t)n.len;
		for (unsigned j = 0; j < n.len; j++) {
			uint8_t c = h_name_byte(&n, j);

			k->data[j] = c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
		}
		return;
	}
	i -= h->n_names;
	if (i < h->n_v4) {
		host_key_addr(k, IBRES_KEY_IPV4, h_v4(h, i));
		return;
	}
	i -= h->n_v4;
	if (i < h->n_v6) {
		host_key_addr(k, IBRES_KEY_IPV6, h_v6(h, i));
		return;
	}
	i -= h->n_v6;
	if (i < h->n_gids) {
		uint8_t gid[16];

		host_key_addr(k, IBRES_KEY_GID, h_gid(h, i, gid));
		return;
	}
	host_key_lid(k, h->lid, h_fabric(h));
}

/* Is key @i of @h equal to @k? Without building the key. */
bool hs_key_is(const struct host *h, unsigned i, const struct host_key *k)
{
	if (i < h->n_names) {
		struct h_name_ref n;

		if (k->type != IBRES_KEY_NAME)
			return false;
		h_name_at(h, i, &n);
		if (n.len != k->len)
			return false;
		for (unsigned j = 0; j < n.len; j++) {
			uint8_t c = h_name_byte(&n, j);

			if ((c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c) != k->data[j])
				return false;
		}
		return true;
	}
	i -= h->n_names;
	if (i < h->n_v4)
		return k->type == IBRES_KEY_IPV4 && !memcmp(h_v4(h, i), k->data, 4);
	i -= h->n_v4;
	if (i < h->n_v6)
		return k->type == IBRES_KEY_IPV6 && !memcmp(h_v6(h, i), k->data, 16);
	i -= h->n_v6;
	if (i < h->n_gids) {
		uint8_t gid[16];

		return k->type == IBRES_KEY_GID && !memcmp(h_gid(h, i, gid), k->data, 16);
	}
	return k->type == IBRES_KEY_LID && h->lid && k->data[0] == (uint8_t)(h->lid >> 8) &&
	       k->data[1] == (uint8_t)h->lid && k->data[2] == h_fabric(h);
}

bool hs_same_canonical(const struct host *a, const struct host *b)
{
	unsigned la, lb;
	const uint8_t *na, *nb;

	if (!a->n_names || !b->n_names)
		return false;
	na = h_name0(a, &la);
	nb = h_name0(b, &lb);
	return la == lb && hostrec_name_eq(na, nb, la);
}

bool hs_canonical_is(const struct host *h, const char *name)
{
	unsigned len;
	const uint8_t *n;

	if (!h->n_names)
		return false;
	n = h_name0(h, &len);
	return strlen(name) == len && hostrec_name_eq(n, (const uint8_t *)name, len);
}

/* An endpoint's identity: its port GID and P_Key (the partitions of one
 * port are endpoints of their own), a key of the store's own making. */
static void gid_ident(struct host_key *k, const uint8_t gid[16], uint16_t pkey)
{
	host_key_addr(k, IBRES_KEY_GID, gid);
	k->data[16] = (uint8_t)(pkey >> 8);
	k->data[17] = (uint8_t)pkey;
	k->len = 18;
}

/* The identity key: the first GID with the P_Key, else key 0 (a LID's
 * without its fabric, which changes as more ports hear the host). */
void hs_ident(const struct host *h, struct host_key *k)
{
	if (h->n_gids) {
		uint8_t gid[16];

		gid_ident(k, h_gid(h, 0, gid), h->pkey);
		return;
	}
	hs_key(h, 0, k);
	if (k->type == IBRES_KEY_LID)
		k->data[2] = HOST_FABRIC_NONE;
}

void hs_gid_ident(const uint8_t gid[16], uint16_t pkey, struct host_key *k)
{
	gid_ident(k, gid, pkey);
}

void hs_rec_ident(const struct ibres_hostrec *r, struct host_key *k)
{
	if (r->n_gids)
		gid_ident(k, r->gids[0], r->pkey);
	else if (r->n_names)
		host_key_name(k, r->names[0]);
	else if (r->n_v4)
		host_key_addr(k, IBRES_KEY_IPV4, &r->v4[0]);
	else if (r->n_v6)
		host_key_addr(k, IBRES_KEY_IPV6, &r->v6[0]);
	else
		host_key_lid(k, r->lid, HOST_FABRIC_NONE);
}

int hs_rec_validate(const struct ibres_hostrec *r)
{
	if (r->n_names > IBRES_HOST_NAMES_MAX || r->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    r->n_v6 > IBRES_HOST_ADDRS_MAX || r->n_gids > IBRES_HOST_GIDS_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < r->n_names; i++) {
		size_t len = strnlen(r->names[i], sizeof(r->names[i]));

		if (len == 0 || len > HOST_KEY_MAX)
			return -EINVAL;
	}
	return r->n_names + r->n_v4 + r->n_v6 + r->n_gids + (r->lid ? 1 : 0) ? 0 : -EINVAL;
}

bool hs_same_rec(const struct host *h, const struct ibres_hostrec *r)
{
	uint8_t gid[16];

	if (h->qpn != r->qpn || h->lid != r->lid || h->pkey != r->pkey ||
	    h->n_names != r->n_names || h->n_v4 != r->n_v4 || h->n_v6 != r->n_v6 ||
	    h->n_gids != r->n_gids)
		return false;
	for (unsigned i = 0; i < r->n_gids; i++)
		if (memcmp(h_gid(h, i, gid), r->gids[i], 16))
			return false;
	for (unsigned i = 0; i < r->n_v6; i++)
		if (memcmp(h_v6(h, i), &r->v6[i], 16))
			return false;
	for (unsigned i = 0; i < r->n_v4; i++)
		if (memcmp(h_v4(h, i), &r->v4[i], 4))
			return false;
	for (unsigned i = 0; i < r->n_names; i++) {
		struct h_name_ref n;

		h_name_at(h, i, &n);
		/* a name's case too: the record keeps it */
		if (strlen(r->names[i]) != n.len || memcmp(r->names[i], n.head, n.pre) ||
		    memcmp(r->names[i] + n.pre, n.rest, n.len - n.pre))
			return false;
	}
	return true;
}

/* How many leading bytes name @i of @r shares with name 0. */
static unsigned shared_with_canonical(const struct ibres_hostrec *r, unsigned i)
{
	unsigned n = 0;

	while (r->names[i][n] && r->names[i][n] == r->names[0][n])
		n++;
	return n;
}

struct host *hs_pack(const struct ibres_hostrec *r, uint8_t origin, uint32_t heard_on)
{
	enum gid0_form gid0 = r->n_gids ? gid0_form_of(r->gids[0]) : GID0_WHOLE;
	size_t size = HOST_HEAD + 16 * (r->n_gids + r->n_v6) + 4 * r->n_v4;
	struct host *h;
	uint8_t *p;

	if (gid0 != GID0_WHOLE)
		size -= 8;
	for (unsigned i = 0; i < r->n_names; i++)
		size += i ? 2 + strlen(r->names[i]) - shared_with_canonical(r, i)
			  : 1 + strlen(r->names[i]);
	/* an index slot holds the address over HOST_ALIGN, below HOST_ADDR_BITS */
	if (posix_memalign((void **)&h, HOST_ALIGN, size))
		return NULL;
	if ((uint64_t)(uintptr_t)h >> HOST_ADDR_BITS) {
		free(h);
		return NULL;
	}
	memset(h, 0, size);
	h->qpn = r->qpn;
	h->lid = r->lid;
	h->pkey = r->pkey;
	h->origin = origin;
	h->heard_on = heard_on;
	h->n_names = (uint8_t)r->n_names;
	h->n_v4 = (uint8_t)r->n_v4;
	h->n_v6 = (uint8_t)r->n_v6;
	h->n_gids = (uint8_t)r->n_gids;
	h->gid0 = gid0 & 3;
	p = h->data;
	for (unsigned i = 0; i < r->n_gids; i++) {
		unsigned skip = !i && gid0 != GID0_WHOLE ? 8 : 0;

		memcpy(p, r->gids[i] + skip, 16 - skip);
		p += 16 - skip;
	}
	for (unsigned i = 0; i < r->n_v6; i++, p += 16)
		memcpy(p, &r->v6[i], 16);
	for (unsigned i = 0; i < r->n_v4; i++, p += 4)
		memcpy(p, &r->v4[i], 4);
	for (unsigned i = 0; i < r->n_names; i++) {
		size_t len = strlen(r->names[i]), pre = i ? shared_with_canonical(r, i) : 0;

		*p++ = (uint8_t)len;
		if (i)
			*p++ = (uint8_t)pre;
		memcpy(p, r->names[i] + pre, len - pre);
		p += len - pre;
	}
	return h;
}

size_t hs_rec_bytes(const struct host *h)
{
	size_t size = HOST_HEAD + h_gids_len(h) + 16 * h->n_v6 + 4 * h->n_v4;

	for (unsigned i = 0; i < h->n_names; i++) {
		struct h_name_ref n;

		h_name_at(h, i, &n);
		size += (i ? 2 : 1) + n.len - n.pre;
	}
	return size;
}

/* ---- the record ----------------------------------------------------------- */

/* host_record() zeroes what follows the names; each name is written with its NUL. */
_Static_assert(offsetof(struct ibres_hostrec, n_names) ==
		       sizeof(((struct ibres_hostrec *)0)->names),
	       "the names come first in struct ibres_hostrec");

void host_record(const struct host *h, struct ibres_hostrec *r, uint64_t now_ms)
{
	memset(&r->n_names, 0, sizeof(*r) - offsetof(struct ibres_hostrec, n_names));
	r->n_names = h->n_names;
	for (unsigned i = 0; i < h->n_names; i++) {
		struct h_name_ref n;

		h_name_at(h, i, &n);
		memcpy(r->names[i], n.head, n.pre);
		memcpy(r->names[i] + n.pre, n.rest, n.len - n.pre);
		r->names[i][n.len] = '\0';
	}
	r->n_v4 = h->n_v4;
	for (unsigned i = 0; i < h->n_v4; i++)
		memcpy(&r->v4[i], h_v4(h, i), 4);
	r->n_v6 = h->n_v6;
	for (unsigned i = 0; i < h->n_v6; i++)
		memcpy(&r->v6[i], h_v6(h, i), 16);
	r->n_gids = h->n_gids;
	for (unsigned i = 0; i < h->n_gids; i++) {
		uint8_t gid[16];

		memcpy(r->gids[i], h_gid(h, i, gid), 16);
	}
	r->lid = h->lid;
	r->qpn = h->qpn;
	r->pkey = h->pkey;
	/* the answers' rule, but 0 for never */
	r->ttl = h->expires_ms == UINT64_MAX ? 0 : hostrec_ttl_left(h->expires_ms, now_ms);
}

uint8_t host_origin(const struct host *h)
{
	return h->origin;
}

struct host *host_next_endpoint(const struct host *h, const struct host *e)
{
	return e->sib_next && e->sib_next != h ? e->sib_next : NULL;
}

unsigned host_endpoint_count(const struct host *h)
{
	unsigned n = 1;

	for (const struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		n++;
	return n;
}

uint32_t host_heard_on(const struct host *h)
{
	return h->heard_on;
}

uint64_t host_rails(const struct host *h)
{
	return h->rails;
}

unsigned host_keys_held(const struct host *h)
{
	return h->n_indexed;
}

bool host_key_shared(const struct host *h, const struct host_key *k)
{
	for (const struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		if (host_has_key(e, k))
			return true;
	return false;
}

bool host_key_everyones(const struct host *h, const struct host_key *k)
{
	for (const struct host *e = h; e; e = host_next_endpoint(h, e))
		if (!host_has_key(e, k))
			return false;
	return true;
}

/* The preferred rail first: the lowest local endpoint that heard it. */
static unsigned rail_rank(const struct host *h)
{
	return h->heard_on ? (unsigned)__builtin_ctz(h->heard_on) : 32;
}

/* Does endpoint @a come before @b in its host's record? The preferred rail
 * first; between endpoints heard first on one local endpoint (one fabric,
 * partitions of a port), the lower port GID, then P_Key: the order is the
 * same whichever endpoint the record is made from (the directory's writer
 * and the daemon's answers start from different ones). */
static bool endpoint_before(const struct host *a, const struct host *b)
{
	uint8_t ga[16], gb[16];
	int c;

	if (rail_rank(a) != rail_rank(b))
		return rail_rank(a) < rail_rank(b);
	c = memcmp(host_gid(a, ga), host_gid(b, gb), 16);
	return c ? c < 0 : a->pkey < b->pkey;
}

/* The index of @name among @r's names (ASCII case aside), or -1. */
static int name_index(const struct ibres_hostrec *r, const char *name)
{
	for (unsigned i = 0; i < r->n_names; i++)
		if (!strcasecmp(r->names[i], name))
			return (int)i;
	return -1;
}

/* The index of @item (@size bytes) among the @n at @arr, added at the end if
 * it is not there and there is room (@max); -1 when there was none. */
static int add_unique(void *arr, unsigned *n, unsigned max, const void *item, size_t size)
{
	uint8_t *a = arr;

	for (unsigned i = 0; i < *n; i++)
		if (!memcmp(a + i * size, item, size))
			return (int)i;
	if (*n >= max)
		return -1;
	memcpy(a + *n * size, item, size);
	return (int)(*n)++;
}

/* Endpoint @bit's item at index @at into its set (a dropped item, -1: the
 * record is not the whole host's). */
static bool eps_add(uint32_t *set, int at, uint32_t bit)
{
	if (at < 0)
		return false;
	set[at] |= bit;
	return true;
}

#define RAILS_SEEN_MAX 64u

uint64_t host_record_all(const struct host *h, struct ibres_hostrec *r, uint64_t now_ms)
{
	struct hostrec_eps eps;
	bool whole;

	return host_record_eps(h, r, &eps, &whole, now_ms);
}

uint64_t host_record_eps(const struct host *h, struct ibres_hostrec *r, struct hostrec_eps *sets,
			 bool *whole, uint64_t now_ms)
{
	const struct host *eps[RAILS_SEEN_MAX] = { h };
	uint64_t soonest = h->expires_ms; /* of the endpoints it holds */
	struct ibres_hostrec one;
	unsigned n = 1;
	bool all;

	for (const struct host *e = host_next_endpoint(h, h); e && n < RAILS_SEEN_MAX;
	     e = host_next_endpoint(h, e)) {
		unsigned at;

		/* past its time, though not swept yet: answered with none */
		if (now_ms && e->expires_ms <= now_ms)
			continue;
		if (e->expires_ms < soonest)
			soonest = e->expires_ms;
		at = n++;

		/* insertion in endpoint_before() order */
		while (at && endpoint_before(e, eps[at - 1])) {
			eps[at] = eps[at - 1];
			at--;
		}
		eps[at] = e;
	}
	host_record(eps[0], r, now_ms);
	memset(sets, 0, sizeof(*sets));
	sets->n_ep = n < HOSTREC_EPS_MAX ? n : HOSTREC_EPS_MAX;
	sets->ep[0] = (struct hostrec_ep){ .qpn = r->qpn, .lid = r->lid, .pkey = r->pkey };
	for (unsigned j = 0; j < r->n_names; j++)
		sets->names[j] = 1;
	for (unsigned j = 0; j < r->n_gids; j++)
		sets->gids[j] = 1;
	for (unsigned j = 0; j < r->n_v6; j++)
		sets->v6[j] = 1;
	for (unsigned j = 0; j < r->n_v4; j++)
		sets->v4[j] = 1;
	/* one bit an endpoint: a ring holds at most HOST_RAILS_MAX (32) */
	_Static_assert(HOST_RAILS_MAX <= HOSTREC_EPS_MAX, "an endpoint set has a bit for each");
	all = n <= HOST_RAILS_MAX;
	for (unsigned i = 1; i < n; i++) {
		uint32_t bit = i < 32 ? 1u << i : 0;

		host_record(eps[i], &one, now_ms);
		if (i < HOSTREC_EPS_MAX)
			sets->ep[i] = (struct hostrec_ep){ .qpn = one.qpn, .lid = one.lid,
							   .pkey = one.pkey };
		for (unsigned j = 0; j < one.n_names; j++) {
			int at = name_index(r, one.names[j]);

			if (at < 0 && r->n_names < IBRES_HOST_NAMES_MAX) {
				at = (int)r->n_names++;
				memcpy(r->names[at], one.names[j], sizeof(one.names[j]));
			}
			all &= eps_add(sets->names, at, bit);
		}
		for (unsigned j = 0; j < one.n_v4; j++)
			all &= eps_add(sets->v4,
				       add_unique(r->v4, &r->n_v4, IBRES_HOST_ADDRS_MAX, &one.v4[j], 4),
				       bit);
		for (unsigned j = 0; j < one.n_v6; j++)
			all &= eps_add(sets->v6,
				       add_unique(r->v6, &r->n_v6, IBRES_HOST_ADDRS_MAX, &one.v6[j], 16),
				       bit);
		for (unsigned j = 0; j < one.n_gids; j++)
			all &= eps_add(sets->gids,
				       add_unique(r->gids, &r->n_gids, IBRES_HOST_GIDS_MAX, one.gids[j],
						  16),
				       bit);
	}
	*whole = all;
	r->ttl = soonest == UINT64_MAX ? 0 : hostrec_ttl_left(soonest, now_ms);
	return soonest;
}

uint64_t host_expires_ms(const struct host *h)
{
	return h->expires_ms;
}

uint64_t host_soonest_expires_ms(const struct host *h)
{
	uint64_t soonest = h->expires_ms;

	for (const struct host *e = host_next_endpoint(h, h); e; e = host_next_endpoint(h, e))
		if (e->expires_ms < soonest)
			soonest = e->expires_ms;
	return soonest;
}

uint16_t host_pkey(const struct host *h)
{
	return h->pkey;
}

uint16_t host_lid(const struct host *h)
{
	return h->lid;
}

const uint8_t *host_gid(const struct host *h, uint8_t buf[16])
{
	const uint8_t *gid;

	if (!h->n_gids) {
		memset(buf, 0, 16);
		return buf;
	}
	gid = h_gid(h, 0, buf);
	if (gid != buf)
		memcpy(buf, gid, 16);
	return buf;
}

const char *host_name(const struct host *h, char *buf)
{
	unsigned len = 0;
	const uint8_t *p = h->n_names ? h_name0(h, &len) : NULL;

	if (len)
		memcpy(buf, p, len);
	buf[len] = '\0';
	return buf;
}

void host_group(const struct host *h, uint8_t *mtu, uint8_t *rate)
{
	*mtu = h->grp_mtu;
	*rate = h->grp_rate;
}

bool host_has_key(const struct host *h, const struct host_key *k)
{
	unsigned nk = h_nkeys(h);

	for (unsigned i = 0; i < nk; i++)
		if (hs_key_is(h, i, k))
			return true;
	return false;
}
