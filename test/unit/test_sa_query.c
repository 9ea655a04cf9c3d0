// SPDX-License-Identifier: MIT
/* resolverd/ib/sa_query.c, the SA client's query engine, over a fake umad_io:
 * retries and timeouts on each query's loop timer, the per-port window,
 * answers to earlier attempts, the port going down, and cancelling at
 * shutdown. Nothing here measures time; timeouts are short so that the loop
 * gets to them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <endian.h>
#include <errno.h>
#include <arpa/inet.h>

#include "daemon.h"
#include "ib/sa.h"
#include "ib/sa_query.h"
#include "ib/umad_io.h"

#define MAX_SENDS     64
#define MAX_DONE      16
#define TEST_BOUND_MS 5000 /* a loop that never stops fails the test instead */
#define ATTEMPT_MASK  0xfu /* the engine's low TID bits */

/* --- a fake umad_io: these definitions keep umad_io.o out of the link ---- */

static char fake_io;
static struct {
	enum umad_io_agent agent;
	uint32_t tid;
	uint8_t mad[MAD_LEN];
} sends[MAX_SENDS];
static unsigned n_sends, stop_at_sends;

static struct ibresd d;

int umad_io_send(struct umad_io *io, enum umad_io_agent agent, const uint8_t *mad, size_t len,
		 uint16_t dlid, uint32_t dqpn, uint8_t sl, uint32_t qkey, unsigned timeout_ms)
{
	(void)dlid;
	(void)dqpn;
	(void)sl;
	(void)qkey;
	(void)timeout_ms;
	assert_ptr_equal(io, &fake_io);
	assert_int_equal(len, MAD_LEN);
	assert_true(n_sends < MAX_SENDS);
	sends[n_sends].agent = agent;
	sends[n_sends].tid = (uint32_t)mad[12] << 24 | (uint32_t)mad[13] << 16 |
			     (uint32_t)mad[14] << 8 | mad[15];
	memcpy(sends[n_sends].mad, mad, MAD_LEN);
	if (++n_sends == stop_at_sends)
		loop_stop(&d.loop);
	return 0;
}

int umad_io_fd(const struct umad_io *io)
{
	(void)io;
	return -1;
}

void umad_io_dispatch(struct umad_io *io)
{
	(void)io;
}

void umad_io_get_stats(const struct umad_io *io, struct umad_io_stats *st)
{
	(void)io;
	memset(st, 0, sizeof(*st));
}

/* --- test queries ---------------------------------------------------------- */

struct tq {
	struct sa_query q;
	unsigned id;
};

static struct {
	unsigned id;
	int status;
} done[MAX_DONE];
static unsigned n_done, stop_at_done;
static enum sa_rx decode_result;
static bool resubmit_on_cancel; /* a waiter that asks again when cancelled */

static struct sa_client *sa;
static struct sa_port *port;

static enum sa_rx t_decode(const struct sa_query *q, const uint8_t *mad, size_t len,
			   union sa_answer *ans)
{
	(void)q;
	(void)mad;
	(void)len;
	memset(ans, 0, sizeof(*ans));
	return decode_result;
}

static void submit(const struct sa_query_ops *ops, unsigned id);

static void t_done(struct sa_query *q, int status, const union sa_answer *ans)
{
	struct tq *t = container_of(q, struct tq, q);

	assert_true(n_done < MAX_DONE);
	assert_true(status || ans);
	done[n_done].id = t->id;
	done[n_done].status = status;
	if (++n_done == stop_at_done)
		loop_stop(&d.loop);
	if (status == -ECANCELED && resubmit_on_cancel) {
		resubmit_on_cancel = false;
		submit(q->ops, 99);
	}
}

static const struct sa_query_ops sa_ops = {
	.name = "test SA query",
	.size = sizeof(struct tq),
	.method = MAD_METHOD_GET,
	.attr = SA_ATTR_PATH_REC,
	.decode = t_decode,
	.done = t_done,
};

static const struct sa_query_ops keep_ops = {
	.name = "test leave",
	.size = sizeof(struct tq),
	.keep_on_port_down = true,
	.method = MAD_METHOD_GET,
	.attr = SA_ATTR_PATH_REC,
	.decode = t_decode,
	.done = t_done,
};

static const struct sa_query_ops smi_ops = {
	.name = "test SMP",
	.size = sizeof(struct tq),
	.smi = true,
	.method = MAD_METHOD_GET,
	.attr = SMP_ATTR_PORT_INFO,
	.decode = t_decode,
	.done = t_done,
};

