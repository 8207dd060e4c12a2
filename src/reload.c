// SPDX-License-Identifier: BSD-2-Clause
/*
 * Reload: a running manager takes a new config (ry_manager_reload).
 *
 * Everything is decided before anything changes: the new config is
 * validated, compared with the running one, and refused as a whole when it
 * changes what only a restart can (node, control, fragment_size,
 * max_op_size, wr_per_qp, frags_per_wr, key_file set or removed) or needs
 * more rail slots
 * than are left.  New rails are opened and every region is registered on
 * them next; if any of that fails it is undone and nothing else has
 * changed.  Only then is the change made, under the cold lock with the progress
 * threads stopped (LOCKING: a removed rail's thread must not run while its
 * rail closes, and the threads get their rails anew when they restart):
 *
 *   rail removed      like a local link-down: its connections fail, their
 *                     posted work is flushed and replayed on the other
 *                     rails, the peers are asked to fence their side (which
 *                     fails it there at once); then its QPs, registrations
 *                     and the rail itself are closed.  The slot becomes a
 *                     hole and is never reused in this process, so a
 *                     descriptor a peer still holds never names another
 *                     rail by that index.
 *   rail added        opened in a new slot, every region registered on it,
 *                     paired with the peers' rails of its network; each
 *                     peer hears the new rail list (HELLO again) and pairs
 *                     too.  Descriptors packed before the reload carry no
 *                     key for it: pack again to let operations use it.
 *                     One whose device, port, interface or address is not
 *                     there is added missing, as at start, and opens when
 *                     it appears (rail_life.c); require_all_rails refuses
 *                     the reload instead.
 *   rail changed      any attribute: removed and added (a new slot).
 *   peer removed      its operations fail (RY_EPEER), its connections and
 *                     control sessions close, it is not dialed again and
 *                     ry_peer_get() no longer finds it; the record stays
 *                     (the application may hold it) until destroy.
 *   peer added        admitted and dialed like any configured peer.
 *   peer address      removed and added.
 *   key_file          read again, changed or not: a new key becomes the
 *                     current one and the previous one is accepted for
 *                     key_overlap_s (src/auth.c); a file that cannot be
 *                     read refuses the reload and the keys stay.
 *   failover.*        heartbeat, timeout, op timeout, reconnect backoff and
 *                     fence at once; ack_timeout_ms, retry_count and
 *                     rnr_retry for connections made after the reload.
 *   the rest          ops_in_flight, reg_cache_bytes, progress_threads,
 *                     accept, max_sessions*, handshake_timeout_ms,
 *                     control_frame_*, standby_below, require_all_rails,
 *                     lanes (their rails added or removed as above),
 *                     error_* (from the next sample) and log
 *                     (the process's log is set by ry_manager_reload_file()
 *                     and by railyard serve, not by a config built by hand).
 *
 * Connections on rails that stay are not touched: their QPs, posted work
 * and counters go on; the progress threads only pause for the reload.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config/config_int.h"
#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/progress.h"
#include "src/region.h"

/* How long a removed rail's flushed work may take to come back. */
#define DRAIN_NS 2000000000ull

static void log_problem(const struct ry_config_error *e, void *arg)
{
	(void)arg;
	RY_ERR("reload", "%s:%d: %s%s%s", e->file, e->line, e->message,
	       e->hint && *e->hint ? "; " : "", e->hint ? e->hint : "");
}

/* Problems go to the caller's callback, else to the log. */
struct reporter {
	ry_config_report_fn fn;
	void *arg;
	const char *file;
	char *text; /* the file's, for option lines; NULL: none */
	int n;
};

static void say(struct reporter *r, int line, const char *hint, const char *fmt,
		...)
{
	struct ry_config_error e;
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e.file = r->file;
	e.line = line;
	e.message = msg;
	e.hint = hint ? hint : "";
	r->n++;
	r->fn(&e, r->arg);
}

