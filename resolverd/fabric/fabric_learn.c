// SPDX-License-Identifier: MIT
/*
 * Learning a peer's identity from what it sent (fabric_impl.h): the best
 * group both ends joined, who may claim a name, address, GID or LID (first
 * come, first served within one fabric; a host is a set of endpoints), and
 * the store's refresh or insert. fabric.c's receive path calls these.
 */
#include "fabric/fabric_impl.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/hoststore.h"
#include "core/log.h"

/* The best of our groups that the peer also joined; -1 if none. */
int fabric_best_group(const struct fabric_port *p, const struct fw_group *theirs, unsigned n)
{
	for (int g = (int)p->opened.n_groups - 1; g >= 0; g--)
		for (unsigned i = 0; i < n; i++)
			if (theirs[i].mtu == p->opened.groups[g].mtu &&
			    theirs[i].rate == p->opened.groups[g].rate)
				return g;
	return -1;
}

/* Is the known endpoint @e what @h says, in every word (names, addresses,
 * LID, QPN, P_Key)? */
static bool same_endpoint(struct fabric *f, const struct host *e, const struct ibres_hostrec *h)
{
	struct ibres_hostrec *k = &f->scratch;

	host_record(e, k, 0);
	if (k->lid != h->lid || k->qpn != h->qpn || k->pkey != h->pkey ||
	    k->n_names != h->n_names || k->n_gids != h->n_gids || !hostrec_same_addrs(k, h))
		return false;
	for (unsigned i = 0; i < k->n_names; i++)
		if (strcasecmp(k->names[i], h->names[i]))
			return false;
	for (unsigned i = 0; i < k->n_gids; i++)
		if (memcmp(k->gids[i], h->gids[i], 16))
			return false;
	return true;
}

/* Did @h send the datagram from @from: its address (ip transport), its LID,
 * or without a LID its GID (RoCE's GRH)? What a forger elsewhere on the
 * fabric cannot fake by copying a datagram. */
bool fabric_sent_by(const struct transport_addr *from, const struct ibres_hostrec *h)
{
	if (!from)
		return false;
	if (from->len && from->ss.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&from->ss;

		for (unsigned i = 0; i < h->n_v4; i++)
			if (h->v4[i].s_addr == sin->sin_addr.s_addr)
				return true;
		return false;
	}
	if (from->len && from->ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)&from->ss;

		for (unsigned i = 0; i < h->n_v6; i++)
			if (!memcmp(&h->v6[i], &sin6->sin6_addr, 16))
				return true;
		return false;
	}
	if (from->lid)
		return from->lid == h->lid;
	return h->n_gids && !memcmp(from->gid, h->gids[0], 16);
}

/* May @h be an endpoint of @e's host: one of them already (a refresh), or
 * one more while the host has fewer than HOST_RAILS_MAX? */
static bool room_for(const struct host *e, const struct ibres_hostrec *h)
{
	uint8_t gid[16];
	unsigned n = 0;

	for (const struct host *x = e; x; x = host_next_endpoint(e, x), n++)
		if (!memcmp(host_gid(x, gid), h->gids[0], 16) && host_pkey(x) == h->pkey)
			return true;
	return n < HOST_RAILS_MAX;
}

/* Does @h, heard on local endpoint @fabric, claim a name or address that
 * another live host owns? First come, first served while the owner lives: a
 * forged identity cannot take a name over, and local and static hosts are
 * never taken over. A host is a set of endpoints: another endpoint under the
 * same canonical name shares its names (one rail of a multi-rail node), but
 * never an address, GID or LID. LIDs are compared within one fabric only. */
static bool identity_conflicts(struct fabric *f, const struct ibres_hostrec *h, uint8_t fabric,
			       uint64_t rails, const struct transport_addr *from)
{
	struct host_key keys[HOST_KEYS_MAX];
	unsigned n = host_keys_of(h, fabric, keys);
	uint64_t now = now_ms();
	char name[IBRES_NAME_MAX + 1];
	uint8_t gid[16];

	for (unsigned i = 0; i < n; i++) {
		struct host *e = store_lookup(f->store, &keys[i], now, false);
		bool same;

		if (!e)
			continue;
		/* the same port (GID) under another canonical name is a forgery
		 * too, while the known owner lives */
		same = !strcasecmp(host_name(e, name), h->names[0]);
		if (same && !memcmp(host_gid(e, gid), h->gids[0], 16) && host_pkey(e) == h->pkey) {
			/* itself: as heard before on this fabric, or, first heard
			 * elsewhere (one subnet: every port hears it), word for word
			 * what is known and sent from its own address or LID; never
			 * another plane rewriting it, nor a copy replayed there */
			if ((host_heard_on(e) >> fabric & 1) ||
			    (same_endpoint(f, e, h) && fabric_sent_by(from, h)))
				continue;
		} else if (same &&
			   (keys[i].type == IBRES_KEY_GID || keys[i].type == IBRES_KEY_LID) &&
			   rails && host_rails(e) == rails && room_for(e, h)) {
			continue; /* another partition of the port: its GID and LID */
		}
		/* another endpoint of its host, which named this one (a host
		 * has at most HOST_RAILS_MAX) */
		if (same && keys[i].type == IBRES_KEY_NAME && rails && host_rails(e) == rails &&
		    room_for(e, h))
			continue;
		/* a LID another fabric holds is another subnet's */
		if (keys[i].type == IBRES_KEY_LID && !(host_heard_on(e) >> fabric & 1))
			continue;
		/* a LID the subnet manager gave the sender since (a failover's
		 * reassignment): the datagram comes from it, an InfiniBand
		 * SLID the sending port's HCA sets and no peer can, so it
		 * moves from the host that had it; an IP sender's word proves
		 * no LID */
		if (keys[i].type == IBRES_KEY_LID && from && !from->len && from->lid &&
		    from->lid == h->lid)
			continue;
		if (host_origin(e) != IBRES_ORIGIN_FABRIC || host_expires_ms(e) > now)
			return true;
	}
	return false;
}

