// SPDX-License-Identifier: BSD-2-Clause
/* The control handshake (ctl_int.h): HELLO / HELLO_ACK, AUTH, REFUSE. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ctl/ctl_int.h"

/* Printable, no spaces: it goes into logs and status output. */
static bool valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* A record other than p known by this node name. */
static bool name_taken(struct ry_manager *m, const struct ry_peer *p,
		       const char *name)
{
	return ry__peer_by_name(m, name, p) != NULL;
}

/* Tell the other end why before closing (unauthenticated: an on-path
 * attacker could forge it, but such a one can close the session anyway). */
static int auth_refuse(struct ry__ctl *c, enum ry__ctl_refusal code,
		       const char *why)
{
	unsigned char b[1];
	struct ry__wbuf w;

	ry__ctl_refused(c, why);
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_refuse_put(&w, (uint8_t)code);
	ry__ctl_send(c, CTL_REFUSE, &w);
	return -EACCES;
}

/* Refused for want of a common key: log why here, send our ids there. */
static int no_common_key(struct ry__ctl *c, const char *what)
{
	struct ry_manager *m = c->c_mgr;
	unsigned char ids[RY__CTL_KEY_IDS][RY__KEY_ID];
	unsigned char b[2 + sizeof(ids)];
	char mine[RY__CTL_KEY_IDS * (2 * RY__KEY_ID + 1)], why[512];
	struct ry__wbuf w;
	unsigned n = ry__auth_ids(m, ids, RY__CTL_KEY_IDS);

	ry__auth_ids_str(ids, n, mine, sizeof(mine));
	snprintf(why, sizeof(why), "no common key: %s; this node holds %s",
		 what, mine);
	ry__ctl_refused(c, why);
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_refuse_put(&w, REF_NO_COMMON_KEY);
	ry__w_key_ids(&w, (const unsigned char(*)[RY__CTL_KEY_ID])ids, n);
	ry__ctl_send(c, CTL_REFUSE, &w);
	return -EACCES;
}

/* The listener's key for this HELLO: the first of the dialer's ids it
 * holds (its current key for a HELLO without ids), or NULL. */
static const struct ry__authkey *choose_key(struct ry__ctl *c,
					    const struct ry__wire_hello *h)
{
	struct ry_manager *m = c->c_mgr;
	const struct ry__authkey *k;

	if (!h->wh_nids)
		return ry__auth_current(m);
	for (unsigned i = 0; i < h->wh_nids; i++) {
		k = ry__auth_key(m, h->wh_ids[i]);
		if (k)
			return k;
	}
	return NULL;
}

void ry__ctl_send_hello(struct ry__ctl *c, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__ctl_auth *a = c->c_auth;
	struct {
		struct ry__wire_hello h;
		unsigned char b[CTL_MAX_FRAME];
	} *x = calloc(1, sizeof(*x));
	struct ry__wbuf w;
	unsigned i;

	if (!x)
		return;
	x->h.wh_node = m->m_node;
	snprintf(x->h.wh_name, sizeof(x->h.wh_name), "%s", m->m_cfg.node);
	snprintf(x->h.wh_addr, sizeof(x->h.wh_addr), "%s", m->m_listen_addr);
	x->h.wh_n = m->m_nrails;
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__wire_rail *wr = &x->h.wh_rail[i];

		snprintf(wr->wr_name, sizeof(wr->wr_name), "%s",
			 m->m_rails[i].lr_cfg.name);
		snprintf(wr->wr_network, sizeof(wr->wr_network), "%s",
			 m->m_rails[i].lr_cfg.network);
		wr->wr_ep = m->m_rails[i].lr_attr.local;
	}
	x->h.wh_auth = a != NULL;
	x->h.wh_data_mac = a && m->m_cfg.data_mac;
	if (a) {
		ry__auth_nonce(a->a_nonce);
		memcpy(x->h.wh_nonce, a->a_nonce, RY__NONCE);
		/* the dialer offers every key it holds, newest first; the
		 * listener names the one it chose (on_hello) */
		if (!reply) {
			x->h.wh_nids =
			    ry__auth_ids(m, x->h.wh_ids, RY__CTL_KEY_IDS);
		} else if (a->a_ack_id) {
			x->h.wh_nids = 1;
			memcpy(x->h.wh_ids[0], a->a_key, RY__KEY_ID);
		}
	}
	ry__wbuf_init(&w, x->b, sizeof(x->b));
	ry__wire_hello_put(&w, &x->h, false);
	if (a && !reply) {
		ry__auth_hash_hello(w.b, w.n, a->a_hello);
	} else if (a && !w.bad) {
		const struct ry__authkey *k = ry__auth_key(m, a->a_key);
		unsigned char proof[RY__MAC];

		/* on_hello chose k a moment ago, under the same lock */
		ry__auth_transcript(a->a_hello, w.b, w.n, a->a_t);
		ry__auth_proof(k, false, a->a_t, proof);
		ry__w_bytes(&w, proof, RY__MAC);
		ry__auth_session_keys(k, false, a->a_t, a->a_ktx, a->a_krx,
				      a->a_kdata);
	}
	ry__ctl_send(c, reply ? CTL_HELLO_ACK : CTL_HELLO, &w);
	free(x);
}

