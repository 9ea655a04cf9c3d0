// SPDX-License-Identifier: MIT
#include "frontend/passed.h"

#include <linux/sockios.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct passed_sock {
	struct list_node node;
	int fd;
	struct adm_uid *owner;
};

/* Has the peer of @fd taken everything sent on it (or gone: its queue is
 * freed then)? An error says nothing is left to track either. */
static bool all_read(int fd)
{
	int unread = 0;

	return ioctl(fd, SIOCOUTQ, &unread) < 0 || unread <= 0;
}

void passed_grant(struct passed *p, struct adm_uid *owner)
{
	admission_unread_get(owner);
	p->n++;
}

void passed_cancel(struct passed *p, struct admission *adm, struct adm_uid *owner)
{
	p->n--;
	admission_unread_put(adm, owner);
}

static void sock_drop(struct passed *p, struct admission *adm, struct passed_sock *ps)
{
	list_del(&ps->node);
	close(ps->fd);
	passed_cancel(p, adm, ps->owner);
	free(ps);
}

void passed_init(struct passed *p)
{
	list_init(&p->socks);
	p->n = 0;
	p->swept_ms = 0;
}

void passed_fini(struct passed *p, struct admission *adm)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &p->socks)
	{
		sock_drop(p, adm, list_entry(pos, struct passed_sock, node));
	}
}

/* Close the sockets whose peers have read: every one (@all), or the oldest
 * ones up to the first still unread (cheap, on every new one). */
static void sweep(struct passed *p, struct admission *adm, bool all)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &p->socks)
	{
		struct passed_sock *ps = list_entry(pos, struct passed_sock, node);

		if (all_read(ps->fd))
			sock_drop(p, adm, ps);
		else if (!all)
			break;
	}
}

void passed_done(struct passed *p, struct admission *adm, int sock, struct adm_uid *owner)
{
	struct passed_sock *ps;

	sweep(p, adm, false);
	/* without memory, closed: the slot goes, which a failing allocation
	 * makes no worse */
	if (all_read(sock) || !(ps = calloc(1, sizeof(*ps)))) {
		close(sock);
		passed_cancel(p, adm, owner);
		return;
	}
	/* the peer reads what is queued, then the end of the stream; what it
	 * would send goes nowhere */
	shutdown(sock, SHUT_RDWR);
	ps->fd = sock;
	ps->owner = owner;
	list_add_tail(&p->socks, &ps->node);
}

bool passed_room(struct passed *p, struct admission *adm, const struct adm_uid *owner,
		 unsigned max_total, uint64_t now_ms)
{
	if (owner->unread < PASSED_UNREAD_PER_UID && p->n < max_total)
		return true;
	if (p->swept_ms && now_ms < p->swept_ms + PASSED_SWEEP_MS)
		return false;
	p->swept_ms = now_ms ? now_ms : 1;
	sweep(p, adm, true);
	return owner->unread < PASSED_UNREAD_PER_UID && p->n < max_total;
}
