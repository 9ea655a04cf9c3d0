// SPDX-License-Identifier: MIT
/*
 * The host store (see hoststore.h for the contract): a host's endpoints (the
 * ring), the store's life and bound, the use order of learned hosts,
 * look-ups and insertion. The key and identity indexes are
 * hoststore_index.c, the record itself host_record.c, removals and expiry
 * hoststore_remove.c, negative answers hoststore_neg.c, walking and checking
 * hoststore_check.c.
 */
#include "core/hoststore_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A learned endpoint was used: a client's look-up found it, or it was
 * learned. Its stamp orders it among the others (0 is kept for pinned ones). */
static void mark_used(struct host_store *s, struct host *h)
{
	if (!++s->use_clock)
		s->use_clock = 1;
	h->used = s->use_clock;
}

/* ---- a host's endpoints: the ring ------------------------------------------ */

static void ring_link(struct host *h, struct host *into)
{
	if (!into->sib_next)
		into->sib_next = into;
	h->sib_next = into->sib_next;
	into->sib_next = h;
}

/* Take @h out of its ring. Returns a member that stays, or NULL. */
static struct host *ring_unlink(struct host *h)
{
	struct host *prev = h;

	if (!h->sib_next)
		return NULL;
	while (prev->sib_next != h)
		prev = prev->sib_next;
	prev->sib_next = h->sib_next;
	if (prev->sib_next == prev)
		prev->sib_next = NULL;
	h->sib_next = NULL;
	return prev;
}

static bool ring_has(const struct host *h, const struct host *other)
{
	for (const struct host *e = h->sib_next; e && e != h; e = e->sib_next)
		if (e == other)
			return true;
	return false;
}

/* A member of @h's ring other than @h that lists @k, and the key's number there. */
static struct host *ring_lister(const struct host *h, const struct host_key *k, unsigned *kidx)
{
	for (struct host *e = h->sib_next; e && e != h; e = e->sib_next) {
		unsigned nk = h_nkeys(e);

		for (unsigned i = 0; i < nk; i++)
			if (hs_key_is(e, i, k)) {
				*kidx = i;
				return e;
			}
	}
	return NULL;
}

/* The ring of @member changed: every endpoint of it is due again (unless it
 * is @skip, told already): the one its canonical name leads to lists every
 * endpoint, and keys (a shared name, a port's GID) may have passed from one
 * to another. A ring has at most HOST_RAILS_MAX endpoints. */
void hs_ring_changed(struct host_store *s, struct host *member, const struct host *skip)
{
	if (!member || !s->ob.put)
		return;
	for (struct host *e = member; e; e = host_next_endpoint(member, e))
		if (e != skip)
			s->ob.put(s->ob.arg, e);
}

/* Remove every slot of @h, unlink it and free it: a key another endpoint of
 * its host lists passes to that one. Returns the slots removed. */
unsigned hs_host_remove(struct host_store *s, struct host *h)
{
	unsigned n = 0, nk = h_nkeys(h);
	struct host *left;
	struct host_key k;
	bool alone = !h->sib_next;

	for (unsigned i = 0; i < nk && h->n_indexed; i++) {
		struct host *to;
		unsigned kidx;
		long at;

		hs_key(h, i, &k);
		at = hs_slot_find(s, &k, hs_hash(s, &k));
		if (at < 0 || hs_at(s, at) != h)
			continue;
		to = ring_lister(h, &k, &kidx);
		if (to) {
			hs_at_set(s, at, to, kidx);
			to->n_indexed++;
			h->n_indexed--;
			continue;
		}
		hs_slot_del(s, (unsigned)at);
		n++;
	}
	if (s->ob.gone)
		s->ob.gone(s->ob.arg, h);
	hs_fabric_count(s, h, h->heard_on, 0); /* while its ring says what stays */
	left = ring_unlink(h);
	hs_ring_changed(s, left, NULL);
	hs_ident_unlink(s, h);
	if (alone)
		hs_digest_count(s, h, -1); /* its host's last endpoint */
	/* max_hosts counts hosts: the last endpoint of one takes it */
	if (!origin_pinned(h->origin) && alone)
		s->stats.learned--;
	s->stats.hosts--;
	s->stats.keys = s->n_keys;
	hs_routes_drop(s, h);
	free(h);
	return n;
}