/*
 * Our rail list changed (reload.c): say HELLO again on every admitted
 * session (the listener's side answers with HELLO_ACK, as in the
 * handshake; hello_apply() pairs again).  With a key the handshake is
 * once per session, so those sessions are closed instead: the peer (or
 * we) dials again and the new handshake carries the new list.
 */
void ry__ctl_announce(struct ry_manager *m)
{
	struct ry__ctl *c;

	for (c = m->m_ctls; c; c = c->c_next) {
		if (c->c_dead || !c->c_admitted)
			continue;
		if (c->c_auth)
			ry__ctl_kill(c, "rails changed by a reload; handshake "
					"again");
		else
			ry__ctl_send_hello(c, c->c_inbound);
	}
}

int ry__ctl_conn_keys(const struct ry__ctl *c, const struct ry_qp_endpoint *loc,
		      const struct ry_qp_endpoint *rem, struct ry_qp_attr *attr)
{
	if (!ry__ctl_alive(c) || !c->c_admitted || !c->c_mac_on || !c->c_auth)
		return -EPERM;
	ry__auth_conn_keys(c->c_auth->a_kdata, loc, rem, attr->mac_tx,
			   attr->mac_rx);
	attr->mac = true;
	return 0;
}

/* Act on a HELLO or HELLO_ACK that admission (and the key) allowed. */
static int hello_apply(struct ry__ctl *c, const struct ry__wire_hello *h,
		       bool reply)
{
	struct ry_manager *m = c->c_mgr;
	char why[320];
	struct ry_peer *p;
	uint64_t old_node;
	bool fresh;
	int ret;

	if (!c->c_admitted) {
		if (c->c_inbound) {
			ret = ry__ctl_admit_hello(c, h->wh_name, h->wh_addr,
						  false, &p, why, sizeof(why));
			if (ret == -EACCES)
				ry__ctl_refuse_log(m, &c->c_src, why);
			if (ret)
				return ret;
			ret = ry__ctl_admit_restart(c, p, h->wh_node);
			if (ret)
				return ret;
			ry__ctl_bind(c, p);
			m->m_npending--;
			ry__list_del(&c->c_plink);
		}
		/* a session we dialed: we chose the address */
		c->c_admitted = true;
		snprintf(c->c_claim, sizeof(c->c_claim), "%s", h->wh_addr);
		p = c->c_peer;
		if (!ry__ctl_alive(p->pr_ctl))
			p->pr_ctl = c;
	} else if (strcmp(h->wh_addr, c->c_claim)) {
		return -EPROTO; /* one session speaks for one node */
	}
	p = c->c_peer;
	if (ry__ctl_ops(c)->co_peer_rails) {
		struct ry_qp_endpoint ep[RY_MAX_RAILS];

		for (unsigned i = 0; i < h->wh_n && i < RY_MAX_RAILS; i++)
			ep[i] = h->wh_rail[i].wr_ep;
		ry__ctl_ops(c)->co_peer_rails(p, ep, h->wh_n);
	}
	if (h->wh_n != p->pr_nrrails) {
		/* before anything changes: a refusal leaves the record as
		 * it was */
		struct ry__rrail *rr =
		    h->wh_n ? realloc(p->pr_rrails, h->wh_n * sizeof(*rr))
			    : NULL;

		if (h->wh_n && !rr)
			return -ENOMEM;
		if (!h->wh_n)
			free(p->pr_rrails);
		p->pr_rrails = rr;
		p->pr_nrrails = h->wh_n;
	}
	if (!name_taken(m, p, h->wh_name)) {
		snprintf(p->pr_node_name, sizeof(p->pr_node_name), "%s",
			 h->wh_name);
		ry__peer_index(p);
	}
	old_node = p->pr_node && p->pr_node != h->wh_node ? p->pr_node : 0;
	fresh = old_node != 0;
	if (fresh && p->pr_ctl != c) {
		/* the old incarnation's session speaks for nobody now */
		struct ry__ctl *old = p->pr_ctl;

		p->pr_ctl = c;
		if (old)
			ry__ctl_kill(old, "the peer restarted");
	}
	p->pr_node = h->wh_node;
	ry__peer_index(p);
	for (unsigned i = 0; i < h->wh_n; i++) {
		struct ry__rrail *rr = &p->pr_rrails[i];

		memcpy(rr->rr_name, h->wh_rail[i].wr_name, sizeof(rr->rr_name));
		memcpy(rr->rr_network, h->wh_rail[i].wr_network,
		       sizeof(rr->rr_network));
		rr->rr_ep = h->wh_rail[i].wr_ep;
	}
	/* with a key the listener's HELLO_ACK went out before AUTH */
	if (!reply && !c->c_auth)
		ry__ctl_send_hello(c, true);
	ry__ctl_ops(c)->co_peer_ready(p, old_node, reply);
	return 0;
}

