// SPDX-License-Identifier: MIT
/* The extension opcodes: host lookups for NSS and libibres, and the admin
 * operations behind ibresctl. Bodies are TLV items (doc/protocol.md). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "engine/resolver.h"
#include "fabric/fabric.h"
#include "frontend/handlers.h"
#include "frontend/reply.h"
#include "ib/sa.h"
#include "hostdir.h"
#include "os/hostdir_pub.h"
#include "os/kpath.h"
#include "tlv.h"


struct ext_reply {
	struct ibres_hdr hdr;
	struct tlv_writer w;
};

static void ext_begin(struct ext_reply *r, const struct request *req, uint8_t *reply)
{
	r->hdr = *request_hdr(req);
	r->hdr.opcode |= IBRES_OP_ACK;
	r->hdr.status = IBRES_STATUS_SUCCESS;
	memset(r->hdr.data, 0, sizeof(r->hdr.data));
	tlv_writer_init(&r->w, reply + IBRES_HDR_LEN, IBRES_MSG_MAX - IBRES_HDR_LEN);
}

static int ext_end(struct ext_reply *r, uint8_t *reply, size_t *len)
{
	*len = IBRES_HDR_LEN + r->w.len;
	r->hdr.length = htobe16((uint16_t)*len);
	memcpy(reply, &r->hdr, sizeof(r->hdr));
	return 0;
}

/* A key item (NAME, IPV4, IPV6 or GID) as a cache key. */
static int key_from_item(const struct tlv_item *it, struct host_key *k)
{
	char name[IBRES_NAME_MAX + 1];

	switch (it->type) {
	case IBRES_T_NAME:
		if (tlv_get_str(it, name, sizeof(name)) < 0)
			return -EINVAL;
		return host_key_name(k, name);
	case IBRES_T_IPV4:
		return it->length == 4 ? host_key_addr(k, IBRES_KEY_IPV4, it->value) : -EINVAL;
	case IBRES_T_IPV6:
		return it->length == 16 ? host_key_addr(k, IBRES_KEY_IPV6, it->value) : -EINVAL;
	case IBRES_T_GID:
		return it->length == 16 ? host_key_addr(k, IBRES_KEY_GID, it->value) : -EINVAL;
	}
	return -EINVAL;
}

/* Parse a body holding at most one key item, FLAGS and OFFSET. */
struct ext_args {
	bool has_key;
	struct host_key key;
	uint32_t flags;
	uint32_t offset;
};

static int parse_args(const struct request *req, struct ext_args *a)
{
	struct tlv_reader r;
	struct tlv_item it;
	int ret;

	memset(a, 0, sizeof(*a));
	tlv_reader_init(&r, req->msg + IBRES_HDR_LEN, req->len - IBRES_HDR_LEN);
	while ((ret = tlv_next(&r, &it)) > 0) {
		switch (it.type) {
		case IBRES_T_NAME:
		case IBRES_T_IPV4:
		case IBRES_T_IPV6:
		case IBRES_T_GID:
			if (a->has_key || key_from_item(&it, &a->key) < 0)
				return -EINVAL;
			a->has_key = true;
			break;
		case IBRES_T_FLAGS:
			if (tlv_get_u32(&it, &a->flags) < 0)
				return -EINVAL;
			break;
		case IBRES_T_OFFSET:
			if (tlv_get_u32(&it, &a->offset) < 0)
				return -EINVAL;
			break;
		default:
			return -EINVAL;
		}
	}
	return ret < 0 ? -EINVAL : 0;
}

/* Parse @req's body; a malformed one is answered EINVAL (and counted). */
static int args_of(struct ibresd *d, struct request *req, struct ext_args *a, uint8_t *reply,
		   size_t *len)
{
	if (parse_args(req, a) == 0)
		return 0;
	d->stats.bad_requests++;
	reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	return -EINVAL;
}

/* The table of the shared directory a key type is in, or -1 (a LID). */
static int key_table(uint8_t type)
{
	for (unsigned t = 0; t < IBDIR_TABLES; t++)
		if (ibdir_key_type(t) == type)
			return (int)t;
	return -1;
}

/* The answer for key @k of host @h, of several endpoints, when one record
 * holds the host whole: that record cut to the key's endpoints, as the
 * shared directory gives it. 0, or -1: answer as before. */
static int answer_as_directory(const struct host *h, const struct host_key *k,
			       struct ibres_hostrec *rec)
{
	uint8_t enc[IBDIR_REC_MAX];
	struct hostrec_eps eps;
	int tab = key_table(k->type);
	uint64_t exp;
	bool whole;