/* The rails digest of what @m says of its host: 0 for a host alone, or
 * when its list does not name its own GID (then it is no endpoint of it). */
static uint64_t msg_rails(const struct fw_msg *m)
{
	for (unsigned i = 0; i < m->n_rails; i++)
		if (!memcmp(m->rails[i], m->sender.gids[0], 16))
			return rails_digest((const uint8_t(*)[16])m->rails, m->n_rails);
	return 0;
}

/* May the sender's identity be cached? -EEXIST (counted) if it claims what
 * another live host owns. */
int fabric_learn_check(struct fabric_port *p, const struct fw_msg *m)
{
	struct fabric *f = p->f;

	/* what a local endpoint hears is of its own partition (an IPoIB child
	 * interface, a UD QP's P_Key): a sender naming another forges a
	 * partition (of a real host's port, to join its rails), or is set up
	 * wrong, and a path to it would carry a P_Key this port does not use */
	if (!hostrec_same_partition(m->sender.pkey, p->ep->cfg.id.pkey)) {
		f->c.rx_mismatch++;
		log_debug("fabric: %s names P_Key 0x%04x, heard on %s (P_Key 0x%04x); dropped",
			  m->sender.names[0], m->sender.pkey, p->ep->cfg.label, p->ep->cfg.id.pkey);
		return -EEXIST;
	}

	if (!identity_conflicts(f, &m->sender, (uint8_t)p->ep->index, msg_rails(m), p->rx_from))
		return 0;
	f->c.rx_conflict++;
	log_debug("fabric: %s claims a name or address another host owns; dropped",
		  m->sender.names[0]);
	return -EEXIST;
}

/* What @m says of its sender, for the store, as heard on @p. */
static struct store_put put_of(struct fabric_port *p, const struct fw_msg *m, int group)
{
	struct fabric *f = p->f;
	uint32_t ttl = f->cfg->addr_ttl_s;
	struct store_put how = {
		.origin = IBRES_ORIGIN_FABRIC,
		.heard_on = 1u << p->ep->index,
		.rails = msg_rails(m),
		/* multicast numbers only: they arrive in order
		 * (digest_seq_gap) */
		.seq = m->has_digest && !(m->digest.flags & FW_DIGEST_UNICAST) ? m->digest.seq : 0,
		/* it says so on every datagram; a daemon before the flags
		 * sends an ANNOUNCE with its digest (multicast, or its
		 * unicast answer to a NEWCOMER) only if it announces */
		.says = m->flags & FW_FLAG_SAYS_ANNOUNCES,
		.announces = m->flags & FW_FLAG_SAYS_ANNOUNCES
				     ? m->flags & FW_FLAG_ANNOUNCES
				     : m->type == FW_ANNOUNCE && m->has_digest};

	/* a sender may ask for a shorter lifetime, never a longer one */
	if (m->sender.ttl && m->sender.ttl < ttl)
		ttl = m->sender.ttl;
	how.ttl_s = ttl;
	if (group >= 0) {
		how.grp_mtu = p->opened.groups[group].mtu;
		how.grp_rate = p->opened.groups[group].rate;
	}
	return how;
}

/* Store @how of a sender that passed fabric_learn_check() (refreshed or
 * inserted), and tell the resolver. */
static int keep(struct fabric_port *p, const struct fw_msg *m, const struct store_put *how,
		bool refreshed)
{
	struct fabric *f = p->f;

	if (!refreshed) {
		int ret = store_insert(f->store, &m->sender, how, now_ms(), NULL);

		if (ret)
			return ret;
		/* back (a restart), if it said goodbye: its absence is old news */
		fabric_departed_back(f, m->sender.names[0]);
	}
	if (f->ev.learned)
		f->ev.learned(f->ev.arg, &m->sender);
	return 0;
}

/* Store a sender's identity that passed fabric_learn_check(), and tell the resolver. */
int fabric_learn_store(struct fabric_port *p, const struct fw_msg *m, int group)
{
	struct store_put how = put_of(p, m, group);

	return keep(p, m, &how, false);
}

/* Cache a peer's identity (overheard or answered). A sender heard again as
 * it is stored is only refreshed: each of its keys leads to it or another
 * endpoint of its host, so none can conflict (most of a boot storm's
 * datagrams, and every periodic announce). *@prev_seq (may be NULL): the
 * announce number this endpoint had, heard here before (0: none). */
int fabric_learn(struct fabric_port *p, const struct fw_msg *m, int group, uint32_t *prev_seq)
{
	struct store_put how = put_of(p, m, group);
	int ret;

	if (store_refresh(p->f->store, &m->sender, &how, now_ms(), prev_seq))
		return keep(p, m, &how, true);
	ret = fabric_learn_check(p, m);
	return ret ? ret : keep(p, m, &how, false);
}