int ry__ctl_on_hello(struct ry__ctl *c, const unsigned char *body, size_t blen,
		     bool reply)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__ctl_auth *a = c->c_auth;
	struct ry__wire_hello *h = malloc(sizeof(*h));
	const struct ry__authkey *k;
	struct ry_peer *p;
	char why[320];
	int ret;

	if (!h)
		return -ENOMEM;
	ret = ry__wire_hello_get(body, blen, reply, h);
	if (ret)
		goto out;
	ret = -EPROTO;
	/* the dialer says HELLO, the listener answers HELLO_ACK */
	if (reply == c->c_inbound || !valid_name(h->wh_name))
		goto out;
	/* with a key, the handshake is once per session */
	if (a && (c->c_admitted || a->a_pending))
		goto out;
	ret = -ELOOP;
	if (h->wh_node == m->m_node)
		goto out; /* dialed ourselves */
	if (!a && h->wh_auth) {
		ret = auth_refuse(c, REF_NO_KEY,
				  "the peer uses key_file; this node has "
				  "none (give both the same key_file)");
		goto out;
	}
	if (a && !h->wh_auth) {
		ret = auth_refuse(c, REF_KEY_REQUIRED,
				  "peer sent no authentication; this node "
				  "requires key_file");
		goto out;
	}
	/* the two would connect, and every data packet would be dropped */
	if (a && h->wh_data_mac != m->m_cfg.data_mac) {
		ret = auth_refuse(c, REF_DATA_MAC,
				  m->m_cfg.data_mac
				      ? "the peer has data_mac off; this node "
					"has it on (set it alike on every node)"
				      : "the peer has data_mac on; this node "
					"has it off (set it alike on every "
					"node)");
		goto out;
	}
	if (!a) {
		ret = hello_apply(c, h, reply);
		goto out;
	}
	if (c->c_inbound) {
		/* decide nothing yet; refuse early what could never pass */
		ret = ry__ctl_admit_hello(c, h->wh_name, h->wh_addr, true, &p,
					  why, sizeof(why));
		if (ret == -EACCES)
			ry__ctl_refuse_log(m, &c->c_src, why);
		if (!ret)
			ret = ry__ctl_admit_restart(c, p, h->wh_node);
		if (ret)
			goto out;
		k = choose_key(c, h);
		if (!k) {
			char theirs[RY__CTL_KEY_IDS * (2 * RY__KEY_ID + 1)];
			char what[sizeof(theirs) + 40];

			ry__auth_ids_str(h->wh_ids, h->wh_nids, theirs,
					 sizeof(theirs));
			snprintf(what, sizeof(what),
				 "the peer holds key ids %s", theirs);
			ret = no_common_key(c, what);
			goto out;
		}
		memcpy(a->a_key, ry__auth_key_id(k), RY__KEY_ID);
		a->a_ack_id = h->wh_nids != 0;
		ry__auth_hash_hello(body, blen, a->a_hello);
		a->a_pending = h;
		h = NULL;
		ry__ctl_send_hello(c, true);
		return 0;
	}
	/* a listener without ids has one key: ours, if it is to work */
	k = h->wh_nids ? ry__auth_key(m, h->wh_ids[0]) : ry__auth_current(m);
	if (!k) {
		char id[2 * RY__KEY_ID + 1], what[80];

		ry__auth_ids_str(h->wh_ids, 1, id, sizeof(id));
		snprintf(what, sizeof(what),
			 "the peer chose key id %s, not one this node offered",
			 id);
		ret = no_common_key(c, what);
		goto out;
	}
	memcpy(a->a_key, ry__auth_key_id(k), RY__KEY_ID);
	ry__auth_transcript(a->a_hello, body, blen - RY__MAC, a->a_t);
	if (!ry__auth_proof_ok(k, false, a->a_t, h->wh_proof)) {
		ret = auth_refuse(c, REF_KEY_DIFFERS,
				  "authentication failed: the peer's key "
				  "differs");
		goto out;
	}
	{
		unsigned char proof[RY__MAC], b[RY__MAC];
		struct ry__wbuf w;

		ry__auth_proof(k, true, a->a_t, proof);
		ry__wbuf_init(&w, b, sizeof(b));
		ry__wire_auth_put(&w, proof);
		ry__ctl_send(c, CTL_AUTH, &w);
	}
	ry__auth_session_keys(k, true, a->a_t, a->a_ktx, a->a_krx, a->a_kdata);
	c->c_mac_on = true;
	ret = hello_apply(c, h, reply);
