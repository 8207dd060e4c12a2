/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The soft rail's internal objects, shared by its files:
 *
 *   soft_rail.c    open/close, the ops table, CQ, SRQ, events, progress
 *   soft_net.c     the UDP socket, rx/tx batching (GRO/GSO), demultiplexing
 *   wire.h, wire.c the header: layout, encoder, the pure decoder
 *   crc32c.c       CRC32C for the header and payload
 *   soft_mac.c     data_mac: the per-connection keyed MAC on every packet
 *   soft_mr.c      the access flags a region may have; PDs, regions, the
 *                  key tables and every access check are ../sw_mr.c's
 *   soft_qp.c      QPs: QPN table, state machine, post_send, flush on ERR
 *   soft_req.c     requester: turns WRs into packets, go-back-N, timers
 *   soft_resp.c    responder: executes inbound requests, ACK/NAK/RNR
 *   soft_comp.c    completer: ACKs, NAKs and READ responses -> completions
 *   soft_cc.c      congestion control: the requester's window, RTT, RTO
 *   soft_fault.c   fault injection and the link switch
 *   soft_netlink.c the link watch of the real interface, and its deletion
 *
 * Shared with the tcp rail (rails/): sw_cq.[ch] the CQ ring, sw_mr.[ch]
 * PDs and regions, rail_link.[ch] the rtnetlink reader, rail_addr.[ch].
 *
 * Timers (checked in progress, one timerfd armed to the earliest):
 *   qp->comp.deadline    retransmit after an RTO of silence: ack_timeout,
 *                        or more when the RTT needs it (soft_cc.c); a
 *                        timeout also cuts qp->cc.cwnd to its minimum
 *   qp->comp.rnr_until   resume sending after an RNR NAK
 *   fault slot->release  a delayed or reordered packet goes out
 *
 * Progress touches only QPs with work (soft_rail.c): a QP is on the rail's
 * active list (qp->active) while it has something to do now -- a packet
 * arrived for it, a WR was posted, a state change, more to send than one
 * transmit batch held -- and in the rail's min-heap of deadlines
 * (qp->tnode, keyed by the earlier of its two QP timers)
 * while a timer runs.  An idle QP is on neither and costs nothing per
 * progress call.  Whatever changes a QP's state from outside progress
 * (receive, post_send, modify_qp) puts it on the active list, so the heap
 * key is recomputed whenever a timer may have moved.
 *
 * Nothing on the per-packet path allocates: the batches, the header pool,
 * the receive buffers and the fault slots are allocated at open/set_fault.
 *
 * MEMORY (issue 13: a server holds tens of thousands of QPs, most idle):
 * an idle QP costs its struct ry__soft_qp (under 1 KiB) and nothing else.
 *   send queue    sq_inline holds up to RY__SOFT_SQ_INLINE WRs (a
 *                 heartbeat, a probe); post_send grows a ring of its own
 *                 (power of two, up to max_send_wr rounded up)
 *                 when more are outstanding, and progress frees it again
 *                 when the QP is drained (no WR outstanding) and has
 *                 nothing to do (ry__soft_sq_trim).  A streaming QP keeps
 *                 its ring; one that drains between bursts pays one
 *                 malloc per burst.  It was max_send_wr x 64 B (32 KiB at
 *                 the manager's 258) per QP for its whole life.
 *   CQ            the rail's own (cq0) and those of create_cq, each
 *                 reserved per WR, not per QP: post_send counts the send
 *                 WRs of the CQ's QPs whose completion is not polled yet
 *                 (cq->sends; poll, destroy and RESET give them back) and
 *                 grows that CQ first if sends + 2 x the SRQ (every
 *                 receive completion that can be pending, twice: any of
 *                 them may land on this CQ) would not fit.  Every
 *                 completion pushed is one of those WRs or a receive, so
 *                 ry__soft_cq_push can never find it full.  A CQ grows
 *                 with the WRs outstanding at once, never with the number
 *                 of QPs (it was sum(max_send_wr): 10 to 20 KiB per QP).
 *                 Each CQ's floor is 2 x the SRQ's completions (320
 *                 KiB); the rail's own gets its ring with its first QP,
 *                 so an owner with CQs of its own (the manager) never
 *                 pays for it.
 *   READ state    resp.rd (RY__SOFT_MAX_RD x 32 B) is allocated at the
 *                 first READ request the QP answers, and kept until RESET
 *                 or destroy.
 */
#ifndef RAILYARD_SOFT_INT_H
#define RAILYARD_SOFT_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rails/rail.h"
#include "rails/sw_cq.h"
#include "rails/sw_mr.h"
#include "rails/soft/psn.h"
#include "rails/soft/wire.h"
#include "src/util/clock.h"
#include "src/util/compiler.h"
#include "src/util/heap.h"
#include "src/util/hidx.h"
#include "src/util/list.h"
#include "src/util/random.h"

#define RY__SOFT_MAX_QP_WR 4096
#define RY__SOFT_MAX_MSG (1u << 30)
#define RY__SOFT_SRQ_SIZE 4096
#define RY__SOFT_MAX_RD 16 /* READs outstanding per QP */
/* Retransmission back-off: a timeout in a row waits up to 2^this RTOs */
#define RY__SOFT_BACKOFF_SHIFT 6
/* WRs a QP holds in its own struct: a heartbeat, a probe and its path MTU
 * steps, or one operation at a time, without a ring of its own. */
#define RY__SOFT_SQ_INLINE 4
#define RY__SOFT_WINDOW_BYTES (4u << 20)
/* A READ is asked for in requests of this many bytes (at least 16
 * packets), each sent when the congestion window has room: one request for
 * a whole 1 MiB READ would come back as a line-rate burst no window
 * limits. */
#define RY__SOFT_READ_CHUNK (64u << 10)
#define RY__SOFT_WINDOW_MAX 4096 /* packets in flight per QP */
/* A PSN further than this from the expected one is not ours: dropped.
 * One WR may span at most half of it, so no WR ever looks out of window. */
#define RY__SOFT_PSN_WINDOW (1 << 22)
#define RY__SOFT_WR_MAX_PKTS (1u << 21)

/* Batching. */
#define RY__SOFT_RX_MSGS 16
#define RY__SOFT_RX_BUF 65536
#define RY__SOFT_TX_MSGS 64
#define RY__SOFT_TX_PKTS 1024
#define RY__SOFT_GSO_SEGS 64
#define RY__SOFT_GSO_BYTES 65000
#define RY__SOFT_EVENTS 64
#define RY__SOFT_FAULT_SLOTS 1024
/*
 * Reorder tolerance (soft_net.c): a packet that arrives fewer than
 * RY__SOFT_HOLD_SPAN PSNs ahead of the one expected is held, copied into
 * one of at most RY__SOFT_HOLD_MAX slots (RY__SOFT_HOLD_BYTES in all), for
 * up to RY__SOFT_HOLD_NS, instead of answered with a NAK at once.
 */
#define RY__SOFT_HOLD_SPAN 64
#define RY__SOFT_HOLD_MAX 64
#define RY__SOFT_HOLD_BYTES (256u << 10)
#define RY__SOFT_HOLD_NS 500000ull
/* The SRQ, event and READ rings index with ry__ring_slot (a mask). */
_Static_assert((RY__SOFT_SRQ_SIZE & (RY__SOFT_SRQ_SIZE - 1)) == 0,
	       "RY__SOFT_SRQ_SIZE must be a power of two");
_Static_assert((RY__SOFT_EVENTS & (RY__SOFT_EVENTS - 1)) == 0,
	       "RY__SOFT_EVENTS must be a power of two");
_Static_assert((RY__SOFT_MAX_RD & (RY__SOFT_MAX_RD - 1)) == 0,
	       "RY__SOFT_MAX_RD must be a power of two");

struct ry__soft_rail;

struct ry__soft_wqe {
	struct ry_send_wr wr;
	uint32_t first_psn;
	uint32_t npkts; /* PSNs it occupies */
	bool done;
};

struct ry__soft_rd { /* a READ the responder is answering */
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint32_t psn;	     /* PSN of the first response */
	uint32_t pkt, npkts; /* next response to send, how many */
};

struct ry__soft_cc {	    /* congestion control, soft_cc.c */
	uint32_t cwnd;	    /* packets in flight allowed, <= qp->window */
	uint32_t ssthresh;  /* slow start below this */
	uint32_t acc;	    /* packets acknowledged toward the next +1 */
	uint32_t acked_psn; /* comp.psn when last seen */
	uint32_t recover;   /* no loss cut until comp.psn reaches this */
	bool recovering;
	bool sampling;	     /* an RTT sample is running */
	uint32_t sample_psn; /* ... for this PSN, sent at sample_t */
	uint64_t sample_t;
	uint64_t rtt, srtt, rttvar, min_rtt; /* ns; 0 before a sample */
	uint64_t last_dec;		     /* time of the last cut */
};

struct ry__soft_mac { /* data_mac, soft_mac.c; all zero: off */
	bool on;
	uint8_t ktx[RY_QP_MAC_KEY], krx[RY_QP_MAC_KEY];
	/* the highest extended PSN sent or verified, per PSN space */
	uint64_t tx_req, tx_resp, rx_req, rx_resp;
	uint64_t tx_n; /* packets signed: the next one's nonce */
};

enum ry__soft_req_state { /* for logs: what the requester waits on */
			  RY__SOFT_REQ_IDLE = 0,
			  RY__SOFT_REQ_SENDING,
			  RY__SOFT_REQ_WAIT_ACK,
			  RY__SOFT_REQ_WAIT_RNR,
			  RY__SOFT_REQ_ERROR,
};

struct ry__soft_qp {
	struct ry_qp base;		 /* base.local: our qpn, psn, cookie */
	struct ry__sw_cq *cq;		 /* where its completions go */
	struct ry__hnode hnode;		 /* rail's qpns, keyed by QPN */
	struct ry__soft_qp *next, *prev; /* rail's list of QPs */
	struct ry__list active;		 /* rail's active list, or self */
	struct ry__heap_node tnode;	 /* rail's timers: the next QP timer */
	struct ry_qp_endpoint remote;
	struct sockaddr_in peer;
	uint32_t pmtu;	   /* payload bytes per packet */
	uint32_t window;   /* packets in flight */
	uint32_t rd_chunk; /* packets one READ request asks for, at most */
	unsigned access;
	uint64_t ack_timeout_ns, min_rnr_ns;
	uint32_t retry_cnt, rnr_retry, max_rd;
	unsigned rtr_again; /* -EAGAINs still owed (ry_fault.rtr_again) */
	struct ry__soft_mac mac;

	/* send queue: free-running counters, index & (sq_size - 1).  sq is
	 * sq_inline while at most RY__SOFT_SQ_INLINE WRs are outstanding;
	 * post_send grows it into a ring of its own, a power of two up to
	 * the one at or above sq_max, and progress gives that back once the
	 * QP is drained and idle (ry__soft_sq_trim): see MEMORY above. */
	struct ry__soft_wqe *sq;
	uint32_t sq_size, sq_max;
	uint32_t sq_head;  /* oldest WR not yet completed */
	uint32_t sq_tail;  /* next free slot */
	uint32_t post_psn; /* first PSN of the next posted WR */

	struct { /* requester: the next packet to send */
		enum ry__soft_req_state state;
		uint32_t idx, pkt, psn;
		uint32_t max_psn; /* one past the highest PSN ever sent */
		uint32_t rd_out;  /* READ requests sent, not answered */
		/* the last run stopped only because the transmit batch
		 * filled: run again at once, not on the next packet */
		bool more;
	} req;

	struct ry__soft_cc cc;

	struct {	      /* completer */
		uint32_t psn; /* oldest PSN not acknowledged */
		uint32_t retry_left, rnr_left;
		uint32_t backoff;     /* timeouts in a row (soft_req.c) */
		uint64_t deadline;    /* 0: timer off */
		uint64_t rnr_until;   /* 0: not waiting */
		uint32_t rewound_psn; /* last go-back-N target, once per gap */
		uint32_t ooo_psn;     /* last out-of-order READ response */
		bool rewound;
	} comp;

	struct {	      /* responder */
		uint32_t psn; /* expected PSN */
		uint32_t msn;
		uint32_t nak_hi; /* PSN of the last out-of-order packet */
		bool nak_sent;
		bool ack_pending;
		bool has_rwqe;
		struct ry_recv_wr rwqe;
		uint32_t roff;
		uint32_t rd_head, rd_tail;
		/* RY__SOFT_MAX_RD READs being answered; NULL until the
		 * first READ request (most QPs never get one) */
		struct ry__soft_rd *rd;
	} resp;

	struct ry__soft_wqe sq_inline[RY__SOFT_SQ_INLINE];
};

struct ry__soft_txmsg {
	struct sockaddr_in dst;
	uint32_t seg; /* GSO segment size; 0: single */
	uint32_t nseg, bytes;
	bool closed; /* a short segment ended it */
	bool pad_ok; /* that segment may be padded (ry__soft_may_pad) */
	unsigned iov0, niov;
};

struct ry__soft_fault_slot {
	uint64_t release;
	struct sockaddr_in dst;
	uint32_t len;
	bool used;
	uint8_t *buf;
};

/* A packet held ahead of a gap: the datagram as it came, checked again
 * when it is let go. */
struct ry__soft_held {
	struct sockaddr_in from;
	uint32_t qpn, psn, len;
	bool used, req; /* req: a request's PSN, else a READ response's */
	uint8_t *buf;	/* mtu bytes */
};

struct ry__soft_rail {
	struct ry_rail base;
	int sock, epfd, tfd, efd, nlfd;
	int wfd; /* the owner's epoll set holding our fds (watch), or -1 */
	int ifindex;
	struct sockaddr_in addr;
	uint32_t mtu;
	bool gso, gro;
	bool version_said; /* a packet of another wire version was logged */
	uint8_t
	    *mac_ad; /* data_mac's scratch (soft_mac.c), from its first QP */
	enum ry_link_state link; /* set_link */
	bool nl_up;		 /* the real interface, from rtnetlink */
	bool nl_gone;		 /* it was deleted (soft_netlink.c) */
	bool eff_up;		 /* both: what query reports */
	bool efd_set;
	/* inside progress(): what it completes the owner finds by asking
	 * (progress_quiet), so only completions made outside raise efd */
	bool in_progress;
	uint64_t timer_armed;
	uint64_t nl_checked; /* last netlink read */
	bool rx_idle; /* the last progress read no datagram, nor netlink */

	struct ry_rail_stats st;
	struct ry_fault fault;
	uint64_t rng;
	struct ry__soft_fault_slot *slots;
	uint8_t *slot_mem;
	uint32_t slot_size;
	unsigned slots_used;

	/* packets held ahead of a gap (soft_net.c) */
	struct ry__soft_held *held;
	uint8_t *held_mem;
	unsigned nheld, nheld_max;
	uint64_t held_until; /* when the oldest is let go */
	uint64_t hold_ns;

	struct ry__sw_mem mem;	 /* PDs and regions */
	struct ry__hidx qpns;	 /* QPs by number; grows with them */
	struct ry__soft_qp *qps; /* all QPs */
	struct ry__list active;	 /* QPs with work now (qp->active) */
	struct ry__heap timers;	 /* QPs with a timer running (qp->tnode) */

	struct ry__sw_cq cq0; /* the rail's own CQ */
	struct ry__list cqs;  /* the others (create_cq) */
	unsigned cqs_busy;    /* CQs holding a completion: the fd's say */
	/* the one SRQ */
	struct ry_recv_wr srq[RY__SOFT_SRQ_SIZE];
	uint32_t srq_head, srq_tail;

	struct ry_rail_event ev[RY__SOFT_EVENTS];
	uint32_t ev_head, ev_tail;

	/* tx batch */
	struct mmsghdr txm[RY__SOFT_TX_MSGS];
	struct ry__soft_txmsg txi[RY__SOFT_TX_MSGS];
	char txc[RY__SOFT_TX_MSGS][64];
	struct iovec txv[2 * RY__SOFT_TX_PKTS];
	struct ry__soft_txhdr { /* a header and the MAC sent right after */
		struct ry__soft_hdr h;
		uint8_t mac[RY__SOFT_MAC_LEN];
	} txh[RY__SOFT_TX_PKTS];
	unsigned ntxm, ntxv, ntxh;

	/* rx batch */
	struct mmsghdr rxm[RY__SOFT_RX_MSGS];
	struct iovec rxv[RY__SOFT_RX_MSGS];
	struct sockaddr_in rxa[RY__SOFT_RX_MSGS];
	char rxc[RY__SOFT_RX_MSGS][64];
	uint8_t *rxbuf;

	uint64_t now; /* CLOCK_MONOTONIC ns, per progress */
};

static inline struct ry__soft_rail *to_srail(struct ry_rail *r)
{
	return container_of(r, struct ry__soft_rail, base);
}
static inline struct ry__soft_qp *to_sqp(struct ry_qp *q)
{
	return container_of(q, struct ry__soft_qp, base);
}
static inline struct ry__soft_rail *qp_rail(struct ry__soft_qp *qp)
{
	return to_srail(qp->base.pd->rail);
}

/* soft_rail.c */
/* Give cq its ring (room for twice the SRQ) if it has none yet: before a
 * QP is created on it; 0 or -ENOMEM. */
int ry__soft_cq_ready(struct ry__sw_cq *cq);
/* A completion of qp, to its CQ. */
void ry__soft_cq_push(struct ry__soft_qp *qp, const struct ry_wc *wc);
/* Between progress calls: the owner must run progress (or poll): the fd
 * becomes readable. */
void ry__soft_fd_raise(struct ry__soft_rail *r);
/* n send WRs are being posted to qp: room on its CQ for their completions
 * (grown if needed), given back as poll hands them out; 0 or -ENOMEM. */
int ry__soft_cq_take(struct ry__soft_qp *qp, uint32_t n);
int ry__soft_create_cq(struct ry_rail *rail, struct ry_cq **cq_p);
int ry__soft_destroy_cq(struct ry_cq *cq);
int ry__soft_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n);
int ry__soft_cq_pending(struct ry_cq *cq);
void ry__soft_cq_cleanup(struct ry__soft_rail *r);
void ry__soft_event(struct ry__soft_rail *r, enum ry_rail_event_type type,
		    uint32_t qpn);