/* The line of a top-level option in the file, or 0 (default, or by hand). */
static int option_line(const struct reporter *r, const char *name)
{
	size_t n = strlen(name);
	const char *s = r->text;
	int line = 1;

	while (s && *s) {
		const char *t = s + strspn(s, " \t");

		if (!strncmp(t, name, n) && strchr(" \t=", t[n]))
			return line;
		s = strchr(s, '\n');
		if (s)
			s++;
		line++;
	}
	return 0;
}

static bool same_rail(const struct ry_rail_config *a,
		      const struct ry_rail_config *b)
{
	const struct ry_fault_config *fa = &a->fault, *fb = &b->fault;

	return a->provider == b->provider && !strcmp(a->network, b->network) &&
	       !strcmp(a->address, b->address) &&
	       !strcmp(a->interface, b->interface) &&
	       !strcmp(a->device, b->device) && a->port == b->port &&
	       a->gid_index == b->gid_index && a->mtu == b->mtu &&
	       a->weight == b->weight && a->rate_bps == b->rate_bps &&
	       a->traffic_class == b->traffic_class && a->sl == b->sl &&
	       a->cm == b->cm && fa->down == fb->down && fa->drop == fb->drop &&
	       fa->duplicate == fb->duplicate && fa->reorder == fb->reorder &&
	       fa->corrupt == fb->corrupt && fa->delay_us == fb->delay_us;
}

/* What changes, decided before anything does. */
struct plan {
	int keep[RY_MAX_RAILS];	 /* new rail k: the live slot it is, or -1 */
	bool gone[RY_MAX_RAILS]; /* live slot removed (or replaced) */
	unsigned slot[RY_MAX_RAILS]; /* new rail k, when added: its slot */
	unsigned nadd, ngone;
};

static const struct ry_peer_config *peer_cfg(const struct ry_config *c,
					     const char *name)
{
	for (unsigned i = 0; i < c->n_peers; i++)
		if (!strcmp(c->peers[i].name, name))
			return &c->peers[i];
	return NULL;
}

#define RESTART_HINT "restart the node to change it"

