// SPDX-License-Identifier: BSD-2-Clause
/*
 * serve's target regions: one per peer incarnation, made on its first
 * hello.  A region shared by every peer let one admitted node overwrite
 * what another was verifying; one per peer keeps a node's bytes its own.
 *
 * The memory is an anonymous mapping: pages cost RSS only once written,
 * so a peer that only reads or writes a little does not pin --region
 * bytes.  A peer that restarts gets a fresh region (the old incarnation's
 * is deregistered first: its rkeys die with it); one whose control session
 * stays lost for TARGET_GRACE_S gives its region back.  --targets bounds
 * how many exist at once; a hello past it is refused with a reason the
 * client prints.
 *
 * Threads: hello() and event() run in the library's callbacks (never two
 * at once), sweep() and destroy() on serve's main thread.  Only the main
 * thread removes entries other than the callback's own peer.  No library
 * call is made under t->lock: a callback holds the library's delivery
 * lock, so taking it after t->lock would invert that order.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "src/cli/session.h"
#include "src/cli/targets.h"

#define TARGET_GRACE_S 30

struct target {
	char peer[RY_ADDR_MAX];
	uint64_t incarnation;
	void *mem;
	struct ry_region *mr;
	uint64_t down_since; /* monotonic ms; 0 while the peer is up */
	size_t reply_len;
	uint8_t reply[sizeof(CLI_SESSION_DESC_TAG) + RY_DESC_MAX];
};

struct cli_targets {
	struct ry_manager *mgr;
	size_t region;
	unsigned max, n;
	pthread_mutex_t lock;
	struct target *t[]; /* max of them, n in use */
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int cli_targets_create(struct ry_manager *mgr, size_t region, unsigned max,
		       struct cli_targets **tp)
{
	struct cli_targets *t;

	if (!region || !max)
		return -EINVAL;
	t = calloc(1, sizeof(*t) + max * sizeof(t->t[0]));
	if (!t)
		return -ENOMEM;
	t->mgr = mgr;
	t->region = (region + 4095) & ~(size_t)4095;
	t->max = max;
	pthread_mutex_init(&t->lock, NULL);
	*tp = t;
	return 0;
}

/* Outside t->lock: deregistration revokes the rkeys before the unmap. */
static void free_target(struct cli_targets *t, struct target *x)
{
	if (x->mr)
		ry_mr_dereg(x->mr);
	munmap(x->mem, t->region);
	free(x);
}

static void release(struct cli_targets *t, struct target *x, const char *why)
{
	if (!x)
		return;
	fprintf(stderr, "railyard serve: target of peer %s released (%s)\n",
		x->peer, why);
	free_target(t, x);
}

/* The hello's answer: the tag, then x's descriptor on every rail now. */
static int pack(struct target *x)
{
	size_t tag = strlen(CLI_SESSION_DESC_TAG);
	int ret;

	memcpy(x->reply, CLI_SESSION_DESC_TAG, tag);
	ret = ry_mr_pack(x->mr, x->reply + tag, sizeof(x->reply) - tag);
	if (ret >= 0)
		x->reply_len = tag + (size_t)ret;
	return ret;
}

/* Unlinks entry i; the caller releases it after unlocking. */
static struct target *take(struct cli_targets *t, unsigned i)
{
	struct target *x = t->t[i];

