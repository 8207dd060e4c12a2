/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The rail provider contract.
 *
 * A rail is one port of one device: a soft rail (userspace RC over UDP,
 * rails/soft) or a verbs rail (an HCA port, rails/verbs).  Both implement the
 * same verbs-shaped semantics behind struct ry_rail_ops, so the rail manager
 * never knows which one it drives:
 *
 *   rail      open/close, link state and link events, a pollable fd
 *   pd        protection domain; regions and QPs belong to one
 *   mr        registered memory with an lkey and an rkey (see Numbers)
 *   cq        the rail's own, shared by every QP created without a CQ
 *             (ry__rail_poll_cq), and any number more (ry__rail_create_cq)
 *   srq       one per rail, shared by all of its QPs (ry__rail_post_recv)
 *   qp        reliable connected, RESET -> INIT -> RTR -> RTS -> ERR
 *
 * Ownership: the manager owns rails; a rail owns its PDs, MRs, QPs, CQs and
 * SRQ, and ry__rail_close() destroys whatever is left.  Destroying a QP or
 * deregistering an MR revokes it at once: no later packet can use it.
 *
 * Threading: a rail is not thread-safe.  Its owner serialises every call on
 * one rail (the manager holds the rail's lr_lock); different rails may be
 * used from different threads concurrently, so a provider keeps no state
 * shared between its rails unless it locks it itself (the test-only loop
 * rail's loop_lock).  A rail's CQs are part of it: calls on them are
 * serialised with the rail's other calls, unless the rail's attributes
 * say concurrent_qps: then post_send on a QP that reports to a CQ of
 * create_cq's, and cq_poll/cq_pending on such a CQ, may run beside any
 * other call of the rail, and the owner serialises only the calls on one
 * QP or one CQ (the manager: each context's own, under its lock).  The
 * verbs rail says so (libibverbs is thread-safe; its own state of a QP
 * is guarded by the QP's CQ's lock, see verbs_int.h) and the test-only
 * null rail; the soft rail cannot (its progress works on the QPs'
 * queues).
 *
 * Progress: ry__rail_progress() does the provider's protocol work (the soft
 * rail receives packets, sends ACKs, runs its retransmit timers there; the
 * verbs rail reads async events).  ry__rail_fd() returns one fd that becomes
 * readable when progress has something to do, for epoll.  A post does not
 * raise the fd: the caller runs progress() once after posting (the soft
 * rail transmits there), unless the rail's attributes say sends_alone
 * (verbs: post_send rang the HCA's doorbell, so that progress call
 * would find nothing to do), and after that whenever the fd is
 * readable; a completion is then found by poll_cq.  What a progress()
 * call completed (or queued as an event) its caller finds by asking
 * pending(), cq_pending() or poll_cq() after it: the fd need not
 * announce it (tcp does not: an eventfd written and read for each would
 * cost two syscalls a completion; verbs' completion channel was drained by
 * that progress), so an owner asks after every progress() call before it
 * sleeps on the fd.  What arrives between progress() calls (a packet, a
 * timer, a completion another call made: a post in ERR, modify_qp to ERR)
 * makes the fd readable.
 * An owner that sleeps in an epoll set of its own may ask watch(epfd, tag)
 * instead of adding the fd there: the rail puts the fds behind its fd
 * into epfd itself (data.ptr = tag, each with the events it asks of it)
 * and keeps them there as its fds come and go, so that a packet wakes the
 * owner through one epoll set, not through the rail's set nested in the
 * owner's (each level is one more callback and wake-up on every packet
 * the owner sleeps for: a microsecond or two of a round trip).  An event
 * with the tag means what the fd's readability means: run progress.
 * One set at a time: a second call moves them, epfd -1 takes them out;
 * a failed call leaves none of them in either set.  Closing the rail
 * takes them out too.  -EOPNOTSUPP: the owner watches the fd.
 * pending() says, cheaply and without consuming anything, whether
 * poll_cq or get_event has something to hand over (1) or not (0), so that
 * a thread doing a rail's protocol work takes the manager's lock only when
 * there is a completion to handle; -EOPNOTSUPP (a provider that cannot
 * tell, as verbs, whose CQ is only known by polling it) means "poll".
 *
 * Completion semantics follow verbs: every posted send WR produces exactly
 * one completion (we always signal), in posting order per QP; in ERR every
 * outstanding and every newly posted WR completes with RY_WC_FLUSHED, in
 * order.  A WR the hardware had finished before the move to ERR may still
 * complete with RY_WC_SUCCESS (verbs); after the first FLUSHED one of a QP
 * every later one is FLUSHED.  The soft rail does its protocol work only
 * in progress(), so a WR not yet progressed is always FLUSHED there.
 *
 * CQs: ry_qp_init.cq names the CQ a QP reports to, NULL the rail's own.
 * Every completion of the QP goes there: its send WRs', and those of the
 * SRQ's receives it consumed (as verbs, where a receive completes on the
 * CQ of the QP that took it).  So an owner that gives each group of its
 * QPs a CQ of their own (a progress context and its peers, say) polls
 * only its own completions, never another group's.  A CQ grows with
 * the WRs posted to its QPs (nothing to size).  ry__rail_cq_poll() and
 * ry__rail_cq_pending() are poll_cq() and pending() of that CQ alone;
 * the rail's pending() and poll_cq() speak for its own CQ only (and its
 * events).  The rail fd covers every CQ of the rail: it is readable while
 * any of them holds a completion (soft), or when progress has one to
 * announce (verbs: one completion channel for all of them).
 * destroy_cq refuses with -EBUSY while a QP created on it is not
 * destroyed; completions not polled by then are dropped, and a provider
 * that still owes a destroyed QP's completions keeps what it needs for
 * them itself (verbs drains and drops them in progress).  Dropped means a
 * receive from the SRQ such a QP still took is never handed back: destroy
 * a CQ when those buffers no longer matter (the manager: at rail close).
 * A CQ of another rail in ry_qp_init is -EINVAL; a provider without
 * extra CQs (create_cq -EOPNOTSUPP) refuses any.
 *
 * Errors of one WR (the status says which; the manager relies only on the
 * status being an error, the QP being in ERR, every later WR of that QP
 * completing FLUSHED, and no memory being written that the WR did not
 * own):
 *   bad rkey, remote bounds or access    RY_WC_REM_ACCESS on every provider;
 *                                        the target memory is untouched
 *   bad lkey or local bounds             RY_WC_LOC_PROT, or RY_WC_FLUSHED on
 *                                        some verbs providers (rxe)
 *   receive buffer too small for a SEND  sender: RY_WC_REM_INVALID_REQ, or
 *                                        RY_WC_REM_OP (rxe); receiver:
 *                                        RY_WC_LOC_LEN, or RY_WC_GENERAL_ERR
 *                                        (rxe); both QPs in ERR
 *   no receive posted, rnr_retry spent   RY_WC_RNR_RETRY_EXCEEDED
 *   no answer, retry_cnt spent           RY_WC_RETRY_EXCEEDED
 * The soft rail always returns the first status of each row.  After an
 * error completion qp->state reads RY_QPS_ERR.
 *
 * Numbers: qp_num is nonzero, 24 bits, distinct among a rail's QPs (random
 * on the soft rail, assigned by the HCA on verbs, so two rails may use the
 * same numbers); local.psn is random,
 * 24 bits and nonzero, and moving to RESET draws a new one; rkeys are
 * random on the soft rail, the HCA's on verbs; local.cookie is random and
 * nonzero on the soft rail, 0 on verbs.  A QP sends from local.psn when it
 * reaches RTS: a test may choose it in RESET or INIT by writing local.psn.
 * The rail MTU is the interface MTU on the soft rail (payload per packet
 * is RY__SOFT_OVERHEAD less), an IB size 256..4096 on verbs (the payload
 * per packet; rxe on a 1500-byte netdev says 1024).
 *
 * Blocking: no call waits for the network.  modify_qp to RTR may answer
 * -EAGAIN, the QP still in INIT, when the move needs the network first:
 * on RoCE the kernel resolves the peer's MAC address (ARP/ND), for up to
 * 1 s when the neighbour is not cached, so the verbs rail asks the kernel
 * to resolve an IPv4 peer and answers -EAGAIN; with rdma_cm the REQ/REP
 * handshake runs on the rail's own thread meanwhile.  Call again a little
 * later with the same attributes, the QP kept (the manager asks every
 * 5 ms until its connect time is out, conn.c rts_wait).  The soft and tcp
 * rails never refuse so (but ry_fault.rtr_again makes the soft rail).
 *
 * Connection managers (verbs, cm = rdma_cm; rails/verbs/verbs_cm.c): the
 * endpoint a QP hands out names the rail's rdma_cm listener, its address
 * in gid (IPv4-mapped or IPv6) and its port in udp_port, and the owner
 * exchanges it as any other.  modify_qp to RTR then connects through the
 * CM: the first of the two QPs to get there sends the CM's REQ to the
 * other, which must be in INIT by then (else -ECONNREFUSED); its RTR
 * answers -EAGAIN until the REP came and the QP is at RTR (at most
 * RY__VERBS_CM_WAIT_MS, the address and route resolution included), then
 * 0 or why the connect failed; the other is accepted by the peer rail's
 * own thread, and its RTR only checks that the REQ came from the QPN its
 * endpoint names.  The PSNs are the CM's (random, drawn by the kernel per
 * connection), so local.psn is not what the QP sends from.
 *
 * Teardown: destroy_qp returns at once (never blocks, never -EBUSY): no
 * completion of a send WR still outstanding at that moment is reported
 * afterwards (a verbs provider drains and drops them in progress() and
 * poll_cq); a receive completion, whose buffer is the caller's on the
 * rail's SRQ, may still name it.  Moving a QP to RESET needs every send
 * completion of it polled: until then a provider may refuse with -EBUSY
 * (verbs); the soft rail completes everything at the move to ERR and never
 * refuses.
 *
 * Errors: functions return 0 or a negative errno; output objects are set
 * only on success.  A slot the provider does not implement may stay NULL in
 * its table: ry__rail_ops() hands out a copy with such slots returning
 * -EOPNOTSUPP, and rails opened by ry__rail_open() dispatch through that
 * copy, so the inline dispatch below never tests for NULL.
 */
