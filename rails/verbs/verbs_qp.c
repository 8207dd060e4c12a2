// SPDX-License-Identifier: BSD-2-Clause
/*
 * RC QPs of the verbs rail: create, the state machine, posting.
 *
 * Lifetime rule: the ibv_qp is destroyed only after the HCA is done with
 * it: every send WR completed and (it shares the rail's SRQ) no receive
 * can land any more.  destroy_qp() revokes the QP at once for the caller
 * and leaves the rest to progress(); see hw_done().
 *
 * WRs posted in ERR never reach the HCA: not every HCA and kernel flushes
 * them, so they are completed FLUSHED by software, in order, behind the
 * ones the HCA still owes (verbs_cq.c).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "rails/verbs/verbs_int.h"
#include "src/util/log.h"
#include "src/util/random.h"

#define POST_BATCH 32

static unsigned hash_qpn(uint32_t qpn)
{
	return (qpn ^ (qpn >> 10)) % RY__VERBS_QP_BUCKETS;
}

struct ry__verbs_qp *ry__verbs_qp_find(struct ry__verbs_cq *c, uint32_t qpn)
{
	struct ry__verbs_qp *q = c->qp_hash[hash_qpn(qpn)];

	while (q && q->base.qp_num != qpn)
		q = q->hnext;
	return q;
}

void ry__verbs_qp_set_err(struct ry__verbs_qp *q)
{
	if (q->base.state == RY_QPS_ERR)
		return;
	q->base.state = RY_QPS_ERR;
	q->err_ns = ry__now_ns();
}

/* Off its CQ, under the CQ's lock. */
static void qp_unlink(struct ry__verbs_qp *q)
{
	struct ry__verbs_cq *c = q->cq;
	struct ry__verbs_qp **pp = &c->qp_hash[hash_qpn(q->base.qp_num)];

	while (*pp != q)
		pp = &(*pp)->hnext;
	*pp = q->hnext;
	ry__list_del(&q->cq_link);
	c->cq_used -= (int)q->sq_depth;
}

/* Whether the device has the QP in ERR (or in siw's TERMINATE, on its
 * way there) while we still think it works. */
static int qp_dev_state(struct ry__verbs_qp *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	return ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia) ? -1
							  : (int)a.qp_state;
}

static bool qp_hw_err(struct ry__verbs_qp *q)
{
	int st = qp_dev_state(q);

	return st == IBV_QPS_ERR || st == IBV_QPS_SQE || st == IBV_QPS_SQD;
}

/* A random nonzero 24-bit PSN: a packet of an old connection must not be
 * in the new one's window, and 0 is what a forgotten init would give. */
static int random_psn(uint32_t *psn_p)
{
	uint32_t v;

	do {
		int rc = ry__rand_bytes(&v, sizeof(v));

		if (rc)
			return rc;
		v &= 0xffffff;
	} while (!v);
	*psn_p = v;
	return 0;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* Every QP may have max_send_wr completions waiting, the SRQ all its
 * receives: the CQ must hold them all or it overruns (a fatal CQ error). */
static int cq_reserve(struct ry__verbs_rail *r, struct ry__verbs_cq *c, int n)
{
	int want = c->cq_used + n;
	int rc;

	if (want > c->cq_size) {
		int size = c->cq_size;

		while (size < want)
			size *= 2;
		if (size > r->dev_attr.max_cqe)
			size = r->dev_attr.max_cqe;
		if (size < want || r->cq_fixed) {
			RY_ERR("verbs",
			       "rail %s: CQ full: %d entries promised, %s %d",
			       r->base.name, want,
			       r->cq_fixed ? "the device cannot resize it from"
					   : "device max",
			       r->cq_fixed ? c->cq_size : r->dev_attr.max_cqe);
			return -ENOSPC;
		}
		rc = ibv_resize_cq(c->cq, size);
		if (rc) {
			errno = rc;
			RY_ERR("verbs", "rail %s: ibv_resize_cq(%d): %m",
			       r->base.name, size);
			return -rc;
		}
		c->cq_size = c->cq->cqe;
	}
	c->cq_used = want;
	return 0;
}

int ry__verbs_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
			struct ry_qp **qp_p)
{
	struct ry__verbs_rail *r = pd_vrail(pd);
	struct ry__verbs_pd *vpd = container_of(pd, struct ry__verbs_pd, base);
	struct ibv_qp_init_attr ia = {0};
	struct ry__verbs_cq *c = &r->cq;
	struct ry__verbs_qp *q;
	uint32_t wr = init && init->max_send_wr ? init->max_send_wr : 256;
	/* iWARP: a fence may follow each of them (struct ry__verbs_swr) */
	uint32_t sq = r->iwarp ? 2 * wr : wr;
	int rc;

