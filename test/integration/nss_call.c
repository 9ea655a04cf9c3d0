// SPDX-License-Identifier: MIT
/*
 * Test helper: call one libnss_ib entry point directly (dlopen, as glibc
 * does) and print what it returned, one "key=value" per line.
 *
 *   nss_call [--sweep] [--prealloc] [--repeat N] MODULE ENTRY KEY [AF]
 *
 * ENTRY: byname byname2 byname3 byname4 byaddr byaddr2. KEY is a name, or for
 * byaddr* an address (AF 2: IPv4, 10: IPv6, 27: GID in IPv6 notation).
 * With --sweep the buffer is exactly 1, 2, 3... bytes (a fresh malloc each
 * time, so valgrind sees any overrun) until the call stops answering ERANGE;
 * "minbuf" is the first size that worked, and every size from there to
 * minbuf+64 must give the same answer. --prealloc gives byname4 a tuple of
 * its own (as nscd does). --repeat N makes N more calls after the first,
 * between two marker writes ("repeat-begin", "repeat-end" on stderr) that an
 * strace of the process can find, and counts the answers that differ from
 * the first ("repeat_differ"; "repeat_status_differ" those whose status
 * differs); a KEY with "%ld" in it is a format, given the call's number (0
 * the first, 1 .. N the repeated ones), so that each call asks another key.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <nss.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXBUF 65536

static const char *status_name(enum nss_status s)
{
	switch (s) {
	case NSS_STATUS_SUCCESS:
		return "SUCCESS";
	case NSS_STATUS_NOTFOUND:
		return "NOTFOUND";
	case NSS_STATUS_TRYAGAIN:
		return "TRYAGAIN";
	case NSS_STATUS_UNAVAIL:
		return "UNAVAIL";
	default:
		return "OTHER";
	}
}

static void fmt_addr(int af, int len, const void *a, char *out, size_t n)
{
	if (af == AF_INET && len == 4)
		inet_ntop(AF_INET, a, out, (socklen_t)n);
	else if (len == 16)
		inet_ntop(AF_INET6, a, out, (socklen_t)n);
	else
		snprintf(out, n, "?");
}

/* The answer as text, so that two calls can be compared. */
static void describe_hostent(const struct hostent *he, char *out, size_t n)
{
	char a[64];
	size_t off = 0;
	int i;

	off += (size_t)snprintf(out + off, n - off, "name=%s\naliases=", he->h_name);
	for (i = 0; he->h_aliases[i]; i++)
		off += (size_t)snprintf(out + off, n - off, "%s%s", i ? "," : "", he->h_aliases[i]);
	off += (size_t)snprintf(out + off, n - off, "\naf=%d\nlength=%d\naddrs=", he->h_addrtype,
				he->h_length);
	for (i = 0; he->h_addr_list[i]; i++) {
		fmt_addr(he->h_addrtype, he->h_length, he->h_addr_list[i], a, sizeof(a));
		off += (size_t)snprintf(out + off, n - off, "%s%s", i ? "," : "", a);
	}
	snprintf(out + off, n - off, "\n");
}

static void describe_tuples(const struct gaih_addrtuple *t, char *out, size_t n)
{
	char a[64];
	size_t off = 0;

	off += (size_t)snprintf(out + off, n - off, "name=%s\ntuples=", t ? t->name : "");
	for (; t; t = t->next) {
		fmt_addr(t->family, t->family == AF_INET ? 4 : 16, t->addr, a, sizeof(a));
		off += (size_t)snprintf(out + off, n - off, "%d/%s%s", t->family, a,
					t->next ? "," : "");
	}
	snprintf(out + off, n - off, "\n");
}

struct call {
	void *fn;
	const char *entry;
	const char *key;
	int af;
	unsigned char addr[16];
	socklen_t alen;
	int prealloc;
};

