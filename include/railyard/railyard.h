/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * railyard: fault-tolerant multi-rail RDMA for storage servers.
 *
 * What a storage server includes.  The model:
 *
 *   manager   one per process: owns the rails, the peers, the control
 *             channel, and the progress engine.
 *   mr        a registered buffer: registered on every rail at once, one
 *             rkey per rail.  ry_mr_pack() turns it into a descriptor of at
 *             most RY_DESC_MAX bytes that the application sends to a peer
 *             inside its own RPC; the peer uses it as the remote side of a
 *             write or read.
 *   peer      another node, by name or control address.  Connections to it
 *             (one RC QP per shared rail) are made lazily on first use.
 *   op        one write/read/send of any length up to max_op_size; it is
 *             striped in fragments across the peer's rails, replayed on
 *             surviving rails if one fails, and completes exactly once.
 *
 * Ownership: every handle is created by a ry_*_create/reg/get call and
 * released by the matching destroy/dereg/put; destroy(NULL) is a no-op.
 * Destroying the manager completes every operation still in flight with
 * RY_ECANCELED and releases everything it owns.  An mr must not be
 * deregistered while an operation that uses it is in flight (-EBUSY).
 *
 * Threading: every function is thread-safe.  Completion callbacks run in the
 * thread that calls ry_progress() (or the internal progress thread) with no
 * manager lock held, so they may post new operations; they must not call
 * ry_manager_destroy().
 *
 * Errors: functions return 0 or a negative errno; output arguments are set
 * only on success.  Operation results are one of enum ry_status.
 *
 * Status of this draft: calls marked "not implemented yet" return -ENOSYS
 * until the rail manager lands (issue "rail manager").
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

struct ry_manager;
struct ry_mr;
struct ry_peer;

/* Result of an operation, passed to its completion. */
enum ry_status {
	RY_OK = 0,
	RY_ETIMEDOUT,      /* no path to the peer within op_timeout_ms */
	RY_ECANCELED,      /* manager destroyed with the op in flight */
	RY_EREMOTE_ACCESS, /* the peer rejected the rkey, bounds or access */
	RY_ELOCAL,         /* bad local region or length */
	RY_EPEER,          /* the peer is unknown or refused us */
	RY_ESTATUS__MAX
};

/* Text for a status; never NULL. */
RY_API const char *ry_status_str(enum ry_status st);

/* Version string, "major.minor.patch". */
RY_API const char *ry_version(void);

/* ---- logging ---- */

typedef void (*ry_log_fn)(enum ry_log_level level, const char *component,
			  const char *message, void *arg);
RY_API void ry_log_set_level(enum ry_log_level level);
/* Replace the stderr sink; NULL restores it.  Called with a lock held. */
RY_API void ry_log_set_sink(ry_log_fn fn, void *arg);
RY_API void ry_log_use_syslog(bool on);

/* ---- manager ---- */

/*
 * Create a manager from a validated config (copied; the caller keeps
 * ownership of cfg).  Opens every rail and starts the control channel
 * listener.  Not implemented yet: returns -ENOSYS.
 */
RY_API int ry_manager_create(const struct ry_config *cfg,
			     struct ry_manager **mgr_p);

/* Load the file, validate it (errors to stderr) and create.  -ENOSYS yet. */
RY_API int ry_manager_create_from_file(const char *path,
				       struct ry_manager **mgr_p);

/* Complete every op as RY_ECANCELED, close rails and peers, free. */
RY_API void ry_manager_destroy(struct ry_manager *mgr);

/*
 * Do pending work: rail protocol work, completions, replay, heartbeats,
 * reconnects, timeouts; run completion callbacks.  Returns the number of
 * completions delivered, or a negative errno.  -ENOSYS yet.
 */
RY_API int ry_progress(struct ry_manager *mgr);

/* An fd that is readable when ry_progress() has work; for epoll. */
RY_API int ry_event_fd(struct ry_manager *mgr);

/* Start/stop an internal thread that calls ry_progress().  -ENOSYS yet. */
RY_API int ry_progress_thread_start(struct ry_manager *mgr);
RY_API void ry_progress_thread_stop(struct ry_manager *mgr);

/* ---- memory ---- */

enum ry_mr_access {
	RY_MR_REMOTE_WRITE = 1u << 0,
	RY_MR_REMOTE_READ = 1u << 1,
};

/* Register [addr, addr+len) on every rail.  -ENOSYS yet. */
RY_API int ry_mr_reg(struct ry_manager *mgr, void *addr, size_t len,
		     unsigned access, struct ry_mr **mr_p);
/* -EBUSY while an operation uses it; NULL is a no-op. */
RY_API int ry_mr_dereg(struct ry_mr *mr);
/*
 * Write the descriptor (address, length, one rkey per rail, node identity)
 * into buf; returns its length or -ENOSPC.  -ENOSYS yet.
 */
RY_API int ry_mr_pack(const struct ry_mr *mr, void *buf, size_t len);

/* ---- peers ---- */

/*
 * Find a peer by config name, or add one by control address "host:port".
 * Connecting happens on first use.  The manager owns peers; the handle stays
 * valid until the manager is destroyed.  -ENOSYS yet.
 */
RY_API int ry_peer_get(struct ry_manager *mgr, const char *name_or_addr,
		       struct ry_peer **peer_p);

/* ---- operations ---- */

struct ry_completion {
	void *context;          /* as given when posting */
	enum ry_status status;
	size_t length;
	/* For failures: which peer, which rails, why.  Empty on success. */
	char reason[192];
};

typedef void (*ry_complete_fn)(const struct ry_completion *c, void *arg);

/*
 * Write len bytes from local mr at local_off to the remote descriptor at
 * remote_off.  The op completes by cb (when non-NULL) or by
 * ry_poll_completions().  -ENOSYS yet.
 */
RY_API int ry_write(struct ry_peer *peer, struct ry_mr *local,
		    size_t local_off, const void *remote_desc, size_t desc_len,
		    size_t remote_off, size_t len, ry_complete_fn cb,
		    void *context);

/* The reverse direction.  -ENOSYS yet. */
RY_API int ry_read(struct ry_peer *peer, struct ry_mr *local,
		   size_t local_off, const void *remote_desc, size_t desc_len,
		   size_t remote_off, size_t len, ry_complete_fn cb,
		   void *context);

/* Completions of ops posted without a callback.  -ENOSYS yet. */
RY_API int ry_poll_completions(struct ry_manager *mgr,
			       struct ry_completion *out, int max);

#ifdef __cplusplus
}
#endif
#endif /* RAILYARD_RAILYARD_H */
