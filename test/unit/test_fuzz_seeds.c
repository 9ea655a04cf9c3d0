// SPDX-License-Identifier: MIT
/*
 * The seed images of the shared directory's fuzz targets (fuzz_dirpack and
 * fuzz_hostdir, test/fuzz/corpus/), made here with the reader's own record
 * encoder and hash, and compared with the files: a format change that left
 * the seeds behind would have them stop at the header check, so that the
 * fuzzers and `make unit`'s replays of them start from nothing (as they did
 * from directory format 2 until this test). After a format change:
 *
 *   IBRES_WRITE_SEEDS=1 build/test/test_fuzz_seeds     (from the top folder)
 *
 * writes them again. Every seed but "truncated" passes the header check and
 * answers the keys its target asks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "dir_image.h"
#include "hostdir.h"
#include "hostrec.h"

#define DIRPACK "test/fuzz/corpus/fuzz_dirpack/"
#define HOSTDIR "test/fuzz/corpus/fuzz_hostdir/"
#define NOW_MS	1000000u /* the targets set the heartbeat to their own now */

/* Host @k as test/fabric/emulate numbers them: nodeK, nodeK.cluster.example,
 * 198.18.0.K, 2001:db8::K, GID fe80::2:c903:0:K, LID K. */
static void node(struct ibres_hostrec *r, unsigned k, const char *name)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->names[0], sizeof(r->names[0]), "%s", name);
	snprintf(r->names[1], sizeof(r->names[1]), "%s.cluster.example", name);
	r->n_names = 2;
	r->v4[0].s_addr = htonl(0xc6120000u | k);
	r->n_v4 = 1;
	inet_pton(AF_INET6, "2001:db8::", &r->v6[0]);
	r->v6[0].s6_addr[14] = (uint8_t)(k >> 8);
	r->v6[0].s6_addr[15] = (uint8_t)k;
	r->n_v6 = 1;
	inet_pton(AF_INET6, "fe80::2:c903:0:0", r->gids[0]);
	r->gids[0][14] = (uint8_t)(k >> 8);
	r->gids[0][15] = (uint8_t)k;
	r->n_gids = 1;
	r->lid = (uint16_t)k;
	r->qpn = 0x48;
	r->pkey = 0xffff;
}

/* Ordinary hosts, one with GIDs only and one with an IPv6 address only. */
static void small_cluster(struct dir_image *m)
{
	struct ibres_hostrec r;
	char name[16];

	dir_image_init(m, 32, 6144, NOW_MS);
	for (unsigned k = 1; k <= 3; k++) {
		snprintf(name, sizeof(name), "node%u", k);
		node(&r, k, name);
		dir_image_put(m, &r, 0);
	}
	node(&r, 4, "gidonly");
	r.n_names = 1;
	r.n_v4 = r.n_v6 = 0;
	dir_image_put(m, &r, 0);
	node(&r, 5, "v6only");
	r.n_v4 = r.n_gids = 0;
	dir_image_put(m, &r, 0);
}

/* A large record: 8 names of 255 bytes, 8 + 8 addresses and 4 GIDs, about
 * the most the client protocol's answer carries (fuzz_dirpack packs what
 * it finds and checks that the daemon could also send it: pack_check.c). */
static void largest_record(struct dir_image *m)
{
	struct ibres_hostrec r;

	dir_image_init(m, 32, 6144, NOW_MS);
	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < 8; i++) {
		memset(r.names[i], 'a' + (int)i, IBRES_NAME_MAX);
		for (size_t d = 63; d < IBRES_NAME_MAX; d += 64)
			r.names[i][d] = '.';
		r.names[i][IBRES_NAME_MAX] = '\0';
	}
	r.n_names = 8;
	for (unsigned i = 0; i < 8; i++) {
		r.v4[i].s_addr = htonl(0xc6120100u + i);
		inet_pton(AF_INET6, "2001:db8::1:0", &r.v6[i]);
		r.v6[i].s6_addr[15] = (uint8_t)i;
	}
	r.n_v4 = r.n_v6 = 8;
	for (unsigned i = 0; i < 4; i++) {
		inet_pton(AF_INET6, "fe80::2:c903:1:0", r.gids[i]);
		r.gids[i][15] = (uint8_t)i;
	}
	r.n_gids = 4;
	r.lid = 7;
	r.pkey = 0xffff;
	dir_image_put(m, &r, 0);
}

