/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * railyard: fault-tolerant multi-rail RDMA for storage servers.
 *
 * What a storage server includes.  The model:
 *
 *   manager   one per process: owns the rails, the peers, the control
 *             channel, and the progress engine.
 *   region    a registered buffer (struct ry_region, from ry_mr_reg):
 *             registered on every rail at once, one rkey per rail.
 *             ry_mr_pack() turns it into a descriptor of at most RY_DESC_MAX
 *             bytes that the application sends to a peer inside its own
 *             RPC; the peer uses it as the remote side of a write or read.
 *   peer      another node, by name or control address.  Connections to it
 *             (one RC QP per shared rail) are made lazily on first use.
 *   op        one write/read/send of any length up to max_op_size; it is
 *             striped in fragments across the peer's rails, replayed on
 *             surviving rails if one fails, and completes exactly once.
 *
 * Ownership: the manager owns everything it hands out.  Regions are released
 * by ry_mr_dereg() or, when still registered, by ry_manager_destroy().
 * Peers live until the manager is destroyed.  destroy(NULL) is a no-op.
 * Destroying the manager completes every operation still in flight with
 * RY_ECANCELED (callbacks run; completions meant for ry_poll_completions()
 * are dropped) and releases everything it owns.  A region must not be
 * deregistered while an operation that uses it is in flight (-EBUSY).
 * Buffers passed to ry_send() are copied before it returns; the memory of a
 * region given to ry_write()/ry_read() must stay valid until completion.
 *
 * Progress: nothing moves unless someone calls ry_progress() (or runs the
 * progress thread) on each side: a node that is only the target of writes
 * and reads must progress too, since its rail protocol, heartbeats,
 * reconnects and fence acknowledgements run there.
 *
 * Threading: every function is thread-safe.  Callbacks (completion,
 * receive, event) run in a thread that calls ry_progress() (or one of the
 * internal progress threads) with no manager lock held, so they may post
 * new operations; they must not call ry_manager_destroy() or
 * ry_progress_thread_stop().  Callbacks never run concurrently with each
 * other, and run in the order their events happened, whichever thread
 * runs them.  A post sends at once: it does not wait for a progress call.
 *
 * Contexts (config contexts, default 1): with more than one, the peers
 * are spread over that many progress contexts, in the order their
 * records are made (the n-th to context n mod contexts), each with its
 * own lock and completion queues, so threads posting to peers of
 * different contexts do not wait for each other.  The promise above then
 * holds per context: completion callbacks of one context never run
 * concurrently with each other, and run in order; those of different
 * contexts may run at the same time, in different threads.  Receive and
 * event callbacks never run concurrently with each other, but may run
 * beside completion callbacks.
 *
 * Errors: functions return 0 (or a count) or a negative errno; output
 * arguments are set only on success.  The errnos each function returns are
 * listed with it; in addition any call may return -ENOMEM.  Operation
 * results arrive as enum ry_status with a human-readable reason.
 */
#ifndef RAILYARD_RAILYARD_H
#define RAILYARD_RAILYARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/api.h>
#include <railyard/config.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RY_VERSION_MAJOR 0
#define RY_VERSION_MINOR 1
#define RY_DESC_MAX 256 /* bytes of a packed memory descriptor */
#define RY_MSG_MAX 4096 /* bytes of one two-sided message */

struct ry_manager;
struct ry_region;
struct ry_peer;

/* Result of an operation, passed to its completion. */
enum ry_status {
	RY_OK = 0,
	RY_ETIMEDOUT,	   /* no path to the peer within op_timeout_ms */
	RY_ECANCELED,	   /* manager destroyed with the op in flight */
	RY_EREMOTE_ACCESS, /* the peer rejected the rkey, bounds or access */
	RY_ELOCAL,	   /* bad local region or length */
	RY_EPEER,	   /* the peer is unknown or refused us */
	/*
	 * The peer restarted: the memory the operation was aimed at died
	 * with the incarnation its descriptor names (RY_EV_PEER_RESTARTED).
	 * Fetch a new descriptor from the new incarnation.
	 */
	RY_ESTALE,
	RY_ESTATUS__MAX
};

/* Text for a status; never NULL. */
RY_API const char *ry_status_str(enum ry_status st);

/* Version string, "major.minor.patch". */
RY_API const char *ry_version(void);

/* ---- logging ---- */

typedef void (*ry_log_fn)(enum ry_log_level level, const char *component,
			  const char *message, void *arg);
/* From any thread, at any time (our threads read it atomically). */
RY_API void ry_log_set_level(enum ry_log_level level);
/* Replace the stderr sink; NULL restores it.  Called with a lock held. */
RY_API void ry_log_set_sink(ry_log_fn fn, void *arg);
RY_API void ry_log_use_syslog(bool on);

