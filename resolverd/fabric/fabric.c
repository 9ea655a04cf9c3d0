// SPDX-License-Identifier: MIT
/*
 * The fabric protocol core (doc/fabric-protocol.md): REQUEST / REPLY /
 * ANNOUNCE / GOODBYE over any transport, overhearing, retries with backoff
 * and jitter, and the cluster directory that lets unknown names be answered
 * "not found" without a multicast wait.
 */
#include "fabric/fabric.h"
#include "fabric/fabric_impl.h"
#include "fabric/fabric_peers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/jitter.h"
#include "core/hoststore.h"
#include "fabric/fabric_wire.h"
#include "core/log.h"
#include "ib/path.h"
#include "ib/sa.h"
#include "ibenum.h"
#include "tlv.h"
#include "fabric/transport.h"

#define REANNOUNCE_MS 1000 /* an identity change is announced at once and again after this */

static void on_identity(void *arg, const struct endpoint *ep, const struct ibres_hostrec *old,
			unsigned changes);
static void on_reannounce(struct loop_timer *t);

void fabric_path_params(struct sa_client *sa, const struct endpoint *ep, const struct host *h,
			struct path_params *pp)
{
	uint8_t mtu, rate;

	path_params_of(&ep->cfg, pp);
	if (host_origin(h) == IBRES_ORIGIN_LOCAL || !ep->cfg.n_groups)
		return;
	host_group(h, &mtu, &rate);
	if (!mtu)
		mtu = ep->cfg.groups[0].mtu;
	if (!rate)
		rate = ep->cfg.groups[0].rate;
	/* the group's parameters, never above what the endpoint itself can do */
	if (mtu < pp->mtu)
		pp->mtu = mtu;
	if (ib_rate_to_gbps10(rate) < ib_rate_to_gbps10(pp->rate))
		pp->rate = rate;
	/* on IB: what the SA answered when the port joined that group */
	sa_group_path_params(sa, ep, mtu, rate, pp);
}

/* --- queries ---------------------------------------------------------------- */

int fabric_send_request(struct fabric *f, const struct host_key *k, uint64_t tid)
{
	struct fw_msg m;
	int ret = -ENOTCONN;

	if (!f)
		return -EOPNOTSUPP;
	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];

		if (!fabric_port_up(p))
			continue;
		fabric_msg_init(p, &m, FW_REQUEST, tid);
		m.has_target = true;
		m.target = *k;
		if (fabric_port_send(p, &m, NULL) == 0) {
			f->c.requests_sent++;
			ret = 0;
		}
	}
	return ret;
}

int fabric_send_request_at(struct fabric *f, const struct host_key *k, uint64_t tid,
			   const struct fabric_at *at)
{
	struct fabric_port *p;
	struct fw_msg m;

	if (!f || !at || at->port >= f->n_ports)
		return fabric_send_request(f, k, tid);
	p = &f->ports[at->port];
	if (!fabric_port_up(p))
		return -ENOTCONN;
	fabric_msg_init(p, &m, FW_REQUEST, tid);
	m.has_target = true;
	m.target = *k;
	if (fabric_port_send(p, &m, at->group ? NULL : &at->addr) < 0)
		return -EIO;
	f->c.requests_sent++;
	f->c.requests_unicast += !at->group;
	return 0;
}

uint64_t fabric_cut_off_since(struct fabric *f)
{
	bool up = false;

	if (!f || !f->n_ports)
		return 0;
	for (unsigned i = 0; i < f->n_ports; i++)
		up |= fabric_port_up(&f->ports[i]);
	if (up)
		f->cut_off_since_ms = 0;
	else if (!f->cut_off_since_ms)
		f->cut_off_since_ms = now_ms() ? now_ms() : 1;
	return f->cut_off_since_ms;
}

int fabric_at_rail(const struct fabric *f, const struct endpoint *ep, struct fabric_at *at)
{
	for (unsigned i = 0; f && i < f->n_ports; i++) {
		if (f->ports[i].ep != ep || !fabric_port_up(&f->ports[i]))
			continue;
		memset(at, 0, sizeof(*at));
		at->port = i;
		at->group = true;
		return 0;
	}
	return -ENOENT;
}

