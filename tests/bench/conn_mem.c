// SPDX-License-Identifier: BSD-2-Clause
/*
 * What one connection of a server costs in memory, in-process, without a
 * network (issue 13: <= 4 KiB a connection, registered memory aside).
 *
 *   conn_mem [-n QPS] [-p PEERS] [-s SESSIONS] [-w WR_PER_QP]
 *
 * Part 1, the soft rail alone (one rail on 127.0.0.1): QPS QPs of
 * WR_PER_QP + 2 work requests (what the manager creates, conn.c), paired
 * with each other and brought to RTS, then one small RDMA WRITE posted on
 * each and completed (a heartbeat's worth of work), then left idle.
 * Part 2, the manager: PEERS peer records (ry__peer_new, as an admitted
 * HELLO makes them) on a manager with four soft rails, then a QP for each
 * of their four connections as conn.c makes it (created, INIT, in the
 * rail's QPN hash).  Part 3: SESSIONS control sessions (one per peer node)
 * on that manager.
 *
 * For each step: heap bytes (mallinfo2: uordblks + hblkhd) and RSS bytes
 * (/proc/self/statm) grown per QP or per connection, and what the
 * structures say they hold (sizeof, the send queue, the completion queue
 * reservation).  A benchmark, not a test: it asserts nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "rails/soft/soft_int.h"
#include "soft/soft_ns.h"
#include "src/manager.h"

/* Part 1's burst: BURST WRs on each of the first BURST_QPS QPs. */
#define BURST 64
#define BURST_QPS 64

struct snap {
	size_t heap, rss;
};

static struct snap snap(void)
{
	struct mallinfo2 mi = mallinfo2();
	struct snap s = {mi.uordblks + mi.hblkhd, 0};
	unsigned long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	s.rss = res * (size_t)sysconf(_SC_PAGESIZE);
	return s;
}

