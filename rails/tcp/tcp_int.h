/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp rail's internal objects, shared by its files:
 *
 *   tcp_rail.c   open/close, the ops table, PDs and regions, CQs, the SRQ,
 *                events, progress (the epoll loop)
 *   tcp_conn.c   sockets: the listener, HELLO matching, connect, the
 *                transmit queue and sendmsg, the receive state machine
 *   tcp_qp.c     QPs: state machine, post_send, requester and responder
 *                decisions, completions, flush on ERR
 *   tcp_link.c   rtnetlink watch of the rail's interface
 *   tcp_wire.[ch] the header: layout, one accessor per field, decoder
 *
 * Shared with the soft rail (rails/): sw_cq.[ch] the CQ ring, sw_mr.[ch]
 * PDs, regions and their checks, rail_link.[ch] the rtnetlink reader,
 * rail_addr.[ch]; the PSN arithmetic is soft/psn.h's.
 *
 * A QP owns at most one TCP connection (qp->c), made when it reaches RTR
 * and closed abortively (SO_LINGER 0) when it leaves RTR/RTS: a socket is
 * never reused, so nothing of an older connection can land after a
 * failover.  Of the two QPs the one whose (address, port, QPN) is the
 * smaller connects to the other rail's listening socket and sends HELLO;
 * the listener parks what it accepts (rail->pend) until HELLO names a QP
 * of its own in RTR/RTS expecting exactly that peer (QPN and cookie both
 * ways), or until RY__TCP_PEND_NS passes.
 *
 * Nothing lands before its header is checked: the receive side reads the
 * 48 header bytes into the header buffer (alone, or behind the end of the
 * payload before them), checks them against the QP (cookie, QPN, PSN)
 * and the region table (key, bounds, access), and only then receives the
 * payload straight into the region (recv into the registered memory).  A
 * refused payload is read into the rail's scratch buffer and dropped.
 * Each resumption of a payload looks its region up again, so a region
 * deregistered in the middle of a message is never written after.
 *
 * Timers (one timerfd armed to the earliest): qp->rnr_until (resend after
 * an RNR NAK), qp->ack_since (no answer to requests sent for
 * ack_timeout x (retry_cnt + 1): RETRY_EXCEEDED, as an RC QP whose peer
 * went silent; a cut cable behind a live TCP window shows this way),
 * qp->conn_by (a QP in RTS whose connection is not up by then fails as after
 * its retries: user_timeout_ms), the parked sockets' deadlines, and a QP whose
 * connection closes after its last NAK went out (qp->c.closing, checked every
 * RY__TCP_LINGER_TICK_NS until RY__TCP_LINGER_NS).
 */
#ifndef RAILYARD_TCP_INT_H
#define RAILYARD_TCP_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "rails/rail.h"
#include "rails/soft/psn.h" /* the 24-bit PSN arithmetic */
#include "rails/sw_cq.h"
#include "rails/sw_mr.h"
#include "rails/tcp/tcp.h"
#include "rails/tcp/tcp_wire.h"
#include "src/util/compiler.h"
#include "src/util/hidx.h"
#include "src/util/list.h"

#define RY__TCP_MAX_QP_WR 4096
#define RY__TCP_SRQ_SIZE 4096
#define RY__TCP_MAX_RD 16 /* READs outstanding per QP */
/* The transmit queue: requests take at most RY__TCP_TXQ_REQ entries, so
 * responses (READ responses, at most RY__TCP_MAX_RD, and the ACKs between
 * them, which coalesce) always find room and a responder never has to
 * stop reading for want of it. */
#define RY__TCP_TXQ 64
#define RY__TCP_TXQ_REQ 24
#define RY__TCP_IOV 64
/* Bytes one connection may move per progress call before the next gets
 * its turn. */
#define RY__TCP_BUDGET (4u << 20)
#define RY__TCP_PEND_MAX 256
#define RY__TCP_PEND_NS (10ull * 1000000000)
#define RY__TCP_LINGER_NS (1000ull * 1000000)
#define RY__TCP_LINGER_TICK_NS (5ull * 1000000)
#define RY__TCP_SCRATCH (64u << 10)
/* a payload with at least this much still to come sleeps till it is all
 * there (SO_RCVLOWAT) instead of waking for every segment: tcp_conn.c */
#define RY__TCP_LOWAT_MIN (16u << 10)
#define RY__TCP_EVENTS 64
#define RY__TCP_STALL_NS (10ull * 1000000)
/* A connect not done by then starts over with a new socket: a SYN lost
 * to a path that has just come back is sent again now, not after TCP's
 * own 1, 3, 7 s. */
#define RY__TCP_SYN_NS (200ull * 1000000)