/* Refuse what a live manager cannot change; plan the rails.  m_lock. */
static void check(struct ry_manager *m, const struct ry_config *c,
		  struct reporter *r, struct plan *pl)
{
	const struct ry_config *o = &m->m_cfg;
	uint32_t wr = c->wr_per_qp;
	unsigned i, k, free_slots;

#define SAME_STR(f)                                                            \
	if (strcmp(o->f, c->f))                                                \
		say(r, option_line(r, #f), RESTART_HINT,                       \
		    #f " cannot change while running (\"%s\" -> \"%s\")",      \
		    o->f, c->f);
#define SAME_NUM(f, v)                                                         \
	if ((uint64_t)(v) != (uint64_t)o->f)                                   \
		say(r, option_line(r, #f), RESTART_HINT,                       \
		    #f " cannot change while running (%llu -> %llu)",          \
		    (unsigned long long)o->f, (unsigned long long)(v));
	SAME_STR(node)
	SAME_STR(control)
	/* only rotation: a node turning authentication on or off would be
	 * refused by, or refuse, every peer at once */
	if (!o->key_file[0] != !c->key_file[0])
		say(r, option_line(r, "key_file"), RESTART_HINT,
		    "key_file cannot be %s while running (a new key can: "
		    "write it to the file and reload)",
		    c->key_file[0] ? "set" : "removed");
	SAME_NUM(fragment_size, c->fragment_size)
	SAME_NUM(max_op_size, c->max_op_size)
	SAME_NUM(frags_per_wr, c->frags_per_wr)
	SAME_NUM(contexts, c->contexts)
	/* the running value may have been lowered to fit a rail (manager.c) */
	for (i = 0; i < m->m_nrails; i++) {
		const struct ry__lrail *lr = &m->m_rails[i];

		if (ry__lrail_live(lr) && lr->lr_attr.max_qp_wr > 2 &&
		    wr > lr->lr_attr.max_qp_wr - 2)
			wr = lr->lr_attr.max_qp_wr - 2;
	}
	SAME_NUM(wr_per_qp, wr)
#undef SAME_STR
#undef SAME_NUM

	memset(pl, 0, sizeof(*pl));
	/* a missing rail (rail_life.c) is the config's as an open one is */
	for (i = 0; i < m->m_nrails; i++)
		pl->gone[i] = ry__lrail_live(&m->m_rails[i]) ||
			      ry__rail_life_missing(&m->m_rails[i].lr_life);
	for (k = 0; k < c->n_rails; k++) {
		pl->keep[k] = -1;
		for (i = 0; i < m->m_nrails; i++) {
			const struct ry__lrail *lr = &m->m_rails[i];
			const struct ry_rail_config *rc =
			    ry__lrail_live(lr) ? &lr->lr_cfg
					       : &lr->lr_life.rl_cfg;

			if (!pl->gone[i] || strcmp(rc->name, c->rails[k].name))
				continue;
			if (same_rail(rc, &c->rails[k])) {
				pl->keep[k] = (int)i;
				pl->gone[i] = false;
			}
			break;
		}
		if (pl->keep[k] < 0)
			pl->slot[k] = m->m_nrails + pl->nadd++;
	}
	for (i = 0; i < m->m_nrails; i++)
		pl->ngone += pl->gone[i];
	free_slots = RY_MAX_RAILS - m->m_nrails;
	if (pl->nadd > free_slots) {
		for (k = 0; k < c->n_rails; k++)
			if (pl->keep[k] < 0 && pl->slot[k] >= RY_MAX_RAILS)
				say(r, c->rails[k].line,
				    "a rail slot is used once per process, so "
				    "that descriptors never name another rail; "
				    "restart the node",
				    "rail %s: no rail slot left (%u of %u used "
				    "by rails opened since the start)",
				    c->rails[k].name, m->m_nrails,
				    RY_MAX_RAILS);
	}
}

/*
 * The planned new slots' connections, for every peer record (they hold
 * only the slots there were when they were made): allocated before
 * anything changes, so that running out of memory refuses the reload
 * rather than leaving a record without one.  Nothing looks at a slot at
 * or above m_nrails, so they wait unused until the change.
 */
static void drop_conns(struct ry_manager *m, const struct ry_config *c,
		       const struct plan *pl)
{
	for (struct ry_peer *p = m->m_peers; p; p = p->pr_next)
		for (unsigned k = 0; k < c->n_rails; k++) {
			unsigned s = pl->slot[k];

			if (pl->keep[k] < 0 && s >= p->pr_nslots) {
				free(p->pr_conn[s]);
				p->pr_conn[s] = NULL;
			}
		}
}

static int add_conns(struct ry_manager *m, const struct ry_config *c,
		     const struct plan *pl)
{
	for (struct ry_peer *p = m->m_peers; p; p = p->pr_next)
		for (unsigned k = 0; k < c->n_rails; k++) {
			unsigned s = pl->slot[k];

			if (pl->keep[k] >= 0 || p->pr_conn[s])
				continue;
			p->pr_conn[s] = calloc(1, sizeof(*p->pr_conn[s]));
			if (!p->pr_conn[s]) {
				drop_conns(m, c, pl);
				return -ENOMEM;
			}
		}
	return 0;
}

/* A new rail of a reload that does not go ahead: closed, or forgotten if
 * it was missing. */
static void undo_new(struct ry_manager *m, struct ry__lrail *lr)
{
	struct ry_region *rg;

	if (ry__rail_life_missing(&lr->lr_life)) {
		lr->lr_life.rl_missing = false;
		return;
	}
	for (rg = m->m_regions; rg; rg = rg->rg_next)
		ry__region_dereg_rail(rg, lr);
	ry__lrail_close(lr);
}

/*
 * Open the planned new rails and register every region on them.  A rail
 * whose device, port, interface or address is not there is added missing,
 * as at start (rail_life.c): it opens when it appears, unless
 * require_all_rails refuses the reload instead.
 */
static int open_new(struct ry_manager *m, const struct ry_config *c,
		    const struct plan *pl, struct reporter *r)
{
	struct ry_region *rg;
	unsigned k, done = 0;
	int ret = 0;

	for (k = 0; k < c->n_rails && !ret; k++) {
		struct ry__lrail *lr = &m->m_rails[pl->slot[k]];

		if (pl->keep[k] >= 0)
			continue;
		ret = ry__rail_life_create(m, pl->slot[k], &c->rails[k]);
		for (rg = m->m_regions; rg && !ret && lr->lr_rail;
		     rg = rg->rg_next)
			ret = ry__region_reg_rail(rg, lr);
		done = k + 1;
		if (ret)
			say(r, c->rails[k].line, NULL,
			    "rail %s: cannot open: %s", c->rails[k].name,
			    strerror(-ret));
	}
	if (!ret)
		return 0;
	for (k = 0; k < done; k++)
		if (pl->keep[k] < 0)
			undo_new(m, &m->m_rails[pl->slot[k]]);
	return ret;
}

static bool slot_busy(struct ry_manager *m, unsigned s)
{
	for (struct ry_peer *p = m->m_peers; p; p = p->pr_next) {
		const struct ry__conn *c = p->pr_conn[s];

		if (c->cn_state == CONN_DRAINING || c->cn_state == CONN_FAILED)
			return true;
	}
	return false;
}

/*
 * Take a rail out of service the way a link-down would, wait up to
 * drain_ns for its flushed work to come back (replayed on the other rails
 * once the threads run again), then close it.  The cold lock held; the
 * threads stopped (a reload), or kept off the rail (rail_life.c: a rail
 * whose device is gone, drain_ns 0).
 */
void ry__rail_remove(struct ry_manager *m, struct ry__lrail *lr,
		     uint64_t drain_ns, const char *why)
{
	uint64_t now = ry__now_ns(), end = now + drain_ns;
	char name[RY_NAME_MAX];
	struct ry_region *rg;
	struct ry_peer *p;

	snprintf(name, sizeof(name), "%s", lr->lr_cfg.name);

	lr->lr_link = RY_LINK_DOWN; /* no new connection on it */
	for (p = m->m_peers; p; p = p->pr_next)
		ry__conn_link_failed(p->pr_conn[lr->lr_idx], why, now);
	ry__replay_run(m);
	while (slot_busy(m, lr->lr_idx) && ry__now_ns() < end) {
		struct timespec ts = {0, 200000};

		pthread_mutex_lock(&lr->lr_lock);
		ry__rail_progress(lr->lr_rail);
		pthread_mutex_unlock(&lr->lr_lock);
		ry__poll_rail(lr, ry__now_ns());
		ry__replay_run(m);
		if (slot_busy(m, lr->lr_idx))
			nanosleep(&ts, NULL);
	}
	for (p = m->m_peers; p; p = p->pr_next)
		ry__conn_destroy_qp(p->pr_conn[lr->lr_idx]);
	for (rg = m->m_regions; rg; rg = rg->rg_next)
		ry__region_dereg_rail(rg, lr);
	ry__lrail_close(lr);
	now = ry__now_ns();
	for (p = m->m_peers; p; p = p->pr_next) {
		struct ry__conn *c = p->pr_conn[lr->lr_idx];

		/* the rail is closed: nothing can complete these twice */
		while (!ry__list_empty(&c->cn_posted)) {
			struct ry__wr *w = ry__list_first_entry(
			    &c->cn_posted, struct ry__wr, wr_link);
			struct ry_wc wc = {.wr_id = (uintptr_t)w,
					   .status = RY_WC_FLUSHED};

			if (drain_ns)
				RY_WARN(
				    "mgr",
				    "rail %s: work not flushed within "
				    "%llu ms: replayed",
				    name,
				    (unsigned long long)(drain_ns / 1000000));
			ry__wr_complete(m, w, &wc, now);
		}
		/*
		 * A hole keeps the peer's totals (the removed rail's history)
		 * and what its fence needs: the request may be lost with a
		 * control session (with key_file the reload closes them), and
		 * ry__fence_resend() sends it again once the peer is back.
		 * lr_link stays down, so nothing connects on it.
		 */
		ry__conn_renew(c, p, lr);
		ry__peer_dirty(p);
	}
}

static void retire_peer(struct ry_manager *m, struct ry_peer *p)
{
	uint64_t now = ry__now_ns();
	struct ry__list *pos, *next;
	char why[192];

	RY_INFO("reload", "peer %s: removed from the config", p->pr_name);
	snprintf(why, sizeof(why),
		 "peer %s: removed from the config by a "
		 "reload",
		 p->pr_name);
	p->pr_retired = true;
	p->pr_dial = false;
	ry__peer_index(p);
	ry__list_for_each_safe(pos, next, &p->pr_ops)
		ry__op_fail(ry__list_entry(pos, struct ry__op, op_all),
			    RY_EPEER, why);
	for (unsigned i = 0; i < m->m_nrails; i++)
		ry__conn_link_failed(p->pr_conn[i], "peer removed by a reload",
				     now);
	ry__replay_run(m);
	ry__ctl_drop_peer(m, p, "peer removed from the config by a reload");
}

/* Peers: removed (or re-addressed) ones go, added ones may be dialed. */
static int apply_peers(struct ry_manager *m, const struct ry_config *c)
{
	struct ry_peer_config *np = NULL;
	struct ry_peer *p;
	unsigned i;

	if (c->n_peers) {
		np = calloc(c->n_peers, sizeof(*np));
		if (!np)
			return -ENOMEM;
		memcpy(np, c->peers, c->n_peers * sizeof(*np));
	}
	for (i = 0; i < m->m_cfg.n_peers; i++) {
		const struct ry_peer_config *o = &m->m_cfg.peers[i];
		const struct ry_peer_config *n = peer_cfg(c, o->name);

		if (n && !strcmp(n->address, o->address))
			continue;
		p = ry__peer_find(m, o->name, o->address);
		if (p && !p->pr_retired && !p->pr_from_hello)
			retire_peer(m, p);
	}
	for (i = 0; i < c->n_peers; i++) {
		const struct ry_peer_config *o =
		    peer_cfg(&m->m_cfg, np[i].name);

		if (o && !strcmp(o->address, np[i].address))
			continue;
		RY_INFO("reload", "peer %s: added (%s)", np[i].name,
			np[i].address);
		/* a record of the same name retired earlier comes back */
		for (p = m->m_peers; p; p = p->pr_next)
			if (p->pr_retired && !strcmp(p->pr_name, np[i].name)) {
				p->pr_retired = false;
				snprintf(p->pr_addr, sizeof(p->pr_addr), "%s",
					 np[i].address);
				p->pr_dial = true;
				ry__peer_set_state(p, PEER_NEW);
				ry__peer_index(p);
			}
	}
	free(m->m_cfg.peers);
	m->m_cfg.peers = np;
	m->m_cfg.n_peers = c->n_peers;
	return 0;
}

/* The options that apply live. */
static void apply_options(struct ry_manager *m, const struct ry_config *c)
{
	struct ry_config *o = &m->m_cfg;

	o->ops_in_flight = c->ops_in_flight;
	o->reg_cache_bytes = c->reg_cache_bytes;
	o->progress_threads = c->progress_threads;
	o->accept = c->accept;
	o->max_sessions = c->max_sessions;
	o->max_sessions_per_source = c->max_sessions_per_source;
	o->handshake_timeout_ms = c->handshake_timeout_ms;
	o->control_frame_rate = c->control_frame_rate;
	o->control_frame_burst = c->control_frame_burst;
	o->standby_below = c->standby_below;
	o->key_overlap_s = c->key_overlap_s;
	o->error_degrade_ppm = c->error_degrade_ppm;
	o->error_drain_ppm = c->error_drain_ppm;
	o->error_quiet_ms = c->error_quiet_ms;
	o->lanes = c->lanes; /* its rails were added and removed as rails */
	snprintf(o->key_file, sizeof(o->key_file), "%s", c->key_file);
	o->require_all_rails = c->require_all_rails;
	o->failover = c->failover;
	o->log = c->log;
	snprintf(o->source, sizeof(o->source), "%s", c->source);
	ry__mgr_timing(m);
	ry__timer_arm(m);
	ry__ctl_admit_reload(m);
}

/* True if the calling thread is one of the manager's progress threads. */
static bool on_progress_thread(struct ry_manager *m)
{
	pthread_t self = pthread_self();
	bool on = false;

	ry__lock_and_run_leftovers(m);
	if (m->m_thread_on) {
		on = pthread_equal(self, m->m_thread);
		for (unsigned i = 0; i < m->m_nrt; i++)
			on |= m->m_rt[i].rt_running &&
			      pthread_equal(self, m->m_rt[i].rt_thread);
	}
	ry__unlock(m);
	return on;
}

static int reload(struct ry_manager *m, const struct ry_config *cfg,
		  struct reporter *r)
{
	struct ry_config c;
	struct ry__authkey *key = NULL;
	struct plan pl;
	struct ry_peer *p;
	bool threads, rails, was_require_all;
	unsigned i, k;
	int ret;

	const char *why = "no config";
	char lwhy[200];

	if (ry__config_adopt(cfg, &c, &why)) {
		say(r, 0, "call ry_config_init_defaults() on it first", "%s",
		    why);
		return -EINVAL;
	}
	ry__opt_fill_zero(&c);
	/* what ry_manager_create() filled in stays as it was */
	if (!c.frags_per_wr)
		c.frags_per_wr = m->m_cfg.frags_per_wr;
	if (!c.node[0])
		snprintf(c.node, sizeof(c.node), "%s", m->m_cfg.node);
	if (!c.control[0])
		snprintf(c.control, sizeof(c.control), "%s", m->m_cfg.control);
	if (ry_config_validate(&c, r->fn, r->arg))
		return -EINVAL;
	/* validated: it expands (validate.c tried it) */
	if (ry__config_lanes(&c, lwhy, sizeof(lwhy))) {
		say(r, option_line(r, "lanes"), "", "%s", lwhy);
		return -EINVAL;
	}
	if (on_progress_thread(m))
		return -EDEADLK;
	if (c.key_file[0]) {
		char kwhy[400], hint[400];

		/* read now, swapped in with the rest: a file that cannot
		 * be read changes nothing */
		ret = ry__auth_load(c.key_file, &key, kwhy, sizeof(kwhy), hint,
				    sizeof(hint));
		if (ret) {
			say(r, option_line(r, "key_file"), hint,
			    "%s; the running key stays", kwhy);
			return ret;
		}
	}

	/* the plan stays valid until the change: only a reload changes the
	 * rails, and m_reloading lets one run at a time */
	ry__lock_and_run_leftovers(m);
	threads = m->m_thread_on;
	ret = m->m_closing ? -ESHUTDOWN : m->m_reloading ? -EBUSY : 0;
	if (!ret) {
		check(m, &c, r, &pl);
		ret = r->n ? -EINVAL : 0;
	}
	m->m_reloading = !ret;
	ry__unlock(m);
	if (ret) {
		ry__auth_key_free(key);
		return ret;
	}
	rails = pl.nadd || pl.ngone;
	if (threads)
		ry_progress_thread_stop(m);

	ry__lock_and_run_leftovers(m);
	/* the new file decides whether its new rails may be missing */
	was_require_all = m->m_cfg.require_all_rails;
	m->m_cfg.require_all_rails = c.require_all_rails;
	ret = open_new(m, &c, &pl, r);
	if (!ret && (ret = add_conns(m, &c, &pl)))
		RY_ERR("reload", "no memory for the new rails' connections");
	if (!ret && (ret = apply_peers(m, &c)))
		drop_conns(m, &c, &pl);
	if (ret) {
		/* open_new and add_conns undid themselves; apply_peers
		 * fails before changing */
		if (pl.nadd && !r->n) {
			for (k = 0; k < c.n_rails; k++)
				if (pl.keep[k] < 0)
					undo_new(m, &m->m_rails[pl.slot[k]]);
		}
		m->m_cfg.require_all_rails = was_require_all;
		ry__unlock(m);
		goto out;
	}
	/* from here on nothing fails */
	if (pl.nadd) {
		m->m_nrails += pl.nadd;
		atomic_store(&m->m_nslots, m->m_nrails);
		for (p = m->m_peers; p; p = p->pr_next)
			for (k = 0; k < c.n_rails; k++)
				if (pl.keep[k] < 0)
					ry__conn_init(p->pr_conn[pl.slot[k]], p,
						      &m->m_rails[pl.slot[k]]);
		for (k = 0; k < c.n_rails; k++)
			if (pl.keep[k] < 0)
				RY_INFO("reload", "rail %s: added",
					c.rails[k].name);
	}
	for (i = 0; i < m->m_nrails; i++)
		if (pl.gone[i] &&
		    ry__rail_life_missing(&m->m_rails[i].lr_life)) {
			RY_INFO("reload", "rail %s: removed (it was missing)",
				m->m_rails[i].lr_life.rl_cfg.name);
			m->m_rails[i].lr_life.rl_missing = false;
		} else if (pl.gone[i]) {
			RY_INFO("reload",
				"rail %s: removed; draining its connections",
				m->m_rails[i].lr_cfg.name);
			ry__rail_remove(m, &m->m_rails[i], DRAIN_NS,
					"rail removed by a reload");
		}
	/* m_cfg.rails mirrors the slots (holes zeroed) */
	for (i = 0; i < m->m_nrails; i++)
		m->m_cfg.rails[i] = m->m_rails[i].lr_cfg;
	m->m_cfg.n_rails = m->m_nrails;
	apply_options(m, &c);
	if (key)
		ry__auth_rotate(m, key);
	key = NULL;
	if (rails) {
		for (p = m->m_peers; p; p = p->pr_next)
			ry__peer_pair(p);
		ry__ctl_announce(m);
	}
	for (p = m->m_peers; p; p = p->pr_next)
		ry__peer_dirty(p);
	RY_INFO("reload", "%s: applied (%u rails added, %u removed)", c.source,
		pl.nadd, pl.ngone);
	ry__deliver_queue(m);
	ry__unlock(m);
	ry__kick(m);
	ry__deliver(m);
out:
	ry__auth_key_free(key);
	if (threads) {
		int t = ry_progress_thread_start(m);

		if (!ret)
			ret = t;
	}
	ry__lock_and_run_leftovers(m);
	m->m_reloading = false;
	ry__unlock(m);
	return ret;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		char *nb;

		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (!got)
			break;
	}
	fclose(f);
	if (buf)
		buf[n] = 0;
	return buf;
}

/*
 * A config loaded from a file names it in source: the file is read again
 * only to find the lines of the options a refusal names.
 */
int ry_manager_reload(struct ry_manager *m, const struct ry_config *cfg,
		      ry_config_report_fn report, void *arg)
{
	struct reporter r = {.fn = report ? report : log_problem, .arg = arg};
	int ret;

	if (!m || !cfg)
		return -EINVAL;
	r.file = cfg->source[0] ? cfg->source : "<config>";
	if (cfg->source[0] && cfg->source[0] != '<')
		r.text = slurp(cfg->source);
	ret = reload(m, cfg, &r);
	free(r.text);
	return ret;
}

int ry_manager_reload_file(struct ry_manager *m, const char *path,
			   ry_config_report_fn report, void *arg)
{
	struct ry_config *cfg;
	int ret;

	if (!m || !path)
		return -EINVAL;
	ret = ry_config_load(path, &cfg, report ? report : log_problem, arg);
	if (ret)
		return ret;
	ret = ry_manager_reload(m, cfg, report, arg);
	if (!ret) {
		/* as ry_manager_create_from_file() does: the file's log */
		ry_log_set_level(cfg->log.level);
		ry_log_use_syslog(cfg->log.syslog);
	}
	ry_config_free(cfg);
	return ret;
}
