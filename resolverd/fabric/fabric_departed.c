// SPDX-License-Identifier: MIT
/*
 * Hosts heard saying GOODBYE, and the peers that missed it
 * (fabric_departed.h).
 */
#include "fabric/fabric_departed.h"
#include "fabric/fabric_impl.h"

#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "ibres_proto.h"

static struct departed *find(struct fabric_departed *d, const struct host_key *k, uint64_t now)
{
	uint64_t term = host_digest_term(k);

	for (unsigned i = 0; i < d->n; i++)
		if (d->e[i].term == term && now < d->e[i].until_ms && d->e[i].name.len == k->len &&
		    !memcmp(d->e[i].name.data, k->data, k->len))
			return &d->e[i];
	return NULL;
}

/* A free entry: an unused one, or the one that expires first. */
static struct departed *slot(struct fabric_departed *d)
{
	struct departed *e = &d->e[0];

	if (d->n < DEPARTED_MAX)
		return &d->e[d->n++];
	for (unsigned i = 1; i < DEPARTED_MAX; i++)
		if (d->e[i].until_ms < e->until_ms)
			e = &d->e[i];
	return e;
}

void fabric_departed_before(const struct fabric *f, struct departed_mark *mk)
{
	struct store_digest dg;

	store_digest(f->store, &dg);
	mk->whole = dg.hosts;
	for (unsigned i = 0; i < f->n_ports; i++) {
		store_fabric_digest(f->store, (int)f->ports[i].ep->index, &dg);
		mk->port[i] = dg.hosts;
	}
}

void fabric_departed_after(struct fabric_port *p, const struct fw_msg *m,
			   const struct departed_mark *mk)
{
	struct fabric *f = p->f;
	struct fabric_departed *d = &f->departed;
	uint64_t now = now_ms();
	struct store_digest dg;
	struct departed *e;
	struct host_key k;
	uint32_t ports = 0;
	bool whole;

	if (host_key_name(&k, m->sender.names[0]) < 0)
		return;
	store_digest(f->store, &dg);
	whole = dg.hosts + 1 == mk->whole;
	for (unsigned i = 0; i < f->n_ports; i++) {
		store_fabric_digest(f->store, (int)f->ports[i].ep->index, &dg);
		if (dg.hosts + 1 == mk->port[i])
			ports |= 1u << i;
	}
	if (!whole && !ports)
		return; /* another endpoint of its host is still heard everywhere */
	e = find(d, &k, now);
	if (!e) {
		e = slot(d);
		*e = (struct departed){.name = k, .term = host_digest_term(&k)};
	}
	e->until_ms = now + (uint64_t)f->cfg->addr_ttl_s * 1000;
	/* said (again: it came back, and left): named anew where it left */
	e->said_ms = now ? now : 1;
	for (unsigned i = 0; i < CFG_MAX_ENDPOINTS; i++)
		if (ports >> i & 1)
			e->told[i] = 0;
	e->ports |= ports;
	e->whole |= whole;
	/* gone, it says; but a restart says so too, and then announces anew:
	 * only an unanswered query confirms it */
	memset(e->gone, 0, sizeof(e->gone));
}

void fabric_departed_back(struct fabric *f, const char *name)
{
	struct fabric_departed *d = &f->departed;
	struct departed *e;
	struct host_key k;

	if (!d->n || host_key_name(&k, name) < 0)
		return;
	e = find(d, &k, now_ms());
	if (e)
		e->until_ms = 0;
}

static bool in_scope(const struct departed *e, unsigned port, bool fabric, uint64_t now)
{
	return now < e->until_ms && (fabric ? e->ports >> port & 1 : e->whole);
}

/* Which remembered hosts make @own into @d: one of them, or all of those
 * in scope (a set of entries). 0: none do. */
static uint64_t explaining(const struct fabric_departed *dp, unsigned port, bool fabric,
			   const struct store_digest *own, const struct fw_digest *d, uint64_t now)
{
	uint64_t all = 0, sum = own->sum, n = 0, extra;

	if (d->hosts <= own->hosts)
		return 0;
	extra = d->hosts - own->hosts;
	for (unsigned i = 0; i < dp->n; i++) {
		if (!in_scope(&dp->e[i], port, fabric, now))
			continue;
		if (extra == 1 && own->sum + dp->e[i].term == d->sum)
			return UINT64_C(1) << i;
		all |= UINT64_C(1) << i;
		sum += dp->e[i].term;
		n++;
	}
	return n == extra && sum == d->sum ? all : 0;
}