/* --- receiving ---------------------------------------------------------------- */

static bool key_matches_host(const struct host_key *k, const struct ibres_hostrec *h)
{
	/* a LID is never asked on the fabric */
	return k->type != IBRES_KEY_LID && hostrec_has_key(h, k->type, k->data, k->len);
}

static void on_request(struct fabric_port *p, const struct fw_msg *m,
		       const struct transport_addr *from)
{
	struct fabric *f = p->f;
	int g = fabric_best_group(p, m->groups, m->n_groups);
	struct fw_msg r;

	/* every receiver stores the requester */
	if (!key_matches_host(&m->target, &p->ep->cfg.id)) {
		if (fabric_learn(p, m, g, NULL) == 0)
			f->c.overheard++;
		return;
	}
	if (fabric_learn_check(p, m))
		return; /* a forged requester gets nothing from us */
	fabric_msg_init(p, &r, FW_REPLY, m->tid);
	r.has_chosen = true;
	r.chosen.mtu = p->opened.groups[g < 0 ? 0 : g].mtu;
	r.chosen.rate = p->opened.groups[g < 0 ? 0 : g].rate;
	if (fabric_port_send(p, &r, from) == 0)
		f->c.replies_sent++;
	/* the requester waits for the REPLY, not for our bookkeeping */
	if (fabric_learn_store(p, m, g) == 0)
		f->c.overheard++;
}

static void on_reply(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct host_key key;

	if (!f->ev.query_key || f->ev.query_key(f->ev.arg, m->tid, &key) < 0) {
		/* unsolicited: nothing of it goes into the store */
		f->c.rx_unsolicited++;
		return;
	}
	if (!key_matches_host(&key, &m->sender)) {
		f->c.rx_mismatch++;
		return;
	}
	/* learning it ends the query (the resolver hears of it) */
	if (fabric_learn(p, m, fabric_best_group(p, &m->chosen, 1), NULL) == 0)
		fabric_fetch_replier(p, m, p->rx_from);
}

/* The endpoint of port GID @gid and P_Key @pkey, learned from the fabric
 * under canonical name @name and heard on @p; NULL when there is none. */
static struct host *heard_endpoint(struct fabric_port *p, const uint8_t gid[16], uint16_t pkey,
				   const char *name)
{
	struct fabric *f = p->f;
	char known[IBRES_NAME_MAX + 1];
	uint8_t egid[16];
	struct host_key gk;
	struct host *h;

	host_key_addr(&gk, IBRES_KEY_GID, gid);
	h = store_lookup(f->store, &gk, now_ms(), false);
	for (struct host *e = h; e; e = host_next_endpoint(h, e))
		if (host_origin(e) == IBRES_ORIGIN_FABRIC && !memcmp(host_gid(e, egid), gid, 16) &&
		    host_pkey(e) == pkey && (host_heard_on(e) >> p->ep->index & 1) &&
		    !strcasecmp(host_name(e, known), name))
			return e;
	return NULL;
}

static void on_announce(struct fabric_port *p, const struct fw_msg *m,
			const struct transport_addr *from)
{
	struct fabric *f = p->f;
	uint32_t prev_seq;

	if (fabric_learn(p, m, fabric_best_group(p, m->groups, m->n_groups), &prev_seq) == 0) {
		f->c.overheard++;
		/* compared once its sender is ours too; a refused sender's
		 * word counts for nothing */
		fabric_digest_heard(p, m, prev_seq);
		fabric_fetch_peer(p, m, from);
		fabric_gone_heard(p, m, from);
	}
	if (m->flags & FW_FLAG_NEWCOMER)
		fabric_answer_newcomer(p, m, from);
}

