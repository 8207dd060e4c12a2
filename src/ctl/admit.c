// SPDX-License-Identifier: BSD-2-Clause
/* Admission of control sessions (ctl_int.h): sources, HELLOs, bounds and
 * the refusal log. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "config/config_int.h"
#include "src/ctl/ctl_int.h"

static uint64_t src_key(const struct ry_manager *m, const struct ry__ip *ip)
{
	return ry__ip_key(m, ip, false);
}

static struct ry__srcn *src_find(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry__hnode *x;
	struct ry__srcn *sn;

	ry__hidx_for_each(x, &m->m_ctl_src, src_key(m, ip))
	{
		sn = container_of(x, struct ry__srcn, sn_h);
		if (ry__ip_same_host(&sn->sn_ip, ip))
			return sn;
	}
	return NULL;
}

/* Count inbound session c against its source; -ENOMEM. */
int ry__ctl_src_hold(struct ry__ctl *c)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__srcn *sn = src_find(m, &c->c_src);

	if (!sn) {
		sn = calloc(1, sizeof(*sn));
		if (!sn)
			return -ENOMEM;
		sn->sn_ip = c->c_src;
		sn->sn_ip.port = 0;
		ry__hidx_add(&m->m_ctl_src, &sn->sn_h, src_key(m, &c->c_src));
	}
	sn->sn_n++;
	c->c_srcn = sn;
	return 0;
}

void ry__ctl_src_release(struct ry__ctl *c)
{
	struct ry__srcn *sn = c->c_srcn;

	if (!sn)
		return;
	c->c_srcn = NULL;
	if (--sn->sn_n)
		return;
	ry__hidx_del(&c->c_mgr->m_ctl_src, &sn->sn_h);
	free(sn);
}

static bool accept_match(const struct ry_manager *m, const struct ry__ip *ip)
{
	const struct ry__admit_state *as = m->m_admit;
	unsigned i, bits, full;

	if (as->as_any)
		return true;
	for (i = 0; i < as->as_n; i++) {
		if (as->as_pfx[i].fam != ip->fam)
			continue;
		bits = as->as_len[i];
		full = bits / 8;
		if (memcmp(as->as_pfx[i].a, ip->a, full))
			continue;
		if (bits % 8) {
			unsigned char mask =
			    (unsigned char)(0xff << (8 - bits % 8));

			if ((as->as_pfx[i].a[full] ^ ip->a[full]) & mask)
				continue;
		}
		return true;
	}
	return false;
}

/* The accept list into as (its refusal log is kept). */
static void admit_parse(struct ry_manager *m, struct ry__admit_state *as)
{
	unsigned i;

	as->as_any = false;
	as->as_n = 0;
	for (i = 0; i < m->m_cfg.accept.n && i < RY_MAX_ACCEPT; i++) {
		struct ry__ip *ip = &as->as_pfx[as->as_n];

		/* validated already: ry_config_validate */
		if (ry__parse_prefix(m->m_cfg.accept.s[i], &ip->fam, ip->a,
				     &as->as_len[as->as_n]))
			continue;
		if (!ip->fam)
			as->as_any = true;
		else
			as->as_n++;
	}
	if (as->as_any)
		RY_WARN("mgr",
			"accept = any: every node that reaches %s is "
			"admitted (unsafe outside a lab)",
			m->m_cfg.control);
	m->m_handshake_ns = m->m_cfg.handshake_timeout_ms * 1000000ull;
}

int ry__ctl_admit_init(struct ry_manager *m, const struct ry__ctl_ops *ops)
{
	struct ry__admit_state *as = calloc(1, sizeof(*as));

	if (!as)
		return -ENOMEM;
	as->as_ops = ops;
	admit_parse(m, as);
	m->m_admit = as;
	return 0;
}

/* m_cfg's accept list and handshake timeout changed (reload.c). */
/* May a session from ip speak, bounds aside? */
static bool source_ok(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry__ip pip;
	unsigned i;

	if (accept_match(m, ip))
		return true;
	for (i = 0; i < m->m_cfg.n_peers; i++)
		if (!ry__ip_parse(m->m_cfg.peers[i].address, &pip) &&
		    ry__ip_same_host(&pip, ip))
			return true;
	return ry__peer_dialed_host(m, ip);
}

/* The accept list again; inbound sessions it no longer admits are closed,
 * and their peers' connections failed (revocation is not a goodbye). */