/* Did a query where @sender said @e is go unanswered lately? */
static bool stale_word(const struct departed *e, uint64_t sender, uint64_t now)
{
	for (unsigned i = 0; i < DEPARTED_BY; i++)
		if (e->gone[i].ms && e->gone[i].sender == sender &&
		    now - e->gone[i].ms < e->fresh_ms)
			return true;
	return false;
}

static enum departed_verdict verdict(struct fabric_port *p, const struct fw_digest *d,
				     const struct store_digest *own, uint64_t sender)
{
	struct fabric_departed *dp = &p->f->departed;
	uint64_t now = now_ms();
	uint64_t which = explaining(dp, (unsigned)(p - p->f->ports), d->flags & FW_DIGEST_FABRIC,
				    own, d, now);

	_Static_assert(DEPARTED_MAX <= 64, "a set of them is 64 bits");
	if (!which)
		return DEPARTED_NO;
	for (unsigned i = 0; i < dp->n; i++)
		if ((which >> i & 1) && !stale_word(&dp->e[i], sender, now))
			return DEPARTED_QUIET; /* back, and we missed its announces? */
	return DEPARTED_GONE;
}

enum departed_verdict fabric_departed_explains(struct fabric_port *p, const struct fw_digest *d,
					       const struct store_digest *own, uint64_t sender)
{
	enum departed_verdict v = verdict(p, d, own, sender);

	if (v != DEPARTED_NO)
		p->f->departed.explained++;
	return v;
}

bool fabric_departed_gone(struct fabric_port *p, const struct fw_digest *d,
			  const struct store_digest *own, uint64_t sender)
{
	return verdict(p, d, own, sender) == DEPARTED_GONE;
}

bool fabric_departed_unanswered(struct fabric_port *p, const struct host_key *k, uint64_t named_by)
{
	struct fabric *f = p->f;
	struct fabric_departed *dp = &f->departed;
	uint64_t now = now_ms(), first = (uint64_t)f->cfg->negative_ttl_s * 1000;
	/* a peer that missed the GOODBYE forgets the host within a few rounds
	 * (fabric_departed_fewer()): its word is not asked again before its
	 * staleness is no longer recent, later each time, at most a round */
	uint64_t most = p->rule.round_ms;
	unsigned port = (unsigned)(p - f->ports), use = 0;
	struct departed *e = k->type == IBRES_KEY_NAME ? find(dp, k, now) : NULL;

	if (!e || !(e->whole || e->ports >> port & 1))
		return false;
	if (first < DEPARTED_FRESH_MS)
		first = DEPARTED_FRESH_MS;
	if (most < first)
		most = first;
	dp->confirmed++;
	e->fresh_ms = e->fresh_ms ? 2 * e->fresh_ms : first;
	if (e->fresh_ms > most)
		e->fresh_ms = most;
	for (unsigned i = 0; i < DEPARTED_BY; i++) {
		if (e->gone[i].sender == named_by) {
			use = i;
			break;
		}
		if (e->gone[i].ms < e->gone[use].ms)
			use = i; /* the oldest, else */
	}
	e->gone[use].sender = named_by;
	e->gone[use].ms = now;
	return true;
}

/* The entry of digest @d among those agreed on, a fresh one if none. */
static struct departed_fewer *fewer_value(struct departed_fewer *v, const struct fw_digest *d,
					  uint64_t round, uint64_t now)
{
	struct departed_fewer *use = &v[0];

	for (unsigned i = 0; i < DEPARTED_FEWER_VALUES; i++) {
		if (v[i].n && now - v[i].first_ms >= round)
			v[i].n = 0; /* K within a round */
		if (v[i].n && v[i].hosts == d->hosts && v[i].sum == d->sum)
			return &v[i];
	}
	for (unsigned i = 1; i < DEPARTED_FEWER_VALUES && use->n; i++)
		if (!v[i].n || v[i].first_ms < use->first_ms)
			use = &v[i];
	*use = (struct departed_fewer){.hosts = d->hosts, .sum = d->sum, .first_ms = now};
	return use;
}