static void on_goodbye(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct departed_mark mk;
	struct host_key gk;

	/* only the identity we know, heard here and sending it from its own
	 * address or LID, may say goodbye for it: not a forger on another rail */
	if (!heard_endpoint(p, m->sender.gids[0], m->sender.pkey, m->sender.names[0]) ||
	    !fabric_sent_by(p->rx_from, &m->sender)) {
		f->c.rx_mismatch++;
		return;
	}
	f->c.goodbyes_rx++;
	/* that endpoint only: the node's other rails and partitions stay; a
	 * peer that missed this still holds it (fabric_departed.h), until our
	 * announces name it (fabric_gone.h) */
	fabric_departed_before(f, &mk);
	store_remove_endpoint(f->store, m->sender.gids[0], m->sender.pkey);
	fabric_departed_after(p, m, &mk);
	/* a port gone from the fabric is no peer to ask (a session would wait
	 * for it, then count a loss); its other partitions keep it one */
	host_key_addr(&gk, IBRES_KEY_GID, m->sender.gids[0]);
	if (!store_lookup(f->store, &gk, now_ms(), false))
		fetch_forget_peer(f, m->sender.gids[0]);
}

/* Another endpoint of the sender's host went down (its port cannot say so):
 * the sender must be an endpoint heard here, the target one of its host's. */
static void on_rail_down(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;
	struct host *sender = fabric_sent_by(p->rx_from, &m->sender)
				      ? heard_endpoint(p, m->sender.gids[0], m->sender.pkey,
						       m->sender.names[0])
				      : NULL;
	struct host *target = NULL;
	struct host_key gk;
	uint8_t gid[16];

	for (struct host *e = sender ? host_next_endpoint(sender, sender) : NULL; e;
	     e = host_next_endpoint(sender, e))
		if (!memcmp(host_gid(e, gid), m->target.data, 16))
			target = e;
	if (!target) {
		/* a repeat of one taken already (nobody holds the GID now) is
		 * no mismatch; one from nowhere, or naming another's port, is */
		host_key_addr(&gk, IBRES_KEY_GID, m->target.data);
		if (!sender || store_lookup(f->store, &gk, now_ms(), false))
			f->c.rx_mismatch++;
		return;
	}
	f->c.goodbyes_rx++;
	/* the port is down: every partition of it */
	store_remove_gid(f->store, m->target.data);
}

/* An authenticated datagram: is it new, or a copy of an old one? Only
 * fresh ones are taken (every message type: a replayed GOODBYE would drop a
 * live node, a replayed ANNOUNCE bring back an old identity). */
static bool fresh(struct fabric *f, const struct fw_msg *m, unsigned port)
{
	uint64_t wall = wall_us(), now = now_ms();

	switch (fresh_check(&f->fresh, m->sender.gids[0], m->sender.pkey, port,
			    m->has_stamp ? m->stamp : 0, wall, now)) {
	case FRESH_OK:
		return true;
	case FRESH_STALE:
		f->c.rx_stale++;
		/* most likely clocks that disagree: say so, once a minute */
		if (!f->stale_logged_ms || now - f->stale_logged_ms >= 60000) {
			f->stale_logged_ms = now ? now : 1;
			log_warn("fabric: a datagram from %s is %s our clock by more than %llu s "
				 "(or has no stamp): dropped; do the nodes' clocks agree?",
				 m->sender.names[0],
				 m->has_stamp && m->stamp > wall ? "ahead of" : "behind",
				 FRESH_WINDOW_US / 1000000);
		}
		return false;
	case FRESH_DUPLICATE:
		f->c.rx_duplicate++;
		return false;
	case FRESH_REPLAYED:
		f->c.rx_replayed++;
		return false;
	}
	return false;
}

