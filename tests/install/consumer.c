// SPDX-License-Identifier: BSD-2-Clause
/* An out-of-tree program, as a storage server would be, built against the
 * installed railyard: it checks a hand-built config, then moves data between
 * two managers over soft rails on loopback with a vectored write and read
 * of buffers registered through the registration cache. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <railyard/railyard.h>

#define NSEG 3
#define SEGLEN 10007
#define TOTAL (NSEG * SEGLEN)

static const char *const conf_text =
    "reg_cache_bytes = 16M\n"
    "accept = {\"127.0.0.0/8\"}\n"
    "control = \"127.0.0.1:0\"\n"
    "rail r0 { provider = soft  network = \"n0\"  address = \"127.0.0.1\" }\n"
    "rail r1 { provider = soft  network = \"n1\"  address = \"127.0.0.1\" }\n";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_done(const struct ry_completion *c, void *arg)
{
	*(int *)arg = c->status == RY_OK ? 1 : -1;
	if (c->status != RY_OK)
		fprintf(stderr, "op failed: %s\n", c->reason);
}

static int wait_done(struct ry_manager *a, struct ry_manager *b, int *done)
{
	double end = now_s() + 20;

	while (!*done && now_s() < end) {
		ry_progress(a);
		ry_progress(b);
	}
	return *done == 1 ? 0 : -1;
}

static int manager(const char *node, struct ry_manager **m)
{
	struct ry_config *cfg;
	int ret = ry_config_parse(conf_text, node, &cfg, NULL, NULL);

	if (ret)
		return ret;
	snprintf(cfg->node, sizeof(cfg->node), "%s", node);
	ret = ry_manager_create(cfg, m);
	ry_config_free(cfg);
	return ret;
}

/* A writev of three cached buffers to b, and a readv back. */
static int transfer(void)
{
	struct ry_manager *a = NULL, *b = NULL;
	unsigned char *seg[NSEG], *target = calloc(1, TOTAL);
	struct ry_iov iov[NSEG];
	struct ry_mr_cache_stats st;
	struct ry_region *rb = NULL;
	unsigned char desc[RY_DESC_MAX];
	struct ry_peer *peer;
	char addr[100];
	int dlen, done, i, round, ret = -1;

	for (i = 0; i < NSEG; i++)
		seg[i] = malloc(SEGLEN);
	if (!target || manager("a", &a) || manager("b", &b) ||
	    ry_manager_control_addr(b, addr, sizeof(addr)) ||
	    ry_peer_get(a, addr, &peer) ||
	    ry_mr_reg(b, target, TOTAL, RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ,
		      &rb))
		goto out;
	dlen = ry_mr_pack(rb, desc, sizeof(desc));
	if (dlen < 0)
		goto out;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < NSEG; i++) {
			size_t off;

			memset(seg[i], 'a' + i + round, SEGLEN);
			if (ry_mr_cache_get(a, seg[i], SEGLEN, 0, &iov[i].mr,
					    &off))
				goto out;
			iov[i].off = off;
			iov[i].len = SEGLEN;
		}
		done = 0;
		if (ry_writev(peer, iov, NSEG, desc, (size_t)dlen, 0, on_done,
			      &done) ||
		    wait_done(a, b, &done))
			goto out;
		for (i = 0; i < NSEG; i++)
			if (memcmp(target + i * SEGLEN, seg[i], SEGLEN))
				goto out;
		for (i = 0; i < NSEG; i++)
			memset(seg[i], 0, SEGLEN);
		done = 0;
		if (ry_readv(peer, iov, NSEG, desc, (size_t)dlen, 0, on_done,
			     &done) ||
		    wait_done(a, b, &done))
			goto out;
		for (i = 0; i < NSEG; i++) {
			if (seg[i][0] != 'a' + i + round ||
			    seg[i][SEGLEN - 1] != 'a' + i + round)
				goto out;
			if (ry_mr_cache_put(iov[i].mr))
				goto out;
		}
	}
	if (ry_mr_cache_stats(a, &st) || st.misses != NSEG || st.hits != NSEG)
		goto out;
	for (i = 0; i < NSEG; i++)
		if (ry_mr_cache_invalidate(a, seg[i], SEGLEN) < 0)
			goto out;
	printf("vectored write and read of %d cached buffers: ok "
	       "(%llu hits, %llu misses)\n",
	       NSEG, (unsigned long long)st.hits,
	       (unsigned long long)st.misses);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "transfer failed\n");
	ry_manager_destroy(a);
	ry_manager_destroy(b);
	for (i = 0; i < NSEG; i++)
		free(seg[i]);
	free(target);
	return ret;
}

/* A config built by hand, as a program without a file does: the
 * library checks the struct's recorded layout, then its values. */
static int hand_built(void)
{
	static struct ry_config cfg;
	struct ry_rail_config *r;
	int bad;

	if (ry_config_init_defaults(&cfg))
		return -1;
	snprintf(cfg.node, sizeof(cfg.node), "consumer");
	for (unsigned i = 0; i < 2; i++) {
		r = &cfg.rails[cfg.n_rails++];
		snprintf(r->name, sizeof(r->name), "r%u", i);
		r->provider = RY_PROVIDER_SOFT;
		snprintf(r->network, sizeof(r->network), "n%u", i);
		snprintf(r->address, sizeof(r->address), "127.0.0.1");
		r->weight = 1;
	}
	bad = ry_config_validate(&cfg, NULL, NULL);
	printf("railyard %s, hand-built config with %u rails, %d problems\n",
	       ry_version(), cfg.n_rails, bad);
	return bad ? -1 : 0;
}

int main(void)
{
	if (hand_built() || strcmp(ry_status_str(RY_OK), "success") != 0)
		return 1;
	return transfer() ? 1 : 0;
}