static void row(const char *what, struct snap a, struct snap b, unsigned n,
		const char *unit)
{
	printf("%-44s %10.0f %10.0f  per %s\n", what,
	       ((double)b.heap - (double)a.heap) / n,
	       ((double)b.rss - (double)a.rss) / n, unit);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "conn_mem: %s: %s\n", what,
		strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static size_t soft_cq_bytes(const struct ry__sw_cq *cq)
{
	return (size_t)cq->size * sizeof(struct ry_wc);
}

static size_t cq_bytes(struct ry_rail *r)
{
	return soft_cq_bytes(&to_srail(r)->cq0);
}

/* A manager's rail: its own CQs (lr_cq, one per context) and the rail's, which
 * the manager leaves empty (and the soft rail leaves without a ring). */
static size_t mgr_cq_bytes(struct ry__lrail *lr)
{
	size_t b = cq_bytes(lr->lr_rail);

	for (unsigned k = 0; k < RY__MAX_CTX && lr->lr_cq[k]; k++)
		b += soft_cq_bytes(
		    container_of(lr->lr_cq[k], struct ry__sw_cq, base));
	return b;
}

/* Outstanding WQE ring bytes of every QP of the rail. */
static size_t sq_bytes(struct ry_rail *r)
{
	size_t n = 0;

	for (struct ry__soft_qp *q = to_srail(r)->qps; q; q = q->next)
		if (q->sq != q->sq_inline)
			n += (size_t)q->sq_size * sizeof(struct ry__soft_wqe);
	return n;
}

static size_t rd_bytes(struct ry_rail *r)
{
	size_t n = 0;

	for (struct ry__soft_qp *q = to_srail(r)->qps; q; q = q->next)
		n += q->resp.rd ? RY__SOFT_MAX_RD * sizeof(*q->resp.rd) : 0;
	return n;
}

/* A heartbeat-sized WRITE within buf (its QP writes to its own rail). */
static void post_write(struct ry_qp *qp, struct ry_mr *mr, unsigned char *buf)
{
	struct ry_send_wr w = {
	    .opcode = RY_WR_RDMA_WRITE,
	    .sge = {(uintptr_t)buf, 40, mr->lkey},
	    .remote_addr = (uintptr_t)buf + 64,
	    .rkey = mr->rkey,
	};
	int rc = ry__rail_post_send(qp, &w, 1);

	if (rc)
		die("post_send", rc);
}

static void rail_part(unsigned n, uint32_t wr)
{
	struct ry_rail *r =
	    ry_test_soft_open_in_ns("r", "127.0.0.1:0", NULL, 0);
	struct ry_qp_init init = {.max_send_wr = wr + 2};
	static unsigned char buf[4096];
	struct ry_qp **qp = calloc(n, sizeof(*qp));
	struct snap s0, s1, s2, s3, s4, s5;
	size_t cq0, cq1, cq3;
	struct ry_mr *mr;
	struct ry_pd *pd;
	unsigned done = 0, burst = 0;
	int rc;

	if (!qp)
		die("calloc", -ENOMEM);
	rc = ry__rail_alloc_pd(r, &pd);
	if (!rc)
		rc = ry__rail_reg_mr(
		    pd, buf, sizeof(buf),
		    RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE, &mr);
	if (rc)
		die("pd/mr", rc);
	s0 = snap();
	cq0 = cq_bytes(r);
	for (unsigned i = 0; i < n; i++)
		if ((rc = ry__rail_create_qp(pd, &init, &qp[i])))
			die("create_qp", rc);
	s1 = snap();
	cq1 = cq_bytes(r);
	for (unsigned i = 0; i < n; i++) {
		struct ry_qp_attr at = {
		    .access = RY_ACCESS_REMOTE_WRITE | RY_ACCESS_LOCAL_WRITE,
		    .remote = qp[i ^ 1]->local,
		    .ack_timeout_us = 100000,
		    .retry_cnt = 6,
		    .rnr_retry = 6,
		    .max_rd_atomic = 4,
		};

		at.remote.qpn = qp[i ^ 1]->qp_num;
		if ((rc = ry__rail_modify_qp(qp[i], RY_QPS_INIT, &at)) ||
		    (rc = ry__rail_modify_qp(qp[i], RY_QPS_RTR, &at)) ||
		    (rc = ry__rail_modify_qp(qp[i], RY_QPS_RTS, &at)))
			die("connect", rc);
	}
	s2 = snap();
	for (unsigned i = 0; i < n; i++)
		post_write(qp[i], mr, buf);
	s3 = snap();
	cq3 = cq_bytes(r);
	/* a burst on a few QPs: rings of their own while it is out */
	for (unsigned i = 0; i < n && i < BURST_QPS; i++)
		for (unsigned k = 0; k < BURST; k++, burst++)
			post_write(qp[i], mr, buf);
	printf("# a burst of %u WRs on %u QPs: their rings %zu B, CQ %zu B\n",
	       BURST, burst / BURST, sq_bytes(r), cq_bytes(r));
	for (double end = ry_test_now_s() + 30; done < n + burst;) {
		struct ry_wc wc[64];
		int k;

		ry__rail_progress(r);
		k = ry__rail_poll_cq(r, wc, 64);
		for (int j = 0; j < k; j++)
			if (wc[j].status != RY_WC_SUCCESS)
				die("completion", EIO);
		done += k > 0 ? (unsigned)k : 0;
		if (ry_test_now_s() > end)
			die("completions", ETIMEDOUT);
	}
	printf("# %u QPs of %u WRs, all completed: rings %zu B, READ "
	       "state %zu B in all\n",
	       n, wr + 2, sq_bytes(r), rd_bytes(r));
	/* idle: long enough for the drained QPs' queues to be let go */
	for (double end = ry_test_now_s() + 1.5; ry_test_now_s() < end;)
		ry__rail_progress(r);
	s4 = snap();
	printf("# after idling: sq ring %zu B, CQ %zu B\n", sq_bytes(r),
	       cq_bytes(r));
	for (unsigned i = 0; i < n; i++)
		ry__rail_destroy_qp(qp[i]);
	s5 = snap();
	printf("%-44s %10s %10s\n", "soft rail, step", "heap B", "RSS B");
	row("create (struct, send queue, CQ reservation)", s0, s1, n, "QP");
	printf("%-44s %10zu %10s  per QP\n",
	       "  of which sizeof(struct ry__soft_qp)",
	       sizeof(struct ry__soft_qp), "");
	printf("%-44s %10.0f %10s  per QP\n", "  of which the CQ grew",
	       ((double)cq1 - (double)cq0) / n, "");
	row("INIT, RTR, RTS", s1, s2, n, "QP");
	row("post one WRITE", s2, s3, n, "QP");
	printf("%-44s %10.0f %10s  per QP\n", "  of which the CQ grew",
	       ((double)cq3 - (double)cq1) / n, "");
	row("complete it and the burst, idle 1.5 s", s3, s4, n, "QP");
	row("all of it (create .. idle)", s0, s4, n, "QP");
	row("destroy", s4, s5, n, "QP");
	ry__rail_close(r);
	free(qp);
}

/*
 * Control sessions (one per peer node, src/ctl/): adopted as an
 * accepted one is, idle (no buffer: src/ctl/session.c frees them when empty),
 * then with the first bytes of a frame fed (its receive buffer is
 * allocated until the frame is whole).
 */
static void ctl_part(struct ry_manager *m, unsigned n)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct sockaddr_storage ss;
	struct snap s0, s1, s2;
	static const unsigned char part[4];
	struct ry__ctl **cs = calloc(n, sizeof(*cs));
	int *fds = calloc(n, sizeof(*fds));

	if (!fds || !cs)
		die("calloc", -ENOMEM);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, &sin, sizeof(sin));
	s0 = snap();
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; i < n; i++) {
		int sv[2];
		struct ry__ctl *c;

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv))
			die("socketpair", -errno);
		fds[i] = sv[1];
		c = ry__ctl_adopt(m, sv[0], &ss);
		if (!c)
			die("ctl_adopt", -EPERM);
		cs[i] = c;
	}
	s1 = snap();
	for (unsigned i = 0; i < n; i++)
		ry__ctl_feed(cs[i], part, sizeof(part));
	ry__unlock(m);
	s2 = snap();
	row("control session, idle (struct)", s0, s1, n, "peer");
	row("  + half a frame read (receive buffer)", s1, s2, n, "peer");
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	free(cs);
}

