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

/* @m bytes from @from to @to, eight a step and the last eight (or four, or
 * each of up to three) overlapping what went before: no byte read or
 * written outside either range. A loop of our own: a C library call would be
 * one more page of code to walk to on a hit. */
IBRES_HOT static void copy_bytes(char *to, const uint8_t *from, size_t m)
{
	uint64_t w;
	uint32_t h;
	size_t i;

	if (m >= 8) {
		for (i = 0; i + 8 <= m; i += 8) {
			memcpy(&w, from + i, 8);
			memcpy(to + i, &w, 8);
		}
		memcpy(&w, from + m - 8, 8);
		memcpy(to + m - 8, &w, 8);
	} else if (m >= 4) {
		memcpy(&h, from, 4);
		memcpy(to, &h, 4);
		memcpy(&h, from + m - 4, 4);
		memcpy(to + m - 4, &h, 4);
	} else {
		for (i = 0; i < m; i++)
			to[i] = (char)from[i];
	}
}

/* The names of @v as C strings at @strs, which takes end - names (at least
 * 1) bytes: the names' bytes moved one back, so that every length byte but
 * the first becomes the NUL that ends the name before it. h_name is @strs;
 * the aliases are put at @aliases (n_names - 1 of them). 0, or -EBADMSG
 * when a name's length runs past the view's end (nothing is written
 * outside end - names bytes at @strs). */
IBRES_HOT static int put_names(char *strs, char **aliases, const struct ibdir_view *v)
{
	size_t total = (size_t)(v->end - v->names);
	const uint8_t *p = v->names;
	char *to = strs;

	/* the lengths first: a refused view leaves the buffer as it was */
	for (unsigned i = 0; i < v->n_names; i++, p += *p + 1)
		if (*p >= (size_t)(v->end - p))
			return -EBADMSG;
	copy_bytes(strs, v->names + 1, total - 1);
	p = v->names;
	for (unsigned i = 0; i < v->n_names; i++) {
		size_t l = *p;

		if (i)
			aliases[i - 1] = to;
		to[l] = '\0';
		to += l + 1;
		p += l + 1;
	}
	return 0;
}

/* An address of @alen bytes (4 or 16), copied with a size the compiler
 * knows. */
IBRES_HOT static void copy_addr(uint8_t *to, const uint8_t *from, size_t alen)
{
	if (alen == 4)
		memcpy(to, from, 4);
	else if (alen == 16)
		memcpy(to, from, 16);
	else
		for (size_t i = 0; i < alen; i++)
			to[i] = from[i];
}

IBRES_HOT int ibpack_hostent(struct hostent *he, char *buf, size_t buflen,
			     const struct ibdir_view *v, int af, const void *addrs, size_t n,
			     size_t alen)
{
	size_t pad = (size_t)(-(uintptr_t)buf & (alignof(char *) - 1)), need;
	char **aliases, **list, *strs;
	uint8_t *a;

	/* a view from ibdir_view_init() holds 1..IBRES_HOST_NAMES_MAX names;
	 * addresses no more than a record holds */
	if (!v->n_names || v->n_names > IBRES_HOST_NAMES_MAX || n > PACK_ADDRS_MAX || !alen ||
	    alen > PACK_ADDR_LEN_MAX || v->end < v->names ||
	    (size_t)(v->end - v->names) < 2u * v->n_names ||
	    (size_t)(v->end - v->names) > IBRES_HOST_NAMES_MAX * (IBRES_NAME_MAX + 1u))
		return -EBADMSG;
	/* one layout, sized at once: the alias pointers and their NULL, the
	 * address pointers and theirs, the addresses, the names */
	need = pad + (v->n_names + n + 1) * sizeof(char *) + n * alen + (size_t)(v->end - v->names);
	if (need > buflen)
		return -ERANGE;
	aliases = (char **)(void *)(buf + pad);
	list = aliases + v->n_names;
	a = (uint8_t *)(list + n + 1);
	strs = (char *)(a + n * alen);
	if (put_names(strs, aliases, v))
		return -EBADMSG;
	aliases[v->n_names - 1] = NULL;
	for (size_t i = 0; i < n; i++) {
		list[i] = (char *)a + i * alen;
		copy_addr(a + i * alen, (const uint8_t *)addrs + i * alen, alen);
	}
	list[n] = NULL;

	he->h_name = strs;
	he->h_aliases = aliases;
	he->h_addrtype = af;
	he->h_length = (int)alen;
	he->h_addr_list = list;
	return 0;
}

IBRES_HOT int ibpack_tuples(struct gaih_addrtuple **pat, char *buf, size_t buflen,
			    const struct ibdir_view *v)
{
	size_t pad = (size_t)(-(uintptr_t)buf & (alignof(struct gaih_addrtuple) - 1));
	struct gaih_addrtuple *t, *first;
	const uint8_t *name;
	size_t n, own, l;
	char *str;

	if (!v->n_names || v->n_names > IBRES_HOST_NAMES_MAX || v->n_v4 > IBRES_HOST_ADDRS_MAX ||
	    v->n_v6 > IBRES_HOST_ADDRS_MAX || v->end <= v->names ||
	    *v->names >= (size_t)(v->end - v->names))
		return -EBADMSG;
	n = v->n_v6 + v->n_v4;
	if (!n)
		return -ENOENT;
	own = *pat ? n - 1 : n; /* tuples that must come from the buffer */
	{
		const uint8_t *p = v->names;

		l = ibdir_view_next_name(&p, &name);
	}
	/* the tuples, then the name they share */
	if (pad + own * sizeof(*t) + l + 1 > buflen)
		return -ERANGE;
	t = (struct gaih_addrtuple *)(void *)(buf + pad);
	str = (char *)(t + own);
	copy_bytes(str, name, l);
	str[l] = '\0';

	/* every tuple is in the buffer but, when supplied, the caller's first */
	first = *pat ? *pat : &t[0];
	for (size_t i = 0; i < n; i++) {
		struct gaih_addrtuple *cur = i == 0 ? first : &t[*pat ? i - 1 : i];

		memset(cur, 0, sizeof(*cur));
		cur->name = str;
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