/* ---- life cycle ---------------------------------------------------------- */

int store_init(struct host_store *s, unsigned max_hosts)
{
	memset(s, 0, sizeof(*s));
	if (!max_hosts || max_hosts > STORE_HOSTS_LIMIT)
		return -EINVAL;
	s->max_hosts = max_hosts;
	key_hasher_init(&s->kh);
	s->slots = calloc(SLOTS_MIN, sizeof(*s->slots));
	s->idents = calloc(IDENTS_MIN, sizeof(*s->idents));
	s->negs = calloc(NEG_BUCKETS, sizeof(*s->negs));
	if (!s->slots || !s->idents || !s->negs) {
		store_fini(s);
		return -ENOMEM;
	}
	s->n_slots = SLOTS_MIN;
	s->ident_mask = IDENTS_MIN - 1;
	s->neg_mask = NEG_BUCKETS - 1;
	return 0;
}

void store_fini(struct host_store *s)
{
	struct host *h;

	if (s->idents)
		hs_foreach_record (s, i, h)
			free(h);
	while (s->neg_oldest) {
		struct store_neg *n = s->neg_oldest;

		s->neg_oldest = n->newer;
		free(n);
	}
	hs_routes_fini(s);
	free(s->slots);
	free(s->idents);
	free(s->negs);
	memset(s, 0, sizeof(*s));
}

/* Eviction takes the host used longest ago (its endpoint used last counts:
 * a look-up by the host's name finds one of its endpoints): of all learned
 * hosts while the identity table has at most EVICT_EXACT_SLOTS slots (up to
 * 768 endpoints, learned or pinned), else of those of the next EVICT_SAMPLE
 * learned endpoints after where the last eviction stopped (the table is in
 * the order of a seeded hash, so that is a random sample; past
 * EVICT_WALK_MAX slots the walk stops at its first victim). An exact order
 * would take two pointers in every record, 16 bytes an endpoint (a malloc
 * size class of an eight-rail host's every endpoint, bench/RESULTS.md); the
 * stamp takes 4, and a hit writes it and nothing else. The oldest of 16
 * sampled is, on average, older than 16 in 17 of all the others. */
#define EVICT_EXACT_SLOTS 1024u
#define EVICT_SAMPLE	  16u
#define EVICT_WALK_MAX	  4096u

/* How long ago @h's host was used: its endpoint used last. Ages count from
 * the use clock modulo 2^32; store_sweep() keeps every age under
 * USE_AGE_MAX, so that the clock's wrapping never makes an old one young. */
static uint32_t host_age(const struct host_store *s, const struct host *h)
{
	uint32_t age = s->use_clock - h->used;

	for (const struct host *e = h->sib_next; e && e != h; e = e->sib_next)
		if (s->use_clock - e->used < age)
			age = s->use_clock - e->used;
	return age;
}

/* The victim: an endpoint of the learned host used longest ago, not @keep's
 * host, or NULL when there is none. */
static struct host *evict_pick(struct host_store *s, const struct host *keep)
{
	unsigned n = s->ident_mask + 1, found = 0, i = s->evict_at & s->ident_mask, walked;
	bool exact = n <= EVICT_EXACT_SLOTS;
	struct host *victim = NULL;
	uint32_t oldest = 0;

	for (walked = 0; walked < n; walked++, i = (i + 1) & s->ident_mask) {
		struct host *h = hs_ident_at(s, i);
		uint32_t age;

		if (!exact && victim && (found == EVICT_SAMPLE || walked >= EVICT_WALK_MAX))
			break;
		if (!h || origin_pinned(h->origin) || h == keep || (keep && ring_has(keep, h)))
			continue;
		age = host_age(s, h);
		if (!victim || age > oldest) {
			victim = h;
			oldest = age;
		}
		found++;
	}
	s->evict_at = i;
	return victim;
}