void ry__soft_link_update(struct ry__soft_rail *r);
/* qp has work for the next progress call: onto the active list. */
void ry__soft_qp_kick(struct ry__soft_qp *qp);
/* Off the active list and the timer heap (destroy). */
void ry__soft_qp_unsched(struct ry__soft_qp *qp);

/* soft_net.c */
int ry__soft_net_init(struct ry__soft_rail *r);
int ry__soft_net_open(struct ry__soft_rail *r,
		      const struct ry_rail_config *cfg);
/* Closes the socket, frees the receive buffers; safe after a failed open. */
void ry__soft_net_close(struct ry__soft_rail *r);
/* Read and dispatch what waits on the socket: datagrams read, or -errno. */
int ry__soft_net_rx(struct ry__soft_rail *r);
/* Queue one packet of qp's to its peer; payload is referenced until the
 * batch is flushed. */
void ry__soft_tx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p,
		 const void *payload);
void ry__soft_tx_raw(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		     const void *pkt, uint32_t len);
void ry__soft_tx_flush(struct ry__soft_rail *r);
bool ry__soft_tx_full(const struct ry__soft_rail *r);
void ry__soft_rx_packet(struct ry__soft_rail *r, const uint8_t *buf,
			uint32_t len, const struct sockaddr_in *from);
