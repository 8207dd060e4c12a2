// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail's network side, as rxe_net.c and rxe_recv.c: the one UDP
 * socket (buffers, GSO/GRO, bind), the transmit batch that sendmmsg
 * flushes (GSO: runs of equal segments to one peer go as one datagram),
 * the receive batches that recvmmsg fills and GRO coalesces, and the
 * demultiplexer, ry__soft_rx_packet: wire.c parses the header, then the
 * destination QP's state, cookie and peer decide whether the packet is
 * anyone's; only then are its CRC (and, with data_mac, its MAC) checked and
 * the responder or the completer sees it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "src/util/log.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define SOCK_BUF (32 << 20)

/* ---- transmit batch ---- */

bool ry__soft_tx_full(const struct ry__soft_rail *r)
{
	return r->ntxh >= RY__SOFT_TX_PKTS - 2 ||
	       r->ntxv >= 2 * RY__SOFT_TX_PKTS - 4 ||
	       r->ntxm >= RY__SOFT_TX_MSGS;
}

static bool same_dst(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr &&
	       a->sin_port == b->sin_port;
}

/* Zero bytes to pad a short last segment with (ry__soft_may_pad); a pad
 * is at most an eighth of RY__SOFT_GSO_BYTES. */
static const uint8_t tx_zeros[8192];

/*
 * m ends in the short last packet of a message: pad it to m->seg so that
 * a segment of seglen joins m.  A GSO datagram must have equal segments
 * but the last, so without this every small message is a datagram of its
 * own through the whole kernel path (4 KiB writes at MTU 1500: 3
 * segments, the last short).  Only when the pad is at most an eighth of
 * the datagram so far, so a tiny message after a big segment is never
 * blown up to a segment; and never on a path with a standing queue
 * (ry__soft_tx), where zeros would take the place of data.  An eighth,
 * not a sixteenth: 16 KiB writes at MTU 9000 lack about 1.4 KiB of
 * their second segment and went 3.3 -> 5.0 GB/s with it.
 */
static void tx_pad(struct ry__soft_rail *r, struct ry__soft_txmsg *m,
		   uint32_t seglen)
{
	uint32_t last = m->bytes - (m->nseg - 1) * m->seg;
	uint32_t pad = m->seg - last;

	if (!m->pad_ok || seglen > m->seg || pad * 8 > m->bytes ||
	    pad > sizeof(tx_zeros) ||
	    m->bytes + pad + seglen > RY__SOFT_GSO_BYTES)
		return;
	r->txv[r->ntxv].iov_base = (void *)tx_zeros;
	r->txv[r->ntxv++].iov_len = pad;
	m->niov++;
	m->bytes += pad;
	m->closed = false;
	r->st.tx_pad_bytes += pad;
}

static void tx_append(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		      const void *hdr, uint32_t hlen, const void *payload,
		      uint32_t paylen, bool pad_ok)
{
	uint32_t seglen = hlen + paylen;
	struct ry__soft_txmsg *m;
	bool joins; /* m could take another segment for dst */

	if (ry__soft_tx_full(r))
		ry__soft_tx_flush(r);
	m = r->ntxm ? &r->txi[r->ntxm - 1] : NULL;
	joins = r->gso && m && same_dst(&m->dst, dst) &&
		m->nseg < RY__SOFT_GSO_SEGS;
	if (joins && m->closed)
		tx_pad(r, m, seglen); /* opens m again if it pads */
	if (!(joins && !m->closed && seglen <= m->seg &&
	      m->bytes + seglen <= RY__SOFT_GSO_BYTES)) {
		m = &r->txi[r->ntxm++];
		m->dst = *dst;
		m->seg = seglen;
		m->nseg = 0;
		m->bytes = 0;
		m->closed = false;
		m->iov0 = r->ntxv;
		m->niov = 0;
	}
	if (seglen < m->seg) {
		m->closed = true; /* only the last GSO segment may be short */
		m->pad_ok = pad_ok;
	}
	m->nseg++;
	m->bytes += seglen;
	r->txv[r->ntxv].iov_base = (void *)hdr;
	r->txv[r->ntxv++].iov_len = hlen;
	m->niov++;
	if (paylen) {
		r->txv[r->ntxv].iov_base = (void *)payload;
		r->txv[r->ntxv++].iov_len = paylen;
		m->niov++;
	}
}