/* The least recently used learned hosts go, a whole host at a time (every
 * endpoint of it), never @keep's. */
static void evict_over_bound(struct host_store *s, const struct host *keep)
{
	while (s->stats.learned > s->max_hosts) {
		struct host *victim = evict_pick(s, keep);

		if (!victim)
			return;
		while (victim->sib_next) {
			hs_host_remove(s, victim->sib_next);
			s->stats.evictions++;
		}
		hs_host_remove(s, victim);
		s->stats.evictions++;
	}
}

void store_set_max_hosts(struct host_store *s, unsigned max_hosts)
{
	if (!max_hosts || max_hosts > STORE_HOSTS_LIMIT)
		return;
	s->max_hosts = max_hosts;
	evict_over_bound(s, NULL);
}

/* ---- the observer ---------------------------------------------------------- */

void store_observe(struct host_store *s, const struct store_observer *o)
{
	s->ob = o ? *o : (struct store_observer){ 0 };
}

uint32_t host_cookie(const struct host *h, bool all)
{
	return all ? h->cookie_all : h->cookie;
}

void host_set_cookie(struct host *h, bool all, uint32_t cookie)
{
	if (all)
		h->cookie_all = cookie;
	else
		h->cookie = cookie;
}

const struct host *store_holder(const struct host_store *s, const struct host_key *k)
{
	long at;

	if (!host_key_valid(k))
		return NULL;
	at = hs_slot_find(s, k, hs_hash(s, k));
	return at < 0 ? NULL : hs_at(s, at);
}

void store_foreach_host(struct host_store *s, void (*cb)(void *arg, struct host *h), void *arg)
{
	struct host *h;

	hs_foreach_record (s, i, h)
		cb(arg, h);
}

/* ---- look-ups ------------------------------------------------------------ */

/* A LID on fabric f that is keyed elsewhere: an endpoint first heard on a
 * lower-numbered local endpoint that f heard too (one subnet), or a static
 * host's. The slot, or -1. */
static long lid_elsewhere(const struct host_store *s, const struct host_key *k)
{
	uint8_t f = k->data[2];
	struct host_key o = *k;
	long at;

	if (f == HOST_FABRIC_NONE)
		return -1;
	for (uint8_t g = 0; g < f && f < 32; g++) {
		o.data[2] = g;
		at = hs_slot_find(s, &o, hs_hash(s, &o));
		if (at >= 0 && (hs_at(s, at)->heard_on >> f & 1))
			return at;
	}
	o.data[2] = HOST_FABRIC_NONE;
	return hs_slot_find(s, &o, hs_hash(s, &o));
}

struct host *store_lookup(struct host_store *s, const struct host_key *k, uint64_t now_ms,
			  bool count)
{
	struct host *h;
	long at;

	if (!host_key_valid(k)) {
		if (count)
			s->stats.misses++;
		return NULL;
	}
	at = hs_slot_find(s, k, hs_hash(s, k));
	if (at < 0 && k->type == IBRES_KEY_LID)
		at = lid_elsewhere(s, k);
	if (at < 0) {
		if (count)
			s->stats.misses++;
		return NULL;
	}
	/* an expired endpoint goes; a key other endpoints of its host list
	 * passes to one of them, which may live on (its next announce came) */
	while ((h = hs_at(s, at))->expires_ms <= now_ms) {
		bool ring = h->sib_next != NULL;

		hs_host_remove(s, h);
		s->stats.expirations++;
		if (!ring || (at = hs_slot_find(s, k, hs_hash(s, k))) < 0) {
			if (count)
				s->stats.misses++;
			return NULL;
		}
	}
	if (count) {
		s->stats.hits++;
		if (!origin_pinned(h->origin))
			mark_used(s, h);
	}
	return h;
}

/* ---- insertion ------------------------------------------------------------ */

