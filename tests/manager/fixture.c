// SPDX-License-Identifier: BSD-2-Clause
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/manager/fixture.h"

uint64_t fx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool fx_is_loop(void)
{
	return FX_PROVIDER == RY_PROVIDER_LOOP;
}

void fx_config(struct ry_config *c, const struct fx_opts *o, bool is_b)
{
	unsigned n = is_b ? o->nrails_b : o->nrails_a, i;

	/* not in the library: every manager a test makes may need them */
	if (ry_loop_register())
		abort();
	/* the shipped defaults, so the detection tests check those */
	ry_config_init_defaults(c);
	snprintf(c->source, sizeof(c->source), "<test>");
	snprintf(c->node, sizeof(c->node), "%s", is_b ? "b" : "a");
	snprintf(c->control, sizeof(c->control), "%s",
		 is_b && o->b_control[0] ? o->b_control : "127.0.0.1:0");
	c->fragment_size = 4096;
	c->max_op_size = o->max_op_size ? o->max_op_size : 8u << 20;
	/* the suites again with several progress contexts (ctest's *_ctx
	 * entries): every peer record made in turn goes to the next one */
	if (getenv("RY_FX_CONTEXTS"))
		c->contexts = (uint32_t)atoi(getenv("RY_FX_CONTEXTS"));
#define FX_SET(field, v)                                                       \
	do {                                                                   \
		if (v)                                                         \
			field = v;                                             \
	} while (0)
	FX_SET(c->ops_in_flight, o->ops_in_flight);
	FX_SET(c->wr_per_qp, o->wr_per_qp);
	FX_SET(c->frags_per_wr, o->frags_per_wr);
	FX_SET(c->progress_threads, o->progress_threads);
	FX_SET(c->lanes, o->lanes);
	if (!is_b)
		c->reg_cache_bytes = o->reg_cache_bytes;
	FX_SET(c->failover.heartbeat_ms, o->heartbeat_ms);
	FX_SET(c->failover.idle_heartbeat_ms, o->idle_heartbeat_ms);
	FX_SET(c->failover.timeout_ms, o->timeout_ms);
	FX_SET(c->failover.ack_timeout_ms, o->ack_timeout_ms);
	FX_SET(c->failover.retry_count, o->retry_count);
	FX_SET(c->failover.reconnect_min_ms, o->reconnect_min_ms);
	FX_SET(c->failover.reconnect_max_ms, o->reconnect_max_ms);
	FX_SET(c->failover.op_timeout_ms, o->op_timeout_ms);
	c->failover.fence = !o->fence_off;
	FX_SET(c->control_frame_rate, o->control_frame_rate);
	c->standby_below = o->standby_below;
	FX_SET(c->error_degrade_ppm, o->error_degrade_ppm);
	FX_SET(c->error_drain_ppm, o->error_drain_ppm);
	FX_SET(c->error_quiet_ms, o->error_quiet_ms);
	/* both ends are on loopback with kernel-chosen control ports */
	if (!is_b || !o->b_strict) {
		c->accept.n = 1;
		snprintf(c->accept.s[0], sizeof(c->accept.s[0]), "127.0.0.0/8");
	}
	if (is_b) {
		FX_SET(c->max_sessions_per_source,
		       o->b_max_sessions_per_source);
		FX_SET(c->handshake_timeout_ms, o->b_handshake_timeout_ms);
	}
	if (is_b ? o->key_b : o->key_a)
		snprintf(c->key_file, sizeof(c->key_file), "%s",
			 is_b ? o->key_b : o->key_a);
	c->data_mac = is_b ? o->data_mac_b : o->data_mac_a;
	c->log.level = RY_LOG_WARN;
	c->n_rails = n;
	for (i = 0; i < n; i++) {
		struct ry_rail_config *r = &c->rails[i];
		const char *net = is_b ? o->net_b[i] : o->net_a[i];

		snprintf(r->name, sizeof(r->name), "r%u", i);
		r->provider = o->provider ? o->provider : FX_PROVIDER;
		if (net)
			snprintf(r->network, sizeof(r->network), "%s", net);
		else
			snprintf(r->network, sizeof(r->network), "net%u", i);
		if (r->provider == RY_PROVIDER_SOFT ||
		    r->provider == RY_PROVIDER_TCP)
			snprintf(r->address, sizeof(r->address), "127.0.0.1:0");
		else
			snprintf(r->address, sizeof(r->address), "%s-r%u",
				 is_b ? "b" : "a", i);
		r->weight = !is_b && o->weight_a[i] ? o->weight_a[i] : 1;
		r->standby = o->standby[i];
		r->gid_index = -1;
	}
#undef FX_SET
}

static void on_event(const struct ry_event *ev, void *arg)
{
	struct fx_events *e = arg;

	switch (ev->type) {
	case RY_EV_CONN_DOWN:
		if (!e->n_conn_down++) {
			e->first_conn_down_ns = ev->time_ns;
			e->first_fail_ns = ev->fail_ns;
			e->first_detect_ns = ev->detect_ns;
		}
		snprintf(e->last_reason, sizeof(e->last_reason), "%s",
			 ev->reason);
		break;
	case RY_EV_CONN_UP:
		e->n_conn_up++;
		break;
	case RY_EV_RAIL_DOWN:
		e->n_rail_down++;
		break;
	case RY_EV_RAIL_UP:
		e->n_rail_up++;
		break;
	case RY_EV_RAIL_GONE:
		e->n_rail_gone++;
		break;
	case RY_EV_RAIL_BACK:
		e->n_rail_back++;
		break;
	case RY_EV_RAIL_HEALTH:
		e->n_rail_health++;
		snprintf(e->last_health, sizeof(e->last_health), "%s",
			 ev->reason);
		break;
	case RY_EV_CONN_RESUMED:
		e->n_resumed++;
		break;
	case RY_EV_PEER_UP:
		e->n_peer_up++;
		break;
	case RY_EV_PEER_DOWN:
		e->n_peer_down++;
		break;
	case RY_EV_PEER_RESTARTED:
		e->n_peer_restarted++;
		e->restart_old = ev->old_incarnation;
		e->restart_new = ev->new_incarnation;
		e->restart_ns = ev->time_ns;
		snprintf(e->restart_peer, sizeof(e->restart_peer), "%s",
			 ev->peer ? ev->peer : "");
		break;
	}
}

