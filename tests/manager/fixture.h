/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A pair of rail managers, "a" and "b", in one process, over the provider
 * the suite is built for (FX_PROVIDER: loop for label unit, soft for label
 * soft), driven by one thread calling ry_progress() on both.
 */
#ifndef RY_TEST_FIXTURE_H
#define RY_TEST_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include <railyard/railyard.h>
#include <railyard/testing.h>

#include "tests/loop/loop.h"

#ifndef FX_PROVIDER
#define FX_PROVIDER RY_PROVIDER_LOOP
#endif

#define FX_MAX_RAILS 4

struct fx_opts {
	unsigned nrails_a, nrails_b;	 /* default 2 */
	const char *net_a[FX_MAX_RAILS]; /* default "net<i>" */
	const char *net_b[FX_MAX_RAILS];
	uint32_t weight_a[FX_MAX_RAILS];
	bool standby[FX_MAX_RAILS]; /* rail i is a standby on a and b */
	uint32_t heartbeat_ms, timeout_ms, ack_timeout_ms, retry_count;
	uint32_t op_timeout_ms, reconnect_min_ms, reconnect_max_ms;
	uint32_t idle_heartbeat_ms;
	uint32_t ops_in_flight, frags_per_wr, wr_per_qp;
	uint32_t progress_threads; /* both; 0: the default */
	uint64_t max_op_size;
	uint64_t reg_cache_bytes; /* a's; 0: cache off */
	bool fence_off;
	enum ry_provider provider; /* 0: FX_PROVIDER */
	size_t buflen;		   /* default 8 MiB + 64 KiB */
	char b_control[100];	   /* "" : 127.0.0.1:0 */
	/* admission: both admit 127.0.0.0/8 unless b_strict; b_names_a
	 * gives b a peer section "a" with a's control address */
	bool b_strict, b_names_a;
	uint32_t b_max_sessions_per_source, b_handshake_timeout_ms;
	uint32_t control_frame_rate; /* both; 0: the default */
	uint32_t standby_below;	     /* both */
	/* both; 0: the defaults (error_* 0 cannot be asked for here) */
	uint32_t error_degrade_ppm, error_drain_ppm, error_quiet_ms;
	const char *key_a, *key_b;   /* key_file of each; NULL: none */
	bool data_mac_a, data_mac_b; /* need keys; soft rails to matter */
	uint32_t lanes;		     /* both; 0: the default */
};

struct fx_events {
	unsigned n_conn_down, n_conn_up, n_rail_down, n_rail_up;
	unsigned n_rail_gone, n_rail_back;
	unsigned n_rail_health; /* RY_EV_RAIL_HEALTH */
	char last_health[160];	/* its reason */
	uint64_t first_conn_down_ns;
	uint64_t first_fail_ns, first_detect_ns; /* its ry_event fields */
	unsigned n_resumed;
	char last_reason[128];
	/* RY_EV_PEER_*: counts, and the last restart's incarnations */
	unsigned n_peer_up, n_peer_down, n_peer_restarted;
	uint64_t restart_old, restart_new, restart_ns;
	char restart_peer[128];
};

struct fx {
	struct fx_opts o;
	struct ry_manager *a, *b;
	struct ry_peer *ab; /* a's handle on b */
	char b_addr[100];
	unsigned char *bufa, *bufb;
	size_t buflen;
	struct ry_region *ra, *rb;
	unsigned char desc_a[RY_DESC_MAX], desc_b[RY_DESC_MAX];
	int desc_a_len, desc_b_len;
	struct fx_events ev_a, ev_b;
};

struct fx_done {
	unsigned ok, err, total;
	enum ry_status last_err;
	char reason[192];
};

void fx_config(struct ry_config *c, const struct fx_opts *o, bool is_b);
/* 0, or the manager create error (-ENOSYS: provider not there). */
int fx_init(struct fx *f, const struct fx_opts *o);
void fx_fini(struct fx *f);
int fx_create_b(struct fx *f); /* (re)create b and its buffer */
void fx_destroy_b(struct fx *f);
void fx_progress(struct fx *f);
/* Progress until pred(arg) or ms elapse; returns pred's last value. */
bool fx_until(struct fx *f, bool (*pred)(void *), void *arg, unsigned ms);
bool fx_until_done(struct fx *f, struct fx_done *d, unsigned n, unsigned ms);
void fx_sleep_progress(struct fx *f, unsigned ms);
void fx_cb(const struct ry_completion *c, void *arg);
uint64_t fx_now_ns(void);
void fx_fill(unsigned char *p, size_t n, uint32_t seed);
unsigned fx_active(struct ry_manager *m, const char *rail);
/* exit 77 with a message when the provider cannot be opened here */
void fx_skip_if_unavailable(void);
bool fx_is_loop(void);
/*
 * main() of a one-case Check suite: quiet logs unless RY_TEST_LOG is set,
 * skip (77) when the provider is missing if `skip`, run the n tests with
 * a timeout of timeout_s each; returns the exit status.
 */
struct TTest;
int fx_run_suite(const char *name, unsigned timeout_s,
		 const struct TTest *const *tests, unsigned n, bool skip);

#endif