#ifndef RAILYARD_RAIL_H
#define RAILYARD_RAIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <railyard/config.h>

struct ry_rail;
struct ry_pd;
struct ry_mr;
struct ry_cq;
struct ry_qp;

enum ry_link_state {
	RY_LINK_DOWN = 0,
	RY_LINK_UP,
};

enum ry_qp_state {
	RY_QPS_RESET = 0,
	RY_QPS_INIT,
	RY_QPS_RTR,
	RY_QPS_RTS,
	RY_QPS_ERR,
};

/* Memory access flags, as IBV_ACCESS_*. */
enum ry_access {
	RY_ACCESS_LOCAL_WRITE = 1u << 0,
	RY_ACCESS_REMOTE_WRITE = 1u << 1,
	RY_ACCESS_REMOTE_READ = 1u << 2,
};

enum ry_wr_opcode {
	RY_WR_RDMA_WRITE = 0,
	RY_WR_RDMA_WRITE_IMM,
	RY_WR_RDMA_READ,
	RY_WR_SEND,
	RY_WR_SEND_IMM,
};

enum ry_wc_opcode {
	RY_WC_RDMA_WRITE = 0,
	RY_WC_RDMA_READ,
	RY_WC_SEND,
	RY_WC_RECV,	     /* a SEND arrived */
	RY_WC_RECV_RDMA_IMM, /* a WRITE with immediate arrived */
};