static void on_datagram(struct transport *t, const uint8_t *buf, size_t len,
			const struct transport_addr *from)
{
	struct fabric_port *p = t->owner;
	struct fabric *f = p->f;
	struct fw_msg m;
	enum fw_error err;

	f->c.rx++;
	/* a datagram from before the rail went down, or to a port whose
	 * endpoint a reload removed: nothing to learn there, nothing to answer */
	if (!fabric_port_up(p)) {
		if (fabric_port_removed(p))
			log_debug("fabric: a datagram to the port of removed endpoint %s: ignored",
				  p->opened.label);
		return;
	}
	err = fw_decode(buf, len, f->keys.n ? f->keys.key[0] : NULL, f->keys.len[0], &m);
	if (err == FW_ERR_AUTH && f->keys.n > 1) {
		/* a key change in progress: the other key of the file */
		err = fw_decode(buf, len, f->keys.key[1], f->keys.len[1], &m);
		if (err == FW_OK)
			f->c.rx_auth_second_key++;
	}
	if (err == FW_ERR_VERSION) {
		f->c.rx_bad_version++;
		return;
	}
	if (err == FW_ERR_AUTH) {
		f->c.rx_auth_failed++;
		return;
	}
	if (err != FW_OK) {
		f->c.rx_malformed++;
		return;
	}
	if (endpoints_own_gid(f->eps, m.sender.gids[0])) {
		f->c.rx_self++;
		return;
	}
	if (f->keys.n && !fresh(f, &m, (unsigned)(p - f->ports)))
		return;
	p->rx_from = from;
	switch (m.type) {
	case FW_REQUEST:
		on_request(p, &m, from);
		break;
	case FW_REPLY:
		on_reply(p, &m);
		break;
	case FW_ANNOUNCE:
		on_announce(p, &m, from);
		break;
	case FW_GOODBYE:
		on_goodbye(p, &m);
		break;
	case FW_RANGE_QUERY: {
		/* the asker is learned like a requester: a node nobody heard
		 * of, asking, becomes known; told whether a multicast announce
		 * of it was heard here (its NEWCOMER got out, or not: learned
		 * from an answer, a request or a query does not tell) */
		uint32_t prev_seq = 0;

		if (fabric_learn(p, &m, fabric_best_group(p, m.groups, m.n_groups), &prev_seq) ==
		    0) {
			f->c.overheard++;
			fabric_fetch_asker(p, &m, from);
		}
		fabric_range_answer(p, &m, from, !prev_seq);
		break;
	}
	case FW_RANGE_ANSWER:
		fabric_fetch_answer(p, &m);
		break;
	case FW_RAIL_DOWN:
		on_rail_down(p, &m);
		break;
	}
	p->rx_from = NULL;
	if (f->fx.unheard) {
		int again = fabric_newcomer_again(f);

		if (again != -EAGAIN)
			fabric_fetch_newcomer_sent(f, !again);
	}
	/* a digest heard, or a host learned that a peer's digest had */
	fabric_digest_update(f);
}

/* --- policy ------------------------------------------------------------------ */

static bool name_is_cluster_name(const struct ibres_config *cfg, const struct host_key *k)
{
	char name[HOST_KEY_MAX + 1];

	memcpy(name, k->data, k->len);
	name[k->len] = '\0';
	return hostrec_name_in_patterns(name, cfg->patterns[0], sizeof(cfg->patterns[0]),
					cfg->n_patterns);
}

uint64_t fabric_authoritative_from(const struct fabric *f)
{
	/* With announcements on, the cache holds the whole directory once the
	 * settle time has passed and no peer's digest says otherwise: what is
	 * not there does not exist. Without a fabric, the store is all there
	 * is. */
	if (!f)
		return 0;
	if (!fabric_directory_mode(f) || fabric_digest_incomplete(f))
		return UINT64_MAX;
	return f->settled_ms;
}

bool fabric_may_query(struct fabric *f, const struct host_key *k)
{
	uint64_t now = now_ms();

	if (!f || k->type == IBRES_KEY_LID)
		return false;
	if (k->type == IBRES_KEY_NAME && !name_is_cluster_name(f->cfg, k))
		return false;
	/* the verdict as of now: hosts may have expired since the last
	 * datagram or tick (fewer peers known: fewer voices needed) */
	fabric_digest_update(f);
	if (now >= fabric_authoritative_from(f))
		return false;
	if (fabric_directory_mode(f) && now >= f->settled_ms)
		f->dg.incomplete_queries++; /* settled, but a peer holds more */
	return true;
}

