// SPDX-License-Identifier: BSD-2-Clause
/*
 * An external fio ioengine over railyard:
 *
 *   ioengine=external:/usr/lib/.../librailyard-fio.so
 *   ry_config=client.conf   the rails of this (client) node
 *   ry_target=HOST:PORT     a `railyard serve`'s control address
 *
 * Each fio job (process or thread) is a railyard node of its own, named
 * NODE-fioPID.N after the config's node, so that serve gives every job a
 * target region of its own: the job's "file" is that region, of fio's
 * size= bytes (at most serve's --region, 64 MiB by default).  Writes and
 * reads are ry_write()/ry_read() from fio's buffers, registered once;
 * bs, iodepth, rw, numjobs and verify work as with any async engine.  The
 * engine uses the public API only (the target's descriptor comes from the
 * hello protocol of src/cli/session.h, as `railyard bench` gets it).
 *
 * Threading: the library's progress threads move the data and keep the
 * heartbeats going while fio computes (verify); completion and receive
 * callbacks run there and hand their results to the job's thread through
 * lock and cond.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fio.h"
#include "optgroup.h"

#include <railyard/railyard.h>

#include "src/cli/session.h"

struct ry_fio_options {
	void *pad; /* fio wants no option at offset 0 */
	char *config;
	char *target;
	unsigned int timeout_ms;
};

static struct fio_option options[] = {
    {
	.name = "ry_config",
	.lname = "railyard config file",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct ry_fio_options, config),
	.help = "railyard config of this node (its rails)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_RDMA,
    },
    {
	.name = "ry_target",
	.lname = "railyard serve address",
	.type = FIO_OPT_STR_STORE,
	.off1 = offsetof(struct ry_fio_options, target),
	.help = "control address HOST:PORT of a railyard serve",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_RDMA,
    },
    {
	.name = "ry_timeout_ms",
	.lname = "railyard connect timeout",
	.type = FIO_OPT_INT,
	.off1 = offsetof(struct ry_fio_options, timeout_ms),
	.def = "10000",
	.help = "how long to wait for serve's target region (ms)",
	.category = FIO_OPT_C_ENGINE,
	.group = FIO_OPT_G_RDMA,
    },
    {
	.name = NULL,
    },
};

struct ry_fio {
	/* lock: desc, desc_len, refused, done, ndone (callbacks write them) */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a completion, or serve's answer */
	struct ry_manager *mgr;
	struct ry_peer *peer;
	struct ry_region *mr; /* fio's buffers, td->orig_buffer */
	uint8_t desc[RY_DESC_MAX];
	size_t desc_len;
	int refused; /* serve said no (the reason is logged) */
	/* completed io_us not yet reaped (done), and those the last
	 * getevents handed to fio, taken by ->event(0..n-1) (ev) */
	struct io_u **done, **ev;
	unsigned ndone, cap;
};

/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait. */
static struct timespec deadline(double ms)
{
	struct timespec ts;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = ts.tv_nsec + (long long)(ms * 1e6);
	ts.tv_sec += ns / 1000000000;
	ts.tv_nsec = ns % 1000000000;
	return ts;
}

static bool before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* serve's answer to our hello: the descriptor of our region, or no. */
static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	struct ry_fio *rf = arg;
	size_t tag = strlen(CLI_SESSION_DESC_TAG);
	size_t rtag = strlen(CLI_SESSION_REFUSED_TAG);

	if (m->type != RY_MSG_DATA)
		return;
	pthread_mutex_lock(&rf->lock);
	if (rf->desc_len) {
		/* answered already: a repeated hello's second answer */
	} else if (m->len > tag &&
		   !memcmp(m->data, CLI_SESSION_DESC_TAG, tag) &&
		   m->len - tag <= sizeof(rf->desc) &&
		   !ry_desc_check((const char *)m->data + tag, m->len - tag)) {
		memcpy(rf->desc, (const char *)m->data + tag, m->len - tag);
		rf->desc_len = m->len - tag;
	} else if (m->len >= rtag &&
		   !memcmp(m->data, CLI_SESSION_REFUSED_TAG, rtag)) {
		log_err("railyard: %s refused a target region: %.*s\n",
			ry_peer_name(from), (int)(m->len - rtag),
			(const char *)m->data + rtag);
		rf->refused = 1;
	}
	pthread_cond_broadcast(&rf->cond);
	pthread_mutex_unlock(&rf->lock);
}

static void hello_sent(const struct ry_completion *c, void *arg)
{
	/* an unanswered hello is said again; nothing to keep */
}