void ry__soft_tx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p,
		 const void *payload)
{
	struct ry__soft_rail *r = qp_rail(qp);
	const struct sockaddr_in *dst = &qp->peer;
	struct ry__soft_txhdr *t;
	struct ry__soft_pkt mp;
	uint32_t hlen = RY__SOFT_HDR_LEN;
	bool dup = false, pad;

	if (!r->eff_up || r->fault.drop_all) {
		r->st.faults_dropped++;
		return;
	}
	if (qp->mac.on) {
		mp = *p;
		mp.flags |= RY__SOFT_F_MAC;
		p = &mp;
		hlen += RY__SOFT_MAC_LEN;
	}
	if (ry__soft_tx_full(r))
		ry__soft_tx_flush(r);
	t = &r->txh[r->ntxh++];
	ry__soft_hdr_encode(&t->h, p);
	ry__soft_hdr_seal(&t->h, payload, p->paylen);
	if (hlen > RY__SOFT_HDR_LEN)
		ry__soft_mac_sign(qp, &t->h, p, payload, t->mac);
	if (ry__soft_fault_tx(r, dst, &t->h, hlen, payload, p->paylen, &dup))
		return;
	/* Zeros cost a link that is the bottleneck (a standing queue) more
	 * than the datagrams they save cost the CPU. */
	pad = ry__soft_may_pad(p->opcode, p->flags) && !ry__soft_cc_queued(qp);
	tx_append(r, dst, t, hlen, payload, p->paylen, pad);
	if (dup)
		tx_append(r, dst, t, hlen, payload, p->paylen, pad);
}

/* A whole prepared packet (fault release, tests): copied by the kernel at
 * flush, so the buffer must live until then. */
void ry__soft_tx_raw(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		     const void *pkt, uint32_t len)
{
	tx_append(r, dst, pkt, len, NULL, 0, false);
}

static void tx_reset(struct ry__soft_rail *r)
{
	r->ntxm = 0;
	r->ntxv = 0;
	r->ntxh = 0;
}

void ry__soft_tx_flush(struct ry__soft_rail *r)
{
	unsigned off = 0, waits = 0;

	if (!r->ntxm)
		return;
	for (unsigned i = 0; i < r->ntxm; i++) {
		struct ry__soft_txmsg *m = &r->txi[i];
		struct msghdr *h = &r->txm[i].msg_hdr;

		memset(h, 0, sizeof(*h));
		h->msg_name = &m->dst;
		h->msg_namelen = sizeof(m->dst);
		h->msg_iov = &r->txv[m->iov0];
		h->msg_iovlen = m->niov;
		if (m->nseg > 1) {
			struct cmsghdr *c;

			h->msg_control = r->txc[i];
			h->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
			c = CMSG_FIRSTHDR(h);
			c->cmsg_level = SOL_UDP;
			c->cmsg_type = UDP_SEGMENT;
			c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)(void *)CMSG_DATA(c) = (uint16_t)m->seg;
		}
	}
	while (off < r->ntxm) {
		int n = sendmmsg(r->sock, r->txm + off, r->ntxm - off, 0);

		if (n > 0) {
			for (int i = 0; i < n; i++) {
				r->st.tx_packets += r->txi[off + i].nseg;
				r->st.tx_bytes += r->txi[off + i].bytes;
			}
			off += (unsigned)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if ((errno == EAGAIN || errno == ENOBUFS) && waits++ < 4) {
			/* The socket buffer drains in microseconds; a lost
			 * batch costs a retransmit timeout. */
			struct pollfd pfd = {.fd = r->sock, .events = POLLOUT};

			poll(&pfd, 1, 1);
			continue;
		}
		if ((errno == EIO || errno == EINVAL) && r->gso &&
		    r->txi[off].nseg > 1) {
			RY_WARN("soft",
				"rail %s: UDP GSO refused (%m), "
				"sending single datagrams",
				r->base.name);
			r->gso = false;
		} else if (errno != EAGAIN && errno != ENOBUFS &&
			   errno != ECONNREFUSED && errno != EHOSTUNREACH &&
			   errno != ENETUNREACH && errno != ENETDOWN) {
			RY_DBG("soft", "rail %s: sendmmsg: %m", r->base.name);
		}
		/* Dropped: the requester's go-back-N recovers. */
		off++;
	}
	tx_reset(r);
}

/* ---- receive ---- */

static void count_drop(struct ry__soft_rail *r, uint64_t *counter)
{
	(*counter)++;
	r->st.rx_dropped++;
}