/* --- life cycle ---------------------------------------------------------------- */

/* The ib transport's window on the SA client. */
static int port_group_address(struct transport *t, unsigned g, uint8_t mgid[16], uint16_t *mlid,
			      uint32_t *qkey, uint8_t *sl)
{
	struct fabric_port *p = t->owner;

	return sa_group_address(p->f->sa, p->ep, g, mgid, mlid, qkey, sl);
}

static void port_event(struct transport *t, const char *what)
{
	struct fabric_port *p = t->owner;

	if (fabric_port_removed(p))
		return; /* its endpoint removed by a reload: no rail */
	/* the port's own word on its state: a RoCE port has no SA port that
	 * polls it (ib/port.c), an IB port's poll says the same */
	if (!strcmp(what, "PORT_ERR"))
		endpoint_set_down(p->f->eps, p->ep, true);
	else if (!strcmp(what, "PORT_ACTIVE"))
		endpoint_set_down(p->f->eps, p->ep, false);
	sa_port_changed(p->f->sa, p->ep, what);
}

/* What @p's transport gives its endpoint's identity @id: peers reach it at
 * its UD QP and, on RoCE, at the GID the transport found in the port's GID
 * table (the config may name none). At open, and again after a reload
 * copied the config over the endpoint. */
static void port_identity(const struct fabric_port *p, struct ibres_hostrec *id)
{
	static const uint8_t zero[16];

	id->qpn = p->t.qpn;
	if (memcmp(p->t.gid, zero, 16)) {
		memcpy(id->gids[0], p->t.gid, 16);
		if (!id->n_gids)
			id->n_gids = 1;
	}
}

int fabric_start(struct fabric **out, const struct fabric_deps *deps)
{
	struct endpoints *eps = deps->eps;
	uint64_t senders, n_slots;
	struct fabric *f;
	int ret = 0;

	*out = NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->cfg = deps->cfg;
	f->loop = deps->loop;
	f->eps = eps;
	f->store = deps->store;
	f->sa = deps->sa;
	f->ev = deps->ev;
	f->announce_timer.cb = fabric_on_announce_timer;
	f->reannounce_timer.cb = on_reannounce;
	f->goodbye_timer.cb = fabric_on_goodbye_timer;
	jitter_seed(&f->rng);
	/* tables of senders: every endpoint of a full cache, the hosts having
	 * as many endpoints as this one (identical nodes) */
	senders = (uint64_t)f->cfg->cache_size * (eps->n ? eps->n : 1);
	n_slots = NEWCOMER_SLOTS;
	while (NEWCOMER_SIZED && n_slots * 2 < senders && n_slots < NEWCOMER_SLOTS_MAX)
		n_slots <<= 1;
	f->newcomers = calloc(n_slots, sizeof(*f->newcomers));
	if (!f->newcomers) {
		ret = -ENOMEM;
		goto err;
	}
	f->newcomer_mask = (unsigned)n_slots - 1;
	if (f->cfg->cluster_key_file[0]) {
		ret = fabric_keys_load(&f->keys, f->cfg->cluster_key_file);
		if (!ret)
			ret = fresh_init(&f->fresh, senders);
		if (ret)
			goto err;
	}
	for (unsigned i = 0; i < eps->n; i++) {
		struct fabric_port *p = &f->ports[f->n_ports];
		const struct transport_ops *ops = transport_for(&eps->ep[i].cfg);

		if (!ops)
			continue;
		p->f = f;
		p->ep = &eps->ep[i];
		p->t.ops = ops;
		p->t.recv = on_datagram;
		p->t.owner = p;
		p->t.group_address = port_group_address;
		p->t.port_event = port_event;
		f->n_ports++;
		p->opened = p->ep->cfg;
		ret = p->t.ops->open(&p->t, f->loop, &p->opened);
		if (ret == -EPROTONOSUPPORT) {
			/* not an InfiniBand port (logged): that endpoint goes without */
			memset(p, 0, sizeof(*p));
			f->n_ports--;
			continue;
		}
		if (ret)
			goto err;
		p->open = true;
		if (p->t.qpn) {
			struct ibres_hostrec id = p->ep->cfg.id;

			port_identity(p, &id);
			if (memcmp(&id, &p->ep->cfg.id, sizeof(id)))
				endpoint_update(eps, p->ep, &id);
		}
		for (unsigned g = 0; g < p->opened.n_groups; g++) {
			ret = p->t.ops->join(&p->t, g);
			if (ret)
				goto err;
		}
		log_info("fabric: endpoint %s on %s via %s, %u groups", p->ep->cfg.label,
			 p->opened.transport == TRANSPORT_IB ? p->opened.device
							      : p->opened.interface,
			 p->t.ops->name, p->opened.n_groups);
	}
	if (!f->n_ports) {
		fresh_fini(&f->fresh);
		free(f->newcomers);
		free(f);
		return 0;
	}
	*out = f;
	ret = endpoints_listen(eps, on_identity, f);
	if (ret)
		goto err;
	f->settled_ms = now_ms() + f->cfg->settle_ms;
	fabric_digest_start(f);
	fabric_fetch_start(f);
	if (fabric_announcing(f))
		fabric_burst_begin(f);
	return 0;
err:
	*out = NULL;
	fabric_stop(f);
	return ret;
}