	t->t[i] = t->t[--t->n];
	return x;
}

static int find(struct cli_targets *t, const char *peer)
{
	for (unsigned i = 0; i < t->n; i++)
		if (!strcmp(t->t[i]->peer, peer))
			return (int)i;
	return -1;
}

static void done(const struct ry_completion *c, void *arg)
{
	(void)c;
	(void)arg;
}

static void refuse(struct ry_peer *from, const char *why)
{
	char msg[256];
	int n =
	    snprintf(msg, sizeof(msg), "%s%s", CLI_SESSION_REFUSED_TAG, why);

	fprintf(stderr, "railyard serve: no target for peer %s: %s\n",
		ry_peer_name(from), why);
	ry_send(from, msg, (size_t)n, done, NULL);
}

static struct target *make(struct cli_targets *t, struct ry_peer *from,
			   uint64_t incarnation, char *why, size_t why_len)
{
	struct target *x = calloc(1, sizeof(*x));
	int ret;

	if (!x) {
		snprintf(why, why_len, "out of memory");
		return NULL;
	}
	snprintf(x->peer, sizeof(x->peer), "%s", ry_peer_name(from));
	x->incarnation = incarnation;
	x->mem = mmap(NULL, t->region, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (x->mem == MAP_FAILED) {
		snprintf(why, why_len, "cannot map %zu bytes: %s", t->region,
			 strerror(errno));
		free(x);
		return NULL;
	}
	ret = ry_mr_reg(t->mgr, x->mem, t->region,
			RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ, &x->mr);
	if (!ret)
		ret = pack(x);
	if (ret < 0) {
		snprintf(why, why_len, "cannot register %zu bytes: %s",
			 t->region, strerror(-ret));
		free_target(t, x);
		return NULL;
	}
	fprintf(stderr,
		"railyard serve: target for peer %s (incarnation %016" PRIx64
		"): %zu bytes\n",
		x->peer, incarnation, t->region);
	return x;
}

/* Pack every target's descriptor again (rails a reload added). */
int cli_targets_repack(struct cli_targets *t)
{
	int ret = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->n && ret >= 0; i++)
		ret = pack(t->t[i]);
	pthread_mutex_unlock(&t->lock);
	return ret < 0 ? ret : 0;
}

void cli_targets_hello(struct cli_targets *t, struct ry_peer *from)
{
	uint8_t reply[sizeof(((struct target *)0)->reply)];
	struct ry_peer_info pi = {0};
	struct target *old = NULL, *x;
	size_t len = 0;
	char why[160];
	bool full;
	int i;

	/* a hello is a message: the peer's HELLO (and incarnation) came
	 * first, so this is the incarnation the descriptor will belong to */
	if (ry_peer_info(from, &pi) || !pi.incarnation)
		return; /* the client asks again in a second */
	pthread_mutex_lock(&t->lock);
	i = find(t, ry_peer_name(from));
	if (i >= 0 && t->t[i]->incarnation == pi.incarnation) {
		len = t->t[i]->reply_len;
		memcpy(reply, t->t[i]->reply, len);
	} else if (i >= 0) {
		old = take(t, (unsigned)i);
	}
	full = t->n == t->max;
	pthread_mutex_unlock(&t->lock);
	if (len) {
		ry_send(from, reply, len, done, NULL);
		return;
	}
	release(t, old, "the peer restarted");
	if (full) {
		snprintf(why, sizeof(why),
			 "all %u target regions are taken (serve --targets)",
			 t->max);
		refuse(from, why);
		return;
	}
	x = make(t, from, pi.incarnation, why, sizeof(why));
	if (!x) {
		refuse(from, why);
		return;
	}
	/* only this callback adds, so the slot counted above is still free */
	pthread_mutex_lock(&t->lock);
	t->t[t->n++] = x;
	len = x->reply_len;
	memcpy(reply, x->reply, len);
	pthread_mutex_unlock(&t->lock);
	ry_send(from, reply, len, done, NULL);
}

void cli_targets_event(struct cli_targets *t, const struct ry_event *ev)
{
	struct target *old = NULL;
	int i;

	/* its keys are new: the clients' next hello (on their connection
	 * up) gets them */
	if (ev->type == RY_EV_RAIL_BACK) {
		cli_targets_repack(t);
		return;
	}
	if (!ev->peer ||
	    (ev->type != RY_EV_PEER_UP && ev->type != RY_EV_PEER_DOWN &&
	     ev->type != RY_EV_PEER_RESTARTED))
		return;
	pthread_mutex_lock(&t->lock);
	i = find(t, ev->peer);
	if (i >= 0) {
		/* a hello of the new incarnation may have replaced it */
		if (ev->type == RY_EV_PEER_RESTARTED)
			old = t->t[i]->incarnation == ev->old_incarnation
				  ? take(t, (unsigned)i)
				  : NULL;
		else
			t->t[i]->down_since =
			    ev->type == RY_EV_PEER_DOWN ? now_ms() : 0;
	}
	pthread_mutex_unlock(&t->lock);
	release(t, old, "the peer restarted");
}

void cli_targets_sweep(struct cli_targets *t)
{
	uint64_t now = now_ms();

	for (;;) {
		struct target *x = NULL;

		pthread_mutex_lock(&t->lock);
		for (unsigned i = 0; i < t->n && !x; i++)
			if (t->t[i]->down_since &&
			    now - t->t[i]->down_since >= TARGET_GRACE_S * 1000u)
				x = take(t, i);
		pthread_mutex_unlock(&t->lock);
		if (!x)
			return;
		release(t, x, "its control session stayed lost");
	}
}

void cli_targets_destroy(struct cli_targets *t)
{
	if (!t)
		return;
	while (t->n)
		free_target(t, take(t, t->n - 1));
	pthread_mutex_destroy(&t->lock);
	free(t);
}