/* ---- manager ---- */

/*
 * Create a manager from a config (copied; the caller keeps ownership of
 * cfg): one from ry_config_load(), or a struct set up by
 * ry_config_init_defaults() (any other is refused: config.h).  Opens
 * every rail, registers receive buffers and starts the control channel
 * listener on cfg->control ("host:port"; port 0 picks one, see
 * ry_manager_control_addr; empty means "127.0.0.1:0").  Zero sizes and
 * failover times take the defaults of ry_config_init_defaults() (heartbeat
 * 10 ms, timeout 100 ms, ack timeout 20 ms, retry 5, reconnect
 * 100..5000 ms, op timeout 10 s); an empty node gets a random name.
 * failover.fence is taken as given (false: no fencing).  The result must
 * then pass ry_config_validate(); its problems are logged at error level.
 *
 * A rail whose device, port, interface, address or GID is not there
 * (its open fails with -ENODEV, -ENXIO, -ENETDOWN, -EADDRNOTAVAIL,
 * -ENOENT or -EAGAIN) does not stop it: the manager starts without it,
 * logs one warning naming the rail and the cause, lists it with
 * ry_rail_missing(), tries again every RY_RAIL_RETRY_MS and sends
 * RY_EV_RAIL_BACK once it is open (also with no rail open at all).
 * cfg->require_all_rails makes such a rail an error instead.
 *
 * Errors: -EINVAL (a struct of another layout, or a config that does not
 * validate: no rails, fragment_size
 * not a power of two in 512..1 MiB, two rails with one name, a value out
 * of range such as a retry count above 6), -EADDRINUSE/-EADDRNOTAVAIL
 * (control address), a rail's open error (any with require_all_rails;
 * else the others: -ENOSYS: provider not implemented, -EPROTONOSUPPORT:
 * provider not built, -EINVAL: a bad address), -ENOMEM.
 */
RY_API int ry_manager_create(const struct ry_config *cfg,
			     struct ry_manager **mgr_p);

/* How often a missing rail is tried again (milliseconds). */
#define RY_RAIL_RETRY_MS 200

/*
 * Load the file with ry_config_load() (problems logged at error level) and
 * create.  The file's log section (level, syslog) is applied process-wide
 * first, as the CLI does; ry_manager_create() with a hand-built config
 * leaves the log settings alone.  Errors: those of ry_config_load() and of
 * ry_manager_create().
 */
RY_API int ry_manager_create_from_file(const char *path,
				       struct ry_manager **mgr_p);

/* Complete every op as RY_ECANCELED, close rails and peers, free. */
RY_API void ry_manager_destroy(struct ry_manager *mgr);

/*
 * The control address actually listened on, "host:port", into buf.
 * Returns 0 or -ENOSPC.
 */
RY_API int ry_manager_control_addr(struct ry_manager *mgr, char *buf,
				   size_t len);

/*
 * The ids of the key_file keys the manager holds (16 hex digits each, a
 * one-way function of the key), newest first and comma-separated, into
 * buf; into *overlap_s (if not NULL) the seconds, rounded up, the previous
 * key is still accepted (0: none held).  Returns how many keys (0: no
 * key_file; 2 during a rotation's overlap), -EINVAL or -ENOSPC.  Any
 * thread.
 */
RY_API int ry_manager_key_ids(struct ry_manager *mgr, char *buf, size_t len,
			      uint32_t *overlap_s);

