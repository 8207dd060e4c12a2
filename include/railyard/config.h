/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * railyard configuration: the parsed, validated form of a railyard.conf.
 *
 * A struct ry_config is plain data.  It is produced by ry_config_load() (or
 * ry_config_parse()), or filled by hand after ry_config_init_defaults(), and
 * handed to ry_manager_create().  The manager copies what it needs, so the
 * caller may free the config right after.  Every option, its unit and its
 * default is documented in railyard.conf(5) and etc/railyard.conf.
 *
 * Extending it (ABI): the struct begins with its own size as the program
 * was compiled (rc_size, and the sizes of a rail's and a peer's section),
 * which ry_config_init_defaults() records and every function taking a
 * config checks.  A new option of the top level is a field appended at the
 * end of struct ry_config: a program built against an older header passes
 * a shorter struct, and the library gives the fields it does not have
 * their defaults, so it keeps working without a rebuild.  A config whose
 * recorded sizes the library cannot read (not set up by
 * ry_config_init_defaults(), or built against a newer header, or with
 * another layout of a rail or peer section) is refused with -EINVAL and a
 * message saying so, never misread.  A field inserted anywhere else, or
 * added to struct ry_rail_config or struct ry_peer_config, is an ABI break
 * to announce (tests/abi/README.md): the abi_check test fails on it.
 *
 * Threading: the functions here keep no global state and may be called from
 * any thread.
 */
#ifndef RAILYARD_CONFIG_H
#define RAILYARD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <railyard/api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RY_NAME_MAX 64	  /* rail, peer, node and network names */
#define RY_ADDR_MAX 108	  /* "host:port", "[v6]:port" or a UNIX path */
#define RY_MAX_RAILS 16	  /* rails per node */
#define RY_MAX_PEERS 1024 /* peers named in one config file */
#define RY_MAX_ACCEPT 32  /* entries of the accept list */
#define RY_PREFIX_MAX 64  /* "198.18.0.0/15", "2001:db8::/32", "any" */

enum ry_provider {
	RY_PROVIDER_SOFT = 0, /* userspace RC over UDP (rails/soft) */
	RY_PROVIDER_VERBS,    /* libibverbs HCA port (rails/verbs) */
	RY_PROVIDER_TCP,      /* RC over kernel TCP (rails/tcp) */
};

/* How a verbs rail connects its QPs (rails/verbs/verbs_cm.c). */
enum ry_cm_mode {
	RY_CM_AUTO = 0, /* rdma_cm where the device needs it (iWARP) */
	RY_CM_MANUAL,	/* QP parameters over the control channel only */
	RY_CM_RDMA_CM,	/* librdmacm: address, route, REQ/REP/RTU */
};

/* Fault injection for a soft rail, from the config's rail { fault { } }. */
struct ry_fault_config {
	bool down;	   /* start with the cable "pulled": drop all */
	double drop;	   /* probability of dropping a packet, 0..1 */
	double duplicate;  /* probability of sending a packet twice */
	double reorder;	   /* probability of holding a packet back */
	double corrupt;	   /* probability of flipping a payload bit */
	uint32_t delay_us; /* added one-way delay */
};

struct ry_rail_config {
	char name[RY_NAME_MAX];
	enum ry_provider provider;
	char network[RY_NAME_MAX]; /* rails pair with the peer's by network */
	/* soft, tcp: bind address "ip[:port]" and/or interface name */
	char address[RY_ADDR_MAX];
	char interface[RY_NAME_MAX];
	/* verbs: device name or node GUID, port number, GID index */
	char device[RY_NAME_MAX];
	uint32_t port;
	int32_t gid_index; /* -1: pick the RoCE v2 GID of the port */
	uint32_t mtu;	   /* bytes; 0: the device's / interface's */
	uint32_t weight;   /* relative share when rate is unknown */
	uint64_t rate_bps; /* bits per second; 0: measure */
	/* verbs: on every QP of the rail, the RoCE v2 packets' IP traffic
	 * class (DSCP << 2 | ECN, 0..255) and the InfiniBand service level
	 * (0..15), which fabrics map to a lossless priority */
	uint32_t traffic_class;
	uint32_t sl;
	enum ry_cm_mode cm; /* verbs */
	/* last resort: used for a peer only while none of its other
	 * (primary) rails is up */
	bool standby;
	struct ry_fault_config fault;
	int line; /* where it was defined, for messages */
};

