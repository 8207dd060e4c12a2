// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two-sided messages over the rails: the receive buffers each rail's SRQ
 * holds (so receive memory does not grow with the number of peers), the
 * send slots messages are copied into, and exactly-once delivery.
 *
 * Every message carries a per-peer sequence number, assigned when it is
 * first posted and kept across replays.  The receiver remembers which
 * sequences in [pr_rx_base, pr_rx_base + RY__RXWIN) it has delivered in a
 * ring bitmap (bit seq % RY__RXWIN) and everything below pr_rx_base; a
 * replayed copy of a message that had in fact arrived is acknowledged by
 * the transport and dropped here.
 *
 * The sender never assigns a sequence RY__TXWIN or more above its oldest
 * message not yet completed.  Everything below that oldest one has been
 * acknowledged by the transport, so it sits in one of the receiver's
 * receive buffers if it is not delivered yet: the receiver's pr_rx_base
 * lags the sender by at most the receive buffers of all its rails
 * (RY__RECV_BUFS x RY_MAX_RAILS), and RY__RXWIN leaves that much room above
 * RY__TXWIN.  A sequence past the window therefore comes only from a
 * sender that breaks the protocol: it is dropped and the connection it came
 * on fails (ry__rxwin_accept), in constant time whatever the sequence.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

static void repost(struct ry__lrail *lr, uint64_t idx)
{
	struct ry_recv_wr rwr = {
	    .wr_id = idx,
	    .sge =
		{
		    .addr = (uintptr_t)lr->lr_recv_buf + idx * RY__MSG_BUF,
		    .length = RY__MSG_BUF,
		    .lkey = lr->lr_recv_mr->lkey,
		},
	};
	int ret;

	pthread_mutex_lock(&lr->lr_lock);
	ret = ry__rail_post_recv(lr->lr_rail, &rwr, 1);
	pthread_mutex_unlock(&lr->lr_lock);
	if (ret)
		RY_ERR("mgr", "rail %s: reposting a receive: %d",
		       lr->lr_cfg.name, ret);
}

int ry__recv_setup(struct ry__lrail *lr)
{
	size_t len = (size_t)RY__RECV_BUFS * RY__MSG_BUF;
	uint64_t i;
	int ret;

	lr->lr_recv_buf = malloc(len);
	if (!lr->lr_recv_buf)
		return -ENOMEM;
	ret = ry__rail_reg_mr(lr->lr_pd, lr->lr_recv_buf, len,
			      RY_ACCESS_LOCAL_WRITE, &lr->lr_recv_mr);
	if (ret) {
		RY_ERR("mgr", "rail %s: registering receive buffers: %d",
		       lr->lr_cfg.name, ret);
		free(lr->lr_recv_buf);
		lr->lr_recv_buf = NULL;
		return ret;
	}
	for (i = 0; i < RY__RECV_BUFS; i++)
		repost(lr, i);
	return 0;
}

void ry__recv_teardown(struct ry__lrail *lr)
{
	if (lr->lr_recv_mr)
		ry__rail_dereg_mr(lr->lr_recv_mr);
	lr->lr_recv_mr = NULL;
	free(lr->lr_recv_buf);
	lr->lr_recv_buf = NULL;
}

int ry__rxwin_accept(uint64_t *base, uint64_t *bits, uint64_t seq)
{
	uint64_t *w;
	uint64_t bit;

	if (seq < *base)
		return 0;
	/*
	 * A conforming sender never gets this far ahead (see the top of this
	 * file), so a sequence past the window is a protocol violation.
	 * Sliding the window up to it would forget sequences that may still
	 * arrive (and lose them), and take time proportional to the distance,
	 * which the sender chooses: refuse it instead.
	 */
	if (seq - *base >= RY__RXWIN)
		return -ERANGE;
	bit = seq % RY__RXWIN;
	w = &bits[bit / 64];
	if (*w & (1ull << (bit % 64)))
		return 0;
	*w |= 1ull << (bit % 64);
	/* at most RY__RXWIN steps: every step clears a set bit */
	for (;;) {
		bit = *base % RY__RXWIN;
		w = &bits[bit / 64];
		if (!(*w & (1ull << (bit % 64))))
			break;
		*w &= ~(1ull << (bit % 64));
		(*base)++;
	}
	return 1;
}

/*
 * A DATA or NOTIFY message from p: delivered unless it is a duplicate.  c
 * is the connection it came on, NULL when that QP is gone already (below).
 */
