// SPDX-License-Identifier: BSD-2-Clause
/*
 * The provider table and the name tables shared by every provider.  The
 * list of shipped providers is a static table, not constructors: a reader
 * sees here every rail the library can open.  Tests add their own providers
 * (tests/loop) at run time with ry__rail_provider_register().
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/epoll.h>

#include "rails/rail.h"
#include "rails/soft/soft.h"
#include "rails/tcp/tcp.h"
#ifdef RY_WITH_VERBS
#include "rails/verbs/verbs.h"
#endif

static const struct ry_rail_ops *const shipped[] = {
    [RY_PROVIDER_SOFT] = &ry__soft_ops,
    [RY_PROVIDER_TCP] = &ry__tcp_ops,
#ifdef RY_WITH_VERBS
    [RY_PROVIDER_VERBS] = &ry__verbs_ops,
#endif
};

_Static_assert(sizeof(shipped) / sizeof(shipped[0]) <= RY__PROVIDER_TEST,
	       "shipped providers overlap the test provider kinds");

/*
 * What rails dispatch through: each provider's table with its empty slots
 * filled, so the inline dispatch in rail.h never tests for NULL.  A slot is
 * written once, under table_lock, before any rail of its kind can be
 * opened, and never changes after.
 */
static struct ry_rail_ops table[RY__PROVIDER_MAX];
static const struct ry_rail_ops *source[RY__PROVIDER_MAX];
static bool shipped_filled;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

/* One typed stub per slot: calling through a cast function type is UB. */
#define NOSUP(slot, ...)                                                       \
	static int nosup_##slot(__VA_ARGS__)                                   \
	{                                                                      \
		return -EOPNOTSUPP;                                            \
	}
NOSUP(query, struct ry_rail *r, struct ry_rail_attr *a)
NOSUP(fd, struct ry_rail *r)
NOSUP(watch, struct ry_rail *r, int epfd, void *tag)
NOSUP(progress, struct ry_rail *r)
NOSUP(pending, struct ry_rail *r)
NOSUP(get_event, struct ry_rail *r, struct ry_rail_event *ev)
NOSUP(alloc_pd, struct ry_rail *r, struct ry_pd **pd_p)
NOSUP(dealloc_pd, struct ry_pd *pd)
NOSUP(reg_mr, struct ry_pd *pd, void *addr, size_t len, unsigned access,
      struct ry_mr **mr_p)
NOSUP(dereg_mr, struct ry_mr *mr)
NOSUP(create_qp, struct ry_pd *pd, const struct ry_qp_init *init,
      struct ry_qp **qp_p)
NOSUP(modify_qp, struct ry_qp *qp, enum ry_qp_state s,
      const struct ry_qp_attr *attr)
NOSUP(destroy_qp, struct ry_qp *qp)
NOSUP(post_send, struct ry_qp *qp, const struct ry_send_wr *wr, unsigned n)
NOSUP(post_recv, struct ry_rail *r, const struct ry_recv_wr *wr, unsigned n)
NOSUP(poll_cq, struct ry_rail *r, struct ry_wc *wc, int n)
NOSUP(create_cq, struct ry_rail *r, struct ry_cq **cq_p)
NOSUP(destroy_cq, struct ry_cq *cq)
NOSUP(cq_poll, struct ry_cq *cq, struct ry_wc *wc, int n)
NOSUP(cq_pending, struct ry_cq *cq)
NOSUP(set_fault, struct ry_rail *r, const struct ry_fault *f)
NOSUP(set_link, struct ry_rail *r, enum ry_link_state s)
NOSUP(get_stats, struct ry_rail *r, struct ry_rail_stats *st)
#undef NOSUP

