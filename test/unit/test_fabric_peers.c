// SPDX-License-Identifier: MIT
/*
 * The fetch's choice of the next peer (fabric_peers.c): each port's fabric
 * waits out its own gap while another fabric's peer is asked, an incomplete
 * fabric's peer before a complete one's (even one waiting for its gap), a
 * peer whose digest claimed more than we hold first, and in the hold a
 * claimed peer alone. A fabric of a few ports, zeroed, with a real store.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <stdlib.h>

#include "core/clock.h"
#include "core/endpoints.h"
#include "core/hoststore.h"
#include "fabric/fabric_fetch.h"
#include "fabric/fabric_impl.h"
#include "fabric/fabric_peers.h"

#define PORTS 3

struct fx {
	struct fabric *f;
	struct host_store store;
	struct endpoints eps; /* PORTS of them */
};

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->f = calloc(1, sizeof(*x->f));
	assert_non_null(x->f);
	assert_int_equal(store_init(&x->store, 64), 0);
	x->f->store = &x->store;
	x->f->n_ports = PORTS;
	x->f->eps = &x->eps;
	x->eps.n = PORTS;
	for (unsigned i = 0; i < PORTS; i++) {
		x->eps.ep[i].index = i;
		x->f->ports[i].f = x->f;
		x->f->ports[i].ep = &x->eps.ep[i];
		x->f->ports[i].open = true;
		x->f->ports[i].rule.incomplete = true;
	}
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	store_fini(&x->store);
	free(x->f);
	free(x);
	return 0;
}

/* Peer @n of port @port's fabric heard there, its digest (of that fabric)
 * claiming @hosts hosts: more than the empty store holds when not 0. */
static void hear(struct fabric *f, unsigned port, unsigned n, uint32_t hosts)
{
	static struct fw_msg m;
	struct transport_addr from;

	memset(&m, 0, sizeof(m));
	memset(&from, 0, sizeof(from));
	m.sender.gids[0][0] = 0xfe;
	m.sender.gids[0][1] = 0x80;
	m.sender.gids[0][14] = (uint8_t)port;
	m.sender.gids[0][15] = (uint8_t)n;
	m.sender.n_gids = 1;
	m.has_digest = true;
	m.digest.flags = FW_DIGEST_RANGES | FW_DIGEST_FABRIC;
	m.digest.hosts = hosts;
	fabric_fetch_peer(&f->ports[port], &m, &from);
}

/* The peer fetch_pick_peer() chose, as port * 100 + its number. */
static unsigned picked(const struct fabric *f)
{
	return f->fx.peer.port * 100 + f->fx.peer.gid[15];
}

static void gap(struct fabric *f, unsigned port, uint64_t ms)
{
	f->ports[port].fetch_free_ms = now_ms() + ms;
}

static void test_each_fabric_waits_its_own_gap(void **state)
{
	struct fabric *f = ((struct fx *)*state)->f;
	uint64_t later;
	unsigned seen = 0;

	hear(f, 0, 1, 0);
	hear(f, 1, 1, 0);
	hear(f, 2, 1, 0);
	/* in turn, port after port */
	for (unsigned i = 0; i < PORTS; i++) {
		assert_true(fetch_pick_peer(f, NULL, &later, false));
		seen |= 1u << f->fx.peer.port;
	}
	assert_int_equal(seen, 7);
	/* ports 0 and 1 asked lately: port 2's peer, whatever the turn */
	gap(f, 0, 10000);
	gap(f, 1, 10000);
	for (unsigned i = 0; i < 4; i++) {
		assert_true(fetch_pick_peer(f, NULL, &later, false));
		assert_int_equal(picked(f), 201);
	}
	/* all three waiting: none now, the soonest free one's time told */
	gap(f, 2, 5000);
	assert_false(fetch_pick_peer(f, NULL, &later, false));
	assert_in_range(later, now_ms() + 4000, now_ms() + 5000);
	/* a session going on moves to another peer whatever the gaps */
	assert_true(fetch_pick_peer(f, f->fx.peer.gid, NULL, false));
	/* a gap passed: that fabric again */
	f->ports[1].fetch_free_ms = now_ms();
	assert_true(fetch_pick_peer(f, NULL, &later, false));
	assert_int_equal(picked(f), 101);
}