static void submit(const struct sa_query_ops *ops, unsigned id)
{
	struct ibres_path_record pr;
	struct sa_query *q;

	assert_int_equal(sa_query_new(port, ops, &q), 0);
	container_of(q, struct tq, q)->id = id;
	memset(&pr, 0, sizeof(pr));
	if (ops->smi)
		smp_encode_get(q->mad, 0, SMP_ATTR_PORT_INFO, 1);
	else
		sa_encode_path_get(q->mad, 0, &pr, PR_COMP_DGID);
	assert_int_equal(sa_query_submit(q), 0);
}

/* The SA's answer to send @i, with MAD status @status. */
static void answer(unsigned i, uint16_t status, int kernel_status)
{
	struct umad_io_rx rx;

	assert_true(i < n_sends);
	memset(&rx, 0, sizeof(rx));
	rx.agent = sends[i].agent;
	rx.status = kernel_status;
	rx.len = MAD_LEN;
	memcpy(rx.mad, sends[i].mad, MAD_LEN);
	rx.mad[3] = MAD_METHOD_GET_RESP;
	rx.mad[4] = (uint8_t)(status >> 8);
	rx.mad[5] = (uint8_t)status;
	sa_port_rx(port, &rx);
}

/* How query @id ended. */
static int status_of(unsigned id)
{
	for (unsigned i = 0; i < n_done; i++)
		if (done[i].id == id)
			return done[i].status;
	fail_msg("query %u has not ended", id);
	return 1;
}

static void on_bound(struct loop_timer *t)
{
	(void)t;
	fail_msg("the loop ran past %d ms", TEST_BOUND_MS);
}

/* Run the loop until a stop_at_* count is reached. */
static void run(void)
{
	struct loop_timer bound = {.cb = on_bound};

	assert_int_equal(loop_timer_arm(&d.loop, &bound, now_ms() + TEST_BOUND_MS), 0);
	assert_int_equal(loop_run(&d.loop), 0);
	loop_timer_cancel(&d.loop, &bound);
	d.loop.stop = false;
}

static int setup(void **state)
{
	(void)state;
	memset(&d, 0, sizeof(d));
	assert_int_equal(loop_init(&d.loop), 0);
	/* each attempt's wait; the engine's bound is (retries + 1) of them, so
	 * a test process held up for more than one wait (a loaded machine: the
	 * integration suite runs this binary beside others) would lose an
	 * attempt: long enough for that not to happen, short enough to be quick */
	d.cfg.timeout_ms = 60;
	d.cfg.retries = 2;
	d.cfg.sa_window = 2;
	sa = calloc(1, sizeof(*sa));
	assert_non_null(sa);
	sa->cfg = &d.cfg;
	sa->loop = &d.loop;
	sa->eps = &d.eps;
	sa->store = &d.store;
	d.sa = sa;
	list_init(&sa->outstanding);
	port = &sa->ports[0];
	sa->n_ports = 1;
	port->sa = sa;
	strcpy(port->label, "endpoint test");
	port->io = (struct umad_io *)&fake_io;
	port->have_info = true;
	port->pi.state = SA_PORT_ACTIVE;
	port->pi.lid = 2;
	port->pi.sm_lid = 1;
	list_init(&port->pending);
	n_sends = n_done = stop_at_sends = stop_at_done = 0;
	decode_result = SA_RX_OK;
	resubmit_on_cancel = false;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sa_query_cancel_all(sa);
	/* no query left behind, and no timer of one */
	assert_int_equal(sa->n_queries, 0);
	assert_int_equal(port->outstanding, 0);
	assert_int_equal(d.loop.n_timers, 0);
	free(sa);
	loop_fini(&d.loop);
	return 0;
}

/* --- tests ------------------------------------------------------------------ */

static void test_retries_then_timeout(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	assert_int_equal(n_sends, 1);
	stop_at_done = 1;
	run();
	/* the first attempt and `retries` more, one TID with the attempt below */
	assert_int_equal(n_sends, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(sends[i].agent, UMAD_IO_SA);
		assert_int_equal(sends[i].tid & ATTEMPT_MASK, i);
		assert_int_equal(sends[i].tid & ~ATTEMPT_MASK, sends[0].tid & ~ATTEMPT_MASK);
	}
	assert_int_equal(n_done, 1);
	assert_int_equal(done[0].status, -ETIMEDOUT);
	assert_int_equal(sa->c.retries, 2);
	assert_int_equal(sa->c.timeouts, 1);
	assert_int_equal(sa->n_queries, 0);
}