/*
 * Apply a new config to a running manager (what `railyard serve` does on
 * SIGHUP).  All or nothing: the config is validated and compared with the
 * running one first, and every problem is passed to report (NULL: logged
 * at error level) with the file and line where known; on any problem
 * nothing changes.
 *
 * What changes live:
 *   - rails added: opened in a new slot, every region registered on them,
 *     paired with peers' rails of the same network; peers learn the new
 *     rail list at once.  A descriptor packed before the reload has no key
 *     for an added rail, so operations using it stay off that rail: pack
 *     the region again (ry_mr_pack) to let them use it.
 *   - rails removed: like a link-down, their connections fail, their work
 *     in flight is replayed on the remaining rails (no operation fails
 *     while a rail to the peer remains), the peers are asked to fence
 *     theirs; then the rail is closed.  A rail whose attributes changed is
 *     removed and added.  RY_EV_CONN_DOWN events name the removed rail.
 *   - peers added (admitted, and dialed by ry_peer_get) and removed: a
 *     removed peer's operations complete with RY_EPEER, its connections
 *     and control sessions close, ry_peer_get() no longer finds it; its
 *     handle stays valid (operations posted to it time out).  A changed
 *     address is a removal and an addition.
 *   - failover: heartbeat_ms, idle_heartbeat_ms, timeout_ms,
 *     op_timeout_ms, reconnect_*_ms and fence at once; ack_timeout_ms,
 *     retry_count and rnr_retry for connections made after the reload
 *     (existing QPs keep theirs).
 *   - ops_in_flight, reg_cache_bytes, progress_threads, accept,
 *     max_sessions, max_sessions_per_source, handshake_timeout_ms.  log is
 *     stored; ry_manager_reload_file() applies it to the process (level,
 *     syslog), ry_manager_reload() leaves the process-wide log alone.
 *   - key_file is read again: a new key becomes current and the previous
 *     one is still accepted for key_overlap_s (railyard.conf(5), Key
 *     rotation); a file that cannot be read refuses the reload.
 * Connections on rails that stay are not touched.
 *
 * Refused (-EINVAL, "restart the node to change it"): node, control,
 * fragment_size, max_op_size, wr_per_qp, frags_per_wr, key_file set or
 * removed.  Rail
 * slots: each rail added takes a new one of RY_MAX_RAILS and a removed
 * rail's slot is not reused in this process (so a descriptor a peer holds
 * never names a different rail); an addition with no slot left is
 * refused.  With key_file, a change of rails closes the control sessions so
 * that the handshake carries the new rail list (RY_EV_PEER_DOWN then
 * RY_EV_PEER_UP; connections stay up).
 *
 * Threading: call it from an application thread, not from a callback and
 * not concurrently with ry_progress(), ry_progress_thread_start() or
 * ry_progress_thread_stop() (with the progress threads running, from any
 * thread: they are stopped for the reload and started again).  One reload
 * at a time: a second one meanwhile returns -EBUSY.  Other
 * calls may run concurrently and wait on the manager lock; the reload
 * holds it while a removed rail drains (at most 2 s).  Callbacks of what
 * the reload completed (a removed peer's operations, events) run in the
 * calling thread before it returns.
 *
 * Errors: -EINVAL (invalid or refused: see report), -EDEADLK (called on a
 * progress thread), -EBUSY (another reload is running), -ESHUTDOWN, a new
 * rail's open error (-EADDRINUSE, ...; reported with the rail's line, nothing
 * changed), -ENOMEM.
 */
RY_API int ry_manager_reload(struct ry_manager *mgr,
			     const struct ry_config *cfg,
			     ry_config_report_fn report, void *arg);

/*
 * ry_config_load(path) and ry_manager_reload(), then the file's log
 * section (ry_log_set_level, ry_log_use_syslog) once applied; problems of
 * either (a bad file: FILE:LINE: message) go to report.  Errors: those of
 * both.
 */
RY_API int ry_manager_reload_file(struct ry_manager *mgr, const char *path,
				  ry_config_report_fn report, void *arg);

/*
 * Do pending work: rail protocol work, completions, replay, heartbeats,
 * reconnects, timeouts; then run callbacks.  Never blocks.  Returns the
 * number of operation completions and messages delivered, or -ESHUTDOWN
 * while the manager is being destroyed.  With several contexts a call
 * runs the context of the peer this thread last posted to (the others
 * now and then, and all of them from a thread that has not posted), and
 * the control channel, heartbeats and timeouts once a tick, in one of
 * the calling threads: so each application thread can progress its own
 * peers without a lock another thread's peers take.
 */
RY_API int ry_progress(struct ry_manager *mgr);

/*
 * ry_progress() after waiting up to timeout_ms (-1: no limit; 0: none) for
 * work to show on ry_event_fd(), in one call: the wait is the call's own
 * look at the fd, so a thread that only waits and progresses (a depth-1
 * loop) makes one epoll_wait a round, not two.  It does not wait while
 * work the fd does not show is due.  After a call that ran callbacks
 * (they posted, and what they left the fd shows) it may wait at once.
 * Returns what ry_progress() returns.  Not while the progress threads run.
 */
RY_API int ry_progress_wait(struct ry_manager *mgr, int timeout_ms);

/*
 * An fd that becomes readable when ry_progress() has work, for epoll (it is
 * itself an epoll fd; never read it or close it).  A periodic internal
 * timer keeps it waking up while peers exist, so heartbeats and timeouts
 * run.  Do not wait on it while the internal progress thread runs.
 */
RY_API int ry_event_fd(struct ry_manager *mgr);

/*
 * Start/stop the internal progress threads: one for the control channel
 * and timers, and progress_threads (config; default one per rail, at most
 * one per core) doing the rails' protocol work, each rail on one of them.
 * start: 0, -EALREADY, or pthread_create's error (nothing left running).
 */
