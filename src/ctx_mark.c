// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a thread knows of the contexts (LOCKING: Contexts): the one whose
 * lock alone it holds, the one it last posted to, and its request for a
 * cold round.  The context path (ctx.c) and posting (post.c) set these;
 * striping (stripe.c) reads them.  They call nothing: the files that use
 * them sit on several floors.
 */
#include <unistd.h>

#include "src/manager.h"

_Thread_local struct ry__ctx *ry__tl_hot;

/* the context this thread last posted to (ry__ctx_note), by manager and
 * index: a pointer could outlive its manager */
static _Thread_local struct ry_manager *tl_aff_m;
static _Thread_local unsigned tl_aff_idx;

void ry__ctx_note(struct ry__ctx *cx)
{
	tl_aff_m = cx->cx_mgr;
	tl_aff_idx = cx->cx_idx;
}

unsigned ry__ctx_noted(const struct ry_manager *m)
{
	return tl_aff_m == m && tl_aff_idx < m->m_nctx ? tl_aff_idx : m->m_nctx;
}

/*
 * A post left work to the cold round (a failed post_send): with progress
 * threads the control thread runs it now rather than at its next tick;
 * self-driven, the next ry_progress() call (the wake fd is drained by it).
 */
void ry__cold_ask(struct ry_manager *m)
{
	static const uint64_t one = 1;

	atomic_store_explicit(&m->m_cold_due, true, memory_order_relaxed);
	if (write(m->m_wake_fd, &one, sizeof(one)) < 0)
		RY_DBG("mgr", "wake: %m");
}