int ry__ctl_admit_reload(struct ry_manager *m)
{
	struct ry__ctl *c;

	if (!m->m_admit)
		return 0;
	admit_parse(m, m->m_admit);
	for (c = m->m_ctls; c; c = c->c_next) {
		if (c->c_dead || !c->c_inbound || source_ok(m, &c->c_src))
			continue;
		if (c->c_peer && c->c_admitted)
			ry__ctl_ops(c)->co_peer_revoked(c->c_peer);
		ry__ctl_refused(c, "no longer admitted after a reload");
		ry__ctl_kill(c, "no longer admitted after a reload");
	}
	return 0;
}

/* Logged once per source per CTL_REFUSE_QUIET_NS: a flood of refusals
 * must not become a flood of log lines. */
static void refuse_log_dir(struct ry_manager *m, const struct ry__ip *ip,
			   bool inbound, const char *why)
{
	struct ry__admit_state *as = m->m_admit;
	struct ry__refusal *r = &as->as_refused[ry__ip_slot(ip)];
	uint64_t now = ry__now_ns();
	char host[INET6_ADDRSTRLEN];

	if (r->rf_ns && ry__ip_same_host(&r->rf_ip, ip) &&
	    ry__since(now, r->rf_ns) < CTL_REFUSE_QUIET_NS) {
		r->rf_quiet++;
		return;
	}
	ry__ip_str(ip, host, sizeof(host));
	if (r->rf_quiet && ry__ip_same_host(&r->rf_ip, ip))
		RY_WARN("mgr",
			"control session %s %s refused: %s (%u more refused "
			"in the last 10 s)",
			inbound ? "from" : "to", host, why, r->rf_quiet);
	else
		RY_WARN("mgr", "control session %s %s refused: %s",
			inbound ? "from" : "to", host, why);
	r->rf_ip = *ip;
	r->rf_ns = now;
	r->rf_quiet = 0;
}

void ry__ctl_refuse_log(struct ry_manager *m, const struct ry__ip *ip,
			const char *why)
{
	refuse_log_dir(m, ip, true, why);
}

/* The refusal of session c, either way: c_src is the other end's IP. */
void ry__ctl_refused(struct ry__ctl *c, const char *why)
{
	refuse_log_dir(c->c_mgr, &c->c_src, c->c_inbound, why);
}

/* May this source open a session at all?  Decided at accept(), before
 * anything is allocated. */
const char *ry__ctl_admit_source(struct ry_manager *m, const struct ry__ip *ip)
{
	const struct ry__srcn *sn = src_find(m, ip);

	if (m->m_nin >= m->m_cfg.max_sessions)
		return "max_sessions reached";
	if (sn && sn->sn_n >= m->m_cfg.max_sessions_per_source)
		return "max_sessions_per_source reached";
	if (ry__ctl_penalized(m, ip))
		return ry__ctl_penalized(m, ip);
	if (source_ok(m, ip))
		return NULL;
	return "not a configured peer's address and not in accept";
}

/* Another live session bound to p. */
static bool ctl_bound(const struct ry_peer *p, const struct ry__ctl *except)
{
	unsigned mine = except && !except->c_dead && except->c_peer == p;

	return p->pr_nctl > mine;
}

/*
 * The one decision: may inbound session c speak as the node its HELLO
 * describes (name, claimed control address)?  0 with the peer record it
 * speaks for (found or made), or -EACCES with why; a refusal changes
 * nothing.
 *
 * A node named by a peer section (or by the application, with an address)
 * is known by its control address: it is admitted only from that
 * address's IP and only claiming that address, and nobody else may claim
 * its name or address.  Any other node is admitted only from an accept
 * prefix, under a name and address no live session or named peer holds.
 *
 * dry: decide only, change nothing; *p_out is the record it would speak
 * for if there is one, else NULL (with a key, a HELLO is
 * checked before the listener's proof is sent and decided for real once
 * the dialer has proven the key).
 */