/* A host is a set of endpoints: records with GIDs, of one origin, whose
 * canonical names and rails digests match form a ring, and share their
 * names' keys. @nh joins the ring of the
 * record its canonical name leads to. */
static void join_host(struct host_store *s, struct host *nh)
{
	struct host_key k;
	struct host *holder;
	long at;

	if (!nh->n_names || !nh->n_gids || !nh->rails)
		return; /* a host alone; an endpoint is a port, with a GID */
	hs_key(nh, 0, &k);
	at = hs_slot_find(s, &k, hs_hash(s, &k));
	if (at < 0)
		return;
	holder = hs_at(s, at);
	/* a host has at most HOST_RAILS_MAX endpoints (8 rails of 4 partitions) */
	if (holder->rails == nh->rails && holder->origin == nh->origin &&
	    hs_same_canonical(holder, nh) && host_endpoint_count(holder) < HOST_RAILS_MAX)
		ring_link(nh, holder);
}

/* The hosts a new record took keys from (each once; none that went). */
static void moved_add(struct host **moved, unsigned *n, struct host *h)
{
	for (unsigned i = 0; i < *n; i++)
		if (moved[i] == h)
			return;
	if (*n < HOST_KEYS_MAX)
		moved[(*n)++] = h;
}

static void moved_forget(struct host **moved, unsigned *n, const struct host *h)
{
	for (unsigned i = 0; i < *n; i++)
		if (moved[i] == h) {
			moved[i] = moved[--*n];
			return;
		}
}

/* May a key of type @type lead to another endpoint of its host? A name, or
 * a port's GID and LID (partitions), which the endpoints share; an address
 * is one endpoint's. store_insert() takes the others back. */
static bool key_shareable(uint8_t type)
{
	return type == IBRES_KEY_NAME || type == IBRES_KEY_GID || type == IBRES_KEY_LID;
}

/* Would inserting @h's record again leave every key where it is? Alone:
 * every key leads to it. An endpoint of a host: every key leads to it, or
 * one the endpoints share to another endpoint of its host (the one that
 * held it first). */
static bool keys_in_place(const struct host_store *s, const struct host *h)
{
	struct host_key k;

	if (!h->sib_next)
		return h->n_indexed == h_nkeys(h);
	for (unsigned i = 0, n = h_nkeys(h); i < n; i++) {
		const struct host *holder;
		long at;

		hs_key(h, i, &k);
		at = hs_slot_find(s, &k, hs_hash(s, &k));
		if (at < 0)
			return false;
		holder = hs_at(s, at);
		if (holder != h && !(key_shareable(k.type) && ring_has(h, holder)))
			return false;
	}
	return true;
}

void hs_expiry_moved(struct host_store *s, struct host *h)
{
	if (s->ob.refresh) {
		s->ob.refresh(s->ob.arg, h);
	} else if (s->ob.put) {
		s->ob.put(s->ob.arg, h);
		if (h->sib_next)
			hs_ring_changed(s, h, h); /* its host's record expires with it */
	}
}

/* Whether @h's daemon announces, for its host's every endpoint (a daemon
 * announces on all its ports or none): a datagram that says it is taken
 * at its word, and so is an old daemon's ANNOUNCE (it announces from its
 * first on); one that says nothing keeps what @was (@h before, or the
 * identity it replaced) or any of the host's endpoints knew. A host that
 * no longer announces loses its marks: its silence says nothing. (A
 * multicast ANNOUNCE sent before a reload to 0 may be read after a later
 * unicast datagram: then it announces for us until its next datagram.) */
static void put_announces(struct host *h, const struct store_put *how, bool was)
{
	bool any = how->announces;

	if (!how->says && !any) {
		any = was;
		for (const struct host *e = h->sib_next; e && e != h; e = e->sib_next)
			any |= e->announces;
	}
	h->announces = any;
	h->unheard &= any;
	for (struct host *e = h->sib_next; e && e != h; e = e->sib_next) {
		e->announces = any;
		e->unheard &= any;
	}
}

