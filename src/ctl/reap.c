// SPDX-License-Identifier: BSD-2-Clause
/* Freeing closed control sessions and the peer records HELLOs made. */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>

#include <sodium.h>

#include "src/ctl/ctl_int.h"

void ry__ctl_free(struct ry__ctl *c)
{
	if (c->c_auth) {
		free(c->c_auth->a_pending);
		sodium_memzero(c->c_auth, sizeof(*c->c_auth));
		free(c->c_auth);
	}
	close(c->c_fd);
	free(c->c_rbuf);
	free(c->c_wbuf);
	free(c);
}

/*
 * Peers freed by the reaper since memory was last given back.  When many
 * clients leave at once (a rack powered off), their records, QPs and
 * sessions were allocated together and are freed together; glibc keeps
 * such holes in the heap for reuse, so the process would stay as large
 * as at its peak.  malloc_trim() hands the free pages back (a few ms on a
 * heap of hundreds of MB, and only after a mass departure).
 */
#define REAP_TRIM_PEERS 64

static void reaped(struct ry_manager *m, unsigned n, bool more)
{
	m->m_reaped += n;
	/* once the wave is over: while records still drain, the next pass
	 * (100 ms) frees more */
	if (more || m->m_reaped < REAP_TRIM_PEERS)
		return;
	m->m_reaped = 0;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

void ry__ctl_reap(struct ry_manager *m)
{
	struct ry__list *pos, *next;
	struct ry_peer *p;
	struct ry__ctl *c;
	bool again = false;
	unsigned freed = 0;
	int ret;

	while ((c = m->m_ctl_dead)) {
		m->m_ctl_dead = c->c_dnext;
		*c->c_pprev = c->c_next;
		if (c->c_next)
			c->c_next->c_pprev = c->c_pprev;
		ry__ctl_free(c);
	}
	if (!m->m_reap_peers || ry__now_ns() < m->m_reap_next_ns)
		return;
	/*
	 * Records made from HELLOs must not pile up (manager.h).  A record
	 * whose sessions are gone may not be disposable yet (its connections
	 * still failing over, draining): look again, at most every 100 ms,
	 * until every such record is gone.  Only the records on m_reapq
	 * (their last session closed; ry__ctl_bind) are looked at, whatever the
	 * number of sessions and peers.
	 */
	m->m_reap_peers = false;
	m->m_reap_next_ns = ry__now_ns() + 100000000ull;
	ry__list_for_each_safe(pos, next, &m->m_reapq) {
		p = ry__list_entry(pos, struct ry_peer, pr_rlink);
		ret = m->m_admit->as_ops->co_peer_release(p); /* unlinks it */
		if (!ret)
			freed++;
		else if (ret == -EAGAIN)
			again = true;
	}
	m->m_reap_peers = again;
	reaped(m, freed, again);
}

void ry__ctl_close_all(struct ry_manager *m)
{
	struct ry__ctl *c;

	while ((c = m->m_ctls)) {
		m->m_ctls = c->c_next;
		/* the peer records are gone already (teardown) */
		if (!c->c_dead) {
			ry__fd_unwatch(m, c->c_fd);
			ry__ctl_src_release(c);
			ry__list_del(&c->c_plink);
		}
		ry__ctl_free(c);
	}
	m->m_ctl_dead = NULL;
	if (m->m_listen_fd >= 0) {
		ry__fd_unwatch(m, m->m_listen_fd);
		close(m->m_listen_fd);
		m->m_listen_fd = -1;
	}
	free(m->m_admit);
	m->m_admit = NULL;
	ry__auth_fini(m);
}