static void data_rx(struct ry_peer *p, struct ry__conn *c,
		    const struct ry__mhdr *h, const unsigned char *buf,
		    uint32_t len, uint64_t now)
{
	char why[128];
	int ret;

	if (le64toh(h->mh_node) != p->pr_node ||
	    le32toh(h->mh_len) > len - RY__MSG_HDR)
		return;
	ret =
	    ry__rxwin_accept(&p->pr_rx_base, p->pr_rx_bits, le64toh(h->mh_seq));
	if (ret < 0) {
		snprintf(why, sizeof(why),
			 "message sequence %" PRIu64
			 " outside the receive window [%" PRIu64
			 ", +%u): protocol violation",
			 (uint64_t)le64toh(h->mh_seq), p->pr_rx_base,
			 RY__RXWIN);
		if (c)
			ry__conn_mark_failed(c, why, now);
		else
			RY_WARN("mgr", "peer %s: %s", p->pr_name, why);
		return;
	}
	if (!ret)
		return;
	ry__queue_message(
	    p->pr_mgr, p,
	    le16toh(h->mh_type) == MT_DATA ? RY_MSG_DATA : RY_MSG_NOTIFY,
	    buf + RY__MSG_HDR, le32toh(h->mh_len), le64toh(h->mh_notify));
}

static bool parse_hdr(struct ry__mhdr *h, const unsigned char *buf,
		      uint32_t len)
{
	if (len < RY__MSG_HDR)
		return false;
	memcpy(h, buf, sizeof(*h));
	return le32toh(h->mh_magic) == RY__MH_MAGIC;
}

void ry__msg_rx(struct ry__conn *c, const unsigned char *buf, uint32_t len,
		uint64_t now)
{
	struct ry__mhdr h;

	if (!parse_hdr(&h, buf, len))
		return;
	c->cn_last_ok_ns = now;
	/* proves only the peer-to-us direction: conn.c waits for ours too */
	if (c->cn_state == CONN_PROBING)
		ry__conn_on_probe_rx(c, now);
	switch (le16toh(h.mh_type)) {
	case MT_DATA:
	case MT_NOTIFY:
		data_rx(c->cn_peer, c, &h, buf, len, now);
		break;
	default:
		break; /* heartbeat, probe: being here was the point */
	}
}

/*
 * A message whose QP no longer finds its connection: the QP was destroyed
 * (a failed attempt, a drained connection) after its rail had accepted
 * the message and acknowledged it, so the sender counts it delivered.
 * With the rails on threads of their own a packet can be taken between
 * the manager's last poll of the CQ and the QP's destruction; a batch
 * polled before a failure in it can hold more.  Dropping it would lose a
 * message for good (test_stress saw it under load: then the window stuck
 * below the hole).  The rail checked the packet against the live QP, the
 * header names the sending node: deliver it through that peer's window,
 * which drops it if a replay got there first.  It proves nothing about
 * any connection.  The peer is found by its incarnation (peer_index.c):
 * with thousands of peers and a rail failing under load such packets
 * come in bursts.
 */
static void retired_rx(struct ry_manager *m, const unsigned char *buf,
		       uint32_t len, uint64_t now)
{
	struct ry__mhdr h;
	struct ry_peer *p;

	if (!parse_hdr(&h, buf, len) ||
	    (le16toh(h.mh_type) != MT_DATA && le16toh(h.mh_type) != MT_NOTIFY))
		return;
	p = ry__peer_by_node(m, le64toh(h.mh_node));
	if (p)
		data_rx(p, NULL, &h, buf, len, now);
}

void ry__on_recv(struct ry__lrail *lr, const struct ry_wc *wc, uint64_t now)
{
	const unsigned char *buf =
	    (unsigned char *)lr->lr_recv_buf + wc->wr_id * RY__MSG_BUF;
	struct ry__conn *c;

	if (wc->status == RY_WC_SUCCESS) {
		c = ry__conn_by_qpn(lr, wc->qp_num);
		if (c)
			ry__msg_rx(c, buf, wc->byte_len, now);
		else
			retired_rx(lr->lr_mgr, buf, wc->byte_len, now);
	} else if (wc->status != RY_WC_FLUSHED) {
		/* a responder error: the QP is in ERR, and its own WRs will
		 * come back flushed, which names nothing */
		c = ry__conn_by_qpn(lr, wc->qp_num);
		if (c &&
		    (c->cn_state == CONN_ACTIVE || c->cn_state == CONN_PROBING))
			ry__conn_mark_failed(c, ry_wc_status_str(wc->status),
					     c->cn_last_ok_ns);
	}
	repost(lr, wc->wr_id);
}