RY_API int ry_progress_thread_start(struct ry_manager *mgr);
RY_API void ry_progress_thread_stop(struct ry_manager *mgr);

/* ---- memory ---- */

enum ry_mr_access {
	RY_MR_REMOTE_WRITE = 1u << 0,
	RY_MR_REMOTE_READ = 1u << 1,
};

/*
 * Register [addr, addr+len) on every rail (local write is always allowed).
 * Errors: -EINVAL (NULL addr, len 0, unknown access bits), a rail's
 * registration error, -ESHUTDOWN.
 */
RY_API int ry_mr_reg(struct ry_manager *mgr, void *addr, size_t len,
		     unsigned access, struct ry_region **mr_p);
/*
 * Deregister on every rail.  -EBUSY while an operation uses it, -EINVAL for
 * a region of the registration cache; NULL: 0.
 */
RY_API int ry_mr_dereg(struct ry_region *mr);
/*
 * Write the descriptor into buf: a versioned little-endian layout with the
 * owner's node identity, address, length, access, one rkey per rail and a
 * checksum.  Returns its length (at most RY_DESC_MAX) or -ENOSPC.
 */
RY_API int ry_mr_pack(const struct ry_region *mr, void *buf, size_t len);
/*
 * Check a descriptor received from elsewhere without using it; returns 0
 * or the error ry_write()/ry_read() would return for it: -EBADMSG
 * (truncated, bad magic, bad checksum, inconsistent contents),
 * -EPROTONOSUPPORT (a layout version this library does not know).
 */
RY_API int ry_desc_check(const void *desc, size_t len);
/*
 * Whether a descriptor belongs to the live incarnation of peer, the cheap
 * check before posting (no I/O; ry_write()/ry_read() make it too).
 * Returns 0 (it does), -ESTALE (it names an earlier incarnation: the peer
 * restarted since it was made, and ry_write()/ry_read() refuse it with
 * -ESTALE), -EAGAIN (the peer's incarnation is not known yet: no HELLO
 * exchanged), -ENXIO (another node, or an incarnation not heard from
 * yet: operations with it wait for the peer's next HELLO, up to
 * op_timeout), -EINVAL, or an error of ry_desc_check().
 */
RY_API int ry_desc_live(struct ry_peer *peer, const void *desc, size_t len);

/* ---- registration cache ---- */

/*
 * Hand any buffer to an operation and pay for its registration once.
 * ry_mr_cache_get() returns a region covering [addr, addr+len) with at
 * least `access`, and the offset of addr in it (for the op's local_off or
 * struct ry_iov.off): a cached one (a hit) or a new registration of the
 * pages around the buffer (a miss).  Each get is paired with one
 * ry_mr_cache_put() once the operations using the region have completed.
 * A region got this way belongs to the cache: ry_mr_dereg() refuses it.
 *
 * The cache holds at most reg_cache_bytes (config) of registrations,
 * evicting the least recently used idle ones; a region with a get not yet
 * put, or an operation in flight, is never evicted, so the total may
 * exceed the limit while such regions are in use.  A buffer whose pages
 * are larger than the limit is registered but not kept.  reg_cache_bytes
 * 0 turns caching off: get registers, the last put deregisters.  Hits
 * are looked up by the buffer's first page: a buffer inside a cached
 * region but starting in another page is a miss (a second, overlapping
 * registration).
 *
 * The cache cannot see the application free or remap memory: call
 * ry_mr_cache_invalidate() for the range before freeing (free, munmap,
 * realloc, mremap).  Without it a later buffer at the same address hits
 * the old registration; if the old pages were unmapped meanwhile, verbs
 * RDMA then reads and writes the old (pinned) physical pages, not the new
 * buffer, and reports success (ry_mr_cache_get(3)).  Invalidation
 * removes every cached region overlapping the range: idle ones are
 * deregistered at once, ones in use when their last put comes.
 *
 * get errors: -EINVAL (NULL, len 0, unknown access bits), those of
 * ry_mr_reg(), -ESHUTDOWN.  put: 0, -EINVAL (NULL, not the cache's, or
 * more puts than gets), -EBUSY (an operation still uses it; nothing
 * changed).  invalidate returns how many regions it removed, or -EINVAL.
 */
RY_API int ry_mr_cache_get(struct ry_manager *mgr, void *addr, size_t len,
			   unsigned access, struct ry_region **mr_p,
			   size_t *off_p);
RY_API int ry_mr_cache_put(struct ry_region *mr);
RY_API int ry_mr_cache_invalidate(struct ry_manager *mgr, void *addr,
				  size_t len);