struct ry_peer_config {
	char name[RY_NAME_MAX];
	char address[RY_ADDR_MAX]; /* control address "host:port" */
	int line;
};

/* A list of short strings (the accept option). */
struct ry_str_list {
	unsigned n;
	char s[RY_MAX_ACCEPT][RY_PREFIX_MAX];
};

struct ry_failover_config {
	uint32_t heartbeat_ms;	    /* keepalive, used in the last second */
	uint32_t idle_heartbeat_ms; /* keepalive, idle longer (one end) */
	uint32_t timeout_ms;	    /* silence before a connection is dead */
	uint32_t ack_timeout_ms;    /* transport retransmit timer */
	uint32_t retry_count;	   /* transport retries before QP error, 0..6 */
	uint32_t rnr_retry;	   /* receiver-not-ready retries, 0..6 */
	uint32_t reconnect_min_ms; /* first reconnect backoff */
	uint32_t reconnect_max_ms; /* backoff ceiling */
	uint32_t op_timeout_ms;	   /* an operation with no path fails after */
	bool fence; /* fence replayed operations: railyard.conf(5) */
};

enum ry_log_level {
	RY_LOG_ERROR = 0,
	RY_LOG_WARN,
	RY_LOG_INFO,
	RY_LOG_DEBUG,
	RY_LOG_TRACE,
};

struct ry_log_config {
	enum ry_log_level level;
	bool syslog;
};

struct ry_config {
	/*
	 * sizeof(struct ry_config), sizeof(struct ry_rail_config) and
	 * sizeof(struct ry_peer_config) as the program was compiled: set by
	 * ry_config_init_defaults() and by the loader; copy them with the
	 * struct, never write them otherwise.
	 */
	uint32_t rc_size;
	uint16_t rc_rail_size;
	uint16_t rc_peer_size;
	char source[256];	   /* file name, or "<defaults>" */
	char node[RY_NAME_MAX];	   /* this node's name */
	char control[RY_ADDR_MAX]; /* control channel listen address */
	uint32_t fragment_size;	   /* power of two, 512 B .. 1 MiB */
	uint32_t ops_in_flight;	   /* per peer */
	uint64_t max_op_size;	   /* bytes */
	uint32_t wr_per_qp;	   /* work requests outstanding per QP */
	/* adjacent fragments merged in one WR; 0: 64 when every rail is
	 * tcp (a tcp WR costs a header, a wake-up and an ACK), else 16 */
	uint32_t frags_per_wr;
	uint64_t reg_cache_bytes; /* idle registrations cached; 0: off */
	/* threads doing the rails' protocol work once
	 * ry_progress_thread_start() runs; 0: one per rail, at most one per
	 * core */
	uint32_t progress_threads;
	/* progress contexts: peers are spread over them (in creation
	 * order), and threads posting to peers of different contexts share
	 * no lock on the data path; 1 (the default) to 16 */
	uint32_t contexts;
	/* control sessions from nodes not named by a peer section are
	 * admitted only from these prefixes ("ip/len", or "any") */
	struct ry_str_list accept;
	uint32_t max_sessions;		  /* inbound control sessions, total */
	uint32_t max_sessions_per_source; /* inbound, per source address */
	uint32_t handshake_timeout_ms;	  /* HELLO due within this */
	/* pre-shared key authenticating the control channel: 32 raw bytes
	 * or 64 hex digits, mode 0600; "" : no authentication */
	char key_file[256];
	/* a keyed MAC on every soft-rail packet, keys from the control
	 * handshake (needs key_file; soft rails only) */
	bool data_mac;
	struct ry_failover_config failover;
	struct ry_log_config log;
	unsigned n_rails;
	struct ry_rail_config rails[RY_MAX_RAILS];
	unsigned n_peers;
	struct ry_peer_config *peers; /* n_peers entries, owned */
	/* refuse to start when a rail cannot open (default: start with the
	 * rails there are and open the others when they appear) */
	bool require_all_rails;
	/* an admitted session's frames of each type: this many a second on
	 * average, this many at once; beyond, dropped, and a session that
	 * keeps at it is closed and its address backed off */
	uint32_t control_frame_rate, control_frame_burst;
	/* standby rails also carry a peer's work while its primary rails
	 * that can take work have less than this percent of the primary
	 * rails' weight (0: only while none can), 0..100 */
	uint32_t standby_below;
	/* set by the loader when the file gives max_sessions: `railyard
	 * serve` refuses such a value that cannot fit under the open-file
	 * limit, and lowers the default to fit, with a warning */
	bool max_sessions_set;
	/* after a reload reads a new key from key_file, the previous key is
	 * still accepted for this many seconds (0: not at all) */
	uint32_t key_overlap_s;
	/* a rail's errors per million packets (its port's error counters
	 * on verbs, retransmits and bad CRCs on soft) over two samples a
	 * second apart: at error_degrade_ppm its share of the stripe is
	 * lowered to a quarter, at error_drain_ppm new work avoids it while
	 * another rail can take it; back once under error_degrade_ppm for
	 * error_quiet_ms.  0: never. */
	uint32_t error_degrade_ppm, error_drain_ppm, error_quiet_ms;
	/* each soft or tcp rail runs as this many lanes, 1..8: rails of
	 * their own (name.2, ...) on the same interface, paired with the
	 * peer's lanes of the same network, so that a node serving many
	 * peers on one link spreads their protocol work over as many rail
	 * threads.  The config keeps the rails as written; a manager
	 * expands them (railyard.conf(5)). */
	uint32_t lanes;
	/* new top-level options go here, at the end (see the top) */
};