/* Wait for the region's descriptor, saying hello once a second. */
static int fetch_target(struct ry_fio *rf, unsigned timeout_ms)
{
	struct timespec end = deadline(timeout_ms), now, next;
	int ret = 0;

	pthread_mutex_lock(&rf->lock);
	while (!rf->desc_len && !rf->refused) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!before(&now, &end)) {
			ret = -ETIMEDOUT;
			break;
		}
		pthread_mutex_unlock(&rf->lock);
		ret = ry_send(rf->peer, CLI_SESSION_HELLO,
			      strlen(CLI_SESSION_HELLO), hello_sent, NULL);
		pthread_mutex_lock(&rf->lock);
		if (ret && ret != -EAGAIN)
			break;
		ret = 0;
		next = deadline(1000);
		while (!rf->desc_len && !rf->refused &&
		       pthread_cond_timedwait(&rf->cond, &rf->lock,
					      before(&next, &end) ? &next
								  : &end) == 0)
			;
	}
	if (!ret && rf->refused)
		ret = -EACCES;
	pthread_mutex_unlock(&rf->lock);
	return ret;
}

/* A problem of the config file, FILE:LINE first, into fio's error log. */
static void config_problem(const struct ry_config_error *e, void *arg)
{
	if (e->line > 0)
		log_err("railyard: %s:%d: %s\n", e->file, e->line, e->message);
	else
		log_err("railyard: %s: %s\n", e->file, e->message);
	if (e->hint && *e->hint)
		log_err("railyard:     hint: %s\n", e->hint);
}

static void ry_fio_cleanup(struct thread_data *td)
{
	struct ry_fio *rf = td->io_ops_data;

	if (!rf)
		return;
	/* destroy stops the progress threads and completes what is in
	 * flight as canceled first */
	ry_manager_destroy(rf->mgr);
	pthread_cond_destroy(&rf->cond);
	pthread_mutex_destroy(&rf->lock);
	/* after the manager: a region of a destroyed manager is freed with it
	 */
	free(rf->done);
	free(rf->ev);
	free(rf);
	td->io_ops_data = NULL;
}

/* The job's one "file": the target region, fio's size= bytes. */
static int ry_fio_setup(struct thread_data *td)
{
	struct fio_file *f;

	if (!td->files_index) {
		add_file(td, "railyard", 0, 0);
		td->o.nr_files = td->o.nr_files ?: 1;
		td->o.open_files++;
	}
	f = td->files[0];
	f->real_file_size = td->o.size;
	fio_file_set_size_known(f);
	return 0;
}

static int ry_fio_init(struct thread_data *td)
{
	struct ry_fio_options *o = td->eo;
	struct ry_config *cfg = NULL;
	struct ry_fio *rf;
	char node[sizeof(cfg->node)];
	pthread_condattr_t ca;
	int ret;

	if (!o->config || !o->target) {
		log_err("railyard: ry_config= and ry_target= are needed\n");
		return 1;
	}
	rf = calloc(1, sizeof(*rf));
	if (!rf) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	pthread_mutex_init(&rf->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rf->cond, &ca);
	pthread_condattr_destroy(&ca);
	td->io_ops_data = rf;
	ret = ry_config_load(o->config, &cfg, config_problem, NULL);
	if (ret) {
		log_err("railyard: %s is not usable: %s\n", o->config,
			strerror(-ret));
		return 1;
	}
	/* one node per job: serve gives each its own region */
	snprintf(node, sizeof(node), "%.40s-fio%d.%d", cfg->node, (int)getpid(),
		 td->thread_number);
	snprintf(cfg->node, sizeof(cfg->node), "%s", node);
	ret = ry_manager_create(cfg, &rf->mgr);
	ry_config_free(cfg);
	if (ret) {
		log_err("railyard: cannot start node %s from %s: %s\n", node,
			o->config, strerror(-ret));
		return 1;
	}
	ry_set_recv_cb(rf->mgr, on_recv, rf);
	ret = ry_progress_thread_start(rf->mgr);
	if (ret) {
		log_err("railyard: progress threads: %s\n", strerror(-ret));
		return 1;
	}
	ret = ry_peer_get(rf->mgr, o->target, &rf->peer);
	if (!ret)
		ret = fetch_target(rf, o->timeout_ms);
	if (ret) {
		log_err("railyard: no target region from %s within %u ms: "
			"%s\n",
			o->target, o->timeout_ms, strerror(-ret));
		return 1;
	}
	return 0;
}

/* fio's buffers exist now (after ->init): register them once. */
static int ry_fio_post_init(struct thread_data *td)
{
	struct ry_fio *rf = td->io_ops_data;
	int ret;

	rf->cap = td->o.iodepth;
	rf->done = calloc(rf->cap, sizeof(*rf->done));
	rf->ev = calloc(rf->cap, sizeof(*rf->ev));
	if (!rf->done || !rf->ev) {
		td_verror(td, ENOMEM, "calloc");
		return 1;
	}
	if (!td->orig_buffer)
		return 0; /* no data moves (e.g. trim only) */
	ret = ry_mr_reg(rf->mgr, td->orig_buffer, td->orig_buffer_size, 0,
			&rf->mr);
	if (ret) {
		log_err("railyard: registering %llu bytes of fio buffers: %s "
			"(RLIMIT_MEMLOCK?)\n",
			(unsigned long long)td->orig_buffer_size,
			strerror(-ret));
		return 1;
	}
	return 0;
}