struct ry_mr_cache_stats {
	uint64_t hits, misses;
	uint64_t evictions;	/* idle regions dropped for the limit */
	uint64_t invalidations; /* regions removed by invalidate */
	uint64_t bytes;		/* registered by the cache now */
	unsigned entries;	/* regions held by the cache now */
	unsigned in_use;	/* of those, with a get not yet put */
};
/* Errors: -EINVAL. */
RY_API int ry_mr_cache_stats(struct ry_manager *mgr,
			     struct ry_mr_cache_stats *out);

/* ---- peers ---- */

/*
 * Find a peer by name (a config peer, or a node that connected to us), or
 * by control address "host:port" (added if new).  Connecting happens on
 * first use.  The handle stays valid until the manager is destroyed.
 * Errors: -EINVAL (NULL or empty), -ENOENT (a name that is neither a known
 * peer nor an address), -ESHUTDOWN.
 */
RY_API int ry_peer_get(struct ry_manager *mgr, const char *name_or_addr,
		       struct ry_peer **peer_p);

/*
 * A peer handed to the receive callback (`from`) is valid until the
 * callback returns, unless the application holds it: a record the
 * manager made from a node's HELLO is freed once that node's control
 * sessions are gone and nothing refers to it, so a server that only hears
 * from its clients does not keep every client it ever saw.  Each
 * ry_peer_hold() is matched by one ry_peer_release(); after the release
 * the handle may be freed at any time.  A handle from ry_peer_get() is
 * the application's until the manager is destroyed and needs neither.
 * NULL is ignored.
 */
RY_API void ry_peer_hold(struct ry_peer *peer);
RY_API void ry_peer_release(struct ry_peer *peer);

/* The peer's name (as configured, or the address it was added by). */
RY_API const char *ry_peer_name(const struct ry_peer *peer);

/*
 * A peer's connection state, for waiting until every rail is up before a
 * measurement or for a status page.  Paired rails are the local rails on a
 * network the peer also has (known once the control session is ready).
 * Errors: -EINVAL.
 */
struct ry_peer_info {
	bool ready;	       /* control session up, rail lists exchanged */
	unsigned rails_paired; /* local rails the peer shares */
	unsigned rails_usable; /* of those, local link up */
	unsigned rails_active; /* of those, carrying traffic */
	uint64_t incarnation;  /* the peer process's id, 0 until its HELLO */
	unsigned restarts;     /* new incarnations seen after the first */
};
RY_API int ry_peer_info(struct ry_peer *peer, struct ry_peer_info *out);

/* ---- operations ---- */

struct ry_completion {
	void *context; /* as given when posting */
	enum ry_status status;
	size_t length;
	/* For failures: which peer, which rails, why.  Empty on success. */
	char reason[192];
};

/* Runs once per operation; c is valid only during the call. */
typedef void (*ry_complete_fn)(const struct ry_completion *c, void *arg);

/*
 * Write len bytes (1..max_op_size) from local region at local_off to the
 * remote descriptor at remote_off.  The op completes exactly once, by cb
 * (called with arg = context) when non-NULL, else through
 * ry_poll_completions().  Operations beyond ops_in_flight per peer wait
 * their turn inside the manager.
 * Errors: -EINVAL (NULL handle, len 0, a range outside the local region
 * or the descriptor), -EMSGSIZE (len > max_op_size), -EBADMSG or
 * -EPROTONOSUPPORT (bad descriptor, see ry_desc_check), -EACCES (the
 * descriptor does not allow the access), -ESTALE (the descriptor names an
 * earlier incarnation of the peer, see ry_desc_live), -ESHUTDOWN.
 */
RY_API int ry_write(struct ry_peer *peer, struct ry_region *local,
		    size_t local_off, const void *remote_desc, size_t desc_len,
		    size_t remote_off, size_t len, ry_complete_fn cb,
		    void *context);

/* The reverse direction; same errors. */
RY_API int ry_read(struct ry_peer *peer, struct ry_region *local,
		   size_t local_off, const void *remote_desc, size_t desc_len,
		   size_t remote_off, size_t len, ry_complete_fn cb,
		   void *context);

/*
 * ry_write(), then a notification carrying `notify` that the target's
 * receive callback gets exactly once, after all bytes have landed (and, if
 * fragments were replayed, after the fence).  The op completes when the
 * notification has been delivered to the target's transport.
 * Errors: those of ry_write(), and -EAGAIN when the manager's message slots
 * are all in use (retry after progress).
 */
RY_API int ry_write_notify(struct ry_peer *peer, struct ry_region *local,
			   size_t local_off, const void *remote_desc,
			   size_t desc_len, size_t remote_off, size_t len,
			   uint64_t notify, ry_complete_fn cb, void *context);