	if (tab < 0)
		return -1;
	exp = host_record_eps(h, rec, &eps, &whole, now_ms());
	if (!whole || !rec->n_names)
		return -1;
	if (ibdir_rec_answer(enc, ibdir_rec_encode_eps(rec, &eps, exp, enc), (unsigned)tab, k->data,
			     k->len, rec))
		return -1;
	rec->ttl = hostrec_ttl_left(exp, now_ms());
	return 0;
}

/* Answer a HOST request for req->key: at its start, and when its wait ended. */
static int host_answer(struct ibresd *d, struct request *req, bool cache_only, uint8_t *reply,
		       size_t *len)
{
	struct ibres_hostrec rec;
	struct host *h;
	struct ext_reply r;
	enum lookup_result res;

	if (cache_only) {
		h = store_lookup(&d->store, &req->key, now_ms(), true);
		res = h ? LOOKUP_FOUND : LOOKUP_NOTFOUND;
	} else {
		res = resolver_lookup(&d->res, &req->waiter, &req->key, false, &h);
	}
	switch (res) {
	case LOOKUP_FOUND:
		break;
	case LOOKUP_WAIT:
		return REQ_WAIT;
	case LOOKUP_NOTFOUND:
		d->stats.host_notfound++;
		return reply_status(req, reply, len, IBRES_STATUS_ENODATA);
	case LOOKUP_TIMEDOUT:
		return reply_status(req, reply, len, IBRES_STATUS_ETIMEDOUT);
	default:
		return reply_status(req, reply, len, IBRES_STATUS_ENOMEM);
	}
	/* a host of several endpoints one record holds: as the shared directory
	 * answers (lib/hostdir_rec.c, one rule for both); else (more names or
	 * addresses than a record holds) the host's name, which every endpoint
	 * lists: every rail's addresses, the preferred first; any other name, an
	 * address or GID: the endpoint it leads to (as the directory's views) */
	if (host_next_endpoint(h, h) && !answer_as_directory(h, &req->key, &rec)) {
		/* rec is the answer */
	} else if (req->key.type == IBRES_KEY_NAME && host_next_endpoint(h, h) &&
		   host_key_everyones(h, &req->key)) {
		rec.ttl = hostrec_ttl_left(host_record_all(h, &rec, now_ms()), now_ms());
	} else {
		host_record(h, &rec, now_ms());
		rec.ttl = hostrec_ttl_left(host_expires_ms(h), now_ms());
	}
	ext_begin(&r, req, reply);
	if (hostrec_encode(&r.w, &rec) < 0)
		return reply_status(req, reply, len, IBRES_STATUS_ENOMEM);
	return ext_end(&r, reply, len);
}

int host_start(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct ext_args a;

	if (args_of(d, req, &a, reply, len))
		return 0;
	if (!a.has_key)
		return reply_status(req, reply, len, IBRES_STATUS_EINVAL);
	d->stats.host_lookups++;
	req->key = a.key;
	return host_answer(d, req, a.flags & IBRES_HOST_CACHE_ONLY, reply, len);
}

int host_finish(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	/* the query ended with a host: it is in the store now */
	return host_answer(d, req, false, reply, len);
}

struct list_ctx {
	struct tlv_writer *w;
	uint32_t skip; /* queries in flight before the page's first */
	uint32_t seen; /* queries in flight visited */
	bool full;
	bool all;      /* negative answers and queries too: the caller is root */
	bool withheld; /* some were left out */
	uint64_t now;
	unsigned n_eps;
	const struct host_store *store;
};

/* One CACHE_LIST item. Keys of hosts are RESOLVED, or ROUTED when a path
 * from some endpoint is stored; negative answers NEGATIVE; keys being
 * asked QUERYING (engine/pending.h). */