static void test_no_retries(void **state)
{
	(void)state;
	d.cfg.retries = 0;
	submit(&sa_ops, 1);
	stop_at_done = 1;
	run();
	assert_int_equal(n_sends, 1);
	assert_int_equal(done[0].status, -ETIMEDOUT);
}

static void test_answer_to_an_earlier_attempt(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	stop_at_sends = 2;
	run();
	assert_int_equal(n_done, 0);
	answer(0, 0, 0);
	assert_int_equal(n_done, 1);
	assert_int_equal(done[0].status, 0);
	assert_int_equal(sa->c.retries, 1);
	/* the same answer again is nobody's */
	answer(1, 0, 0);
	assert_int_equal(sa->c.rx_unsolicited, 1);
	assert_int_equal(n_done, 1);
}

static void test_window(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	submit(&sa_ops, 2);
	submit(&sa_ops, 3);
	/* sa_window 2: the third waits */
	assert_int_equal(n_sends, 2);
	assert_int_equal(port->outstanding, 2);
	assert_int_equal(sa->n_queries, 3);
	answer(0, 0, 0);
	assert_int_equal(n_done, 1);
	assert_int_equal(done[0].id, 1);
	/* its place in the window went to the third */
	assert_int_equal(n_sends, 3);
	assert_int_equal(port->outstanding, 2);
	answer(2, 0, 0);
	answer(1, 0, 0);
	assert_int_equal(n_done, 3);
	assert_int_equal(done[1].id, 3);
	assert_int_equal(done[2].id, 2);
	assert_int_equal(sa->n_queries, 0);
}

static void test_local_smp_bypasses_the_window(void **state)
{
	(void)state;
	d.cfg.sa_window = 1;
	submit(&sa_ops, 1);
	submit(&sa_ops, 2);
	submit(&smi_ops, 3);
	assert_int_equal(n_sends, 2);
	assert_int_equal(sends[1].agent, UMAD_IO_SMI);
	assert_int_equal(sa->n_queries, 2);
	/* the SM is gone: a local SMP times out as such, the SA query that
	 * went out finds the port unusable, the queued one its deadline */
	port->pi.sm_lid = 0;
	stop_at_done = 3;
	run();
	assert_int_equal(status_of(3), -ETIMEDOUT);
	assert_int_equal(status_of(1), -ENOTCONN);
	assert_int_equal(status_of(2), -ETIMEDOUT);
	assert_int_equal(n_sends, 2);
}

static void test_queued_past_deadline(void **state)
{
	(void)state;
	port->pi.sm_lid = 0; /* no SM: nothing goes out */
	submit(&sa_ops, 1);
	assert_int_equal(n_sends, 0);
	stop_at_done = 1;
	run();
	assert_int_equal(n_sends, 0);
	assert_int_equal(done[0].status, -ETIMEDOUT);
}

static void test_sent_when_the_port_went_down(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	port->pi.state = 1; /* DOWN, not told yet */
	stop_at_done = 1;
	run();
	assert_int_equal(n_sends, 1);
	assert_int_equal(done[0].status, -ENOTCONN);
}

static void test_port_down_fails_queries(void **state)
{
	(void)state;
	submit(&keep_ops, 1);
	submit(&sa_ops, 2);
	submit(&sa_ops, 3);
	submit(&keep_ops, 4);
	assert_int_equal(n_sends, 2);
	port->pi.state = 1;
	sa_port_fail_queries(port, -ENOTCONN);
	/* the queued first (even a leave: it never went out), then the sent */
	assert_int_equal(n_done, 3);
	assert_int_equal(done[0].id, 3);
	assert_int_equal(done[1].id, 4);
	assert_int_equal(done[2].id, 2);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(done[i].status, -ENOTCONN);
	/* the sent leave stays for its answer */
	assert_int_equal(port->outstanding, 1);
	answer(0, 0, 0);
	assert_int_equal(done[3].id, 1);
	assert_int_equal(done[3].status, 0);
}