/* Keep the endpoints of @p's scope (@fabric) not heard since the mark
 * until @until_ms: unheard for DEPARTED_UNHEARD_ROUNDS, as many announces
 * were lost or the host left. Not when our own receive path dropped more
 * than 1 % of the announces due since the mark (the silence may be ours: a
 * busy node drops a few, and must still mend), nor when far more are
 * unheard than the @lacked hosts of our @hosts that the peers lack (the
 * same, unseen: a starved node). */
static unsigned shorten_unheard(struct fabric_port *p, bool fabric, uint64_t lacked, uint64_t hosts,
				uint64_t until_ms)
{
	struct fabric *f = p->f;
	struct fabric_departed *dp = &f->departed;
	int scope = fabric_scope(p, fabric);
	unsigned endpoints, unheard;
	/* the receive path's drops as fabric_digest.c's tick read them */
	uint64_t most, due, drops = f->dg.drops_seen;

	/* counters that went back (a port opened again): all the more ours */
	drops = drops >= dp->drops_at_mark ? drops - dp->drops_at_mark : UINT64_MAX / 100;
	unheard = store_count_unheard(f->store, scope, &endpoints);
	if (!unheard)
		return 0;
	/* an announce of each endpoint a round at least since the mark */
	due = (uint64_t)endpoints * ((now_ms() - dp->marked_ms) / p->rule.round_ms);
	if (drops * 100 > due) {
		log_info("fabric: %llu datagrams dropped here since the mark: no host on %s found "
			 "silent (the silence may be ours)",
			 (unsigned long long)drops, p->ep->cfg.label);
		return 0;
	}
	/* twice the lacked hosts' share of the endpoints, and 2 % and one for
	 * the live hosts whose announces in a row were lost */
	most = 2 * lacked * endpoints / hosts + endpoints / 50 + 1;
	if (unheard > most) {
		log_info("fabric: %u of %u endpoints on %s not heard since the mark, peers lack "
			 "%llu hosts: kept (the silence may be ours)",
			 unheard, endpoints, p->ep->cfg.label, (unsigned long long)lacked);
		return 0;
	}
	return store_shorten_unheard(f->store, scope, until_ms);
}

void fabric_departed_fewer(struct fabric_port *p, const struct fw_digest *d,
			   const struct store_digest *own, const char *sender)
{
	struct fabric *f = p->f;
	struct fabric_departed *dp = &f->departed;
	uint64_t now = now_ms(), round = p->rule.round_ms, term;
	bool fabric = d->flags & FW_DIGEST_FABRIC;
	struct departed_fewer *v;
	struct host_key k;
	unsigned k_peers, n = 0;

	/* senders past their start-up that lack hosts we hold, and agree on
	 * what they hold: peers that lag differ from each other. Complete or
	 * quiet they need not be (a peer whose digests no one explains keeps
	 * every node that hears them incomplete and DISTURBED); the silence
	 * is ours to find, and only where announces refresh every entry */
	if (d->hosts >= own->hosts || d->hosts < 2 ||
	    !(d->flags & (FW_DIGEST_SETTLED | FW_DIGEST_PAST_SETTLE)) ||
	    !fabric_directory_mode(f) || host_key_name(&k, sender) < 0)
		return;
	term = host_digest_term(&k); /* a host, however many ports it has */
	v = fewer_value(dp->fewer[p - f->ports], d, round, now);
	for (unsigned i = 0; i < v->n; i++)
		if (v->senders[i] == term)
			return;
	v->senders[v->n++] = term;
	/* K distinct peers, at most those the digest holds but us (it holds
	 * its sender and us) */
	k_peers = d->hosts - 1 < DIGEST_AGREE_K ? d->hosts - 1 : DIGEST_AGREE_K;
	if (v->n < k_peers)
		return;
	v->n = 0;
	if (dp->marked && now - dp->marked_ms < DEPARTED_UNHEARD_ROUNDS * round)
		return; /* a live host has not yet announced that often since the mark */
	if (dp->marked)
		n = shorten_unheard(p, fabric, own->hosts - d->hosts, own->hosts,
				    now + DEPARTED_UNHEARD_ROUNDS * round);
	store_mark_unheard(f->store);
	dp->marked = true;
	dp->marked_ms = now;
	dp->drops_at_mark = f->dg.drops_seen;
	if (!n)
		return;
	dp->shortened += n;
	log_info("fabric: peers agree on %u hosts on %s, we hold %llu: %u endpoints not heard "
		 "since the mark kept only until their next announce",
		 d->hosts, p->ep->cfg.label, (unsigned long long)own->hosts, n);
}