static void fill(enum ry_provider kind, const struct ry_rail_ops *ops)
{
	struct ry_rail_ops *t = &table[kind];

	*t = *ops;
	if (!t->name)
		t->name = "?";
#define FILL(slot)                                                             \
	if (!t->slot)                                                          \
		t->slot = nosup_##slot;
	FILL(query)
	FILL(fd)
	FILL(watch)
	FILL(progress)
	FILL(pending)
	FILL(get_event)
	FILL(alloc_pd)
	FILL(dealloc_pd)
	FILL(reg_mr)
	FILL(dereg_mr)
	FILL(create_qp)
	FILL(modify_qp)
	FILL(destroy_qp)
	FILL(post_send)
	FILL(post_recv)
	FILL(poll_cq)
	FILL(create_cq)
	FILL(destroy_cq)
	FILL(cq_poll)
	FILL(cq_pending)
	FILL(set_fault)
	FILL(set_link)
	FILL(get_stats)
#undef FILL
	source[kind] = ops;
}

const struct ry_rail_ops *ry__rail_ops(enum ry_provider provider)
{
	const struct ry_rail_ops *ops = NULL;

	if ((unsigned)provider >= RY__PROVIDER_MAX)
		return NULL;
	pthread_mutex_lock(&table_lock);
	if (!shipped_filled) {
		for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]);
		     i++)
			if (shipped[i])
				fill((enum ry_provider)i, shipped[i]);
		shipped_filled = true;
	}
	if (source[provider])
		ops = &table[provider];
	pthread_mutex_unlock(&table_lock);
	return ops;
}

int ry__rail_provider_register(enum ry_provider kind,
			       const struct ry_rail_ops *ops)
{
	int ret = 0;

	if ((unsigned)kind < RY__PROVIDER_TEST ||
	    (unsigned)kind >= RY__PROVIDER_MAX || !ops || !ops->open ||
	    !ops->close)
		return -EINVAL;
	pthread_mutex_lock(&table_lock);
	if (!source[kind])
		fill(kind, ops);
	else if (source[kind] != ops)
		ret = -EEXIST;
	pthread_mutex_unlock(&table_lock);
	return ret;
}

int ry__rail_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	const struct ry_rail_ops *ops = ry__rail_ops(cfg->provider);
	int ret;

	if (!ops)
		return -EPROTONOSUPPORT; /* built without that provider */
	ret = ops->open(cfg, rail_p);
	/* the provider pointed the rail at its own table, maybe with holes */
	if (!ret)
		(*rail_p)->ops = ops;
	return ret;
}

static const char *const wc_status_names[RY_WC__MAX] = {
    [RY_WC_SUCCESS] = "success",
    [RY_WC_FLUSHED] = "flushed",
    [RY_WC_RETRY_EXCEEDED] = "transport retry counter exceeded",
    [RY_WC_RNR_RETRY_EXCEEDED] = "RNR retry counter exceeded",
    [RY_WC_REM_ACCESS] = "remote access error",
    [RY_WC_REM_INVALID_REQ] = "remote invalid request",
    [RY_WC_REM_OP] = "remote operation error",
    [RY_WC_LOC_PROT] = "local protection error",
    [RY_WC_LOC_LEN] = "local length error",
    [RY_WC_GENERAL_ERR] = "general error",
};

const char *ry_wc_status_str(enum ry_wc_status s)
{
	if ((unsigned)s >= RY_WC__MAX || !wc_status_names[s])
		return "unknown status";
	return wc_status_names[s];
}

static const char *const qp_state_names[] = {
    [RY_QPS_RESET] = "RESET", [RY_QPS_INIT] = "INIT", [RY_QPS_RTR] = "RTR",
    [RY_QPS_RTS] = "RTS",     [RY_QPS_ERR] = "ERR",
};

const char *ry_qp_state_str(enum ry_qp_state s)
{
	if ((unsigned)s > RY_QPS_ERR)
		return "?";
	return qp_state_names[s];
}

int ry__rail_watch_move(int from, int to, int fd, uint32_t events, void *tag,
			int rc)
{
	struct epoll_event ev = {.events = events, .data.ptr = tag};

	if (fd < 0)
		return rc;
	if (from >= 0)
		epoll_ctl(from, EPOLL_CTL_DEL, fd, NULL);
	if (to >= 0 && !rc && epoll_ctl(to, EPOLL_CTL_ADD, fd, &ev))
		rc = -errno;
	return rc;
}