/* A learned endpoint heard again as it is, every key in place: only its
 * expiry and announce number move. Most of a boot storm's datagrams repeat
 * what the first one taught (bench/RESULTS.md), and so does every periodic
 * announce: a new record, its keys and the shared directory's record (for
 * an endpoint of a host of several, the whole host's) would cost each as
 * much again. */
static bool hs_refresh(struct host_store *s, struct host *h, const struct ibres_hostrec *r,
		       const struct store_put *how, uint64_t now_ms)
{
	if (h->origin != how->origin || origin_pinned(h->origin) || h->rails != how->rails ||
	    (h->heard_on | how->heard_on) != h->heard_on ||
	    (how->grp_mtu && (how->grp_mtu != h->grp_mtu || how->grp_rate != h->grp_rate)) ||
	    !hs_same_rec(h, r) || !keys_in_place(s, h))
		return false;
	h->expires_ms = deadline(now_ms, how->ttl_s);
	h->unheard = 0;
	put_announces(h, how, h->announces);
	if (how->seq)
		h->seq = how->seq;
	s->stats.inserts++;
	hs_expiry_moved(s, h);
	return true;
}

bool store_refresh(struct host_store *s, const struct ibres_hostrec *r, const struct store_put *how,
		   uint64_t now_ms, uint32_t *seq_before)
{
	struct host_key id;
	struct host *h;

	if (seq_before)
		*seq_before = 0;
	if (!s || !r || !how || hs_rec_validate(r))
		return false;
	hs_rec_ident(r, &id);
	h = hs_ident_find(s, &id);
	if (!h || h->expires_ms <= now_ms)
		return false; /* expired: gone, as a lookup would have found it */
	if (seq_before && h->origin == IBRES_ORIGIN_FABRIC && (h->heard_on & how->heard_on) &&
	    hs_canonical_is(h, r->names[0]))
		*seq_before = h->seq;
	return hs_refresh(s, h, r, how, now_ms);
}