/*
 * One problem found in a config file.  `line` is 0 when the problem is not
 * tied to a line (an unreadable or empty file).  `hint` says how to fix it
 * and may be empty.
 */
struct ry_config_error {
	const char *file;
	int line;
	const char *message;
	const char *hint;
};

/*
 * Called once per problem, in file order where the parser allows.  The
 * strings live only for the duration of the call.
 */
typedef void (*ry_config_report_fn)(const struct ry_config_error *err,
				    void *arg);

/*
 * Fill *cfg with the defaults documented in railyard.conf(5), no rails,
 * and record the struct's sizes as this program was compiled.  Returns 0,
 * or -EINVAL when the library cannot use a struct of that layout (a
 * program built against a newer header than the library's); the sizes are
 * recorded all the same, so ry_manager_create() refuses it too.
 */
#define ry_config_init_defaults(cfg)                                           \
	ry_config_init((cfg), sizeof(*(cfg)), sizeof((cfg)->rails[0]),         \
		       sizeof(*(cfg)->peers))
/* What ry_config_init_defaults() calls; use the macro. */
RY_API int ry_config_init(struct ry_config *cfg, size_t size, size_t rail_size,
			  size_t peer_size);

/*
 * Parse and validate a config file.  Every problem is passed to report
 * (which may be NULL); on any problem nothing is returned and the result is
 * -EINVAL (bad content), -ENOENT/-EACCES/-EISDIR (cannot read) or -ENOMEM.
 * On success *cfg_p owns a new config; free it with ry_config_free().
 * Opens no device and no socket.
 */
RY_API int ry_config_load(const char *path, struct ry_config **cfg_p,
			  ry_config_report_fn report, void *arg);

/* Same, from a NUL-terminated buffer; `name` is used in messages. */
RY_API int ry_config_parse(const char *text, const char *name,
			   struct ry_config **cfg_p, ry_config_report_fn report,
			   void *arg);

/*
 * Validate a config built by hand (the checks ry_config_load() applies after
 * parsing).  Returns the number of problems reported; 0 means valid.
 */
RY_API int ry_config_validate(const struct ry_config *cfg,
			      ry_config_report_fn report, void *arg);

/* Write the effective configuration in config-file syntax. */
RY_API void ry_config_print(const struct ry_config *cfg, FILE *out);

/* Free a config from ry_config_load/parse/demo.  NULL is a no-op. */
RY_API void ry_config_free(struct ry_config *cfg);

RY_API const char *ry_provider_name(enum ry_provider p);
RY_API const char *ry_cm_mode_name(enum ry_cm_mode m);
RY_API const char *ry_log_level_name(enum ry_log_level l);

#ifdef __cplusplus
}
#endif
#endif /* RAILYARD_CONFIG_H */