static void test_incomplete_fabric_first(void **state)
{
	struct fabric *f = ((struct fx *)*state)->f;
	uint64_t later;

	hear(f, 0, 1, 0);
	hear(f, 1, 1, 0);
	hear(f, 2, 1, 0);
	f->ports[0].rule.incomplete = false;
	f->ports[2].rule.incomplete = false;
	/* only port 1 counts itself incomplete: its peer, every time */
	for (unsigned i = 0; i < 4; i++) {
		assert_true(fetch_pick_peer(f, NULL, &later, false));
		assert_int_equal(picked(f), 101);
	}
	/* waiting for its gap, it is waited for: no complete fabric's peer
	 * is asked meanwhile */
	gap(f, 1, 3000);
	assert_false(fetch_pick_peer(f, NULL, &later, false));
	assert_in_range(later, now_ms() + 2000, now_ms() + 3000);
	/* every fabric complete (a node in doubt): any free one's */
	f->ports[1].rule.incomplete = false;
	assert_true(fetch_pick_peer(f, NULL, &later, false));
	assert_int_not_equal(f->fx.peer.port, 1);
}

/* A port that is down or closed: never its peers, claimed or not (nothing
 * would go out), and its claims do not wait. */
static void test_no_peer_through_a_port_down(void **state)
{
	struct fx *x = *state;
	struct fabric *f = x->f;
	uint64_t later;

	hear(f, 0, 1, 0);
	hear(f, 0, 2, 5);
	hear(f, 1, 1, 0);
	hear(f, 2, 1, 0);
	hear(f, 2, 2, 7);
	assert_true(fetch_claim_waits(f));
	x->eps.ep[0].down = true;
	f->ports[2].open = false;
	assert_false(fetch_claim_waits(f));
	for (unsigned i = 0; i < 4; i++) {
		assert_true(fetch_pick_peer(f, NULL, &later, false));
		assert_int_equal(picked(f), 101);
		/* a session going on: none other to move on to */
		assert_false(fetch_pick_peer(f, f->fx.peer.gid, NULL, false));
	}
	assert_false(fetch_pick_peer(f, NULL, &later, true));
	assert_int_equal(later, UINT64_MAX);
	/* back up: its claimed peer first again */
	x->eps.ep[0].down = false;
	assert_true(fetch_claim_waits(f));
	assert_true(fetch_pick_peer(f, NULL, &later, false));
	assert_int_equal(picked(f), 2);
}

static void test_claims_first_and_alone_in_the_hold(void **state)
{
	struct fabric *f = ((struct fx *)*state)->f;
	uint64_t later;

	hear(f, 0, 1, 0);
	hear(f, 1, 1, 0);
	hear(f, 1, 2, 5); /* holds five hosts; we hold none */
	hear(f, 2, 1, 0);
	assert_true(fetch_claim_waits(f));
	for (unsigned i = 0; i < 3; i++) {
		assert_true(fetch_pick_peer(f, NULL, &later, false));
		assert_int_equal(picked(f), 102);
	}
	assert_true(fetch_pick_peer(f, NULL, &later, true));
	assert_int_equal(picked(f), 102);
	/* its fabric waiting for its gap: another fabric's peer meanwhile,
	 * but in the hold (claims alone) it is waited for */
	gap(f, 1, 2000);
	assert_true(fetch_pick_peer(f, NULL, &later, false));
	assert_int_not_equal(f->fx.peer.port, 1);
	assert_false(fetch_pick_peer(f, NULL, &later, true));
	assert_in_range(later, now_ms() + 1000, now_ms() + 2000);
	/* no claim at all: nothing in the hold */
	f->ports[1].fetch_free_ms = 0;
	fetch_forget_peer(f, (uint8_t[16]){0xfe, 0x80, [14] = 1, [15] = 2});
	assert_false(fetch_pick_peer(f, NULL, &later, true));
	assert_int_equal(later, UINT64_MAX);
	assert_false(fetch_claim_waits(f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_each_fabric_waits_its_own_gap, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_incomplete_fabric_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_peer_through_a_port_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_claims_first_and_alone_in_the_hold, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
