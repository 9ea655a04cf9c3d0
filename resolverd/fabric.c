// SPDX-License-Identifier: MIT
/* The fabric protocol's entry points for the resolver core. */
#include "fabric.h"

#include <errno.h>

#include "daemon.h"
#include "tlv.h"

int fabric_start(struct ibresd *d)
{
	d->fabric = NULL;
	for (unsigned i = 0; i < d->n_eps; i++)
		if (d->eps[i].cfg.transport != TRANSPORT_NONE)
			return -EOPNOTSUPP;
	return 0;
}

void fabric_stop(struct ibresd *d)
{
	d->fabric = NULL;
}

bool fabric_may_query(struct ibresd *d, const struct cache_key *k)
{
	(void)k;
	return d->fabric != NULL;
}

int fabric_query(struct ibresd *d, struct cache_entry *e)
{
	(void)d;
	(void)e;
	return -EOPNOTSUPP;
}

void fabric_stats(struct ibresd *d, struct tlv_writer *w)
{
	(void)d;
	(void)w;
}