/* ---- vectored operations ---- */

#define RY_IOV_MAX 1024 /* entries of one scatter-gather list */

/* One local piece: len bytes at off in a registered region. */
struct ry_iov {
	struct ry_region *mr;
	size_t off;
	size_t len;
};

/* One remote piece: len bytes at off in the remote descriptor. */
struct ry_riov {
	size_t off;
	size_t len;
};

/*
 * ry_write() from a local scatter-gather list: the iovcnt pieces, in
 * order, go to one remote range starting at remote_off; the length is
 * their sum (1..max_op_size; an entry may be empty).  Pieces may be in
 * different regions.  The op is one op: striped across rails in fragments
 * (a fragment never spans two pieces, except where two pieces are adjacent
 * in one region and are merged), replayed on failure, completes once.
 * Errors: those of ry_write(), and -EINVAL for iovcnt outside
 * 1..RY_IOV_MAX or an entry with a NULL or foreign region or a range
 * outside its region.
 */
RY_API int ry_writev(struct ry_peer *peer, const struct ry_iov *iov, int iovcnt,
		     const void *remote_desc, size_t desc_len,
		     size_t remote_off, ry_complete_fn cb, void *context);

/* The reverse direction: one remote range scattered into iov; same
 * errors. */
RY_API int ry_readv(struct ry_peer *peer, const struct ry_iov *iov, int iovcnt,
		    const void *remote_desc, size_t desc_len, size_t remote_off,
		    ry_complete_fn cb, void *context);

/* ry_writev(), then a notification as ry_write_notify(); same errors and
 * -EAGAIN. */
RY_API int ry_write_notifyv(struct ry_peer *peer, const struct ry_iov *iov,
			    int iovcnt, const void *remote_desc,
			    size_t desc_len, size_t remote_off, uint64_t notify,
			    ry_complete_fn cb, void *context);

/*
 * A read that gathers several ranges of one remote descriptor (riovcnt
 * pieces, in order) into a local list; the two lists must have the same
 * total length.  Errors: those of ry_readv(), and -EINVAL for riovcnt
 * outside 1..RY_IOV_MAX, a remote piece outside the descriptor, or
 * totals that differ.
 */
RY_API int ry_readv_gather(struct ry_peer *peer, const struct ry_iov *iov,
			   int iovcnt, const void *remote_desc, size_t desc_len,
			   const struct ry_riov *riov, int riovcnt,
			   ry_complete_fn cb, void *context);

/*
 * Send a two-sided message of 0..RY_MSG_MAX bytes (copied before return).
 * The target's receive callback gets it exactly once, across failovers;
 * messages are not ordered with each other.  Errors: -EINVAL, -EMSGSIZE,
 * -EAGAIN (all message slots in use), -ESHUTDOWN.
 */
RY_API int ry_send(struct ry_peer *peer, const void *buf, size_t len,
		   ry_complete_fn cb, void *context);

/*
 * Completions of ops posted without a callback, up to max; returns how many
 * were written to out (0 when none).  Errors: -EINVAL.
 */
RY_API int ry_poll_completions(struct ry_manager *mgr,
			       struct ry_completion *out, int max);

/* ---- receiving ---- */

enum ry_msg_type {
	RY_MSG_DATA = 0, /* from ry_send(): data, len */
	RY_MSG_NOTIFY,	 /* from ry_write_notify(): notify */
};

struct ry_message {
	enum ry_msg_type type;
	const void *data; /* valid only during the callback */
	size_t len;
	uint64_t notify;
};

/* from: valid during the callback; ry_peer_hold() it to keep it longer. */
typedef void (*ry_recv_fn)(struct ry_peer *from, const struct ry_message *m,
			   void *arg);

/*
 * Set the receive callback (NULL drops arriving messages).  Messages that
 * arrive before one is set are dropped, after being acknowledged.
 */
RY_API void ry_set_recv_cb(struct ry_manager *mgr, ry_recv_fn fn, void *arg);

/* ---- events ---- */