/*
 * Reorder tolerance.  Go-back-N drops every packet after a gap and asks
 * for all of them again, so a packet overtaken by a few later ones costs
 * a window of retransmissions though nothing was lost.  That happens on
 * Linux paths without loss: veth and bridge ports queue each packet on
 * the backlog of the CPU that sends it on, and two CPUs drain theirs in
 * any order (tc tbf, dequeued from its timer on one CPU and from the
 * sender on another, does it under load; a few packets, up to hundreds
 * of microseconds late).  So a packet up to RY__SOFT_HOLD_SPAN PSNs ahead
 * of the expected one is copied aside, checked as any (QPN, cookie,
 * address, CRC, MAC), and taken in PSN order once the gap fills; a gap
 * still open after hold_ns is NAKed as before, with everything held
 * going through the usual path.  Only while nothing of the QP's is being
 * resent (a NAK sent, a go-back-N under way): then the resent copies are
 * on their way anyway.
 */
/* The PSN qp takes next in a space: its peer's requests (req), or the
 * responses to its own READ (false when it awaits none). */
static bool next_psn(struct ry__soft_qp *qp, bool req, uint32_t *psn)
{
	if (!req)
		return ry__soft_comp_next_resp(qp, psn);
	*psn = qp->resp.psn;
	return true;
}

static bool hold(struct ry__soft_rail *r, struct ry__soft_qp *qp,
		 const struct ry__soft_pkt *p, const uint8_t *buf, uint32_t len,
		 const struct sockaddr_in *from)
{
	bool req = ry__soft_op_is_request(p->opcode);
	struct ry__soft_held *e = NULL;
	uint32_t want;
	int32_t d;

	if (r->nheld == r->nheld_max || len > r->mtu ||
	    (req ? qp->resp.nak_sent : p->opcode != RY__SOFT_OP_READ_RESP) ||
	    !next_psn(qp, req, &want))
		return false;
	d = ry__soft_psn_cmp(p->psn, want);
	if (d <= 0 || d >= RY__SOFT_HOLD_SPAN)
		return false;
	for (unsigned i = 0; i < r->nheld_max; i++) {
		struct ry__soft_held *h = &r->held[i];

		if (!h->used) {
			e = e ? e : h;
		} else if (h->qpn == qp->base.qp_num && h->req == req &&
			   h->psn == p->psn) {
			r->st.dup_rcvd++; /* that one will be taken */
			return true;
		}
	}
	memcpy(e->buf, buf, len);
	e->from = *from;
	e->qpn = qp->base.qp_num;
	e->psn = p->psn;
	e->len = len;
	e->req = req;
	e->used = true;
	if (!r->nheld++)
		r->held_until = r->now + r->hold_ns;
	r->st.rx_held++;
	return true;
}

/*
 * Check one packet and hand it to the responder or the completer: the QP
 * it went to, or NULL (dropped, or held when may_hold).
 */
static struct ry__soft_qp *rx_one(struct ry__soft_rail *r, const uint8_t *buf,
				  uint32_t len, const struct sockaddr_in *from,
				  bool may_hold)
{
	struct ry__soft_pkt p;
	struct ry__soft_qp *qp;
	int rc;

	if (!r->eff_up || r->fault.drop_all) {
		r->st.faults_dropped++;
		return NULL;
	}
	if (!len) {
		/* nothing we send; counted apart so a flood of them shows */
		count_drop(r, &r->st.rx_empty);
		return NULL;
	}
	rc = ry__soft_wire_parse(buf, len, &p);
	if (rc) {
		count_drop(r, &r->st.rx_bad_header);
		/* Said once: an old build on the other end is a deployment
		 * mistake to name, not noise to count silently.  A forger
		 * can trigger the one line, nothing more. */
		if (buf[0] != RY__SOFT_WIRE_VERSION && !r->version_said) {
			char a[INET_ADDRSTRLEN] = "?";

			inet_ntop(AF_INET, &from->sin_addr, a, sizeof(a));
			RY_WARN("soft",
				"rail %s: a packet of soft wire version %u "
				"from %s:%u, this build speaks %u: upgrade "
				"both ends to the same railyard",
				r->base.name, buf[0], a, ntohs(from->sin_port),
				RY__SOFT_WIRE_VERSION);
			r->version_said = true;
		}
		return NULL;
	}
	qp = ry__soft_qp_lookup(r, p.dqpn);
	if (!qp) {
		count_drop(r, &r->st.rx_bad_qpn);
		return NULL;
	}
	if (qp->base.state == RY_QPS_ERR) {
		/* A dead connection's packet never lands. */
		count_drop(r, &r->st.rx_qp_err_dropped);
		return NULL;
	}
	if (qp->base.state < RY_QPS_RTR || (!ry__soft_op_is_request(p.opcode) &&
					    qp->base.state != RY_QPS_RTS)) {
		count_drop(r, &r->st.rx_bad_qpn);
		return NULL;
	}
	if (p.cookie != qp->base.local.cookie) {
		count_drop(r, &r->st.rx_bad_cookie);
		return NULL;
	}
	/* The cookie was handed to this QP's peer alone; the address is
	 * where that peer sends from. */
	if (!same_dst(from, &qp->peer)) {
		count_drop(r, &r->st.rx_bad_qpn);
		return NULL;
	}
	if (p.paylen > qp->pmtu) {
		count_drop(r, &r->st.rx_bad_header);
		return NULL;
	}
	/* The CRC only for a packet some QP would take: forging one needs a
	 * cookie, anything else costs a lookup, not a pass over the payload. */
	if (!ry__soft_wire_crc_ok(buf, &p)) {
		count_drop(r, &r->st.rx_bad_crc);
		return NULL;
	}
	if ((qp->mac.on || p.mac) && !ry__soft_mac_ok(qp, buf, &p)) {
		count_drop(r, &r->st.rx_bad_mac);
		return NULL;
	}
	if (may_hold && hold(r, qp, &p, buf, len, from))
		return NULL;
	ry__soft_qp_kick(qp); /* ACK, respond, send more: progress runs it */
	if (ry__soft_op_is_request(p.opcode))
		ry__soft_resp_rx(qp, &p);
	else
		ry__soft_comp_rx(qp, &p);
	return qp;
}