static void io_done(const struct ry_completion *c, void *arg)
{
	struct io_u *io_u = arg;
	struct ry_fio *rf = io_u->engine_data;

	if (c->status != RY_OK) {
		log_err("railyard: %s at offset %llu: %s: %s\n",
			io_u->ddir == DDIR_WRITE ? "write" : "read",
			io_u->offset, ry_status_str(c->status), c->reason);
		io_u->error = EIO;
	} else {
		io_u->error = 0;
	}
	/* at most iodepth are queued, so there is room */
	pthread_mutex_lock(&rf->lock);
	rf->done[rf->ndone++] = io_u;
	pthread_cond_signal(&rf->cond);
	pthread_mutex_unlock(&rf->lock);
}

static enum fio_q_status ry_fio_queue(struct thread_data *td, struct io_u *io_u)
{
	struct ry_fio *rf = td->io_ops_data;
	size_t off = (size_t)((char *)io_u->xfer_buf - td->orig_buffer);
	int ret;

	fio_ro_check(td, io_u);
	io_u->engine_data = rf;
	switch (io_u->ddir) {
	case DDIR_WRITE:
		ret = ry_write(rf->peer, rf->mr, off, rf->desc, rf->desc_len,
			       io_u->offset, io_u->xfer_buflen, io_done, io_u);
		break;
	case DDIR_READ:
		ret = ry_read(rf->peer, rf->mr, off, rf->desc, rf->desc_len,
			      io_u->offset, io_u->xfer_buflen, io_done, io_u);
		break;
	case DDIR_SYNC:
	case DDIR_DATASYNC:
		/* a completed write has landed in the target's memory */
		io_u->error = 0;
		return FIO_Q_COMPLETED;
	default:
		io_u->error = EINVAL;
		return FIO_Q_COMPLETED;
	}
	if (ret) {
		/* the region's bounds are serve's: a job larger than it
		 * fails at its first operation past the end */
		if (ret == -EINVAL)
			log_err("railyard: %llu bytes at offset %llu refused: "
				"is size= larger than serve's --region?\n",
				io_u->xfer_buflen, io_u->offset);
		io_u->error = -ret;
		return FIO_Q_COMPLETED;
	}
	return FIO_Q_QUEUED;
}

static int ry_fio_getevents(struct thread_data *td, unsigned int min,
			    unsigned int max, const struct timespec *t)
{
	struct ry_fio *rf = td->io_ops_data;
	struct timespec end;
	unsigned r;

	if (t)
		end = deadline((double)t->tv_sec * 1e3 +
			       (double)t->tv_nsec / 1e6);
	pthread_mutex_lock(&rf->lock);
	while (rf->ndone < min) {
		if (t ? pthread_cond_timedwait(&rf->cond, &rf->lock, &end)
		      : pthread_cond_wait(&rf->cond, &rf->lock))
			break;
	}
	r = rf->ndone < max ? rf->ndone : max;
	memcpy(rf->ev, rf->done, r * sizeof(*rf->ev));
	memmove(rf->done, rf->done + r, (rf->ndone - r) * sizeof(*rf->done));
	rf->ndone -= r;
	pthread_mutex_unlock(&rf->lock);
	return (int)r;
}

static struct io_u *ry_fio_event(struct thread_data *td, int event)
{
	struct ry_fio *rf = td->io_ops_data;

	return rf->ev[event];
}

static int ry_fio_commit(struct thread_data *td)
{
	return 0;
}

static int ry_fio_open_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

static int ry_fio_close_file(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

/* fio loads the symbol named "ioengine" from an external engine. */
struct ioengine_ops ioengine = {
    .name = "railyard",
    .version = FIO_IOOPS_VERSION,
    .flags = FIO_DISKLESSIO | FIO_NOEXTEND | FIO_NODISKUTIL,
    .setup = ry_fio_setup,
    .init = ry_fio_init,
    .post_init = ry_fio_post_init,
    .queue = ry_fio_queue,
    .commit = ry_fio_commit,
    .getevents = ry_fio_getevents,
    .event = ry_fio_event,
    .cleanup = ry_fio_cleanup,
    .open_file = ry_fio_open_file,
    .close_file = ry_fio_close_file,
    .options = options,
    .option_struct_size = sizeof(struct ry_fio_options),
};
