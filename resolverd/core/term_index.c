// SPDX-License-Identifier: MIT
/* The directory's digest terms, sorted (term_index.h). */
#include "core/term_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hostkey.h"

struct fill {
	struct term_index *ti;
	size_t cap_e, cap_names;
	int err;
};

static int add(void *arg, const char *name)
{
	struct fill *fl = arg;
	struct term_index *ti = fl->ti;
	size_t len = strlen(name) + 1;
	struct host_key k;

	if (host_key_name(&k, name) < 0)
		return 0; /* the store holds none such */
	if (ti->n == fl->cap_e) {
		size_t cap = fl->cap_e ? fl->cap_e * 2 : 1024;
		void *e = realloc(ti->e, cap * sizeof(*ti->e));

		if (!e)
			goto nomem;
		ti->e = e;
		fl->cap_e = cap;
	}
	if (ti->names_len + len > fl->cap_names) {
		size_t cap = fl->cap_names ? fl->cap_names * 2 : 16384;
		char *names;

		while (cap < ti->names_len + len)
			cap *= 2;
		names = realloc(ti->names, cap);
		if (!names)
			goto nomem;
		ti->names = names;
		fl->cap_names = cap;
	}
	memcpy(ti->names + ti->names_len, name, len);
	ti->e[ti->n].term = host_digest_term(&k);
	ti->e[ti->n].name = (uint32_t)ti->names_len;
	ti->names_len += len;
	ti->n++;
	return 0;
nomem:
	fl->err = -ENOMEM;
	return 1;
}

static int by_term(const void *a, const void *b)
{
	const struct term_entry *x = a, *y = b;

	return x->term < y->term ? -1 : x->term > y->term;
}

int term_index_build(struct term_index *ti, const struct host_store *s, int fabric, uint64_t now)
{
	static const struct store_range whole = {.lo = 0, .hi = UINT64_MAX, .parts = 1};
	struct fill fl = {.ti = ti};

	term_index_free(ti);
	store_range_names(s, &whole, fabric, add, &fl);
	if (!fl.err) {
		ti->below = malloc((ti->n + 1) * sizeof(*ti->below));
		if (!ti->below)
			fl.err = -ENOMEM;
	}
	if (fl.err) {
		term_index_free(ti);
		return fl.err;
	}
	qsort(ti->e, ti->n, sizeof(*ti->e), by_term);
	ti->below[0] = 0;
	for (size_t i = 0; i < ti->n; i++)
		ti->below[i + 1] = ti->below[i] + ti->e[i].term;
	store_fabric_digest(s, fabric, &ti->of);
	ti->fabric = fabric;
	ti->built_ms = now ? now : 1;
	return 0;
}

void term_index_free(struct term_index *ti)
{
	free(ti->e);
	free(ti->below);
	free(ti->names);
	memset(ti, 0, sizeof(*ti));
}

size_t term_index_lower(const struct term_index *ti, uint64_t term)
{
	size_t lo = 0, hi = ti->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ti->e[mid].term < term)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The entries with a term in lo..hi: [*from, return). */
static size_t span(const struct term_index *ti, uint64_t lo, uint64_t hi, size_t *from)
{
	*from = term_index_lower(ti, lo);
	return hi == UINT64_MAX ? ti->n : term_index_lower(ti, hi + 1);
}

void term_index_digest(const struct term_index *ti, const struct store_range *r,
		       struct store_digest *out)
{
	memset(out, 0, sizeof(*out) * r->parts);
	for (unsigned i = 0; i < r->parts; i++) {
		struct store_range sub;
		size_t from, to;

		if (!store_range_sub(r, i, &sub))
			continue;
		to = span(ti, sub.lo, sub.hi, &from);
		out[i].hosts = to - from;
		out[i].sum = ti->below[to] - ti->below[from];
	}
}