/* A record packed (IBDIR_REC_PACKED) with long names: 12 names of 255 bytes, each
 * all but its last byte the one before it, so that front coding keeps a
 * few bytes of each (names too long for the reader's short path); 8 GIDs
 * and IPv6 addresses sharing 15 bytes with the one before. Short enough
 * for a client answer (fuzz_dirpack encodes it for the socket too). */
#define LONG_NAMES 12u
static void long_names_packed(struct dir_image *m)
{
	struct ibres_hostrec r;

	dir_image_init(m, 32, 6144, NOW_MS);
	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < LONG_NAMES; i++) {
		memset(r.names[i], 'a', IBRES_NAME_MAX);
		for (size_t d = 63; d < IBRES_NAME_MAX; d += 64)
			r.names[i][d] = '.';
		r.names[i][IBRES_NAME_MAX - 1] = (char)('a' + i);
		r.names[i][IBRES_NAME_MAX] = '\0';
	}
	r.n_names = LONG_NAMES;
	for (unsigned i = 0; i < 8; i++) {
		r.v4[i].s_addr = htonl(0xc6120200u + i);
		inet_pton(AF_INET6, "2001:db8::2:0", &r.v6[i]);
		r.v6[i].s6_addr[15] = (uint8_t)i;
		inet_pton(AF_INET6, "fe80::2:c903:2:0", r.gids[i]);
		r.gids[i][15] = (uint8_t)i;
	}
	r.n_v4 = r.n_v6 = r.n_gids = 8;
	r.lid = 8;
	r.pkey = 0xffff;
	dir_image_put(m, &r, 0);
}

/* Issue 21's finding: a record without a name (n_names 0) whose IPv4, IPv6
 * and GID are in the tables, beside an ordinary one. */
static void no_name_record(struct dir_image *m)
{
	struct ibres_hostrec r;

	dir_image_init(m, 32, 6144, NOW_MS);
	node(&r, 1, "node1");
	dir_image_put(m, &r, 0);
	node(&r, 2, "node2");
	r.n_names = 0;
	dir_image_put(m, &r, 0);
}

/* Shapes the writer never makes: a name with '_', one starting with a
 * hyphen, a record whose header counts 17 names. */
static void refused_shapes(struct dir_image *m)
{
	struct ibres_hostrec r;

	dir_image_init(m, 32, 6144, NOW_MS);
	node(&r, 1, "bad_name");
	dir_image_put(m, &r, 0);
	node(&r, 2, "-node2");
	dir_image_put(m, &r, 0);
	node(&r, 3, "node3");
	dir_image_put(m, &r, IBRES_HOST_NAMES_MAX + 1);
	node(&r, 4, "node4");
	dir_image_put(m, &r, 0);
}

/* A host of three endpoints in one record (dir_image_multirail), and one of
 * two whose sets the writer never makes (a key of no endpoint, one past the
 * record's endpoints). */
static void multirail_host(struct dir_image *m)
{
	struct ibres_hostrec r;
	struct hostrec_eps e;

	dir_image_init(m, 32, 6144, NOW_MS);
	dir_image_multirail(&r, &e);
	dir_image_put_eps(m, &r, &e, 0);
	dir_image_multirail(&r, &e);
	strcpy(r.names[0], "mr2");
	strcpy(r.names[1], "mr2-ib0");
	r.n_names = 2;
	r.v4[0].s_addr ^= htonl(0x100u);
	r.n_v4 = 1;
	r.n_v6 = 0;
	r.gids[0][8] = 2;
	r.n_gids = 1;
	e.names[1] = 0;
	e.v4[0] = 1u << 7;
	e.n_ep = 2;
	dir_image_put_eps(m, &r, &e, 0);
}