_Static_assert((RY__TCP_TXQ & (RY__TCP_TXQ - 1)) == 0, "TXQ power of two");
_Static_assert((RY__TCP_SRQ_SIZE & (RY__TCP_SRQ_SIZE - 1)) == 0,
	       "SRQ power of two");
_Static_assert((RY__TCP_EVENTS & (RY__TCP_EVENTS - 1)) == 0,
	       "events power of two");
_Static_assert(RY__TCP_TXQ - RY__TCP_TXQ_REQ >= 2 * RY__TCP_MAX_RD + 4,
	       "responses need room for every READ and an ACK between each");

struct ry__tcp_rail;

/* What an epoll event names: data.ptr points at one of these. */
enum ry__tcp_ep_kind {
	RY__TCP_EP_LISTEN = 1,
	RY__TCP_EP_TIMER,
	RY__TCP_EP_EVENT,
	RY__TCP_EP_PEND,
	RY__TCP_EP_CONN,
	RY__TCP_EP_LINK,
};

struct ry__tcp_ep {
	enum ry__tcp_ep_kind kind;
	uint32_t events; /* what ry__tcp_epoll last asked for */
};

struct ry__tcp_wqe {
	struct ry_send_wr wr;
	uint32_t psn;
	bool sent;	/* handed to the transmit queue */
	bool bad_local; /* its lkey failed: LOC_PROT when it is the head */
};

enum ry__tcp_txkind {
	RY__TCP_TX_HELLO = 0,
	RY__TCP_TX_REQ,	 /* a WR's request: sq index in idx */
	RY__TCP_TX_ACK,	 /* coalesces while not started */
	RY__TCP_TX_NAK,	 /* an ACK with a syndrome */
	RY__TCP_TX_RESP, /* a READ response */
};

/* One message waiting to go out: its header, then len bytes of a region
 * found by key (looked up again before every sendmsg). */
struct ry__tcp_txe {
	uint8_t hdr[RY__TCP_HDR_LEN];
	uint8_t kind; /* enum ry__tcp_txkind */
	bool rkey;    /* key is an rkey (READ response), else an lkey */
	bool cancel;  /* a request rewound before it started: skipped */
	uint32_t key;
	uint64_t va;
	uint32_t len;
	uint32_t idx;
};

enum ry__tcp_rx_state {
	RY__TCP_RX_HDR = 0,
	RY__TCP_RX_PAYLOAD, /* into a region */
	RY__TCP_RX_DRAIN,   /* into scratch: refused */
};

/* What to do once a payload is in (or drained). */
enum ry__tcp_rx_done {
	RY__TCP_DONE_NONE = 0,
	RY__TCP_DONE_WRITE,	/* ACK; with a receive: WRITE_IMM */
	RY__TCP_DONE_SEND,	/* ACK, receive completion */
	RY__TCP_DONE_READ_RESP, /* complete the head READ */
	RY__TCP_DONE_FAIL,	/* drained: the QP fails with rx.fail */
};

enum ry__tcp_conn_state {
	RY__TCP_C_NONE = 0, /* no socket (RESET/INIT, or lost) */
	RY__TCP_C_CONNECTING,
	RY__TCP_C_WAIT, /* passive: waiting for the peer's HELLO */
	RY__TCP_C_UP,
};

struct ry__tcp_conn {
	struct ry__tcp_ep ep;
	int fd;
	enum ry__tcp_conn_state state;
	bool active;   /* we connect; else we are connected to */
	bool want_out; /* EPOLLOUT armed: the socket was full */
	bool closing;  /* ERR after a NAK: close once it went out */
	bool in_off;   /* EPOLLIN dropped (closing) */
	uint64_t close_by;
	uint64_t syn_by; /* CONNECTING: a new socket then (RY__TCP_SYN_NS) */
	/* transmit queue: free-running counters, & (RY__TCP_TXQ - 1) */
	struct ry__tcp_txe *txq;
	uint32_t tx_head, tx_tail, tx_off;
	unsigned tx_reqs; /* request entries queued */
	struct {
		enum ry__tcp_rx_state state;
		uint8_t hdr[RY__TCP_HDR_LEN];
		uint32_t got;
		struct ry__tcp_msg m;
		enum ry__tcp_rx_done done;
		enum ry_wc_status fail;
		/* PAYLOAD: the region it goes to, found by key each time */
		uint32_t key;
		bool rkey;
		unsigned access;
		uint64_t va;
		uint32_t left, off;
		/* the socket's SO_RCVLOWAT (a new socket's: 1) */
		uint32_t lowat;
		bool has_rwqe; /* SEND / WRITE_IMM took a receive */
		struct ry_recv_wr rwqe;
	} rx;
};

