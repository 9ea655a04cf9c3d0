// SPDX-License-Identifier: MIT
#include "pack.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

/* What a record holds at most: addresses of one family, or GIDs, of up to
 * 16 bytes each. */
#define PACK_ADDRS_MAX                                                                             \
	(IBRES_HOST_ADDRS_MAX > IBRES_HOST_GIDS_MAX ? IBRES_HOST_ADDRS_MAX : IBRES_HOST_GIDS_MAX)
#define PACK_ADDR_LEN_MAX 16u

IBRES_HOT void ibpack_init(struct ibpack *p, char *buf, size_t len)
{
	p->buf = buf;
	p->len = len;
	p->off = 0;
}

IBRES_HOT void *ibpack_alloc(struct ibpack *p, size_t size, size_t align)
{
	uintptr_t at = (uintptr_t)(p->buf + p->off);
	size_t pad = (size_t)(-at & (align - 1));

	if (pad > p->len - p->off || size > p->len - p->off - pad)
		return NULL;
	p->off += pad;
	at = (uintptr_t)(p->buf + p->off);
	p->off += size;
	return (void *)at;
}

IBRES_HOT char *ibpack_str(struct ibpack *p, const char *s)
{
	size_t l = strlen(s) + 1;
	char *d = ibpack_alloc(p, l, 1);

	if (d)
		memcpy(d, s, l);
	return d;
}

IBRES_HOT int ibpack_hostent(struct hostent *he, char *buf, size_t buflen,
			     const struct ibres_hostrec *rec, int af, const void *addrs, size_t n,
			     size_t alen)
{
	struct ibpack p;
	char **aliases, **list, *name;
	uint8_t *a;
	size_t i;

	/* the counts index arrays: only a record the daemon could have written,
	 * and addresses no more than a record holds */
	if (hostrec_shape_ok(rec) || n > PACK_ADDRS_MAX || !alen || alen > PACK_ADDR_LEN_MAX)
		return -EBADMSG;
	ibpack_init(&p, buf, buflen);
	/* the aliases (names 1..n_names - 1) and their NULL */
	aliases = ibpack_alloc(&p, rec->n_names * sizeof(char *), alignof(char *));
	list = ibpack_alloc(&p, (n + 1) * sizeof(char *), alignof(char *));
	a = ibpack_alloc(&p, n * alen, alignof(char *));
	name = ibpack_str(&p, rec->names[0]);
	if (!aliases || !list || (n && !a) || !name)
		return -ERANGE;
	for (i = 0; i + 1 < rec->n_names; i++) {
		aliases[i] = ibpack_str(&p, rec->names[i + 1]);
		if (!aliases[i])
			return -ERANGE;
	}
	aliases[i] = NULL;
	for (i = 0; i < n; i++) {
		list[i] = (char *)a + i * alen;
		memcpy(list[i], (const uint8_t *)addrs + i * alen, alen);
	}
	list[n] = NULL;

	he->h_name = name;
	he->h_aliases = aliases;
	he->h_addrtype = af;
	he->h_length = (int)alen;
	he->h_addr_list = list;
	return 0;
}

IBRES_HOT int ibpack_tuples(struct gaih_addrtuple **pat, char *buf, size_t buflen,
			    const struct ibres_hostrec *rec)
{
	struct gaih_addrtuple *t, *first;
	struct ibpack p;
	size_t n, own, i;
	char *name;

	if (hostrec_shape_ok(rec))
		return -EBADMSG;
	n = rec->n_v6 + rec->n_v4;
	if (!n)
		return -ENOENT;
	own = *pat ? n - 1 : n; /* tuples that must come from the buffer */
	ibpack_init(&p, buf, buflen);
	t = ibpack_alloc(&p, own * sizeof(*t), alignof(struct gaih_addrtuple));
	name = ibpack_str(&p, rec->names[0]);
	if ((own && !t) || !name)
		return -ERANGE;

	/* every tuple is in the buffer but, when supplied, the caller's first */
	first = *pat ? *pat : &t[0];
	for (i = 0; i < n; i++) {
		struct gaih_addrtuple *cur = i == 0 ? first : &t[*pat ? i - 1 : i];

		memset(cur, 0, sizeof(*cur));
		cur->name = name;
		if (i < rec->n_v6) {
			cur->family = AF_INET6;
			memcpy(cur->addr, &rec->v6[i], 16);
		} else {
			cur->family = AF_INET;
			memcpy(cur->addr, &rec->v4[i - rec->n_v6], 4);
		}
		cur->next = i + 1 < n ? &t[*pat ? i : i + 1] : NULL;
	}
	*pat = first;
	return 0;
}