/* Completion status, as enum ibv_wc_status for the ones we need. */
enum ry_wc_status {
	RY_WC_SUCCESS = 0,
	RY_WC_FLUSHED,		  /* QP in ERR: work request not executed */
	RY_WC_RETRY_EXCEEDED,	  /* transport retries exhausted */
	RY_WC_RNR_RETRY_EXCEEDED, /* peer had no receive posted */
	RY_WC_REM_ACCESS,	  /* bad rkey, access or bounds at the peer */
	RY_WC_REM_INVALID_REQ,	  /* peer rejected the request */
	RY_WC_REM_OP,		  /* peer failed to execute (e.g. length) */
	RY_WC_LOC_PROT,		  /* bad lkey or local bounds */
	RY_WC_LOC_LEN,		  /* receive buffer too small */
	RY_WC_GENERAL_ERR,
	RY_WC__MAX
};

enum ry_wc_flags {
	RY_WC_WITH_IMM = 1u << 0,
};

/* One scatter/gather element; the manager only ever needs one per WR. */
struct ry_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

struct ry_send_wr {
	uint64_t wr_id;
	enum ry_wr_opcode opcode;
	struct ry_sge sge;
	uint64_t remote_addr; /* RDMA ops */
	uint32_t rkey;	      /* RDMA ops */
	uint32_t imm_data;    /* *_IMM ops, host order */
};