static int list_item(struct list_ctx *lc, const struct host_key *k, uint8_t state, uint8_t origin,
		     uint64_t expires_ms, const struct host *h, const struct ibres_path_record *path)
{
	size_t mark = lc->w->len;
	char key[HOST_KEY_STR_MAX];
	const char *text;
	int nest;

	nest = tlv_nest_begin(lc->w);
	tlv_put_u8(lc->w, IBRES_T_KEYTYPE, k->type);
	text = host_key_str(k, key, sizeof(key));
	text = strchr(text, ':') ? strchr(text, ':') + 1 : text;
	tlv_put_str(lc->w, IBRES_T_KEY, text);
	tlv_put_u8(lc->w, IBRES_T_STATE, state);
	tlv_put_u8(lc->w, IBRES_T_ORIGIN, origin);
	tlv_put_u32(lc->w, IBRES_T_TTL, hostrec_ttl_left(expires_ms, lc->now));
	if (h) {
		struct ibres_hostrec rec;

		host_record(h, &rec, lc->now);
		rec.ttl = hostrec_ttl_left(host_expires_ms(h), lc->now);
		hostrec_encode(lc->w, &rec);
	}
	if (path)
		tlv_put(lc->w, IBRES_T_PATH, path, sizeof(*path));
	tlv_nest_end(lc->w, nest);
	/* Keep room for the NEXT item that says where the next page starts, and FLAGS. */
	if (lc->w->overflow || lc->w->cap - lc->w->len < 16) {
		tlv_truncate(lc->w, mark);
		lc->full = true;
		return 1;
	}
	return 0;
}

static int list_key(const struct host_key *k, const struct host *h, int neg_status,
		    uint64_t expires_ms, void *arg)
{
	struct list_ctx *lc = arg;
	const struct ibres_path_record *path = NULL;

	(void)neg_status;
	if (!h && !lc->all) {
		lc->withheld = true;
		return 0;
	}
	if (!h)
		return list_item(lc, k, IBRES_STATE_NEGATIVE, IBRES_ORIGIN_FABRIC, expires_ms, NULL,
				 NULL);
	for (unsigned i = 0; i < lc->n_eps && !path; i++)
		path = host_route(lc->store, h, (int)i, lc->now);
	return list_item(lc, k, path ? IBRES_STATE_ROUTED : IBRES_STATE_RESOLVED, host_origin(h),
			 expires_ms, h, path);
}

static int list_query(const struct pending_query *q, void *arg)
{
	struct list_ctx *lc = arg;

	if (lc->seen++ < lc->skip)
		return 0;
	return list_item(lc, &q->key, IBRES_STATE_QUERYING, IBRES_ORIGIN_FABRIC, UINT64_MAX, NULL,
			 NULL);
}

int cache_list(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct ext_reply r;
	struct list_ctx lc;
	struct ext_args a;
	unsigned at;

	if (args_of(d, req, &a, reply, len))
		return 0;
	ext_begin(&r, req, reply);
	lc = (struct list_ctx){.w = &r.w, .now = now_ms(), .n_eps = d->eps.n, .store = &d->store};
	/* A negative answer or a query in flight names what some user looked up and found
	 * nothing for, or is looking up now: another user's business. Hosts are the cluster's. */
	lc.all = req->uid == 0;
	/* OFFSET is where the page before stopped: the store's position of a
	 * key, or past them the count of queries in flight before it. A page
	 * costs its own entries, never a walk of those before it (a request a
	 * user may send in a loop) */
	at = store_foreach(&d->store, a.offset, list_key, &lc);
	if (!lc.full && lc.all) {
		lc.skip = a.offset > at ? a.offset - at : 0;
		pending_foreach(&d->res.pending, list_query, &lc);
		if (lc.full)
			at += lc.seen - 1;
	} else if (!lc.all && d->res.pending.n) {
		lc.withheld = true;
	}
	if (lc.full)
		tlv_put_u32(&r.w, IBRES_T_NEXT, at);
	/* says why the list is short; every page of the listing carries it */
	if (lc.withheld || (!lc.all && d->store.stats.negatives))
		tlv_put_u32(&r.w, IBRES_T_FLAGS, IBRES_LIST_WITHHELD);
	return ext_end(&r, reply, len);
}

int cache_flush(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct ext_reply r;
	struct ext_args a;
	unsigned n;

	if (args_of(d, req, &a, reply, len))
		return 0;
	if (req->uid != 0) {
		d->stats.admin_denied++;
		return reply_status(req, reply, len, IBRES_STATUS_EPERM);
	}
	n = resolver_flush(&d->res, a.has_key ? &a.key : NULL);
	ext_begin(&r, req, reply);
	tlv_put_u64(&r.w, IBRES_T_COUNT, n);
	return ext_end(&r, reply, len);
}