enum ry_event_type {
	RY_EV_RAIL_DOWN = 0, /* a local rail's link went down */
	RY_EV_RAIL_UP,	     /* ... and came back */
	RY_EV_CONN_DOWN,     /* one rail's connection to a peer failed */
	RY_EV_CONN_UP,	     /* ... connected and probed (again) */
	/*
	 * The first work replayed from a failed connection completed (on
	 * any ACTIVE connection to that peer): traffic has resumed.  rail
	 * is the failed connection's; fail_ns and detect_ns are those of
	 * its RY_EV_CONN_DOWN.  Not sent when nothing had to be replayed.
	 */
	RY_EV_CONN_RESUMED,
	/*
	 * Peer lifecycle (rail is ""): the control session with a peer is
	 * ready, HELLOs exchanged (new_incarnation: the peer's); it was lost
	 * (old_incarnation: the one last heard; the peer may be down or
	 * restarting, operations wait for a path up to op_timeout); the peer
	 * came back as a new process (old_incarnation, new_incarnation).  On
	 * RY_EV_PEER_RESTARTED every operation aimed at the old incarnation
	 * has already been failed with RY_ESTALE (their completions follow),
	 * nothing more is sent with its descriptors (ry_write()/ry_read():
	 * -ESTALE, see ry_desc_live), and descriptors this node handed the
	 * old incarnation may be dropped.  RY_EV_PEER_UP follows it.
	 */
	RY_EV_PEER_UP,
	RY_EV_PEER_DOWN,
	RY_EV_PEER_RESTARTED,
	/*
	 * A local rail's device or interface went away (an HCA reset,
	 * IBV_EVENT_DEVICE_FATAL, the device removed, the netdev deleted):
	 * its connections failed over as for a pulled cable, and the rail
	 * is closed.  reason says what happened.  The manager opens it again
	 * by what the config names (device or GUID and port, interface,
	 * address) when it returns, and then sends RY_EV_RAIL_BACK: also
	 * for a rail that could not open when the manager was created.
	 * Until then the rail is missing: ry_rail_missing() lists it and
	 * ry_rail_count() does not count it.
	 */
	RY_EV_RAIL_GONE,
	RY_EV_RAIL_BACK,
	/*
	 * A local rail's error rate crossed a threshold (railyard.conf(5):
	 * error_degrade_ppm, error_drain_ppm, error_quiet_ms): reason is
	 * "degraded: ..." (its share of the stripe lowered), "drained: ..."
	 * (new work avoids it while another rail can take it; its
	 * connections stay up) or "ok: ..." (its full share again), with the
	 * rate.  ry_rail_health() reads the state.
	 */
	RY_EV_RAIL_HEALTH,
	/* Types may be added after the last: ignore those you do not know. */
};

struct ry_event {
	enum ry_event_type type;
	const char *rail;   /* local rail name */
	const char *peer;   /* NULL for RY_EV_RAIL_* */
	const char *reason; /* why it went down; "" for up */
	uint64_t time_ns;   /* CLOCK_MONOTONIC */
	/*
	 * RY_EV_CONN_DOWN and RY_EV_CONN_RESUMED (0 otherwise), both
	 * CLOCK_MONOTONIC.  fail_ns is when the failure began as far as
	 * this node can know: the local link event's timestamp, or else
	 * the last time anything was heard on the connection.  detect_ns
	 * is when the connection was declared down (time_ns of the
	 * RY_EV_CONN_DOWN).  Detection took detect_ns - fail_ns; traffic
	 * resumed time_ns - detect_ns after it (RY_EV_CONN_RESUMED).
	 */
	uint64_t fail_ns;
	uint64_t detect_ns;
	/* RY_EV_PEER_* (0 otherwise): the peer's incarnation ids */
	uint64_t old_incarnation;
	uint64_t new_incarnation;
};

typedef void (*ry_event_fn)(const struct ry_event *ev, void *arg);

/* Set the event callback (NULL: none).  Strings live during the call. */
RY_API void ry_set_event_cb(struct ry_manager *mgr, ry_event_fn fn, void *arg);

/* ---- counters ---- */

/*
 * Monotonic counters.  Per rail: everything carried by that local rail to
 * all peers; per peer: everything sent to that peer on all rails.
 * detect: failure (last sign of life, or the link event) to detection;
 * resume: detection to the first replayed traffic completing elsewhere.
 */
struct ry_counters {
	uint64_t bytes;		     /* payload bytes completed */
	uint64_t fragments;	     /* fragments completed */
	uint64_t work_requests;	     /* WRs posted (fragments, messages) */
	uint64_t messages;	     /* two-sided messages completed */
	uint64_t replayed_fragments; /* fragments put back for replay */
	uint64_t retransmits;	     /* transport retransmits (rails only) */
	uint64_t failovers;	     /* connection failures handled */
	uint64_t fences;	     /* fences acknowledged by the peer */
	uint64_t reconnects;	     /* connections (re)established */
	uint64_t heartbeats;	     /* keepalives sent */
	uint64_t detect_count, detect_ns_total, detect_ns_max;
	uint64_t resume_count, resume_ns_total, resume_ns_max;
};

/* Errors: -EINVAL, -ENOENT (no rail by that name). */
RY_API int ry_rail_counters(struct ry_manager *mgr, const char *rail,
			    struct ry_counters *out);