struct ry_recv_wr {
	uint64_t wr_id;
	struct ry_sge sge;
};

struct ry_wc {
	uint64_t wr_id;
	enum ry_wc_status status;
	enum ry_wc_opcode opcode;
	uint32_t byte_len;   /* receives: bytes received */
	uint32_t imm_data;   /* with RY_WC_WITH_IMM, host order */
	uint32_t qp_num;     /* local QP the completion belongs to */
	uint32_t flags;	     /* enum ry_wc_flags */
	uint32_t vendor_err; /* provider detail for logs */
};

/*
 * What one side of a connection tells the other (over the manager's control
 * channel) to bring a QP to RTR.  gid carries the IPv6 or IPv4-mapped
 * address of the rail (RoCE GID, or the soft rail's UDP address); udp_port is
 * the soft rail's port, lid the InfiniBand LID; mtu in bytes.
 */
struct ry_qp_endpoint {
	uint32_t qpn;	 /* 24 bits */
	uint32_t psn;	 /* 24 bits: the first PSN this side sends */
	uint64_t cookie; /* random per connection; 0 for verbs */
	uint8_t gid[16];
	uint16_t lid;
	uint16_t udp_port;
	uint32_t mtu;
};

/* Bytes of each data-path MAC key (ry_qp_attr.mac_tx / mac_rx). */
#define RY_QP_MAC_KEY 32

/*
 * Attributes for ry__rail_modify_qp().  Which fields are read depends on the
 * target state, as in verbs: INIT reads access; RTR reads remote, mtu and
 * mac; RTS reads timeouts and retry counts.  ERR and RESET read nothing.
 *
 * mac (soft rail only; verbs refuses RTR with -EOPNOTSUPP): every packet
 * the QP sends carries a keyed MAC under mac_tx, and every packet it takes
 * must carry a good one under mac_rx (the peer's mac_tx).  The keys are
 * the connection's own (the manager derives them from its authenticated
 * control session and both endpoints); the rail copies them at RTR and
 * wipes its copy at RESET and destroy.
 */
struct ry_qp_attr {
	unsigned access; /* enum ry_access for inbound requests */
	struct ry_qp_endpoint remote;
	bool mac;
	uint8_t mac_tx[RY_QP_MAC_KEY], mac_rx[RY_QP_MAC_KEY];
	uint32_t mtu;		   /* path MTU, min of both sides */
	uint32_t ack_timeout_us;   /* retransmit after this much silence */
	uint32_t retry_cnt;	   /* 0..6; never 7 (infinite on some HCAs) */
	uint32_t rnr_retry;	   /* 0..6 */
	uint32_t min_rnr_timer_us; /* wait before retrying after RNR NAK */
	uint32_t max_rd_atomic;	   /* outstanding READs, initiator side */
};

struct ry_qp_init {
	uint32_t max_send_wr;
	void *context;	  /* returned by ry_rail_qp_context() */
	struct ry_cq *cq; /* its completions go there; NULL: the rail's own */
};

