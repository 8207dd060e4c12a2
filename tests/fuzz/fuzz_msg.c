// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for the two-sided message receive path (src/msg.c,
 * ry__msg_rx): header checks, the owner check, the dedupe window and
 * delivery, on a live connection between two managers over the in-process
 * loop rail (the manager suites' fixture).
 *
 * The first input byte steers which header fields are patched to values
 * that pass the outer checks (magic, the sender's incarnation, a length
 * that fits, a sequence near the window), so the fuzzer spends its time in
 * the window and delivery code; unpatched fields stay as the input has
 * them, which is how a sequence past the window is reached.  A message
 * that breaks the protocol fails the connection; it is reconnected before
 * the next input.  A hang (the old window slide) shows up as a timeout.
 */
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/manager.h"
#include "tests/manager/fixture.h"

static struct fx F;
static struct ry_peer *ba; /* b's record of a */
static unsigned long delivered;

static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	(void)from;
	(void)arg;
	/* touch every byte the manager hands out */
	for (size_t i = 0; i < m->len; i++)
		delivered += ((const unsigned char *)m->data)[i] == 0xa5;
	delivered++;
}

static bool b_active(void *arg)
{
	(void)arg;
	return ba && ba->pr_conn[0]->cn_state == CONN_ACTIVE;
}

static void start(void)
{
	struct fx_done d = {0};
	uint32_t one = 1;

	ry_log_set_level(RY_LOG_ERROR);
	if (fx_init(&F, &(struct fx_opts){.nrails_a = 1,
					  .reconnect_min_ms = 1,
					  .reconnect_max_ms = 2,
					  /* an input may fail the connection: a
					   * reconnect (CONN_REQ) per input, far
					   * above the default budget */
					  .control_frame_rate = 1000000}))
		abort();
	ry_log_set_level(RY_LOG_ERROR);
	ry_set_recv_cb(F.b, on_recv, NULL);
	if (ry_send(F.ab, &one, sizeof(one), fx_cb, &d) ||
	    !fx_until_done(&F, &d, 1, 10000))
		abort();
	/* held, as an application holds a peer: a record learned from a
	 * HELLO is freed once its session closes, which an input may cause */
	if (ry_peer_get(F.b, F.b->m_peers ? F.b->m_peers->pr_name : "", &ba) ||
	    !fx_until(&F, b_active, NULL, 10000))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool started;
	unsigned char buf[RY__MSG_BUF];
	struct ry__mhdr h;
	struct ry__conn *c;
	uint8_t steer;
	uint32_t len;

	if (!started) {
		start();
		started = true;
	}
	if (size < 1 + RY__MSG_HDR || size > 1 + RY__MSG_BUF)
		return 0;
	if (!fx_until(&F, b_active, NULL, 10000))
		abort(); /* the connection did not come back */
	steer = data[0];
	len = (uint32_t)(size - 1);
	memcpy(buf, data + 1, len);
	memcpy(&h, buf, sizeof(h));
	if (steer & 1)
		h.mh_magic = htole32(RY__MH_MAGIC);
	if (steer & 2)
		h.mh_node = htole64(ba->pr_node);
	if (steer & 4)
		h.mh_len = htole32(le32toh(h.mh_len) % (len - RY__MSG_HDR + 1));
	if (steer & 8) /* near the window: either side of both edges */
		h.mh_seq = htole64(ba->pr_rx_base - 4 +
				   le64toh(h.mh_seq) % (RY__RXWIN + 8));
	if (steer & 16)
		h.mh_type = htole16(MT_HEARTBEAT + le16toh(h.mh_type) % 5);
	memcpy(buf, &h, sizeof(h));

	c = ba->pr_conn[0];
	ry__lock_and_run_leftovers(F.b);
	ry__msg_rx(c, buf, len, ry__now_ns());
	ry__unlock(F.b);
	fx_progress(&F); /* deliver, or fail and reconnect */
	return 0;
}