int ry__ctl_admit_hello(struct ry__ctl *c, const char *name, const char *addr,
			bool dry, struct ry_peer **p_out, char *why, size_t len)
{
	struct ry_manager *m = c->c_mgr;
	const struct ry_peer_config *ea = NULL, *en = NULL, *e;
	struct ry_peer *p, *rn = NULL, *ra = NULL;
	struct ry__ip ip;
	unsigned i;

	/* with a key, a real (!dry) call comes only after the proof */
	for (i = 0; i < m->m_cfg.n_peers; i++) {
		const struct ry_peer_config *pc = &m->m_cfg.peers[i];

		if (!ea && ry__addr_same(pc->address, addr))
			ea = pc;
		if (!en && !strcmp(pc->name, name))
			en = pc;
	}
	rn = ry__peer_by_name(m, name, NULL);
	ra = ry__peer_by_addr(m, addr);
	if (ea || en) {
		e = ea ? ea : en;
		if (!ea) {
			snprintf(why, len,
				 "HELLO claims configured peer %s's name with "
				 "control address %s (configured: %s)",
				 e->name, addr, e->address);
			return -EACCES;
		}
		if (en && en != ea) {
			snprintf(why, len,
				 "HELLO claims peer %s's address and peer %s's "
				 "name",
				 ea->name, en->name);
			return -EACCES;
		}
		if (ry__ip_parse(e->address, &ip) ||
		    !ry__ip_same_host(&ip, &c->c_src)) {
			snprintf(why, len,
				 "HELLO claims configured peer %s (%s) from "
				 "another address",
				 e->name, e->address);
			return -EACCES;
		}
		if (rn && ra && rn != ra) {
			snprintf(why, len,
				 "HELLO claims peer %s's name and peer %s's "
				 "address",
				 rn->pr_name, ra->pr_name);
			return -EACCES;
		}
		if (dry) {
			*p_out = ra;
			return 0;
		}
		p = ra;
		if (!p)
			p = m->m_admit->as_ops->co_peer_new(m, e->name,
							    e->address, true);
		if (!p)
			return -ENOMEM;
		*p_out = p;
		return 0;
	}
	if ((ra && ra->pr_dial) || (rn && rn->pr_dial)) {
		e = NULL;
		p = ra && ra->pr_dial ? ra : rn;
		if ((ra && rn && ra != rn) || p != ra ||
		    ry__ip_parse(p->pr_addr, &ip) ||
		    !ry__ip_same_host(&ip, &c->c_src)) {
			snprintf(why, len,
				 "HELLO claims peer %s (%s) from another "
				 "address or under another name",
				 p->pr_name, p->pr_addr);
			return -EACCES;
		}
		*p_out = p;
		return 0;
	}
	if (!accept_match(m, &c->c_src)) {
		snprintf(why, len,
			 "node %s (%s) is not a configured peer and its "
			 "address is not in accept",
			 name, addr);
		return -EACCES;
	}
	if (rn && ctl_bound(rn, c)) {
		snprintf(why, len, "node name %s is in use by a live session",
			 name);
		return -EACCES;
	}
	if (ra && ra != rn && ctl_bound(ra, c)) {
		snprintf(why, len, "control address %s is in use by peer %s",
			 addr, ra->pr_name);
		return -EACCES;
	}
	if (dry) {
		*p_out = rn;
		return 0;
	}
	p = rn;
	if (!p) {
		p = m->m_admit->as_ops->co_peer_new(m, name, addr, false);
		if (!p)
			return -ENOMEM;
		p->pr_from_hello = true;
	}
	/* a departed node's claim: its record keeps its name */
	if (ra && ra != rn) {
		ra->pr_addr[0] = 0;
		ry__peer_index(ra);
	}
	snprintf(p->pr_addr, sizeof(p->pr_addr), "%s", addr);
	ry__peer_index(p);
	*p_out = p;
	return 0;
}

/*
 * A HELLO with a new incarnation of a peer whose session is still alive:
 * the old process died and its session has not closed yet (a host that
 * vanished without a FIN), or someone else claims to be the peer.  With a
 * key the claim is proven by the handshake (the dry check before the
 * proof lets it on; the real one after it admits it, and hello_apply()
 * kills the old session).  Without one, address admission cannot tell a
 * restart from an impersonator on the peer's host, so it is refused while
 * the old session lives; the old session is probed at once (keepalive
 * after 1 s, twice, 3 s for data unacknowledged) so that it closes within
 * about 3 s if its host is gone and the peer's next dial is admitted.
 */
int ry__ctl_admit_restart(struct ry__ctl *c, struct ry_peer *p, uint64_t node)
{
	struct ry_manager *m = c->c_mgr;
	int one = 1, two = 2;
	unsigned ut = 3000;
	struct ry__ctl *o;
	char why[320];

	if (!p || !p->pr_node || p->pr_node == node || !ctl_bound(p, c) ||
	    m->m_auth)
		return 0;
	for (o = m->m_ctls; o; o = o->c_next) {
		if (o == c || o->c_dead || o->c_peer != p)
			continue;
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPIDLE, &one,
			   sizeof(one));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPINTVL, &one,
			   sizeof(one));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPCNT, &two,
			   sizeof(two));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut,
			   sizeof(ut));
	}
	snprintf(why, sizeof(why),
		 "HELLO claims a new incarnation of peer %s while its session "
		 "is alive (probing that session; a restarted peer is "
		 "admitted once it closes)",
		 p->pr_name);
	ry__ctl_refuse_log(m, &c->c_src, why);
	return -EACCES;
}