/* The one held packet of qp's that is now next in its PSN space. */
static struct ry__soft_held *held_next(struct ry__soft_rail *r,
				       struct ry__soft_qp *qp)
{
	for (unsigned i = 0; i < r->nheld_max; i++) {
		struct ry__soft_held *e = &r->held[i];
		uint32_t want;

		if (e->used && e->qpn == qp->base.qp_num &&
		    next_psn(qp, e->req, &want) && e->psn == want)
			return e;
	}
	return NULL;
}

void ry__soft_rx_packet(struct ry__soft_rail *r, const uint8_t *buf,
			uint32_t len, const struct sockaddr_in *from)
{
	struct ry__soft_qp *qp;
	struct ry__soft_held *e;

	r->st.rx_packets++;
	r->st.rx_bytes += len;
	qp = rx_one(r, buf, len, from, true);
	/* what this one made next in line: each is checked again, never
	 * held again, and its slot is not reused before it is done */
	while (qp && r->nheld && (e = held_next(r, qp))) {
		e->used = false;
		r->nheld--;
		qp = rx_one(r, e->buf, e->len, &e->from, false);
	}
}

void ry__soft_hold_expire(struct ry__soft_rail *r)
{
	for (unsigned i = 0; r->nheld && i < r->nheld_max; i++) {
		struct ry__soft_held *e = &r->held[i];

		if (!e->used)
			continue;
		e->used = false;
		r->nheld--;
		/* as if it came now: a gap still open is NAKed */
		rx_one(r, e->buf, e->len, &e->from, false);
	}
}