struct ry_rail_attr {
	enum ry_link_state link;
	uint32_t mtu; /* active MTU of the port/interface */
	/* bytes of every packet inside mtu that are not payload: the soft
	 * rail's mtu is the IP MTU (IP, UDP and its header count), verbs'
	 * the RoCE path MTU (payload only, so 0) */
	uint32_t mtu_hdr;
	uint64_t rate_bps; /* 0 when unknown */
	/* a post reaches the wire without a progress call (Progress above) */
	bool sends_alone;
	/* the same only for a post to a QP with no send WR outstanding (the
	 * first WR after its completions were polled: tcp sends it from
	 * post_send, and what it could not send makes the fd readable);
	 * any other post needs its progress call, so that a busy QP's
	 * posts leave together */
	bool sends_idle;
	/* what progress() completes leaves the fd calm (tcp; Progress
	 * above): an owner that will not ask pending() after a progress call
	 * must see that someone does; a rail without it (soft) makes its fd
	 * readable for those too */
	bool progress_quiet;
	/* post_send on a QP created with a CQ of create_cq's, and cq_poll
	 * and cq_pending on such a CQ, need no serialising with the rail's
	 * other calls, only with calls on the same QP or CQ (Threading) */
	bool concurrent_qps;
	/* RY_WR_RDMA_WRITE_IMM and RY_WR_SEND_IMM are refused at
	 * post_send with -EOPNOTSUPP, the call's other WRs unposted (siw
	 * carries no immediate data) */
	bool no_imm;
	/* no receiver-not-ready flow control (iWARP): a SEND or WRITE_IMM
	 * that finds no receive posted ends the connection, both QPs go to
	 * ERR, and rnr_retry and min_rnr_timer_us mean nothing */
	bool no_rnr;
	/* a failed WR's status names no cause (iWARP: the peer's
	 * TERMINATE tells it to the peer's kernel log, and siw fails its
	 * own checks as one): the first WR of a QP that fails, unless the
	 * caller moved the QP to ERR, completes RY_WC_GENERAL_ERR whatever
	 * failed (a row of "Errors of one WR" at the top, a bad lkey, the
	 * peer gone), the rest RY_WC_FLUSHED; the other promises of those
	 * rows hold */
	bool opaque_errors;
	/* the device does not check REMOTE_READ (siw answers a READ of
	 * any region of the PD): a region with REMOTE_WRITE and without
	 * REMOTE_READ is refused with -EOPNOTSUPP, not made readable
	 * behind the caller's back */
	bool read_unchecked;
	/* a WRITE the peer refuses part-way (past the region's end) may
	 * have placed its bytes that lie inside the region (iWARP places
	 * each segment as it comes); never a byte outside it */
	bool partial_writes;
	struct ry_qp_endpoint local; /* gid/lid/udp_port filled; no QP */
	uint32_t max_qp_wr;
	uint32_t max_msg_size;
};

enum ry_rail_event_type {
	RY_RAIL_EV_LINK_DOWN = 0,
	RY_RAIL_EV_LINK_UP,
	RY_RAIL_EV_QP_FATAL, /* qpn names the QP */
	RY_RAIL_EV_DEVICE_FATAL,
};

struct ry_rail_event {
	enum ry_rail_event_type type;
	uint32_t qpn;
	uint64_t time_ns; /* CLOCK_MONOTONIC when it was seen */
};

/* Runtime fault injection (soft rail only; verbs returns -EOPNOTSUPP). */
struct ry_fault {
	bool drop_all; /* an unplugged cable: nothing in or out */
	double drop;
	double duplicate;
	double reorder;
	double corrupt;
	uint32_t delay_us;
	/* each QP made from now on answers -EAGAIN (left in INIT) to its
	 * first rtr_again moves to RTR, as a rail still getting ready does
	 * (the verbs rail during rdma_cm's handshake): for the manager's
	 * tests; soft rail only */
	unsigned rtr_again;
};

/* Per-rail counters a provider keeps; all monotonic. */
struct ry_rail_stats {
	uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;
	uint64_t retransmits; /* packets sent again */
	uint64_t naks_sent, naks_rcvd, rnr_naks_sent;
	uint64_t dup_rcvd;   /* duplicate requests re-acked */
	uint64_t rx_dropped; /* failed a check: counted, dropped */
	uint64_t rx_bad_crc, rx_bad_header, rx_bad_qpn, rx_bad_cookie;
	uint64_t rx_bad_psn, rx_access_err, rx_qp_err_dropped;
	uint64_t rx_empty;   /* zero-length datagrams (also in rx_dropped) */
	uint64_t rx_bad_mac; /* data-path MAC missing or wrong (ditto) */
	uint64_t faults_dropped, faults_duplicated, faults_reordered,
	    faults_corrupted;
	uint64_t tx_pad_bytes; /* zeros after a short last packet (soft) */
	uint64_t rx_held;      /* held ahead of a gap till it filled (soft) */
	/* errors the port itself counted (symbol, link, receive, buffer
	 * overrun, discards: verbs, rails/verbs/verbs_health.c); on soft,
	 * retransmits plus bad CRCs; the manager's rail health
	 * (src/rail_health.c) divides them by the packets */
	uint64_t port_errors;
};