	if (sq > (uint32_t)r->dev_attr.max_qp_wr)
		return -EINVAL;
	if (init && init->cq) {
		/* another rail's is another device's */
		if (init->cq->rail != pd->rail)
			return -EINVAL;
		c = vcq(init->cq);
		if (c->dead)
			return -EINVAL;
	} else if (!c->cq) {
		rc = ry__verbs_cq_open(r, c); /* the rail's own, at first use */
		if (rc)
			return rc;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->ring_mask = pow2_at_least(sq) - 1;
	q->ring = calloc(q->ring_mask + 1, sizeof(*q->ring));
	if (!q->ring) {
		rc = -ENOMEM;
		goto err_free;
	}
	rc = random_psn(&q->base.local.psn);
	if (rc)
		goto err_ring;
	rc = cq_reserve(r, c, (int)sq);
	if (rc)
		goto err_ring;

	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	ia.srq = r->srq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1; /* every send WR completes: the contract */
	ia.qp_context = q; /* its async events name it (verbs_rail.c) */
	ia.cap.max_send_wr = sq;
	ia.cap.max_send_sge = 1;
	q->qp = ibv_create_qp(r->pd, &ia);
	if (!q->qp) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_create_qp(max_send_wr %u): %m",
		       r->base.name, wr);
		goto err_cq;
	}
	q->max_send_wr = wr;
	q->sq_depth = sq;
	q->base.pd = pd;
	q->base.qp_num = q->qp->qp_num;
	q->base.state = RY_QPS_RESET;
	q->base.context = init ? init->context : NULL;
	q->base.local.qpn = q->qp->qp_num;
	q->base.local.cookie = 0;
	memcpy(q->base.local.gid, r->gid.raw, 16);
	q->base.local.lid = r->lid;
	q->base.local.mtu = r->mtu;
	q->cq = c;
	pthread_mutex_lock(&c->lock);
	q->hnext = c->qp_hash[hash_qpn(q->base.qp_num)];
	c->qp_hash[hash_qpn(q->base.qp_num)] = q;
	ry__list_add_tail(&c->qps, &q->cq_link);
	c->n_qps++;
	pthread_mutex_unlock(&c->lock);
	vpd->refs++;
	if (r->cm) /* its endpoint: the rail's rdma_cm address and port */
		ry__verbs_cm_add(r, q);
	RY_DBG("verbs", "rail %s: qp 0x%x created, psn 0x%06x", r->base.name,
	       q->base.qp_num, q->base.local.psn);
	*qp_p = &q->base;
	return 0;

err_cq:
	c->cq_used -= (int)sq;
err_ring:
	free(q->ring);
err_free:
	free(q);
	return rc;
}