void fabric_resync(struct fabric *f)
{
	if (!f || !fabric_announcing(f))
		return;
	/* the directory is incomplete again: ask everyone, as at start-up */
	f->settled_ms = now_ms() + f->cfg->settle_ms;
	fabric_digest_reset(f);
	fabric_burst_begin(f);
}

/* Announce now instead of at the next period (nothing when announcements
 * are off). */
static void fabric_announce_now(struct fabric *f)
{

	/* the timer carries on with the start-up announcements, if any are
	 * left, then with the period counted from now */
	if (f && fabric_announcing(f))
		loop_timer_arm(f->loop, &f->announce_timer, now_ms());
}

void fabric_apply_endpoint(struct fabric *f, struct endpoint *ep)
{

	for (unsigned i = 0; f && i < f->n_ports; i++)
		if (f->ports[i].open && f->ports[i].ep == ep && f->ports[i].t.qpn)
			port_identity(&f->ports[i], &ep->cfg.id);
}

/* A rail went down: the node's other rails say so (RAIL_DOWN, naming its
 * GID), so that peers drop that endpoint only (its own port cannot say it). Back up:
 * it announces itself as a newcomer, and peers answer with theirs, which it
 * forgot when it went down. */
static void rail_state(struct fabric *f, const struct endpoint *ep)
{
	fabric_cut_off_since(f); /* the last one down starts the count */
	if (!ep->down) {
		log_info("fabric: endpoint %s is up again: announcing it", ep->cfg.label);
		fabric_say_goodbyes(f); /* renamed while down: announcements off too */
		fabric_resync(f);
		return;
	}
	log_info("fabric: endpoint %s is down: its rail answers nothing, peers are told on "
		 "the others", ep->cfg.label);
	fabric_rail_down_say(f, ep);
}

/* An endpoint's identity changed (core/endpoints.h): an announcement now
 * and once more a little later (for a lost datagram, and for a peer that
 * heard the new owner of a moved address before the old one released it).
 * A new GID or P_Key is a new identity: the old one says goodbye first
 * (fabric_say_goodbyes), since peers let a name move only after its old
 * owner said goodbye (or expired). A new QPN waits for the next period. */
static void on_identity(void *arg, const struct endpoint *ep, const struct ibres_hostrec *old,
			unsigned changes)
{
	struct fabric *f = arg;

	(void)old;
	if (changes & EP_CHANGE_STATE) {
		rail_state(f, ep);
		return;
	}
	if (changes & (EP_CHANGE_ADDRS | EP_CHANGE_PORT | EP_CHANGE_GID)) {
		fabric_say_goodbyes(f);
		fabric_identity_reloaded(f);
	}
}