out:
	free(h);
	return ret;
}

/* The listener's last handshake step: the dialer's proof. */
int ry__ctl_on_auth(struct ry__ctl *c, const unsigned char *body, size_t n)
{
	struct ry__ctl_auth *a = c->c_auth;
	const struct ry__authkey *k;
	unsigned char proof[RY__MAC];
	struct ry__wire_hello *h;
	int ret;

	if (!a || !c->c_inbound || c->c_admitted || !a->a_pending)
		return -EPROTO;
	if (ry__wire_auth_get(body, n, proof))
		return -EBADMSG;
	k = ry__auth_key(c->c_mgr, a->a_key);
	if (!k) {
		char id[2 * RY__KEY_ID + 1], what[96];

		ry__auth_ids_str(a->a_key, 1, id, sizeof(id));
		snprintf(what, sizeof(what),
			 "key id %s stopped being accepted during the "
			 "handshake",
			 id);
		return no_common_key(c, what);
	}
	if (!ry__auth_proof_ok(k, true, a->a_t, proof))
		return auth_refuse(c, REF_KEY_DIFFERS,
				   "authentication failed: the peer's key "
				   "differs");
	h = a->a_pending;
	a->a_pending = NULL;
	c->c_mac_on = true;
	ret = hello_apply(c, h, false);
	free(h);
	return ret;
}

static void refused_no_key(struct ry__ctl *c, const unsigned char *body,
			   size_t n)
{
	unsigned char ids[RY__CTL_KEY_IDS][RY__KEY_ID], mine[2][RY__KEY_ID];
	char s[2][RY__CTL_KEY_IDS * (2 * RY__KEY_ID + 1)], why[512];
	int k = ry__wire_refuse_ids(body, n, ids);
	unsigned nm = ry__auth_ids(c->c_mgr, mine, 2);

	ry__auth_ids_str(ids, k > 0 ? (unsigned)k : 0, s[0], sizeof(s[0]));
	ry__auth_ids_str(mine, nm, s[1], sizeof(s[1]));
	snprintf(why, sizeof(why),
		 "no common key: the peer holds key ids %s; this node holds "
		 "%s",
		 k > 0 ? s[0] : "(not said)", s[1]);
	ry__ctl_refused(c, why);
}

/* The other end refused us and says why. */
int ry__ctl_on_refuse(struct ry__ctl *c, const unsigned char *body, size_t n)
{
	uint8_t code = ry__wire_refuse_get(body, n);

	if (c->c_admitted)
		return -EPROTO;
	switch (code) {
	case REF_KEY_DIFFERS:
		ry__ctl_refused(c, "authentication failed: the peer's key "
				   "differs");
		break;
	case REF_KEY_REQUIRED:
		ry__ctl_refused(c, "authentication failed: the peer requires "
				   "key_file; this node has none");
		break;
	case REF_NO_KEY:
		ry__ctl_refused(c, "authentication failed: the peer has no "
				   "key_file; this node requires one");
		break;
	case REF_DATA_MAC:
		ry__ctl_refused(c, "data_mac differs between the nodes (set it "
				   "alike on every node)");
		break;
	case REF_NO_COMMON_KEY:
		refused_no_key(c, body, n);
		break;
	default:
		ry__ctl_refused(c, "refused by the peer");
	}
	return -EACCES;
}