/* Reorder tolerance: the slots (after the rail's MTU is known; 0 or
 * -ENOMEM), and letting go of what was held too long (progress). */
int ry__soft_hold_init(struct ry__soft_rail *r);
void ry__soft_hold_expire(struct ry__soft_rail *r);

/* soft_mr.c */
int ry__soft_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		    unsigned access, struct ry_mr **mr_p);

/* soft_qp.c */
int ry__soft_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
		       struct ry_qp **qp_p);
int ry__soft_modify_qp(struct ry_qp *qp, enum ry_qp_state state,
		       const struct ry_qp_attr *attr);
int ry__soft_destroy_qp(struct ry_qp *qp);
int ry__soft_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
		       unsigned n);
struct ry__soft_qp *ry__soft_qp_lookup(struct ry__soft_rail *r, uint32_t qpn);
/* Move to ERR: the head WR completes with status, the rest flushed. */
void ry__soft_qp_error(struct ry__soft_qp *qp, enum ry_wc_status head_status);
/* Same, with the WR at sq counter idx failing and those before it flushed. */
void ry__soft_qp_error_at(struct ry__soft_qp *qp, uint32_t idx,
			  enum ry_wc_status status);
void ry__soft_wqe_complete(struct ry__soft_qp *qp, struct ry__soft_wqe *w,
			   enum ry_wc_status status);
