/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal logging.  Levels error..trace, a component tag, a sink the
 * application can replace (ry_log_set_sink in railyard.h).  The level is
 * checked before anything is formatted, so a disabled trace costs a load
 * and a compare.  Log an error once, where it is decided.
 */
#ifndef RAILYARD_UTIL_LOG_H
#define RAILYARD_UTIL_LOG_H

#include <railyard/config.h>

#include <stdatomic.h>

/* Set by ry_log_set_level() from any thread while our threads log: an
 * atomic, read relaxed (a level change need not order anything else). */
extern _Atomic int ry__log_level;

void ry__log_emit(enum ry_log_level level, const char *comp, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));

/*
 * Between begin and end, this thread's errors and warnings are not logged:
 * the first is kept in c->msg ("" if none), for a caller that retries
 * something quietly and reports its cause once (rail_life.c).  Lower
 * levels are logged as usual.
 */
struct ry__log_capture {
	char msg[256];
};
void ry__log_capture_begin(struct ry__log_capture *c);
void ry__log_capture_end(void);

#define ry__log(level, comp, ...)                                              \
	do {                                                                   \
		if ((int)(level) <= atomic_load_explicit(                      \
					&ry__log_level, memory_order_relaxed)) \
			ry__log_emit((level), (comp), __VA_ARGS__);            \
	} while (0)

#define RY_ERR(comp, ...) ry__log(RY_LOG_ERROR, comp, __VA_ARGS__)
#define RY_WARN(comp, ...) ry__log(RY_LOG_WARN, comp, __VA_ARGS__)
#define RY_INFO(comp, ...) ry__log(RY_LOG_INFO, comp, __VA_ARGS__)
#define RY_DBG(comp, ...) ry__log(RY_LOG_DEBUG, comp, __VA_ARGS__)
#define RY_TRACE(comp, ...) ry__log(RY_LOG_TRACE, comp, __VA_ARGS__)

#endif