int ry__msg_slots_setup(struct ry_manager *m)
{
	size_t len = (size_t)RY__MSG_SLOTS * RY__MSG_BUF;
	struct ry__mhdr *h;
	void *buf;
	unsigned i;
	int ret;

	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	ret = ry__region_reg(m, buf, len, 0, &m->m_msg_region);
	if (ret) {
		free(buf);
		return ret;
	}
	for (i = 0; i < RY__MSG_SLOTS; i++)
		m->m_slot_free[i] = RY__MSG_SLOTS - 1 - i;
	m->m_nslot_free = RY__MSG_SLOTS;

	h = calloc(2, sizeof(*h));
	if (!h)
		return -ENOMEM;
	ret = ry__region_reg(m, h, 2 * sizeof(*h), 0, &m->m_ctl_region);
	if (ret) {
		free(h);
		return ret;
	}
	for (i = 0; i < 2; i++) {
		h[i].mh_magic = htole32(RY__MH_MAGIC);
		h[i].mh_type = htole16(i ? MT_PROBE : MT_HEARTBEAT);
		h[i].mh_node = htole64(m->m_node);
	}
	return 0;
}

/* m_slot_lock: an op of any context takes and gives back slots */
unsigned ry__slot_get(struct ry_manager *m)
{
	unsigned s = ~0u;

	pthread_mutex_lock(&m->m_slot_lock);
	if (m->m_nslot_free)
		s = m->m_slot_free[--m->m_nslot_free];
	pthread_mutex_unlock(&m->m_slot_lock);
	return s;
}

void ry__slot_put(struct ry_manager *m, unsigned slot)
{
	pthread_mutex_lock(&m->m_slot_lock);
	m->m_slot_free[m->m_nslot_free++] = slot;
	pthread_mutex_unlock(&m->m_slot_lock);
}

void *ry__slot_addr(struct ry_manager *m, unsigned slot)
{
	return (unsigned char *)m->m_msg_region->rg_addr +
	       (size_t)slot * RY__MSG_BUF;
}

void ry__msg_prepare(struct ry__op *op, enum ry__mtype type, const void *data,
		     size_t len)
{
	struct ry_manager *m = op->op_peer->pr_mgr;
	unsigned char *s = ry__slot_addr(m, op->op_slot);
	struct ry__mhdr h = {
	    .mh_magic = htole32(RY__MH_MAGIC),
	    .mh_type = htole16(type),
	    .mh_node = htole64(m->m_node),
	    .mh_notify = htole64(op->op_notify_val),
	    .mh_len = htole32((uint32_t)len),
	};

	memcpy(s, &h, sizeof(h));
	if (len)
		memcpy(s + RY__MSG_HDR, data, len);
	op->op_msg_len = (uint32_t)(RY__MSG_HDR + len);
	op->op_seq = 0; /* assigned at first post */
}

uint64_t ry__tx_seq_take(struct ry_peer *p)
{
	uint64_t s = p->pr_tx_seq + 1, bit;

	if (s >= p->pr_tx_low + RY__TXWIN)
		return 0;
	bit = s % RY__TXWIN;
	p->pr_tx_bits[bit / 64] |= 1ull << (bit % 64);
	p->pr_tx_seq = s;
	return s;
}

void ry__tx_seq_done(struct ry_peer *p, uint64_t seq)
{
	uint64_t bit;

	if (seq < p->pr_tx_low || seq > p->pr_tx_seq)
		return;
	bit = seq % RY__TXWIN;
	p->pr_tx_bits[bit / 64] &= ~(1ull << (bit % 64));
	while (p->pr_tx_low <= p->pr_tx_seq) {
		bit = p->pr_tx_low % RY__TXWIN;
		if (p->pr_tx_bits[bit / 64] & (1ull << (bit % 64)))
			break;
		p->pr_tx_low++;
	}
}

void ry__tx_seq_reset(struct ry_peer *p)
{
	p->pr_tx_seq = 0;
	p->pr_tx_low = 1;
	memset(p->pr_tx_bits, 0, sizeof(p->pr_tx_bits));
}