int store_insert(struct host_store *s, const struct ibres_hostrec *r, const struct store_put *how,
		 uint64_t now_ms, struct host **out)
{
	uint8_t origin = how ? how->origin : 0xff, grp_mtu, grp_rate;
	uint32_t heard_on, ttl_s;
	struct host *nh, *old, *moved[HOST_KEYS_MAX];
	unsigned n_moved = 0;
	struct host_key id, k;
	unsigned nk, changed = 0;
	bool was_announcing;
	int ret;

	if (out)
		*out = NULL;
	if (!s || !r || origin > IBRES_ORIGIN_FABRIC)
		return -EINVAL;
	heard_on = how->heard_on;
	ttl_s = how->ttl_s;
	grp_mtu = how->grp_mtu;
	grp_rate = how->grp_rate;
	ret = hs_rec_validate(r);
	if (ret)
		return ret;
	hs_rec_ident(r, &id);
	old = hs_ident_find(s, &id);
	if (old && origin_rank(old->origin) < origin_rank(origin))
		return 0; /* a more authoritative record of this host wins */
	if (old && hs_refresh(s, old, r, how, now_ms)) {
		if (out)
			*out = old;
		return 0;
	}

	/* a learned endpoint stays reachable through every port that heard it */
	if (old && old->origin == origin && origin == IBRES_ORIGIN_FABRIC)
		heard_on |= old->heard_on;

	/* Everything that can fail, before anything changes. */
	nh = hs_pack(r, origin, heard_on);
	if (!nh)
		return -ENOMEM;
	nh->rails = how->rails;
	nh->seq = how->seq ? how->seq : old && old->origin == origin ? old->seq : 0;
	was_announcing = old && old->origin == origin && old->announces;
	nk = h_nkeys(nh);
	if (hs_slots_reserve(s, nk) < 0 || hs_idents_reserve(s) < 0) {
		free(nh);
		return -ENOMEM;
	}

	nh->expires_ms = origin_pinned(origin) ? UINT64_MAX : deadline(now_ms, ttl_s);
	if (old) {
		nh->grp_mtu = old->grp_mtu;
		nh->grp_rate = old->grp_rate;
		/* paths carry the LID, and the common group's MTU and rate */
		if (old->lid == nh->lid &&
		    (!grp_mtu || (grp_mtu == old->grp_mtu && grp_rate == old->grp_rate)))
			hs_routes_move(s, old, nh);
		nh->cookie = old->cookie; /* the observer's records follow the host */
		nh->cookie_all = old->cookie_all;
		old->cookie = old->cookie_all = 0;
		/* a refresh is not a use: the host keeps its place in the order */
		if (!origin_pinned(origin))
			nh->used = old->used;
		changed += hs_host_remove(s, old);
	}
	join_host(s, nh);
	put_announces(nh, how, was_announcing);
	if (grp_mtu) {
		nh->grp_mtu = grp_mtu;
		nh->grp_rate = grp_rate;
	}
	for (unsigned i = 0; i < nk; i++) {
		uint32_t hash;
		long at;

		hs_key(nh, i, &k);
		hash = hs_hash(s, &k);
		at = hs_slot_find(s, &k, hash);
		if (at >= 0) {
			struct host *holder = hs_at(s, at);

			if (holder == nh)
				continue; /* the record lists this key twice */
			if (key_shareable(k.type) && ring_has(nh, holder))
				continue; /* a name, or a port's GID and LID, the host's endpoints share */
			if (origin_rank(holder->origin) < origin_rank(origin))
				continue; /* held by a more authoritative host */
			/* a key that moved: it is this host's now */
			holder->n_indexed--;
			hs_at_set(s, at, nh, i);
			nh->n_indexed++;
			if (!holder->n_indexed && !holder->sib_next) {
				moved_forget(moved, &n_moved, holder);
				hs_host_remove(s, holder);
			} else {
				moved_add(moved, &n_moved, holder);
			}
		} else {
			hs_slot_put(s, s->slots, s->n_slots, slot_make(nh, i, hash, 0), hash);
			nh->n_indexed++;
			s->n_keys++;
		}
		hs_neg_forget(s, &k);
		changed++;
	}
	if (!nh->n_indexed && !nh->sib_next) {
		/* every key is held above: nothing of it is visible (an endpoint
		 * of a host is, through its host, with every key shared) */
		hs_ring_changed(s, ring_unlink(nh), NULL);
		if ((nh->cookie || nh->cookie_all) && s->ob.gone)
			s->ob.gone(s->ob.arg, nh);
		hs_routes_drop(s, nh);
		free(nh);
		if (changed)
			s->stats.inserts++;
		return 0;
	}
	hs_ident_link(s, nh);
	s->stats.hosts++;
	if (!nh->sib_next)
		hs_digest_count(s, nh, 1); /* a new host, not one more endpoint of one */
	hs_fabric_count(s, nh, 0, nh->heard_on);
	if (!origin_pinned(origin)) {
		if (!nh->used)
			mark_used(s, nh);
		if (!nh->sib_next)
			s->stats.learned++; /* a new host, not one more endpoint of one */
	}
	s->stats.inserts++;
	if (s->ob.put) {
		s->ob.put(s->ob.arg, nh);
		/* and the hosts it took keys from: what leads to them changed,
		 * and so did the record of each one's host, which listed the key */
		for (unsigned i = 0; i < n_moved; i++) {
			s->ob.put(s->ob.arg, moved[i]);
			if (moved[i]->sib_next)
				hs_ring_changed(s, moved[i], moved[i]);
		}
	}
	if (nh->sib_next)
		hs_ring_changed(s, nh, nh);
	/* only now: a host it took keys from may be the one evicted, and the
	 * observer was told of it above */
	if (!origin_pinned(origin))
		evict_over_bound(s, nh);
	s->stats.keys = s->n_keys;
	if (out)
		*out = nh;
	return 0;
}