void fabric_identity_reloaded(struct fabric *f)
{
	if (!f)
		return;
	fabric_announce_now(f);
	if (fabric_announcing(f))
		loop_timer_arm(f->loop, &f->reannounce_timer, now_ms() + REANNOUNCE_MS);
}

static void on_reannounce(struct loop_timer *t)
{
	struct fabric *f = container_of(t, struct fabric, reannounce_timer);

	fabric_announce_now(f);
}

void fabric_stop(struct fabric *f)
{

	if (!f)
		return;
	fabric_announce_all(f, 0, FW_GOODBYE, 0);
	endpoints_unlisten(f->eps, on_identity, f);
	loop_timer_cancel(f->loop, &f->announce_timer);
	loop_timer_cancel(f->loop, &f->reannounce_timer);
	loop_timer_cancel(f->loop, &f->goodbye_timer);
	fabric_fetch_stop(f);
	fabric_digest_stop(f);
	for (unsigned i = 0; i < f->n_ports; i++) {
		struct fabric_port *p = &f->ports[i];

		if (p->t.priv) {
			for (unsigned g = 0; g < p->opened.n_groups; g++)
				p->t.ops->leave(&p->t, g);
			p->t.ops->close(&p->t, f->loop);
		}
	}
	fresh_fini(&f->fresh);
	free(f->newcomers);
	explicit_bzero(&f->keys, sizeof(f->keys));
	free(f);
}

void fabric_stats(const struct fabric *f, struct tlv_writer *w)
{
	static const struct fabric_counters zero;
	const struct fabric_counters *c = f ? &f->c : &zero;
	const struct {
		const char *name;
		uint64_t value;
	} rows[] = {
		{ "fabric_tx_mcast", c->tx_mcast },
		{ "fabric_tx_ucast", c->tx_ucast },
		{ "fabric_tx_errors", c->tx_errors },
		{ "fabric_rx", c->rx },
		{ "fabric_rx_self", c->rx_self },
		{ "fabric_rx_malformed", c->rx_malformed },
		{ "fabric_rx_bad_version", c->rx_bad_version },
		{ "fabric_rx_auth_failed", c->rx_auth_failed },
		{ "fabric_rx_auth_second_key", c->rx_auth_second_key },
		{ "fabric_rx_stale", c->rx_stale },
		{ "fabric_rx_replayed", c->rx_replayed },
		{ "fabric_rx_duplicate", c->rx_duplicate },
		{ "fabric_rx_unsolicited", c->rx_unsolicited },
		{ "fabric_rx_mismatch", c->rx_mismatch },
		{ "fabric_rx_conflict", c->rx_conflict },
		{ "fabric_overheard", c->overheard },
		{ "fabric_requests_sent", c->requests_sent },
		{ "fabric_requests_unicast", c->requests_unicast },
		{ "fabric_replies_sent", c->replies_sent },
		{ "fabric_announces_sent", c->announces_sent },
		{ "fabric_newcomer_repeats", c->newcomer_repeats },
		{ "fabric_goodbyes_rx", c->goodbyes_rx },
		{ "fabric_rail_downs_sent", c->rail_downs_sent },
	};

	struct transport_rx_stats rx_sum;

	fabric_rx_sum(f, &rx_sum);
	const struct {
		const char *name;
		uint64_t value;
	} rx_rows[] = {
		{ "fabric_rx_queue_empty", rx_sum.queue_empty },
		{ "fabric_rx_hca_out_of_buffer", rx_sum.hw_out_of_buffer },
		{ "fabric_rx_queue_slots", rx_sum.slots },
		{ "fabric_rx_socket_drops", rx_sum.sock_drops },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rows[i].value);
	}
	for (size_t i = 0; i < sizeof(rx_rows) / sizeof(rx_rows[0]); i++) {
		tlv_put_str(w, IBRES_T_NAME, rx_rows[i].name);
		tlv_put_u64(w, IBRES_T_COUNTER, rx_rows[i].value);
	}
	/* no fabric: the store is all there is, and complete */
	fabric_digest_stats(f, fabric_authoritative_from(f) <= now_ms(), w);
	fabric_fetch_stats(f, w);
}