static void mgr_part(unsigned npeers, uint32_t wr, unsigned nsess)
{
	struct ry_manager *m;
	struct ry_config c;
	struct ry_peer **p = calloc(npeers, sizeof(*p));
	struct snap s0, s1, s2;
	size_t cq0 = 0, cq1 = 0;
	unsigned nconn = 0, i, k;
	int rc;

	if (!p)
		die("calloc", -ENOMEM);
	ry_config_init_defaults(&c);
	snprintf(c.node, sizeof(c.node), "conn-mem");
	snprintf(c.control, sizeof(c.control), "127.0.0.1:0");
	c.wr_per_qp = wr;
	c.log.level = RY_LOG_WARN;
	c.accept.n = 1;
	snprintf(c.accept.s[0], sizeof(c.accept.s[0]), "127.0.0.0/8");
	c.max_sessions = c.max_sessions_per_source = nsess + 1;
	c.n_rails = 4;
	for (i = 0; i < c.n_rails; i++) {
		struct ry_rail_config *rc_ = &c.rails[i];

		snprintf(rc_->name, sizeof(rc_->name), "r%u", i);
		rc_->provider = RY_PROVIDER_SOFT;
		snprintf(rc_->network, sizeof(rc_->network), "net%u", i);
		snprintf(rc_->address, sizeof(rc_->address), "127.0.0.1:0");
		rc_->weight = 1;
		rc_->gid_index = -1;
	}
	if ((rc = ry_manager_create(&c, &m)))
		die("ry_manager_create", rc);
	s0 = snap();
	ry__lock_and_run_leftovers(m);
	for (i = 0; i < npeers; i++) {
		char name[64];

		snprintf(name, sizeof(name), "node-%u", i);
		p[i] = ry__peer_new(m, name, "", false);
		if (!p[i])
			die("peer_new", -ENOMEM);
		p[i]->pr_from_hello = true;
	}
	ry__unlock(m);
	s1 = snap();
	for (k = 0; k < m->m_nrails; k++)
		cq0 += mgr_cq_bytes(&m->m_rails[k]);
	ry__lock_and_run_leftovers(m);
	for (i = 0; i < npeers; i++)
		for (k = 0; k < m->m_nrails; k++) {
			struct ry__conn *cn = p[i]->pr_conn[k];
			struct ry_qp_init init = {
			    .max_send_wr = wr + 2,
			    .context = cn,
			    .cq = cn->cn_lrail
				      ->lr_cq[cn->cn_peer->pr_ctx->cx_idx]};
			struct ry_qp_attr at = {.access =
						    RY_ACCESS_LOCAL_WRITE};

			rc = ry__rail_create_qp(cn->cn_lrail->lr_pd, &init,
						&cn->cn_qp);
			if (!rc)
				rc = ry__rail_modify_qp(cn->cn_qp, RY_QPS_INIT,
							&at);
			if (!rc)
				rc = ry__conn_hash_add(cn);
			if (rc)
				die("conn qp", rc);
			nconn++;
		}
	ry__unlock(m);
	s2 = snap();
	for (k = 0; k < m->m_nrails; k++)
		cq1 += mgr_cq_bytes(&m->m_rails[k]);
	printf("\n%-44s %10s %10s\n", "manager, 4 soft rails, step", "heap B",
	       "RSS B");
	row("peer record (ry__peer_new)", s0, s1, npeers, "peer");
	printf("%-44s %10zu %10s  per peer\n",
	       "  of which sizeof(struct ry_peer)", sizeof(struct ry_peer), "");
	printf("%-44s %10zu %10s  per peer\n", "  of which the connections",
	       (size_t)p[0]->pr_nslots * sizeof(struct ry__conn), "");
	printf("%-44s %10zu %10s  per conn\n", "  sizeof(struct ry__conn)",
	       sizeof(struct ry__conn), "");
	row("a QP per connection (create, INIT, hash)", s1, s2, nconn, "conn");
	printf("%-44s %10.0f %10s  per conn\n", "  of which the CQs grew",
	       ((double)cq1 - (double)cq0) / nconn, "");
	row("peer and its QPs, per connection", s0, s2, nconn, "conn");
	ctl_part(m, nsess);
	ry_manager_destroy(m);
	free(p);
}

int main(int argc, char **argv)
{
	unsigned n = 4000, npeers = 1000, nsess = 200;
	uint32_t wr = 256;
	int opt;

	while ((opt = getopt(argc, argv, "n:p:s:w:")) != -1) {
		switch (opt) {
		case 'n':
			n = (unsigned)atoi(optarg) & ~1u;
			break;
		case 'p':
			npeers = (unsigned)atoi(optarg);
			break;
		case 's':
			nsess = (unsigned)atoi(optarg);
			break;
		case 'w':
			wr = (uint32_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: conn_mem [-n QPS] [-p PEERS] "
					"[-s SESSIONS] [-w WR_PER_QP]\n");
			return 2;
		}
	}
	if (n < 2 || !npeers || !nsess || !wr)
		return 2;
	/* one arena: the heap counts are the whole process's */
	mallopt(M_ARENA_MAX, 1);
	rail_part(n, wr);
	mgr_part(npeers, wr, nsess);
	return 0;
}