int fx_create_b(struct fx *f)
{
	struct ry_peer_config pa = {.name = "a"};
	struct ry_config c;
	int ret;

	fx_config(&c, &f->o, true);
	if (f->o.b_names_a) {
		ry_manager_control_addr(f->a, pa.address, sizeof(pa.address));
		c.peers = &pa;
		c.n_peers = 1;
	}
	ret = ry_manager_create(&c, &f->b);
	if (ret)
		return ret;
	ry_set_event_cb(f->b, on_event, &f->ev_b);
	ry_manager_control_addr(f->b, f->b_addr, sizeof(f->b_addr));
	memset(f->bufb, 0, f->buflen);
	ret = ry_mr_reg(f->b, f->bufb, f->buflen,
			RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ, &f->rb);
	if (ret)
		return ret;
	f->desc_b_len = ry_mr_pack(f->rb, f->desc_b, sizeof(f->desc_b));
	return f->desc_b_len < 0 ? f->desc_b_len : 0;
}

void fx_destroy_b(struct fx *f)
{
	ry_manager_destroy(f->b);
	f->b = NULL;
	f->rb = NULL;
}

int fx_init(struct fx *f, const struct fx_opts *o)
{
	struct ry_config c;
	int ret;

	memset(f, 0, sizeof(*f));
	if (o)
		f->o = *o;
	if (!f->o.nrails_a)
		f->o.nrails_a = 2;
	if (!f->o.nrails_b)
		f->o.nrails_b = f->o.nrails_a;
	f->buflen = f->o.buflen ? f->o.buflen : (8u << 20) + 65536;
	f->bufa = malloc(f->buflen);
	f->bufb = malloc(f->buflen);
	if (!f->bufa || !f->bufb)
		return -ENOMEM;
	memset(f->bufa, 0, f->buflen);
	fx_config(&c, &f->o, false);
	ret = ry_manager_create(&c, &f->a);
	if (ret)
		return ret;
	ry_set_event_cb(f->a, on_event, &f->ev_a);
	ret = fx_create_b(f);
	if (ret)
		return ret;
	ret = ry_mr_reg(f->a, f->bufa, f->buflen,
			RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ, &f->ra);
	if (ret)
		return ret;
	f->desc_a_len = ry_mr_pack(f->ra, f->desc_a, sizeof(f->desc_a));
	if (f->desc_a_len < 0)
		return f->desc_a_len;
	return ry_peer_get(f->a, f->b_addr, &f->ab);
}

void fx_fini(struct fx *f)
{
	ry_manager_destroy(f->a);
	ry_manager_destroy(f->b);
	free(f->bufa);
	free(f->bufb);
	memset(f, 0, sizeof(*f));
}

void fx_progress(struct fx *f)
{
	if (f->a)
		ry_progress(f->a);
	if (f->b)
		ry_progress(f->b);
}

bool fx_until(struct fx *f, bool (*pred)(void *), void *arg, unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000ull;
	unsigned spins = 0;

	while (!pred(arg)) {
		if (fx_now_ns() > end)
			return pred(arg);
		fx_progress(f);
		if (++spins % 64 == 0) {
			struct timespec ts = {0, 100000};

			nanosleep(&ts, NULL);
		}
	}
	return true;
}

struct done_wait {
	struct fx_done *d;
	unsigned n;
};

static bool done_pred(void *arg)
{
	struct done_wait *w = arg;

	return w->d->total >= w->n;
}

bool fx_until_done(struct fx *f, struct fx_done *d, unsigned n, unsigned ms)
{
	struct done_wait w = {d, n};

	return fx_until(f, done_pred, &w, ms);
}

static bool never(void *arg)
{
	return false;
}

void fx_sleep_progress(struct fx *f, unsigned ms)
{
	fx_until(f, never, NULL, ms);
}

void fx_cb(const struct ry_completion *c, void *arg)
{
	struct fx_done *d = arg;

	d->total++;
	if (c->status == RY_OK) {
		d->ok++;
	} else {
		d->err++;
		d->last_err = c->status;
		snprintf(d->reason, sizeof(d->reason), "%s", c->reason);
	}
}

void fx_fill(unsigned char *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 12345;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}

unsigned fx_active(struct ry_manager *m, const char *rail)
{
	struct ry_rail_info ri;

	if (ry_rail_info(m, rail, &ri))
		return 0;
	return ri.peers_active;
}

void fx_skip_if_unavailable(void)
{
	struct ry_manager *m;
	struct ry_config c;
	struct fx_opts o = {.nrails_a = 1};
	int ret;

	fx_config(&c, &o, false);
	ret = ry_manager_create(&c, &m);
	if (ret == -ENOSYS || ret == -EPROTONOSUPPORT) {
		printf("SKIP: the %s rail is not available here (%s)\n",
		       FX_PROVIDER == RY_PROVIDER_SOFT ? "soft" : "test",
		       strerror(-ret));
		exit(77);
	}
	if (!ret)
		ry_manager_destroy(m);
}