static void test_rejects(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	/* the kernel gave up on the send: our timer decides */
	answer(0, 0, 110);
	assert_int_equal(sa->c.rx_kernel_timeouts, 1);
	/* about another destination */
	decode_result = SA_RX_MISMATCH;
	answer(0, 0, 0);
	assert_int_equal(sa->c.rx_mismatch, 1);
	decode_result = SA_RX_MALFORMED;
	answer(0, 0, 0);
	assert_int_equal(sa->c.rx_malformed, 1);
	assert_int_equal(n_done, 0);
	/* the SA has no such record */
	answer(0, 3 << 8, 0);
	assert_int_equal(n_done, 1);
	assert_int_equal(done[0].status, -ENODATA);
	assert_int_equal(sa->c.errors, 1);
}

static void test_cancel_all(void **state)
{
	(void)state;
	submit(&sa_ops, 1);
	submit(&sa_ops, 2);
	submit(&sa_ops, 3);
	submit(&smi_ops, 4);
	sa->stopping = true;
	resubmit_on_cancel = true;
	sa_query_cancel_all(sa);
	/* the one asked meanwhile is cancelled too */
	assert_int_equal(n_done, 5);
	assert_int_equal(done[1].id, 99);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(done[i].status, -ECANCELED);
	assert_int_equal(n_sends, 3);
}

static void test_too_many_queries(void **state)
{
	struct sa_query *q;

	(void)state;
	sa->n_queries = 4096;
	assert_int_equal(sa_query_new(port, &sa_ops, &q), -EAGAIN);
	assert_int_equal(sa->c.rejected, 1);
	/* local SMPs do not count */
	assert_int_equal(sa_query_new(port, &smi_ops, &q), 0);
	free(q);
	sa->n_queries = 0;
}

static int route_status = 1;

static void route_woken(struct lookup_waiter *w, int status)
{
	(void)w;
	route_status = status;
}

/* A remote port in two partitions: two endpoints (P_Keys 0xffff and 0x8001)
 * of one host, sharing the port's GID, whose key leads to the first one
 * heard. route_prot sa from our endpoint of 0x8001 asks for the second one,
 * and the SA's answer is that one's path: stored on the first, the request
 * found none for the second, asked again, and waited again, for ever. */
static void test_route_to_a_second_partition(void **state)
{
	struct store_put how = {.origin = IBRES_ORIGIN_FABRIC, .rails = 0x1234, .ttl_s = 60};
	struct lookup_waiter w = {.done = route_woken};
	struct ibres_hostrec r;
	struct host *first, *second;
	uint64_t now = now_ms();

	(void)state;
	assert_int_equal(store_init(&d.store, 64), 0);
	d.eps.n = 2;
	for (unsigned i = 0; i < 2; i++)
		d.eps.ep[i].index = i;
	d.eps.ep[0].cfg.id.pkey = 0xffff;
	d.eps.ep[1].cfg.id.pkey = 0x8001;
	port->ep = 1;
	port->pkey = 0x8001;
	port->pi.gid_prefix = 0xfe80000000000000ull;
	port->port_guid = 2;
	memset(&r, 0, sizeof(r));
	strcpy(r.names[0], "peer");
	r.n_names = 1;
	assert_int_equal(inet_pton(AF_INET6, "fe80::9", r.gids[0]), 1);
	r.n_gids = 1;
	r.lid = 9;
	r.qpn = 5;
	r.pkey = 0xffff;
	how.heard_on = 1u << 0;
	assert_int_equal(store_insert(&d.store, &r, &how, now, &first), 0);
	r.pkey = 0x8001;
	how.heard_on = 1u << 1;
	assert_int_equal(store_insert(&d.store, &r, &how, now, &second), 0);
	assert_ptr_not_equal(first, second);
	assert_int_equal(host_endpoint_count(second), 2);

	assert_int_equal(sa_route_query(sa, &d.eps.ep[1], second, &w), 0);
	assert_int_equal(n_sends, 1);
	answer(0, 0, 0); /* the query echoed: the path to fe80::9 from our port */
	assert_int_equal(route_status, 0);
	assert_non_null(host_route(&d.store, second, 1, now_ms()));
	assert_null(host_route(&d.store, first, 1, now_ms()));
	store_fini(&d.store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_retries_then_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_answer_to_an_earlier_attempt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_smp_bypasses_the_window, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_queued_past_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sent_when_the_port_went_down, setup, teardown),
		cmocka_unit_test_setup_teardown(test_port_down_fails_queries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rejects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_many_queries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_route_to_a_second_partition, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