/* One call with a buffer of exactly @len bytes; the answer's text in @desc. */
static enum nss_status one(const struct call *c, size_t len, int *err, int *herr, int32_t *ttl,
			   char *desc, size_t dn)
{
	char *buf = malloc(len ? len : 1);
	struct gaih_addrtuple mine, *pat = NULL;
	struct hostent he;
	char *canon = NULL;
	enum nss_status s;

	*err = 0;
	*herr = 12345;
	*ttl = -1;
	desc[0] = '\0';
	if (!strcmp(c->entry, "byname"))
		s = ((nss_gethostbyname_r *)c->fn)(c->key, &he, buf, len, err, herr);
	else if (!strcmp(c->entry, "byname2"))
		s = ((nss_gethostbyname2_r *)c->fn)(c->key, c->af, &he, buf, len, err, herr);
	else if (!strcmp(c->entry, "byname3"))
		s = ((nss_gethostbyname3_r *)c->fn)(c->key, c->af, &he, buf, len, err, herr, ttl,
						    &canon);
	else if (!strcmp(c->entry, "byname4")) {
		if (c->prealloc) {
			memset(&mine, 0, sizeof(mine));
			pat = &mine;
		}
		s = ((nss_gethostbyname4_r *)c->fn)(c->key, &pat, buf, len, err, herr, ttl);
		if (s == NSS_STATUS_SUCCESS) {
			if (c->prealloc && pat != &mine)
				snprintf(desc, dn, "error=prealloc tuple not used\n");
			else
				describe_tuples(pat, desc, dn);
		}
	} else if (!strcmp(c->entry, "byaddr"))
		s = ((nss_gethostbyaddr_r *)c->fn)(c->addr, c->alen, c->af, &he, buf, len, err,
						   herr);
	else
		s = ((nss_gethostbyaddr2_r *)c->fn)(c->addr, c->alen, c->af, &he, buf, len, err,
						    herr, ttl);
	if (s == NSS_STATUS_SUCCESS && strcmp(c->entry, "byname4")) {
		describe_hostent(&he, desc, dn);
		if (canon && strcmp(canon, he.h_name))
			strcat(desc, "error=canonp differs from h_name\n");
	}
	free(buf);
	return s;
}

int main(int argc, char **argv)
{
	char sym[64], desc[8192], first[8192], key[300];
	const char *fmt;
	struct call c = {.af = AF_INET};
	int sweep = 0, err, herr, i = 1;
	long repeat = 0;
	size_t len, minbuf = 0;
	enum nss_status s;
	int32_t ttl;
	void *dl;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--sweep"))
			sweep = 1;
		else if (!strcmp(argv[i], "--prealloc"))
			c.prealloc = 1;
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atol(argv[++i]);
	}
	if (argc - i < 3) {
		fprintf(stderr, "usage: nss_call [--sweep] [--prealloc] MODULE ENTRY KEY [AF]\n");
		return 2;
	}
	c.entry = argv[i + 1];
	c.key = argv[i + 2];
	fmt = c.key;
	if (strstr(fmt, "%ld")) {
		/* the first call asks number 0, the repeated ones 1 .. N */
		snprintf(key, sizeof(key), fmt, 0L);
		c.key = key;
	}
	if (argc - i > 3)
		c.af = atoi(argv[i + 3]);
	if (!strncmp(c.entry, "byaddr", 6)) {
		c.alen = c.af == AF_INET ? 4 : 16;
		if (inet_pton(c.af == AF_INET ? AF_INET : AF_INET6, c.key, c.addr) != 1) {
			fprintf(stderr, "bad address %s\n", c.key);
			return 2;
		}
	}
	dl = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	snprintf(sym, sizeof(sym), "_nss_ib_gethost%s_r", c.entry);
	c.fn = dlsym(dl, sym);
	if (!c.fn) {
		fprintf(stderr, "no %s\n", sym);
		return 2;
	}

	len = sweep ? 1 : 4096;
	for (;;) {
		s = one(&c, len, &err, &herr, &ttl, desc, sizeof(desc));
		if (!(sweep && s == NSS_STATUS_TRYAGAIN && err == ERANGE))
			break;
		if (herr != NETDB_INTERNAL) {
			printf("error=ERANGE with h_errno %d\n", herr);
			return 1;
		}
		if (++len > MAXBUF) {
			printf("error=never fits\n");
			return 1;
		}
	}
	minbuf = len;
	if (sweep && s == NSS_STATUS_SUCCESS) {
		strcpy(first, desc);
		for (len = minbuf + 1; len <= minbuf + 64; len++) {
			int e2, h2;
			int32_t t2;

			if (one(&c, len, &e2, &h2, &t2, desc, sizeof(desc)) != NSS_STATUS_SUCCESS ||
			    strcmp(desc, first)) {
				printf("error=answer changed at buffer size %zu\n", len);
				return 1;
			}
		}
		strcpy(desc, first);
	}
	if (repeat > 0) {
		char again[8192];
		long differ = 0, status_differ = 0;
		int e2, h2;
		int32_t t2;

		write(2, "repeat-begin\n", 13);
		for (long n = 0; n < repeat; n++) {
			/* a KEY with %ld asks a different one each time */
			if (strstr(fmt, "%ld")) {
				snprintf(key, sizeof(key), fmt, n + 1);
				c.key = key;
			}
			enum nss_status s2 = one(&c, len, &e2, &h2, &t2, again, sizeof(again));

			status_differ += s2 != s;
			differ += s2 != s || strcmp(again, desc);
		}
		write(2, "repeat-end\n", 11);
		printf("repeat_differ=%ld\nrepeat_status_differ=%ld\n", differ, status_differ);
	}
	printf("status=%s\nerrno=%d\nh_errno=%d\nttl=%d\nminbuf=%zu\n%s", status_name(s),
	       s == NSS_STATUS_SUCCESS ? 0 : err, herr, ttl, minbuf, desc);
	return 0;
}