/* A four-rail host whose rails' IPv6 subnets and port GUIDs differ in the
 * middle: packed sharing both ends (IBDIR_REC_PACKED_ENDS). */
static void rails_ends(struct dir_image *m)
{
	struct ibres_hostrec r;
	struct hostrec_eps e;

	dir_image_init(m, 32, 6144, NOW_MS);
	memset(&r, 0, sizeof(r));
	memset(&e, 0, sizeof(e));
	strcpy(r.names[0], "re1");
	e.names[0] = 15;
	for (unsigned i = 0; i < 4; i++) {
		snprintf(r.names[1 + i], sizeof(r.names[0]), "re1-ib%u", i);
		e.names[1 + i] = 1u << i;
		inet_pton(AF_INET6, "fe80::2:c903:0:1", r.gids[i]);
		r.gids[i][13] = (uint8_t)i;
		e.gids[i] = 1u << i;
		inet_pton(AF_INET6, "2001:db8:0:0::1", &r.v6[i]);
		r.v6[i].s6_addr[7] = (uint8_t)i;
		e.v6[i] = 1u << i;
		e.ep[i] = (struct hostrec_ep){.qpn = 1, .lid = (uint16_t)(10 + i), .pkey = 0xffff};
	}
	r.n_names = 5;
	r.n_gids = r.n_v6 = 4;
	r.qpn = 1;
	r.lid = 10;
	r.pkey = 0xffff;
	e.n_ep = 4;
	dir_image_put_eps(m, &r, &e, 0);
}

/* fuzz_hostdir's: a key selector byte, then an image of 200 hosts holding
 * what that target asks (node1, node2, NODE3 in any case, login1, the
 * addresses and GID of node 2). */
static void static_hosts(struct dir_image *m)
{
	struct ibres_hostrec r;
	char name[16];

	dir_image_init(m, 1024, 64 * 1024, NOW_MS);
	for (unsigned k = 1; k <= 200; k++) {
		snprintf(name, sizeof(name), k == 200 ? "login1" : "node%u", k);
		node(&r, k, name);
		dir_image_put(m, &r, 0);
	}
}

static void check_file(const char *path, const uint8_t *want, size_t len)
{
	uint8_t *have = malloc(len + 1);
	ssize_t n;
	int fd;

	assert_non_null(have);
	if (getenv("IBRES_WRITE_SEEDS")) {
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, want, len), (ssize_t)len);
		close(fd);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fail_msg("%s: %s (IBRES_WRITE_SEEDS=1 makes it)", path, strerror(errno));
	n = read(fd, have, len + 1);
	close(fd);
	if (n != (ssize_t)len || memcmp(have, want, len))
		fail_msg("%s is not the seed this format makes: IBRES_WRITE_SEEDS=1 %s", path,
			 "build/test/test_fuzz_seeds writes it again");
	free(have);
}

static int found(const struct dir_image *m, uint16_t type, const void *key, size_t len)
{
	struct ibres_hostrec r;

	return ibdir_lookup(m->b, m->size, NOW_MS, type, key, len, &r);
}

