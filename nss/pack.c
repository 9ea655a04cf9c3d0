// SPDX-License-Identifier: MIT
#include "pack.h"

#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>

#include "hostdir.h"

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

IBRES_HOT char *ibpack_strn(struct ibpack *p, const void *s, size_t n)
{
	char *d = ibpack_alloc(p, n + 1, 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

char *ibpack_str(struct ibpack *p, const char *s)
{
	return ibpack_strn(p, s, strlen(s));
}

/* The first name of @v into the buffer; *@next is where the next one starts. */
IBRES_HOT static char *pack_first_name(struct ibpack *p, const struct ibdir_view *v,
				       const uint8_t **next)
{
	const uint8_t *name;
	size_t l;

	*next = v->names;
	l = ibdir_view_next_name(next, &name);
	return ibpack_strn(p, name, l);
}

IBRES_HOT int ibpack_hostent(struct hostent *he, char *buf, size_t buflen,
			     const struct ibdir_view *v, int af, const void *addrs, size_t n,
			     size_t alen)
{
	const uint8_t *next, *nm;
	struct ibpack p;
	char **aliases, **list, *name;
	uint8_t *a;
	size_t i;

	/* a view from ibdir_view_init() holds 1..IBRES_HOST_NAMES_MAX names;
	 * addresses no more than a record holds */
	if (!v->n_names || v->n_names > IBRES_HOST_NAMES_MAX || n > PACK_ADDRS_MAX || !alen ||
	    alen > PACK_ADDR_LEN_MAX)
		return -EBADMSG;
	ibpack_init(&p, buf, buflen);
	/* the aliases (names 1..n_names - 1) and their NULL */
	aliases = ibpack_alloc(&p, v->n_names * sizeof(char *), alignof(char *));
	list = ibpack_alloc(&p, (n + 1) * sizeof(char *), alignof(char *));
	a = ibpack_alloc(&p, n * alen, alignof(char *));
	if (!aliases || !list || (n && !a))
		return -ERANGE;
	name = pack_first_name(&p, v, &next);
	if (!name)
		return -ERANGE;
	for (i = 0; i + 1 < v->n_names; i++) {
		size_t l = ibdir_view_next_name(&next, &nm);

		aliases[i] = ibpack_strn(&p, nm, l);
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
			    const struct ibdir_view *v)
{
	struct gaih_addrtuple *t, *first;
	const uint8_t *next;
	struct ibpack p;
	size_t n, own, i;
	char *name;

	if (!v->n_names || v->n_names > IBRES_HOST_NAMES_MAX || v->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    v->n_v6 > IBRES_HOST_ADDRS_MAX)
		return -EBADMSG;
	n = v->n_v6 + v->n_v4;
	if (!n)
		return -ENOENT;
	own = *pat ? n - 1 : n; /* tuples that must come from the buffer */
	ibpack_init(&p, buf, buflen);
	t = ibpack_alloc(&p, own * sizeof(*t), alignof(struct gaih_addrtuple));
	if (own && !t)
		return -ERANGE;
	name = pack_first_name(&p, v, &next);
	if (!name)
		return -ERANGE;

	/* every tuple is in the buffer but, when supplied, the caller's first */
	first = *pat ? *pat : &t[0];
	for (i = 0; i < n; i++) {
		struct gaih_addrtuple *cur = i == 0 ? first : &t[*pat ? i - 1 : i];

		memset(cur, 0, sizeof(*cur));
		cur->name = name;
		if (i < v->n_v6) {
			cur->family = AF_INET6;
			memcpy(cur->addr, v->v6 + 16 * i, 16);
		} else {
			cur->family = AF_INET;
			memcpy(cur->addr, v->v4 + 4 * (i - v->n_v6), 4);
		}
		cur->next = i + 1 < n ? &t[*pat ? i : i + 1] : NULL;
	}
	*pat = first;
	return 0;
}
