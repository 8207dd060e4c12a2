/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A pair of rails of one provider, each with a PD, a QP connected to the
 * other, and helpers that drive both rails' progress from one thread.
 * Everything goes through rails/rail.h, so the same tests run against any
 * provider: the suite's main() sets ry_test_provider to a small
 * per-provider description (tests/soft/test_soft_conformance.c,
 * tests/hw/verbs_provider.c).
 */
#ifndef RY_TESTS_RAIL_FIXTURE_H
#define RY_TESTS_RAIL_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdint.h>

#include "rails/rail.h"

struct ry_test_provider {
	const char *name;
	const struct ry_rail_ops *ops;
	/* Fill the config of rail idx (0 or 1); the two rails reach each
	 * other. */
	void (*config)(struct ry_rail_config *cfg, int idx);
	bool has_faults; /* set_fault/set_link work */
	/*
	 * The first status of each row of rails/rail.h's error table, and
	 * no other (the soft rail promises them; verbs providers differ).
	 * Without it a case accepts exactly the alternatives rail.h lists.
	 */
	bool strict_status;
	/* All protocol work happens in progress(): a WR moved to ERR before
	 * progress ran is FLUSHED, never SUCCESS (the soft rail). */
	bool sync_progress;
	/* Bytes of each packet that are not payload, for the edge sizes:
	 * the payload per packet is the path MTU less this. */
	uint32_t pkt_overhead;
	/* 0: wait for a completion by spinning on progress; else sleep on
	 * the rail fds for up to this many ms between progress calls (the
	 * manager's way; kinder to a slow guest). */
	int poll_ms;
	/* QP attributes when a case sets none; NULL: short soft timeouts. */
	const struct ry_qp_attr *defaults;
	/* Config n (0, 1, ...) that open must refuse; false past the last.
	 * *want is the errno open returns, or 0 for any negative one. */
	bool (*bad_config)(struct ry_rail_config *cfg, int n, int *want);
};

/* bad_config for a rail addressed by IP:PORT (soft, tcp): config is the
 * provider's good one, spoilt in turn by an unresolvable name, an address
 * of no interface here and an MTU below the minimum. */
bool ry_test_ip_bad_config(void (*config)(struct ry_rail_config *, int),
			   struct ry_rail_config *cfg, int n, int *want);

extern const struct ry_test_provider *ry_test_provider;
/* pair_open gives each rail's test QPs a CQ of their own (create_cq),
 * not the rail's: the "own_cq" case runs the contract cases so. */
extern bool ry_test_own_cq;

/* Every access a region in these tests may need. */
#define RY_TEST_ACCESS_ALL                                                     \
	(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ)

struct ry_test_pair {
	struct ry_rail *r[2];
	struct ry_pd *pd[2];
	struct ry_qp *qp[2];
	/* the CQ qp[i] reports to (ry_test_own_cq), NULL: the rail's own */
	struct ry_cq *cq[2];
	/* used for RTS of both sides; with mac, its keys are qp 0's and
	 * qp 1 gets them the other way round */
	struct ry_qp_attr attr;
	bool attr_set;	      /* attr is complete: no defaults */
	uint32_t max_send_wr; /* 0: 256 */
	uint32_t mtu;	      /* path MTU: the smaller of both rails' */
};

/* Open two rails with default QP attributes (short timeouts). */
void pair_open(struct ry_test_pair *p);
/* Set p->attr to the provider's defaults (for a case to change some). */
void pair_defaults(struct ry_test_pair *p);
/* Create and connect one QP on each rail; with attr_set, p->attr is used
 * as given (remote and mtu filled in), else the fixture's defaults. */
void pair_connect(struct ry_test_pair *p);
/* modify_qp to RTR as the contract allows: -EAGAIN means call again
 * later (a verbs rail resolving the peer's address); up to 3 s. */
int pair_to_rtr(struct ry_qp *qp, const struct ry_qp_attr *at);
void pair_create_qps(struct ry_test_pair *p);
void pair_connect_qps(struct ry_test_pair *p);
/* Destroy qp[i] (it must not block) and forget it. */
void pair_destroy_qp(struct ry_test_pair *p, int i);
void pair_close(struct ry_test_pair *p);
void pair_progress(struct ry_test_pair *p);
/* poll_cq of side i's CQ: cq[i], or the rail's own. */
int pair_poll(struct ry_test_pair *p, int i, struct ry_wc *wc, int n);
/* pending() of side i's CQ: cq[i]'s, or the rail's. */
int pair_pending(struct ry_test_pair *p, int i);
/* Progress both until side i's CQ has a completion; fails after
 * timeout_ms. */
void pair_wait_wc(struct ry_test_pair *p, int i, struct ry_wc *wc,
		  int timeout_ms);
/* The same, false instead of failing. */
bool pair_try_wc(struct ry_test_pair *p, int i, struct ry_wc *wc,
		 int timeout_ms);
/* Progress both for ms milliseconds. */
void pair_spin(struct ry_test_pair *p, int ms);
uint64_t test_now_ms(void);

/* Register len bytes (page aligned, filled with pattern seed). */
void *test_buf(size_t len, unsigned seed);
void test_fill(void *buf, size_t len, unsigned seed);

/* Warnings and errors logged from test_warn_capture() on (ry_log_set_sink;
 * the first TEST_WARN_MAX, each cut to 255 bytes) until test_warn_end(). */
#define TEST_WARN_MAX 4
extern char test_warn[TEST_WARN_MAX][256];
extern unsigned test_warn_n;
void test_warn_capture(void);
void test_warn_end(void);

#endif