void ry__soft_qp_cleanup(struct ry__soft_rail *r);
/* A drained, idle QP gives its own send ring back (MEMORY above). */
void ry__soft_sq_trim(struct ry__soft_qp *qp);
/* The READ responder's ring, allocated on first use; false: no memory. */
bool ry__soft_rd_alloc(struct ry__soft_qp *qp);

/* soft_req.c */
void ry__soft_req_run(struct ry__soft_qp *qp);
void ry__soft_req_rewind(struct ry__soft_qp *qp, uint32_t psn);
void ry__soft_req_timers(struct ry__soft_qp *qp);
uint64_t ry__soft_req_next_timer(struct ry__soft_qp *qp);
extern const char *const ry__soft_req_state_names[];

/* soft_req.c: READ requests outstanding for responses [lo, hi) of w */
uint32_t ry__soft_rd_chunks(const struct ry__soft_qp *qp,
			    const struct ry__soft_wqe *w, uint32_t lo,
			    uint32_t hi);

/* soft_cc.c */
void ry__soft_cc_init(struct ry__soft_qp *qp);
/* Packets that may be in flight now. */
uint32_t ry__soft_cc_window(const struct ry__soft_qp *qp);
uint64_t ry__soft_cc_rto(const struct ry__soft_qp *qp);
/* The path holds a standing queue: the smoothed RTT is more than
 * RY__SOFT_CC_QDELAY_NS / 4 over the base RTT, so the link, not the CPU,
 * is what limits (the transmit path pads nothing then: soft_net.c). */
