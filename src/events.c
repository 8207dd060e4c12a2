// SPDX-License-Identifier: BSD-2-Clause
/*
 * The event queue: what peers, connections and messages tell the
 * application (events, received messages) is queued here under the cold
 * lock, on the lowest floor, and handed out by deliver.c once the lock is
 * dropped.  A lower floor reports through it and calls nothing above.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/events.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"

static struct ry__delivery *dv_new(struct ry_manager *m, size_t extra)
{
	struct ry__delivery *dv = calloc(1, sizeof(*dv) + extra);

	if (!dv)
		return NULL;
	ry__sq_push_tail(m->m_dv_head, m->m_dv_tail, dv, dv_next);
	return dv;
}

struct ry_event *ry__queue_event(struct ry_manager *m, enum ry_event_type t,
				 struct ry__lrail *lr, struct ry_peer *p,
				 const char *reason, uint64_t time_ns)
{
	struct ry__delivery *dv;

	if (m->m_closing)
		return NULL;
	dv = dv_new(m, 0);
	if (!dv)
		return NULL;
	dv->dv_kind = 1;
	snprintf(dv->dv_rail, sizeof(dv->dv_rail), "%s",
		 lr ? lr->lr_cfg.name : "");
	if (p)
		snprintf(dv->dv_peer_name, sizeof(dv->dv_peer_name), "%s",
			 p->pr_name);
	snprintf(dv->dv_reason, sizeof(dv->dv_reason), "%s", reason);
	dv->dv_ev.type = t;
	dv->dv_ev.time_ns = time_ns;
	/* an event names the peer, it does not hand out the record: one
	 * learned from a HELLO stays disposable (peer.h) */
	return &dv->dv_ev;
}

void ry__queue_message(struct ry_manager *m, struct ry_peer *p,
		       enum ry_msg_type t, const void *data, size_t len,
		       uint64_t notify)
{
	struct ry__delivery *dv = dv_new(m, len);

	if (!dv) {
		RY_ERR("mgr", "peer %s: message dropped: out of memory",
		       p->pr_name);
		return;
	}
	dv->dv_kind = 0;
	dv->dv_peer = p;
	p->pr_app_refs++; /* until the callback returns: run_callbacks() */
	dv->dv_msg.type = t;
	dv->dv_msg.len = len;
	dv->dv_msg.notify = notify;
	memcpy(dv->dv_data, data, len);
	dv->dv_msg.data = dv->dv_data;
}