enum ry__tcp_qp_flags {
	RY__TCP_QF_ACTIVE = 1u << 0, /* on rail->active */
	RY__TCP_QF_RNR = 1u << 1,    /* on rail->timed */
};

struct ry__tcp_qp {
	struct ry_qp base;
	struct ry__sw_cq *cq;
	struct ry__hnode hnode;
	struct ry__list link;	/* rail->qps */
	struct ry__list active; /* rail->active: transmit work */
	struct ry__list timed;	/* rail->timed: rnr_until or closing */
	unsigned flags;
	struct ry_qp_endpoint remote;
	struct sockaddr_in peer;
	unsigned access;
	uint64_t min_rnr_ns;
	uint32_t rnr_retry, rnr_left, max_rd, user_timeout_ms;
	/* the connection died while no WR was outstanding: the next WR
	 * fails as an RC QP's would after its retries */
	bool lost;

	struct ry__tcp_wqe *sq; /* sq_size, a power of two */
	uint32_t sq_size, sq_max;
	uint32_t sq_head; /* oldest WR not completed */
	uint32_t sq_next; /* next WR to queue for transmission */
	uint32_t sq_tail; /* next free slot */
	uint32_t post_psn;
	uint32_t rd_out; /* READs sent, not answered */
	uint64_t rnr_until;
	/* RTS without a connection yet: given up (RETRY_EXCEEDED) then */
	uint64_t conn_by;
	/* the answer timer: running while requests are out unanswered, in
	 * the rail's listening clock (rail->lclock), restarted by every
	 * answer; past ack_budget_ns the peer is taken for gone */
	uint64_t ack_since, ack_budget_ns;

	uint32_t exp_psn;  /* responder: the PSN it takes next */
	bool rnr_dropping; /* after an RNR NAK: drop until exp_psn */

	struct ry__tcp_conn c;
};

struct ry__tcp_pend { /* an accepted socket waiting for its HELLO */
	struct ry__tcp_ep ep;
	struct ry__list link;
	int fd;
	struct sockaddr_in from;
	uint64_t deadline;
	uint8_t hdr[RY__TCP_HDR_LEN];
	uint32_t got;
};

struct ry__tcp_rail {
	struct ry_rail base;
	int lfd, epfd, tfd, efd, nlfd;
	int wfd;    /* the owner's epoll set holding our fds (watch), or -1 */
	void *wtag; /* their data.ptr there */
	struct ry__tcp_ep lep, tep, eep, nep;
	int ifindex;
	bool nl_up;  /* the interface, from rtnetlink (tcp_link.c) */
	bool eff_up; /* set_link and the interface: what query says */
	struct sockaddr_in addr;
	char ifname[RY_NAME_MAX];
	uint32_t mtu;
	enum ry_link_state link; /* set_link: an unplugged cable when DOWN */
	bool cut; /* set_fault drop_all: a cable cut, no link event */
	bool efd_set;
	bool version_said; /* a HELLO of another wire version was logged */
	/* in progress(): completions and events need no eventfd (the caller
	 * asks pending() after it) */
	bool in_progress;
	uint64_t timer_armed;
	uint64_t now;
	/* time this rail could listen: progress gaps count at most
	 * RY__TCP_STALL_NS, so a starved node does not judge its peers */
	uint64_t lclock, last_progress;

	struct ry_rail_stats st;
	struct ry__sw_mem mem; /* PDs and regions */
	struct ry__hidx qpns;
	struct ry__list qps, active, timed, pend;
	unsigned n_pend;

	struct ry__sw_cq cq0;
	struct ry__list cqs;
	unsigned cqs_busy;
	struct ry_recv_wr srq[RY__TCP_SRQ_SIZE];
	uint32_t srq_head, srq_tail;
	struct ry_rail_event ev[RY__TCP_EVENTS];
	uint32_t ev_head, ev_tail;

	uint8_t *scratch;
	struct iovec iov[RY__TCP_IOV];
};

/* No socket I/O: link down or cable cut (set_link, set_fault). */
static inline bool ry__tcp_io_off(const struct ry__tcp_rail *r)
{
	return r->link != RY_LINK_UP || r->cut;
}

static inline struct ry__tcp_rail *to_trail(struct ry_rail *r)
{
	return container_of(r, struct ry__tcp_rail, base);
}
static inline struct ry__tcp_qp *to_tqp(struct ry_qp *q)
{
	return container_of(q, struct ry__tcp_qp, base);
}
static inline struct ry__tcp_rail *tqp_rail(struct ry__tcp_qp *qp)
{
	return to_trail(qp->base.pd->rail);
}

/* tcp_rail.c */
/* The fd readable: completions, events or transmit work wait that no
 * progress call has reported. */