RY_API int ry_peer_counters(struct ry_peer *peer, struct ry_counters *out);

/*
 * Every peer the manager knows: each peer section of the config (state
 * "new" until first used), peers named by the application and nodes
 * learned from a HELLO, as a snapshot taken under one lock (no handles:
 * records learned from a HELLO may be freed when their session closes;
 * ry_peer_get(name) gives a handle).
 */
struct ry_peer_entry {
	char name[RY_ADDR_MAX];	   /* as ry_peer_name() */
	char node[RY_NAME_MAX];	   /* the name its HELLO gave; "" before */
	char address[RY_ADDR_MAX]; /* control address; "" if unknown */
	char state[16];	 /* control: new, connecting, hello, ready, backoff */
	bool dialed;	 /* we dial it (configured or named with an address) */
	bool from_hello; /* learned from an admitted HELLO */
	struct ry_peer_info info;
	struct ry_counters counters; /* as ry_peer_counters() */
};
/*
 * Write up to max entries into out (NULL when max is 0) and return how
 * many peers there are (more than max: call again with room for them).
 * Errors: -EINVAL.
 */
RY_API int ry_peer_list(struct ry_manager *mgr, struct ry_peer_entry *out,
			unsigned max);

/* ---- rails ---- */

/* Names of the local rails open now (missing ones: ry_rail_missing), in
 * config order; returns the count.  The name lives as long as the
 * manager; it reads "" once its rail is gone. */
RY_API int ry_rail_count(struct ry_manager *mgr);
RY_API const char *ry_rail_name(struct ry_manager *mgr, unsigned index);

/* Whether a rail's link is up and how many peers are connected on it. */
struct ry_rail_info {
	bool link_up;
	unsigned peers_active;
	unsigned health_min; /* lowest connection health, 0..1000 */
};
RY_API int ry_rail_info(struct ry_manager *mgr, const char *rail,
			struct ry_rail_info *out);

/* A rail's state as its error rate makes it (RY_EV_RAIL_HEALTH). */
enum ry_rail_health_state {
	RY_RAIL_OK = 0,
	RY_RAIL_DEGRADED, /* its share of the stripe lowered to a quarter */
	RY_RAIL_DRAINED,  /* new work avoids it while another rail can */
};
struct ry_rail_health {
	enum ry_rail_health_state state;
	/* errors per million packets in the last sample (1 s); 0 before
	 * the first */
	uint32_t error_ppm;
	uint64_t changes; /* state changes since the rail opened */
	/* at the last sample, monotonic since the rail opened: the errors
	 * counted (verbs: the port's error counters; soft: retransmits and
	 * bad CRCs) and the packets sent and received */
	uint64_t errors, packets;
};
/* The rail's health, or -ENOENT (no such open rail), -EINVAL. */
RY_API int ry_rail_health(struct ry_manager *mgr, const char *rail,
			  struct ry_rail_health *out);
/* "ok", "degraded", "drained" */
RY_API const char *ry_rail_health_str(enum ry_rail_health_state state);

/*
 * Configured rails that are not open (rail_life: absent at start, or
 * gone since): the index-th one's name and why, as "interface eth2 not
 * found" (with reason_len 0 reason may be NULL).  0, or -ENOENT past the
 * last one; the list changes as rails come and go.  Thread-safe.
 */
RY_API int ry_rail_missing(struct ry_manager *mgr, unsigned index, char *name,
			   size_t name_len, char *reason, size_t reason_len);

/* ---- metrics ---- */

/*
 * Render the manager's metrics as Prometheus text exposition format 0.0.4
 * (the names also pass as OpenMetrics): per rail the counters of struct
 * ry_counters as railyard_rail_*_total, link state, active connections,
 * lowest health, failure detection and failover resume times (summaries
 * plus a max gauge) and the transport's packet counters; per connection
 * health and state labelled {rail, peer}; per peer the same counters
 * labelled {peer}.  ry_metrics_render(3) lists every family.
 *
 * Works like snprintf: writes at most len bytes into buf (NUL-terminated
 * when len > 0; buf may be NULL when len is 0) and returns the length the
 * whole text needs, without the NUL.  A result >= len means it was cut;
 * call again with a bigger buffer (the second call is a new snapshot and
 * may need a few bytes more, so leave room).  The caller owns buf.
 * Errors: -EINVAL (NULL mgr, or NULL buf with len > 0), -EOVERFLOW.
 *
 * Threading: safe from any thread, e.g. an HTTP server's, while others
 * post and progress.  It holds the manager lock while it writes, so all
 * values come from one instant; it calls no application code.
 */
RY_API int ry_metrics_render(struct ry_manager *mgr, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* RAILYARD_RAILYARD_H */