struct ry_rail_ops {
	const char *name;
	int (*open)(const struct ry_rail_config *cfg, struct ry_rail **rail_p);
	void (*close)(struct ry_rail *rail);
	int (*query)(struct ry_rail *rail, struct ry_rail_attr *attr);
	int (*fd)(struct ry_rail *rail);
	int (*watch)(struct ry_rail *rail, int epfd, void *tag);
	int (*progress)(struct ry_rail *rail);
	int (*pending)(struct ry_rail *rail);
	int (*get_event)(struct ry_rail *rail, struct ry_rail_event *ev);
	int (*alloc_pd)(struct ry_rail *rail, struct ry_pd **pd_p);
	int (*dealloc_pd)(struct ry_pd *pd);
	int (*reg_mr)(struct ry_pd *pd, void *addr, size_t length,
		      unsigned access, struct ry_mr **mr_p);
	int (*dereg_mr)(struct ry_mr *mr);
	int (*create_qp)(struct ry_pd *pd, const struct ry_qp_init *init,
			 struct ry_qp **qp_p);
	int (*modify_qp)(struct ry_qp *qp, enum ry_qp_state state,
			 const struct ry_qp_attr *attr);
	int (*destroy_qp)(struct ry_qp *qp);
	int (*post_send)(struct ry_qp *qp, const struct ry_send_wr *wr,
			 unsigned n);
	int (*post_recv)(struct ry_rail *rail, const struct ry_recv_wr *wr,
			 unsigned n);
	int (*poll_cq)(struct ry_rail *rail, struct ry_wc *wc, int n);
	int (*create_cq)(struct ry_rail *rail, struct ry_cq **cq_p);
	int (*destroy_cq)(struct ry_cq *cq);
	int (*cq_poll)(struct ry_cq *cq, struct ry_wc *wc, int n);
	int (*cq_pending)(struct ry_cq *cq);
	int (*set_fault)(struct ry_rail *rail, const struct ry_fault *f);
	int (*set_link)(struct ry_rail *rail, enum ry_link_state state);
	int (*get_stats)(struct ry_rail *rail, struct ry_rail_stats *st);
};

/*
 * Base objects.  A provider embeds these first in its own structs and gets
 * back with container_of; the manager reads only these fields.
 */
struct ry_rail {
	const struct ry_rail_ops *ops;
	char name[RY_NAME_MAX];
};

struct ry_pd {
	struct ry_rail *rail;
};

struct ry_mr {
	struct ry_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	unsigned access;
};

struct ry_cq {
	struct ry_rail *rail;
};

struct ry_qp {
	struct ry_pd *pd;
	uint32_t qp_num;
	enum ry_qp_state state;
	void *context;
	/* This side's qpn/psn/cookie (and gid/lid/udp_port/mtu), filled by
	 * create_qp, for the manager to send to the peer. */
	struct ry_qp_endpoint local;
};

/*
 * Kinds from RY__PROVIDER_TEST on are not in the public enum: a test
 * registers its own provider there (tests/loop) before a manager opens a
 * rail of that kind.  A config file never names them.
 */
#define RY__PROVIDER_TEST 8
#define RY__PROVIDER_MAX 16

/*
 * Provider table: soft always, verbs when built with RY_WITH_VERBS, and
 * whatever tests registered.  The table returned has every slot set: the
 * ones the provider left NULL return -EOPNOTSUPP.  NULL for a kind nobody
 * provides.
 */
const struct ry_rail_ops *ry__rail_ops(enum ry_provider provider);
/* For a provider's watch: fd out of the owner's set from (-1: none) and
 * into to (-1: none) with events and tag; rc is an earlier fd's failure,
 * and then this one only leaves.  Returns rc or this fd's -errno. */
int ry__rail_watch_move(int from, int to, int fd, uint32_t events, void *tag,
			int rc);

/*
 * Put a test provider at kind (RY__PROVIDER_TEST .. RY__PROVIDER_MAX - 1).
 * ops must set open and close and outlive every rail of that kind.
 * Registering the same ops again is a no-op; other ops at a taken kind
 * get -EEXIST, a kind out of range or ops without open/close -EINVAL.
 */