static enum ibv_mtu ibv_mtu_of(uint32_t bytes)
{
	if (bytes >= 4096)
		return IBV_MTU_4096;
	if (bytes >= 2048)
		return IBV_MTU_2048;
	if (bytes >= 1024)
		return IBV_MTU_1024;
	if (bytes >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* Local ACK timeout: 4.096 us * 2^t.  0 means wait forever, never used. */
static uint8_t ack_timeout_code(uint32_t us)
{
	uint8_t t = 1;

	if (!us)
		return 14; /* 67 ms */
	while (t < 31 && 4096ull << t < (uint64_t)us * 1000)
		t++;
	return t;
}

/* IB's RNR NAK timer table, in microseconds (code 0 is the longest). */
static const uint32_t rnr_us[32] = {
    655360, 10,	   20,	  30,	  40,	  60,	  80,	  120,
    160,    240,   320,	  480,	  640,	  960,	  1280,	  1920,
    2560,   3840,  5120,  7680,	  10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static uint8_t rnr_timer_code(uint32_t us)
{
	if (!us)
		return 12; /* 0.64 ms */
	for (uint8_t c = 1; c < 32; c++)
		if (rnr_us[c] >= us)
			return c;
	return 0;
}

static bool ipv4_mapped(const uint8_t *gid)
{
	static const uint8_t prefix[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(gid, prefix, sizeof(prefix));
}

/* Whether the kernel's ARP table has a complete entry for ip. */
static bool arp_complete(const uint8_t *ip)
{
	char want[INET_ADDRSTRLEN], line[256], addr[64];
	unsigned hw, flags;
	bool found = false;
	FILE *f;

	inet_ntop(AF_INET, ip, want, sizeof(want));
	f = fopen("/proc/net/arp", "re");
	if (!f)
		return true; /* cannot tell: leave it to the kernel */
	while (!found && fgets(line, sizeof(line), f))
		found =
		    sscanf(line, "%63s 0x%x 0x%x", addr, &hw, &flags) == 3 &&
		    !strcmp(addr, want) && (flags & 0x2); /* ATF_COM */
	fclose(f);
	return found;
}

/*
 * On RoCE the kernel resolves the peer's MAC (ARP) inside modify(RTR) and
 * waits for it, up to 1 s, and on some paths (veth) it misses the reply's
 * wakeup and always waits the full second; meanwhile the manager's progress
 * thread, and every rail it drives, stands still.  So resolve it first,
 * without waiting: when the ARP table has no complete entry for the peer,
 * send one datagram from our address to the peer's discard port (which makes
 * the kernel ARP for it) and answer EAGAIN; the manager backs off and
 * retries, and by then the entry is there.  Once per peer within 2 s, so
 * that a peer whose entry never shows (another namespace, a static route)
 * still gets the kernel's own, blocking, resolution.  IPv4 GIDs only.
 */
static bool neigh_ready(struct ry__verbs_rail *r, const uint8_t *gid)
{
	const uint8_t *dst = gid + 12, *src = r->gid.raw + 12;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint64_t now = ry__now_ns();
	int fd;

	if (!r->ethernet || !ipv4_mapped(gid) || !ipv4_mapped(r->gid.raw) ||
	    arp_complete(dst))
		return true;
	if (!memcmp(r->primed_ip, dst, 4) && now - r->primed_ns < 2000000000ull)
		return true;
	memcpy(r->primed_ip, dst, 4);
	r->primed_ns = now;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return true;
	memcpy(&sa.sin_addr, src, 4);
	if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		memcpy(&sa.sin_addr, dst, 4);
		sa.sin_port = htons(9); /* discard */
		sendto(fd, "", 1, 0, (struct sockaddr *)&sa, sizeof(sa));
	}
	close(fd);
	RY_DBG("verbs", "rail %s: resolving the peer's MAC before RTR",
	       r->base.name);
	return false;
}

static int to_rtr(struct ry__verbs_qp *q, const struct ry_qp_attr *attr)
{
	struct ry__verbs_rail *r = pd_vrail(q->base.pd);
	struct ibv_qp_attr a = {0};
	uint32_t mtu = attr->mtu ? attr->mtu : r->mtu;
	uint64_t t;
	int rc;

	if (q->base.state == RY_QPS_INIT && !neigh_ready(r, attr->remote.gid))
		return EAGAIN;
	if (attr->remote.mtu && attr->remote.mtu < mtu)
		mtu = attr->remote.mtu;
	if (mtu > r->mtu)
		mtu = r->mtu;
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = ibv_mtu_of(mtu);
	a.dest_qp_num = attr->remote.qpn & 0xffffff;
	a.rq_psn = attr->remote.psn & 0xffffff;
	a.max_dest_rd_atomic = r->dev_attr.max_qp_rd_atom < RY__VERBS_MAX_RD
				   ? (uint8_t)r->dev_attr.max_qp_rd_atom
				   : RY__VERBS_MAX_RD;
	a.min_rnr_timer = rnr_timer_code(attr->min_rnr_timer_us);
	a.ah_attr.port_num = r->port;
	a.ah_attr.dlid = attr->remote.lid;
	/* the fabric's lossless class: SL on InfiniBand (RoCE HCAs map it
	 * to the VLAN priority), the IP DSCP/ECN byte on RoCE v2 */
	a.ah_attr.sl = r->sl;
	if (r->ethernet) {
		/* RoCE addresses by GID only: the GRH is the IP header */
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, attr->remote.gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)r->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = r->traffic_class;
	}
	t = ry__now_ns();
	rc =
	    ibv_modify_qp(q->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	/* On RoCE the kernel resolves the peer's MAC (ARP/ND) inside this
	 * call and waits for it, up to 1 s (ib_core's addr.c): the caller's
	 * thread, and with it every rail it drives, stands still meanwhile.
	 * Say so when it is long enough to matter. */
	t = ry__now_ns() - t;
	if (t >= RY__VERBS_SLOW_RTR_NS)
		RY_WARN("verbs",
			"rail %s: qp 0x%x: RTR took %llu ms (the kernel "
			"resolving the peer's MAC address)",
			r->base.name, q->base.qp_num,
			(unsigned long long)(t / 1000000));
	return rc;
}

static int to_rts(struct ry__verbs_qp *q, const struct ry_qp_attr *attr)
{
	struct ry__verbs_rail *r = pd_vrail(q->base.pd);
	struct ibv_qp_attr a = {0};
	uint32_t rd =
	    attr->max_rd_atomic ? attr->max_rd_atomic : RY__VERBS_MAX_RD;

	/* 7 means "retry forever" on rxe and on some HCAs: a dead peer
	 * would never be noticed by the transport. */
	if (attr->retry_cnt > 6 || attr->rnr_retry > 6)
		return EINVAL;
	if (rd > (uint32_t)r->dev_attr.max_qp_init_rd_atom)
		rd = (uint32_t)r->dev_attr.max_qp_init_rd_atom;
	a.sq_psn = q->base.local.psn;
	/* the CM below may have moved it already: the state machine is
	 * checked here for it */
	if (q->base.state != RY_QPS_RTR && q->base.state != RY_QPS_RTS)
		return EINVAL;
	/* rdma_cm: its PSN; on iWARP the CM made it RTS already */
	if (r->cm && ry__verbs_cm_rts_done(r, q, &a.sq_psn))
		return 0;
	a.qp_state = IBV_QPS_RTS;
	a.timeout = ack_timeout_code(attr->ack_timeout_us);
	a.retry_cnt = (uint8_t)attr->retry_cnt;
	a.rnr_retry = (uint8_t)attr->rnr_retry;
	a.max_rd_atomic = (uint8_t)rd;
	return ibv_modify_qp(q->qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				 IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * siw takes a QP out of ERR to nowhere (its modify to RESET succeeds and
 * leaves it in ERR), so that QP never connects again.  RESET gives such a
 * QP a new ibv_qp, as a reconnect would: a new QPN with the new PSN, the
 * same ry_qp and CQ.  The old ibv_qp owes none of the caller's send WRs
 * (RESET waits for that), perhaps fences, and may still be taking a
 * receive from the SRQ: it stays a zombie of its own, with the fences,
 * until the HCA is done with it (hw_done).
 */
static int qp_renew(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	struct ry__verbs_cq *c = q->cq;
	struct ibv_qp_init_attr ia = {0};
	struct ry__verbs_qp *old = calloc(1, sizeof(*old));
	struct ry__verbs_swr *ring;
	struct ibv_qp *nq;

	if (!old)
		return ENOMEM;
	ring = calloc(q->ring_mask + 1, sizeof(*ring));
	if (!ring) {
		free(old);
		return ENOMEM;
	}
	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	ia.srq = r->srq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.qp_context = q;
	ia.cap.max_send_wr = q->sq_depth;
	ia.cap.max_send_sge = 1;
	nq = ibv_create_qp(r->pd, &ia);
	if (!nq) {
		int rc = errno;

		RY_ERR("verbs", "rail %s: qp 0x%x: a new ibv_qp for RESET: %m",
		       r->base.name, q->base.qp_num);
		free(ring);
		free(old);
		return rc;
	}
	RY_DBG("verbs", "rail %s: qp 0x%x: stays in ERR at RESET, now 0x%x",
	       r->base.name, q->base.qp_num, nq->qp_num);
	old->base = q->base;
	old->cq = c;
	old->qp = q->qp;
	old->qp->qp_context = old; /* its async events name the old one */
	old->zombie = true;
	old->rq_live = q->rq_live;
	old->last_wqe = q->last_wqe;
	old->err_ns = q->err_ns;
	pthread_mutex_lock(&c->lock);
	/* the fences the old one still owes go with it */
	old->ring = q->ring;
	old->ring_mask = q->ring_mask;
	old->head = q->head;
	old->tail = q->tail;
	old->hw_outstanding = q->hw_outstanding;
	q->ring = ring;
	q->head = q->tail = q->hw_outstanding = 0;
	/* the old number's completions find the zombie, the new one q */
	qp_unlink(q);
	c->cq_used += (int)q->sq_depth; /* q keeps its share */
	q->qp = nq;
	q->base.qp_num = nq->qp_num;
	q->base.local.qpn = nq->qp_num;
	q->hnext = c->qp_hash[hash_qpn(q->base.qp_num)];
	c->qp_hash[hash_qpn(q->base.qp_num)] = q;
	ry__list_add_tail(&c->qps, &q->cq_link);
	old->hnext = c->qp_hash[hash_qpn(old->base.qp_num)];
	c->qp_hash[hash_qpn(old->base.qp_num)] = old;
	ry__list_add_tail(&c->qps, &old->cq_link);
	pthread_mutex_unlock(&c->lock);
	old->znext = r->zombies;
	r->zombies = old;
	return 0;
}

int ry__verbs_modify_qp(struct ry_qp *qp, enum ry_qp_state state,
			const struct ry_qp_attr *attr)
{
	struct ry__verbs_qp *q = container_of(qp, struct ry__verbs_qp, base);
	struct ry__verbs_rail *r = pd_vrail(qp->pd);
	struct ibv_qp_attr a = {0};
	uint32_t psn = 0;
	bool busy, fences;
	int rc;

	switch (state) {
	case RY_QPS_RESET:
		/* RESET drops send WRs without completing them: drain first.
		 * (It does not wait for "last WQE reached" as destroy does:
		 * the manager reconnects with new QPs, and RESET right after
		 * ERR must work at once, as on the soft rail.) */
		pthread_mutex_lock(&q->cq->lock); /* a poll moves head */
		busy = q->n_user != 0;
		fences = q->tail != q->head;
		pthread_mutex_unlock(&q->cq->lock);
		if (busy)
			return -EBUSY;
		rc = random_psn(&psn);
		if (rc)
			return rc;
		/* fences still owed (iWARP): the HCA must not drop them, the
		 * old ibv_qp keeps them (qp_renew) */
		if (fences) {
			rc = qp_renew(r, q);
			break;
		}
		a.qp_state = IBV_QPS_RESET;
		rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
		if (!rc && qp_hw_err(q))
			rc = qp_renew(r, q);
		break;
	case RY_QPS_INIT:
		if (!attr)
			return -EINVAL;
		a.qp_state = IBV_QPS_INIT;
		a.port_num = r->port;
		a.pkey_index = 0;
		a.qp_access_flags = (attr->access & RY_ACCESS_REMOTE_WRITE
					 ? IBV_ACCESS_REMOTE_WRITE
					 : 0) |
				    (attr->access & RY_ACCESS_REMOTE_READ
					 ? IBV_ACCESS_REMOTE_READ
					 : 0);
		rc = ibv_modify_qp(q->qp, &a,
				   IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		break;
	case RY_QPS_RTR:
		if (!attr)
			return -EINVAL;
		/* the HCA builds the packets: no MAC of ours fits in them */
		if (attr->mac)
			return -EOPNOTSUPP;
		rc = r->cm ? ry__verbs_cm_rtr(r, q, attr) : to_rtr(q, attr);
		break;
	case RY_QPS_RTS:
		if (!attr)
			return -EINVAL;
		rc = to_rts(q, attr);
		break;
	case RY_QPS_ERR:
		a.qp_state = IBV_QPS_ERR;
		rc = ibv_modify_qp(q->qp, &a, IBV_QP_STATE);
		break;
	default:
		return -EINVAL;
	}
	if (rc) {
		/* EINVAL is a transition the state machine does not allow
		 * or a bad attribute: the caller's to report */
		errno = rc;
		if (rc != EINVAL && rc != EAGAIN)
			RY_ERR("verbs", "rail %s: qp 0x%x: modify to %s: %m",
			       r->base.name, qp->qp_num,
			       ry_qp_state_str(state));
		return -rc;
	}
	ry__verbs_cm_state(r, q, state);
	pthread_mutex_lock(&q->cq->lock);
	if (state == RY_QPS_RESET) {
		qp->local.psn = psn; /* a new connection: a new PSN */
		q->rq_live = q->last_wqe = false;
		q->user_err = q->failed = false;
		q->fence_rkey = 0; /* the next connection names it again */
	} else if (state == RY_QPS_RTR) {
		q->rq_live = true;
	}
	if (state == RY_QPS_ERR) {
		if (qp->state != RY_QPS_ERR)
			q->user_err = true;
		ry__verbs_qp_set_err(q);
	} else
		qp->state = state;
	pthread_mutex_unlock(&q->cq->lock);
	return 0;
}

/*
 * The HCA is done with a QP when every send WR it took has completed and
 * no receive can land any more ("last WQE reached", or a grace period for
 * HCAs that never say it).  Until then its ibv_qp must live: destroyed
 * earlier, it leaves CQEs behind naming a QPN and wr_ids nobody owns.
 * rxe's ibv_destroy_qp also blocks for seconds while the port is down, so
 * that waits for the port too.
 */
static bool hw_done(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	if (r->device_fatal)
		return true; /* nothing will complete there */
	if (q->hw_outstanding || !r->port_active)
		return false;
	return !q->rq_live || q->last_wqe ||
	       (q->base.state == RY_QPS_ERR &&
		ry__now_ns() - q->err_ns >= RY__VERBS_LAST_WQE_GRACE_NS);
}

/* The HCA is done with q (hw_done): destroy it.  Once the ibv_qp is
 * gone nothing names it any more, so it leaves its CQ under the lock (a
 * poll may be looking it up) and is freed after. */
/* hw_done() from outside the CQ's lock: a poll of the CQ may be taking
 * the QP's last completions. */
static bool hw_done_now(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	bool done;

	pthread_mutex_lock(&q->cq->lock);
	done = hw_done(r, q);
	pthread_mutex_unlock(&q->cq->lock);
	return done;
}

static int qp_free(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	struct ry__verbs_cq *c = q->cq;
	int rc = ibv_destroy_qp(q->qp);

	if (rc) {
		errno = rc;
		RY_ERR("verbs", "rail %s: qp 0x%x: ibv_destroy_qp: %m",
		       r->base.name, q->base.qp_num);
		return -rc;
	}
	pthread_mutex_lock(&c->lock);
	qp_unlink(q);
	pthread_mutex_unlock(&c->lock);
	free(q->ring);
	free(q);
	ry__verbs_cq_put(r, c);
	return 0;
}

/*
 * Destroy revokes the QP at once, as the contract says: it goes to ERR and
 * no completion of its send WRs is reported any more.  The ibv_qp lingers
 * as a zombie, its completions drained and dropped by poll of its CQ,
 * until the HCA is done with it (hw_done); progress() then destroys it.
 * Receive completions of a zombie are still reported: their buffers are
 * the caller's, posted to the rail's SRQ.  Once the caller destroys the
 * zombie's CQ too, progress drains that CQ instead and drops everything
 * (verbs_cq.c).
 */
int ry__verbs_destroy_qp(struct ry_qp *qp)
{
	struct ry__verbs_qp *q = container_of(qp, struct ry__verbs_qp, base);
	struct ry__verbs_rail *r = pd_vrail(qp->pd);
	struct ry__verbs_pd *vpd =
	    container_of(qp->pd, struct ry__verbs_pd, base);
	struct ry__verbs_cq *c = q->cq;
	bool done;
	int rc;

	/* the caller ends it: what the HCA flushes from now on, the end of
	 * its CM connection included, is not a failure (iWARP: release()) */
	pthread_mutex_lock(&c->lock);
	if (qp->state != RY_QPS_ERR)
		q->user_err = true;
	pthread_mutex_unlock(&c->lock);
	ry__verbs_cm_del(r, q); /* no REQ finds it; its CM connection ends */
	if (qp->state != RY_QPS_ERR && !hw_done_now(r, q)) {
		rc = ry__verbs_modify_qp(qp, RY_QPS_ERR, NULL);
		if (rc)
			return rc;
	}
	pthread_mutex_lock(&c->lock);
	/* WRs posted in ERR never reached the HCA: forget them now */
	while (q->tail != q->head &&
	       q->ring[(q->tail - 1) & q->ring_mask].flushed) {
		q->tail--;
		q->n_user--;
		c->n_held--;
	}
	vpd->refs--;
	c->n_qps--;
	done = hw_done(r, q);
	if (!done) {
		RY_DBG("verbs",
		       "rail %s: qp 0x%x: destroyed, %u WRs to drain%s",
		       r->base.name, qp->qp_num, q->hw_outstanding,
		       q->last_wqe ? "" : ", last WQE not reached");
		q->zombie = true;
	}
	pthread_mutex_unlock(&c->lock);
	if (done)
		return qp_free(r, q);
	q->znext = r->zombies;
	r->zombies = q;
	return 0;
}

/*
 * siw moves a QP to ERR without flushing what it owes when nothing was
 * being sent at that moment (a TERMINATE from the peer, a closed
 * connection): a READ waiting for its response, a fence among them, then
 * never completes, and nor would anything the caller waits for behind it.
 * So a QP that owes completions has its device state asked now and then;
 * once the device has had it in ERR for a while (time for the flush it
 * does make), the rail completes the rest FLUSHED itself.  A completion
 * of the HCA after that finds no WR owed and is dropped (verbs_cq.c).
 */
static void qp_sweep(struct ry__verbs_cq *c, struct ry__verbs_qp *q,
		     uint64_t now)
{
	if (!q->hw_outstanding || now - q->swept_ns < RY__VERBS_SWEEP_NS)
		return;
	q->swept_ns = now;
	if (q->base.state != RY_QPS_ERR) {
		if (qp_hw_err(q))
			ry__verbs_qp_set_err(q);
		return;
	}
	/* siw's TERMINATE and CLOSING too: a QP may stay there for good;
	 * and after a WR of its own failed it may stay in RTS, its sending
	 * suspended for good */
	if (now - q->err_ns < RY__VERBS_SWEEP_NS ||
	    (q->user_err && !qp_hw_err(q)))
		return;
	RY_DBG("verbs", "qp 0x%x: %u WRs the device will not complete",
	       q->base.qp_num, q->hw_outstanding);
	for (uint32_t i = q->head; i != q->tail; i++) {
		struct ry__verbs_swr *s = &q->ring[i & q->ring_mask];

		if (s->done || s->flushed)
			continue;
		s->done = true;
		s->status = RY_WC_FLUSHED;
		s->vendor_err = 0;
		s->unacked = false;
		c->n_held++;
	}
	q->hw_outstanding = 0;
}

static void cq_sweep(struct ry__verbs_cq *c, uint64_t now)
{
	struct ry__list *pos;

	pthread_mutex_lock(&c->lock);
	ry__list_for_each(pos, &c->qps)
		qp_sweep(c, ry__list_entry(pos, struct ry__verbs_qp, cq_link),
			 now);
	pthread_mutex_unlock(&c->lock);
}

void ry__verbs_qp_sweep(struct ry__verbs_rail *r)
{
	uint64_t now = ry__now_ns();
	struct ry__list *pos;

	if (r->cq.cq)
		cq_sweep(&r->cq, now);
	ry__list_for_each(pos, &r->cqs)
		cq_sweep(ry__list_entry(pos, struct ry__verbs_cq, link), now);
	ry__list_for_each(pos, &r->dead_cqs)
		cq_sweep(ry__list_entry(pos, struct ry__verbs_cq, link), now);
}

/* Destroy the zombies the HCA is done with (from progress). */
void ry__verbs_qp_reap(struct ry__verbs_rail *r)
{
	struct ry__verbs_qp **pp = &r->zombies;

	while (*pp) {
		struct ry__verbs_qp *q = *pp;

		if (!hw_done_now(r, q)) {
			pp = &q->znext;
			continue;
		}
		*pp = q->znext;
		RY_DBG("verbs", "rail %s: qp 0x%x: reaped", r->base.name,
		       q->base.qp_num);
		if (qp_free(r, q)) {
			/* try again at the next progress */
			q->znext = *pp;
			*pp = q;
			return;
		}
	}
}

static void cq_close_qps(struct ry__verbs_cq *c)
{
	struct ry__list *pos, *tmp;

	ry__list_for_each_safe(pos, tmp, &c->qps) {
		struct ry__verbs_qp *q =
		    ry__list_entry(pos, struct ry__verbs_qp, cq_link);

		qp_unlink(q);
		ibv_destroy_qp(q->qp);
		free(q->ring);
		free(q);
	}
}

/* At close, when nothing else can run: every QP, zombies too, on every
 * CQ, live or dead. */
void ry__verbs_qp_close_all(struct ry__verbs_rail *r)
{
	struct ry__list *pos;

	cq_close_qps(&r->cq);
	ry__list_for_each(pos, &r->cqs)
		cq_close_qps(ry__list_entry(pos, struct ry__verbs_cq, link));
	ry__list_for_each(pos, &r->dead_cqs)
		cq_close_qps(ry__list_entry(pos, struct ry__verbs_cq, link));
	r->zombies = NULL;
}

static const enum ibv_wr_opcode wr_opcodes[] = {
    [RY_WR_RDMA_WRITE] = IBV_WR_RDMA_WRITE,
    [RY_WR_RDMA_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
    [RY_WR_RDMA_READ] = IBV_WR_RDMA_READ,
    [RY_WR_SEND] = IBV_WR_SEND,
    [RY_WR_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
};

static const uint8_t wc_opcodes[] = {
    [RY_WR_RDMA_WRITE] = RY_WC_RDMA_WRITE,
    [RY_WR_RDMA_WRITE_IMM] = RY_WC_RDMA_WRITE,
    [RY_WR_RDMA_READ] = RY_WC_RDMA_READ,
    [RY_WR_SEND] = RY_WC_SEND,
    [RY_WR_SEND_IMM] = RY_WC_SEND,
};

/* A WR of the caller's; on iWARP a WRITE's or SEND's success waits for
 * the READ behind it (unacked). */
static void ring_push(struct ry__verbs_qp *q, const struct ry_send_wr *wr,
		      bool flushed, bool fenced)
{
	struct ry__verbs_swr *s = &q->ring[q->tail++ & q->ring_mask];

	s->wr_id = wr->wr_id;
	s->opcode = wc_opcodes[wr->opcode];
	s->flushed = flushed;
	s->done = false;
	s->fence = false;
	s->unacked = !flushed && fenced && wr->opcode != RY_WR_RDMA_READ;
	q->n_user++;
}

static void ring_push_fence(struct ry__verbs_qp *q)
{
	struct ry__verbs_swr *s = &q->ring[q->tail++ & q->ring_mask];

	s->wr_id = RY__VERBS_FENCE_ID;
	s->opcode = RY_WC_RDMA_READ;
	s->flushed = s->done = s->unacked = false;
	s->fence = true;
}

static int post_send_locked(struct ry__verbs_qp *q, struct ry__verbs_rail *r,
			    const struct ry_send_wr *wr, unsigned n)
{
	struct ibv_send_wr w[POST_BATCH + 1], *bad;
	struct ibv_sge sg[POST_BATCH + 1];

	if (q->n_user + n > q->max_send_wr)
		return -ENOMEM; /* the send queue is full, as verbs says */
	if (q->base.state == RY_QPS_ERR) {
		for (unsigned i = 0; i < n; i++)
			ring_push(q, &wr[i], true, false);
		q->cq->n_held += n;
		return 0;
	}
	if (q->base.state != RY_QPS_RTS)
		return -EINVAL;

	while (n) {
		unsigned k = n < POST_BATCH ? n : POST_BATCH;
		/* the call's last WR a WRITE or SEND: a fence behind it */
		bool fence = q->fence_rkey && k == n &&
			     wr[k - 1].opcode != RY_WR_RDMA_READ;
		int rc;

		for (unsigned i = 0; i < k; i++) {
			const struct ry_send_wr *s = &wr[i];

			sg[i].addr = s->sge.addr;
			sg[i].length = s->sge.length;
			sg[i].lkey = s->sge.lkey;
			memset(&w[i], 0, sizeof(w[i]));
			w[i].wr_id = s->wr_id;
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
			w[i].sg_list = &sg[i];
			w[i].num_sge = s->sge.length ? 1 : 0;
			w[i].opcode = wr_opcodes[s->opcode];
			w[i].send_flags = IBV_SEND_SIGNALED;
			if (s->opcode == RY_WR_RDMA_WRITE_IMM ||
			    s->opcode == RY_WR_SEND_IMM)
				w[i].imm_data = htobe32(s->imm_data);
			w[i].wr.rdma.remote_addr = s->remote_addr;
			w[i].wr.rdma.rkey = s->rkey;
		}
		if (fence) {
			/* one byte of the peer's fence region: siw answers
			 * a READ of 0 bytes that waits in its IRQ with the
			 * length of the READ response before it */
			memset(&w[k], 0, sizeof(w[k]));
			sg[k].addr = (uintptr_t)r->fence_buf;
			sg[k].length = 1;
			sg[k].lkey = r->fence_mr->lkey;
			w[k - 1].next = &w[k];
			w[k].wr_id = RY__VERBS_FENCE_ID;
			w[k].sg_list = &sg[k];
			w[k].num_sge = 1;
			w[k].opcode = IBV_WR_RDMA_READ;
			w[k].send_flags = IBV_SEND_SIGNALED;
			w[k].wr.rdma.remote_addr = q->fence_addr;
			w[k].wr.rdma.rkey = q->fence_rkey;
		}
		rc = ibv_post_send(q->qp, w, &bad);
		if (rc < 0) /* siw's provider returns -errno */
			rc = -rc;
		/* The WRs before the bad one are posted and will complete. */
		for (unsigned i = 0; i < k && (!rc || &w[i] != bad); i++) {
			ring_push(q, &wr[i], false, q->fence_rkey != 0);
			q->hw_outstanding++;
		}
		if (fence && !rc) {
			ring_push_fence(q);
			q->hw_outstanding++;
		} else if (fence && bad == &w[k] && !qp_hw_err(q)) {
			/* the caller's are all posted; without their fence
			 * they count as done once on the wire */
			RY_WARN("verbs",
				"rail %s: qp 0x%x: no fence posted: %s",
				r->base.name, q->base.qp_num, strerror(rc));
			for (uint32_t i = q->tail - k; i != q->tail; i++)
				q->ring[i & q->ring_mask].unacked = false;
			rc = 0;
		}
		/* siw refuses posts once it has ended the connection: in
		 * any state but RTS (its idle one reads as INIT), and with
		 * EPERM while its QP still reads RTS, a TERMINATE being
		 * exchanged (seen after a remote access error: the WRs
		 * are checked before this, so nothing else is refused) */
		if (rc && (r->iwarp ? rc == EPERM || rc == ENOTCONN ||
					  qp_dev_state(q) != IBV_QPS_RTS
				    : qp_hw_err(q))) {
			/* The device moved it to ERR before we heard (siw,
			 * when the peer ended the connection): in ERR every
			 * post completes FLUSHED, the rest of these too. */
			unsigned done = bad && bad >= w && bad <= &w[k]
					    ? (unsigned)(bad - w)
					    : k;

			ry__verbs_qp_set_err(q);
			for (unsigned i = done; i < n; i++)
				ring_push(q, &wr[i], true, false);
			q->cq->n_held += n - done;
			return 0;
		}
		if (rc) {
			errno = rc;
			RY_ERR("verbs", "rail %s: qp 0x%x: ibv_post_send: %m",
			       r->base.name, q->base.qp_num);
			return -rc;
		}
		wr += k;
		n -= k;
	}
	return 0;
}

int ry__verbs_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
			unsigned n)
{
	struct ry__verbs_qp *q = container_of(qp, struct ry__verbs_qp, base);
	struct ry__verbs_rail *r = pd_vrail(qp->pd);
	int rc;

	for (unsigned i = 0; i < n; i++) {
		if ((unsigned)wr[i].opcode > RY_WR_SEND_IMM)
			return -EINVAL;
		/* siw carries no immediate data (rail.h: no_imm): refused
		 * before any of them is posted */
		if ((wr[i].opcode == RY_WR_RDMA_WRITE_IMM ||
		     wr[i].opcode == RY_WR_SEND_IMM) &&
		    r->iwarp)
			return -EOPNOTSUPP;
	}
	/* progress may move the QP to ERR, a poll takes from the ring */
	pthread_mutex_lock(&q->cq->lock);
	rc = post_send_locked(q, r, wr, n);
	pthread_mutex_unlock(&q->cq->lock);
	return rc;
}

int ry__verbs_post_recv(struct ry_rail *rail, const struct ry_recv_wr *wr,
			unsigned n)
{
	struct ry__verbs_rail *r = vrail(rail);
	struct ibv_recv_wr w[POST_BATCH], *bad;
	struct ibv_sge sg[POST_BATCH];

	while (n) {
		unsigned k = n < POST_BATCH ? n : POST_BATCH;
		int rc;

		for (unsigned i = 0; i < k; i++) {
			sg[i].addr = wr[i].sge.addr;
			sg[i].length = wr[i].sge.length;
			sg[i].lkey = wr[i].sge.lkey;
			w[i].wr_id = wr[i].wr_id;
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
			w[i].sg_list = &sg[i];
			/* siw refuses a receive without an SGE: an empty one
			 * (its key is never looked at) */
			w[i].num_sge = wr[i].sge.length || r->iwarp ? 1 : 0;
		}
		rc = ibv_post_srq_recv(r->srq, w, &bad);
		if (rc < 0) /* siw's provider returns -errno */
			rc = -rc;
		if (rc) {
			errno = rc;
			RY_ERR("verbs", "rail %s: ibv_post_srq_recv: %m",
			       r->base.name);
			return -rc;
		}
		wr += k;
		n -= k;
	}
	return 0;
}