void ry__tcp_efd_raise(struct ry__tcp_rail *r);
void ry__tcp_cq_push(struct ry__tcp_qp *qp, const struct ry_wc *wc);
int ry__tcp_cq_take(struct ry__sw_cq *cq, uint32_t n);
void ry__tcp_event(struct ry__tcp_rail *r, enum ry_rail_event_type type,
		   uint32_t qpn);
/* The SRQ's next receive, false when it is empty. */
bool ry__tcp_srq_pop(struct ry__tcp_rail *r, struct ry_recv_wr *wr);
void ry__tcp_kick(struct ry__tcp_qp *qp);
/* Run timers soon: qp is on rail->timed. */
void ry__tcp_timed(struct ry__tcp_qp *qp);
int ry__tcp_epoll(struct ry__tcp_rail *r, int op, int fd, uint32_t events,
		  struct ry__tcp_ep *ep);

/* tcp_link.c */
/* Watch the rail's interface (none: no watch); 0 or -errno. */
int ry__tcp_link_open(struct ry__tcp_rail *r);
void ry__tcp_link_run(struct ry__tcp_rail *r);
/* set_link or the interface changed: an event when the sum did. */
void ry__tcp_link_update(struct ry__tcp_rail *r);

/* tcp_conn.c */
int ry__tcp_listen(struct ry__tcp_rail *r);
void ry__tcp_accept(struct ry__tcp_rail *r);
void ry__tcp_pend_rx(struct ry__tcp_rail *r, struct ry__tcp_pend *p);
void ry__tcp_pend_close(struct ry__tcp_rail *r, struct ry__tcp_pend *p);
/* RTR: connect (active side) or take a parked HELLO (passive). */
int ry__tcp_conn_start(struct ry__tcp_qp *qp);
/* Close abortively, drop the queue; the QP keeps its state. */
void ry__tcp_conn_abort(struct ry__tcp_qp *qp);
void ry__tcp_conn_event(struct ry__tcp_qp *qp, uint32_t events);
/* What epoll watches on qp's socket now (link, closing, a full socket). */
void ry__tcp_conn_interest(struct ry__tcp_qp *qp);
/* Queue what the QP has to send and send what the socket takes. */
void ry__tcp_conn_tx(struct ry__tcp_qp *qp);
/* The next free transmit entry (the caller fills and commits it), NULL
 * when full. */
struct ry__tcp_txe *ry__tcp_txq_slot(struct ry__tcp_qp *qp);
void ry__tcp_txq_commit(struct ry__tcp_qp *qp);
void ry__tcp_txq_ack(struct ry__tcp_qp *qp, uint32_t psn);
void ry__tcp_txq_nak(struct ry__tcp_qp *qp, uint32_t psn, uint8_t syn);
/* Rewound requests not yet started: skipped. */
void ry__tcp_txq_cancel_reqs(struct ry__tcp_qp *qp);
/* A closing connection: close it when its last bytes are out. */
void ry__tcp_conn_linger(struct ry__tcp_qp *qp);

/* tcp_qp.c */
int ry__tcp_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
		      struct ry_qp **qp_p);
int ry__tcp_modify_qp(struct ry_qp *qp, enum ry_qp_state state,
		      const struct ry_qp_attr *attr);
int ry__tcp_destroy_qp(struct ry_qp *qp);
int ry__tcp_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
		      unsigned n);
struct ry__tcp_qp *ry__tcp_qp_lookup(struct ry__tcp_rail *r, uint32_t qpn);
/* Move to ERR: the head WR completes with head_status (FLUSHED: all
 * flushed), the rest flushed, the connection closed abortively, or,
 * with linger, once what is queued (a NAK) went out. */
void ry__tcp_qp_error(struct ry__tcp_qp *qp, enum ry_wc_status head_status,
		      bool linger);
/* The connection is gone (EOF, reset, timeout, refused). */
void ry__tcp_qp_conn_lost(struct ry__tcp_qp *qp, int err);
/* Fill the transmit queue with WRs' requests. */
void ry__tcp_req_fill(struct ry__tcp_qp *qp);
/* A request entry went out completely. */
void ry__tcp_req_sent(struct ry__tcp_qp *qp, uint32_t idx);
/* Receive side: a header arrived (decoded, checked against the QP);
 * sets qp->c.rx up for its payload.  false: the QP failed. */
bool ry__tcp_rx_header(struct ry__tcp_qp *qp);
/* The payload of the current message is in (or drained). */
void ry__tcp_rx_done(struct ry__tcp_qp *qp);
void ry__tcp_qp_timers(struct ry__tcp_qp *qp);
/* The QP's earliest deadline, 0 for none. */
uint64_t ry__tcp_qp_next_timer(const struct ry__tcp_qp *qp);
void ry__tcp_qp_cleanup(struct ry__tcp_rail *r);

#endif