int ry__rail_provider_register(enum ry_provider kind,
			       const struct ry_rail_ops *ops);

/* The rail returned dispatches through the table ry__rail_ops() returns. */
int ry__rail_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p);

/* Thin inline dispatch, so callers read like verbs code. */
static inline void ry__rail_close(struct ry_rail *r)
{
	if (r)
		r->ops->close(r);
}
static inline int ry__rail_query(struct ry_rail *r, struct ry_rail_attr *a)
{
	return r->ops->query(r, a);
}
static inline int ry__rail_fd(struct ry_rail *r)
{
	return r->ops->fd(r);
}
static inline int ry__rail_watch(struct ry_rail *r, int epfd, void *tag)
{
	return r->ops->watch(r, epfd, tag);
}
static inline int ry__rail_progress(struct ry_rail *r)
{
	return r->ops->progress(r);
}
static inline int ry__rail_pending(struct ry_rail *r)
{
	return r->ops->pending(r);
}
static inline int ry__rail_get_event(struct ry_rail *r,
				     struct ry_rail_event *ev)
{
	return r->ops->get_event(r, ev);
}
static inline int ry__rail_alloc_pd(struct ry_rail *r, struct ry_pd **pd_p)
{
	return r->ops->alloc_pd(r, pd_p);
}
static inline int ry__rail_dealloc_pd(struct ry_pd *pd)
{
	return pd ? pd->rail->ops->dealloc_pd(pd) : 0;
}
static inline int ry__rail_reg_mr(struct ry_pd *pd, void *addr, size_t len,
				  unsigned access, struct ry_mr **mr_p)
{
	return pd->rail->ops->reg_mr(pd, addr, len, access, mr_p);
}
static inline int ry__rail_dereg_mr(struct ry_mr *mr)
{
	return mr ? mr->pd->rail->ops->dereg_mr(mr) : 0;
}
static inline int ry__rail_create_qp(struct ry_pd *pd,
				     const struct ry_qp_init *init,
				     struct ry_qp **qp_p)
{
	return pd->rail->ops->create_qp(pd, init, qp_p);
}
static inline int ry__rail_modify_qp(struct ry_qp *qp, enum ry_qp_state s,
				     const struct ry_qp_attr *attr)
{
	return qp->pd->rail->ops->modify_qp(qp, s, attr);
}
static inline int ry__rail_destroy_qp(struct ry_qp *qp)
{
	return qp ? qp->pd->rail->ops->destroy_qp(qp) : 0;
}
static inline int ry__rail_post_send(struct ry_qp *qp,
				     const struct ry_send_wr *wr, unsigned n)
{
	return qp->pd->rail->ops->post_send(qp, wr, n);
}
static inline int ry__rail_post_recv(struct ry_rail *r,
				     const struct ry_recv_wr *wr, unsigned n)
{
	return r->ops->post_recv(r, wr, n);
}
static inline int ry__rail_poll_cq(struct ry_rail *r, struct ry_wc *wc, int n)
{
	return r->ops->poll_cq(r, wc, n);
}
static inline int ry__rail_create_cq(struct ry_rail *r, struct ry_cq **cq_p)
{
	return r->ops->create_cq(r, cq_p);
}
static inline int ry__rail_destroy_cq(struct ry_cq *cq)
{
	return cq ? cq->rail->ops->destroy_cq(cq) : 0;
}
static inline int ry__rail_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n)
{
	return cq->rail->ops->cq_poll(cq, wc, n);
}
static inline int ry__rail_cq_pending(struct ry_cq *cq)
{
	return cq->rail->ops->cq_pending(cq);
}
static inline int ry__rail_set_fault(struct ry_rail *r,
				     const struct ry_fault *f)
{
	return r->ops->set_fault(r, f);
}
static inline int ry__rail_set_link(struct ry_rail *r, enum ry_link_state s)
{
	return r->ops->set_link(r, s);
}
static inline int ry__rail_get_stats(struct ry_rail *r,
				     struct ry_rail_stats *st)
{
	return r->ops->get_stats(r, st);
}

const char *ry_wc_status_str(enum ry_wc_status s);
const char *ry_qp_state_str(enum ry_qp_state s);

#endif /* RAILYARD_RAIL_H */