int stats_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	static const char *const acm_names[IBRES_CNTR_MAX] = {
		"error", "resolve", "nodata", "addr_query", "addr_cache", "route_query",
		"route_cache",
	};
	struct hostdir_stats dir;

	hostdir_stats(d->dir, &dir);
	const struct {
		const char *name;
		uint64_t value;
	} named[] = {
		{ "uptime_s", (now_ms() - d->start_ms) / 1000 },
		{ "clients_connected", d->stats.clients_connected },
		{ "clients_accepted", d->stats.clients_accepted },
		{ "clients_rejected", d->stats.clients_rejected },
		{ "clients_quota_rejected", d->stats.clients_quota_rejected },
		{ "clients_evicted", d->stats.clients_evicted },
		{ "clients_timed_out", d->stats.clients_timed_out },
		{ "clients_output_timed_out", d->stats.clients_output_timed_out },
		{ "requests", d->stats.requests },
		{ "bad_requests", d->stats.bad_requests },
		{ "admin_denied", d->stats.admin_denied },
		{ "host_lookups", d->stats.host_lookups },
		{ "host_notfound", d->stats.host_notfound },
		{ "pending_timeouts", d->stats.pending_timeouts },
		/* what CACHE_LIST lists: keys of hosts, negative answers, queries */
		{ "cache_entries", d->store.n_keys + d->store.stats.negatives + d->res.pending.n },
		{ "cache_hosts", d->store.stats.hosts },
		{ "cache_learned_hosts", d->store.stats.learned },
		{ "cache_negatives", d->store.stats.negatives },
		{ "cache_bytes", store_bytes(&d->store) },
		{ "cache_hits", d->store.stats.hits },
		{ "cache_misses", d->store.stats.misses },
		{ "cache_inserts", d->store.stats.inserts },
		{ "cache_evictions", d->store.stats.evictions },
		{ "cache_expirations", d->store.stats.expirations },
		{ "directory_bytes", dir.bytes },
		{ "directory_hosts", dir.records },
		{ "directory_rebuilds", dir.rebuilds },
		{ "directory_failures", dir.failures },
		{ "directory_unread_refused", d->stats.directory_unread_refused },
	};
	/* the resolver's queries on the fabric, under their historic names */
	const struct {
		const char *name;
		uint64_t value;
	} queries[] = {
		{ "fabric_query_retries", d->res.stats.query_retries },
		{ "fabric_query_timeouts", d->res.stats.query_timeouts },
		{ "fabric_queries_joined", d->res.stats.queries_joined },
		{ "fabric_queries_outstanding", d->res.pending.n },
	};
	struct ext_reply r;
	struct ext_args a;

	if (args_of(d, req, &a, reply, len))
		return 0;
	ext_begin(&r, req, reply);
	for (unsigned i = 0; i < IBRES_CNTR_MAX; i++) {
		tlv_put_str(&r.w, IBRES_T_NAME, acm_names[i]);
		tlv_put_u64(&r.w, IBRES_T_COUNTER, d->counters[i]);
	}
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		tlv_put_str(&r.w, IBRES_T_NAME, named[i].name);
		tlv_put_u64(&r.w, IBRES_T_COUNTER, named[i].value);
	}
	fabric_stats(d->fabric, &r.w);
	for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		tlv_put_str(&r.w, IBRES_T_NAME, queries[i].name);
		tlv_put_u64(&r.w, IBRES_T_COUNTER, queries[i].value);
	}
	sa_stats(d->sa, &r.w); /* sa_queries and the rest of the SA client's */
	kpath_stats(d->kpath, &r.w); /* the kernel's path queries */
	if (r.w.overflow)
		return reply_status(req, reply, len, IBRES_STATUS_ENOMEM);
	return ext_end(&r, reply, len);
}

int endpoints_query(struct ibresd *d, struct request *req, uint8_t *reply, size_t *len)
{
	struct ext_reply r;
	struct ext_args a;

	if (args_of(d, req, &a, reply, len))
		return 0;
	ext_begin(&r, req, reply);
	for (unsigned i = 0; i < d->eps.n; i++) {
		const struct cfg_endpoint *ep = &d->eps.ep[i].cfg;
		int nest = tlv_nest_begin(&r.w);

		tlv_put_str(&r.w, IBRES_T_LABEL, ep->label);
		hostrec_encode(&r.w, &ep->id);
		tlv_put_u8(&r.w, IBRES_T_MTU, ep->mtu);
		tlv_put_u8(&r.w, IBRES_T_RATE, ep->rate);
		tlv_put_u8(&r.w, IBRES_T_SL, ep->sl);
		tlv_put_u8(&r.w, IBRES_T_STATE, d->eps.ep[i].down ? IBRES_EP_DOWN : IBRES_EP_UP);
		tlv_nest_end(&r.w, nest);
	}
	if (r.w.overflow)
		return reply_status(req, reply, len, IBRES_STATUS_ENOMEM);
	return ext_end(&r, reply, len);
}