static void test_dirpack_seeds(void **state)
{
	struct dir_image m;
	struct in_addr v4 = {htonl(0xc6120002u)};

	(void)state;
	small_cluster(&m);
	assert_int_equal(found(&m, IBRES_T_NAME, "NODE2.cluster.example", 21), 0);
	assert_int_equal(found(&m, IBRES_T_NAME, "v6only", 6), 0);
	check_file(DIRPACK "small-cluster", m.b, m.size);
	dir_image_free(&m);

	largest_record(&m);
	assert_int_equal(found(&m, IBRES_T_IPV4, &(struct in_addr){htonl(0xc6120107u)}, 4), 0);
	check_file(DIRPACK "largest-record", m.b, m.size);
	dir_image_free(&m);

	long_names_packed(&m);
	{
		const struct ibdir_header *hd = (const void *)m.b;
		const struct ibdir_rec *rec = (const void *)(m.b + hd->rec_off);

		assert_true(rec->flags & IBDIR_REC_PACKED);
	}
	assert_int_equal(found(&m, IBRES_T_IPV4, &(struct in_addr){htonl(0xc6120207u)}, 4), 0);
	{
		/* the last GID, and the last name, each front-coded on all before */
		uint8_t gid[16];
		char name[IBRES_NAME_MAX + 1];

		inet_pton(AF_INET6, "fe80::2:c903:2:7", gid);
		assert_int_equal(found(&m, IBRES_T_GID, gid, 16), 0);
		memset(name, 'a', IBRES_NAME_MAX);
		for (size_t d = 63; d < IBRES_NAME_MAX; d += 64)
			name[d] = '.';
		name[IBRES_NAME_MAX - 1] = 'a' + LONG_NAMES - 1;
		assert_int_equal(found(&m, IBRES_T_NAME, name, IBRES_NAME_MAX), 0);
	}
	check_file(DIRPACK "long-names-packed", m.b, m.size);
	dir_image_free(&m);

	no_name_record(&m);
	assert_int_equal(found(&m, IBRES_T_NAME, "node1", 5), 0);
	assert_int_equal(found(&m, IBRES_T_IPV4, &v4, 4), -EBADMSG);
	check_file(DIRPACK "no-name-record", m.b, m.size);
	dir_image_free(&m);

	multirail_host(&m);
	assert_int_equal(found(&m, IBRES_T_NAME, "mr1-ib1", 7), 0);
	assert_int_equal(found(&m, IBRES_T_NAME, "mr2", 3), 0);
	assert_int_equal(found(&m, IBRES_T_NAME, "mr2-ib0", 7), -EBADMSG);
	check_file(DIRPACK "multirail-host", m.b, m.size);
	dir_image_free(&m);

	rails_ends(&m);
	{
		const struct ibdir_header *hd = (const void *)m.b;
		const struct ibdir_rec *rec = (const void *)(m.b + hd->rec_off);
		struct in6_addr v6;
		uint8_t gid[16];

		assert_true(rec->flags & IBDIR_REC_PACKED_ENDS);
		inet_pton(AF_INET6, "fe80::2:c903:3:1", gid);
		assert_int_equal(found(&m, IBRES_T_GID, gid, 16), 0);
		inet_pton(AF_INET6, "2001:db8:0:3::1", &v6);
		assert_int_equal(found(&m, IBRES_T_IPV6, &v6, 16), 0);
		assert_int_equal(found(&m, IBRES_T_NAME, "re1-ib2", 7), 0);
	}
	check_file(DIRPACK "rails-ends-packed", m.b, m.size);
	dir_image_free(&m);

	refused_shapes(&m);
	assert_int_equal(found(&m, IBRES_T_NAME, "node4", 5), 0);
	assert_int_equal(found(&m, IBRES_T_NAME, "bad_name", 8), -EBADMSG);
	assert_int_equal(found(&m, IBRES_T_NAME, "node3", 5), -EBADMSG);
	check_file(DIRPACK "refused-shapes", m.b, m.size);
	dir_image_free(&m);
}

static void test_hostdir_seeds(void **state)
{
	struct dir_image m;
	uint8_t *seed;

	(void)state;
	static_hosts(&m);
	assert_int_equal(found(&m, IBRES_T_NAME, "NODE3", 5), 0);
	assert_int_equal(found(&m, IBRES_T_NAME, "login1", 6), 0);
	seed = malloc(1 + m.size);
	assert_non_null(seed);
	seed[0] = 0; /* fuzz_hostdir's first byte: which name it asks */
	memcpy(seed + 1, m.b, m.size);
	check_file(HOSTDIR "static-hosts", seed, 1 + m.size);
	/* the same, cut inside its first table */
	check_file(HOSTDIR "truncated", seed, 5000);
	free(seed);
	dir_image_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dirpack_seeds),
		cmocka_unit_test(test_hostdir_seeds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