static int rx_batch(struct ry__soft_rail *r)
{
	int n;

	for (int i = 0; i < RY__SOFT_RX_MSGS; i++) {
		struct msghdr *h = &r->rxm[i].msg_hdr;

		h->msg_name = &r->rxa[i];
		h->msg_namelen = sizeof(r->rxa[i]);
		h->msg_iov = &r->rxv[i];
		h->msg_iovlen = 1;
		h->msg_control = r->rxc[i];
		h->msg_controllen = sizeof(r->rxc[i]);
		h->msg_flags = 0;
	}
	n = recvmmsg(r->sock, r->rxm, RY__SOFT_RX_MSGS, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return n < 0 && errno != EAGAIN && errno != EINTR ? -errno : 0;
	for (int i = 0; i < n; i++) {
		struct msghdr *h = &r->rxm[i].msg_hdr;
		const uint8_t *buf = r->rxv[i].iov_base;
		uint32_t len = r->rxm[i].msg_len, seg = len;

		if (h->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
			count_drop(r, &r->st.rx_bad_header);
			continue;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c;
		     c = CMSG_NXTHDR(h, c)) {
			if (c->cmsg_level == SOL_UDP &&
			    c->cmsg_type == UDP_GRO) {
				int v;

				memcpy(&v, CMSG_DATA(c), sizeof(v));
				if (v > 0)
					seg = (uint32_t)v;
			}
		}
		if (!len) {
			ry__soft_rx_packet(r, buf, 0, &r->rxa[i]);
			continue;
		}
		/* GRO hands us equal segments, the last may be short. */
		for (uint32_t off = 0; off < len; off += seg)
			ry__soft_rx_packet(r, buf + off,
					   len - off < seg ? len - off : seg,
					   &r->rxa[i]);
	}
	return n;
}

/*
 * Several batches per call, so a full socket buffer drains quickly; a
 * bound, so the QPs' timers and transmit still run under a flood.
 */
int ry__soft_net_rx(struct ry__soft_rail *r)
{
	int got = 0;

	for (int round = 0; round < 8; round++) {
		int n = rx_batch(r);

		if (n < 0)
			return n;
		got += n;
		if (n < RY__SOFT_RX_MSGS)
			break;
	}
	return got;
}

/* ---- socket ---- */

/* The receive buffers are allocated once: nothing per packet allocates. */
int ry__soft_net_init(struct ry__soft_rail *r)
{
	r->rxbuf = malloc((size_t)RY__SOFT_RX_MSGS * RY__SOFT_RX_BUF);
	if (!r->rxbuf)
		return -ENOMEM;
	for (int i = 0; i < RY__SOFT_RX_MSGS; i++) {
		r->rxv[i].iov_base = r->rxbuf + (size_t)i * RY__SOFT_RX_BUF;
		r->rxv[i].iov_len = RY__SOFT_RX_BUF;
	}
	return 0;
}

static void set_buf(int fd, int force, int plain, int size)
{
	if (setsockopt(fd, SOL_SOCKET, force, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, plain, &size, sizeof(size));
}

int ry__soft_net_open(struct ry__soft_rail *r, const struct ry_rail_config *cfg)
{
	socklen_t alen = sizeof(r->addr);
	int one = 1, zero = 0;

	r->sock = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->sock < 0) {
		RY_ERR("soft", "rail %s: socket: %m", cfg->name);
		return -errno;
	}
	set_buf(r->sock, SO_RCVBUFFORCE, SO_RCVBUF, SOCK_BUF);
	set_buf(r->sock, SO_SNDBUFFORCE, SO_SNDBUF, SOCK_BUF);
	r->gso =
	    !setsockopt(r->sock, SOL_UDP, UDP_SEGMENT, &zero, sizeof(zero));
	r->gro = !setsockopt(r->sock, SOL_UDP, UDP_GRO, &one, sizeof(one));
	/* SO_BINDTODEVICE wants CAP_NET_RAW before Linux 5.7 (since, only to
	 * change a binding): a user refused it keeps the socket unbound, as
	 * routing says; root is never refused */
	if (cfg->interface[0] &&
	    setsockopt(r->sock, SOL_SOCKET, SO_BINDTODEVICE, cfg->interface,
		       (socklen_t)strlen(cfg->interface)) &&
	    (errno != EPERM || geteuid() == 0)) {
		RY_ERR("soft", "rail %s: bind to device %s: %m", cfg->name,
		       cfg->interface);
		return -errno;
	}
	if (bind(r->sock, (struct sockaddr *)&r->addr, sizeof(r->addr))) {
		RY_ERR("soft", "rail %s: bind %s: %m", cfg->name, cfg->address);
		return -errno;
	}
	if (getsockname(r->sock, (struct sockaddr *)&r->addr, &alen))
		return -errno;
	return 0;
}

int ry__soft_hold_init(struct ry__soft_rail *r)
{
	unsigned n = RY__SOFT_HOLD_BYTES / r->mtu;

	if (n > RY__SOFT_HOLD_MAX)
		n = RY__SOFT_HOLD_MAX;
	if (n < 4)
		n = 4;
	r->held = calloc(n, sizeof(*r->held));
	r->held_mem = malloc((size_t)n * r->mtu);
	if (!r->held || !r->held_mem)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		r->held[i].buf = r->held_mem + (size_t)i * r->mtu;
	r->nheld_max = n;
	r->hold_ns = RY__SOFT_HOLD_NS;
	return 0;
}

void ry__soft_test_set_hold(struct ry_rail *rail, uint64_t ns)
{
	to_srail(rail)->hold_ns = ns;
}

void ry__soft_net_close(struct ry__soft_rail *r)
{
	if (r->sock >= 0)
		close(r->sock);
	free(r->rxbuf);
	free(r->mac_ad);
	free(r->held);
	free(r->held_mem);
}