bool ry__soft_cc_queued(const struct ry__soft_qp *qp);
/* A PSN sent for the first time (retransmissions are not reported). */
void ry__soft_cc_sent(struct ry__soft_qp *qp, uint32_t psn);
/* The requester went back: samples in flight are void (Karn). */
void ry__soft_cc_rewound(struct ry__soft_qp *qp);
/* comp.psn moved forward. */
void ry__soft_cc_acked(struct ry__soft_qp *qp);
/* A sequence gap reported: a packet was lost. */
void ry__soft_cc_loss(struct ry__soft_qp *qp);
void ry__soft_cc_timeout(struct ry__soft_qp *qp);

/* soft_resp.c */
void ry__soft_resp_rx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p);
void ry__soft_resp_run(struct ry__soft_qp *qp);

/* soft_comp.c */
void ry__soft_comp_rx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p);
/* The PSN of the READ response the completer takes next, when the oldest
 * WR is a READ and no go-back-N is under way; false otherwise. */
bool ry__soft_comp_next_resp(struct ry__soft_qp *qp, uint32_t *psn);

/* soft_mac.c */
/* RTR: take attr's MAC keys (or none) and start the PSN spaces; 0 or
 * -errno. */
int ry__soft_mac_rtr(struct ry__soft_qp *qp, const struct ry_qp_attr *attr);
/* RESET and destroy: the keys are wiped. */
void ry__soft_mac_wipe(struct ry__soft_qp *qp);
static inline uint32_t ry__soft_mac_len(const struct ry__soft_qp *qp)
{
	return qp->mac.on ? RY__SOFT_MAC_LEN : 0;
}
/* The MAC of the encoded header h (flag MAC set) and its payload. */
void ry__soft_mac_sign(struct ry__soft_qp *qp, const struct ry__soft_hdr *h,
		       const struct ry__soft_pkt *p, const void *payload,
		       uint8_t mac[RY__SOFT_MAC_LEN]);
/* Whether the packet buf, parsed into p, carries the MAC qp expects (none
 * when qp has data_mac off). */
bool ry__soft_mac_ok(struct ry__soft_qp *qp, const uint8_t *buf,
		     const struct ry__soft_pkt *p);

/* soft_fault.c */
int ry__soft_set_fault(struct ry_rail *rail, const struct ry_fault *f);
int ry__soft_set_link(struct ry_rail *rail, enum ry_link_state state);
/* Returns true when the packet was consumed (dropped or held back). */
bool ry__soft_fault_tx(struct ry__soft_rail *r, const struct sockaddr_in *dst,
		       struct ry__soft_hdr *h, uint32_t hlen,
		       const void *payload, uint32_t paylen, bool *dup);
void ry__soft_fault_run(struct ry__soft_rail *r);
uint64_t ry__soft_fault_next_timer(struct ry__soft_rail *r);
void ry__soft_fault_cleanup(struct ry__soft_rail *r);

/* soft_netlink.c */
int ry__soft_nl_open(struct ry__soft_rail *r, const char *ifname);
void ry__soft_nl_run(struct ry__soft_rail *r);

#endif
