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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Set by ry_log_set_level() from any thread while our threads log: an
 * atomic, read relaxed (a level change need not order anything else). */
extern _Atomic int ry__log_level;
/* A level by its name (ry_log_level_name's): 0 or -EINVAL. */
int ry__log_level_parse(const char *s, enum ry_log_level *l);

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

/*
 * An event as structured fields, beside the text of its log line: the
 * journal sink (railyard tool built with libsystemd) sends them as
 * RAILYARD_EVENT=, RAIL=, PEER=, REASON=, DETECT_MS=, RESUME_MS=, QPN=, so
 * `journalctl RAILYARD_EVENT=down RAIL=r1` selects them.  NULL strings and
 * unset has_* flags are fields left out.  Log one where the event is
 * decided, with ry__log_event().
 */
struct ry__log_ev {
	const char *event; /* down, up, resume, fence */
	const char *rail, *peer, *reason;
	bool has_detect, has_resume, has_qpn;
	uint64_t detect_ns, resume_ns;
	uint32_t qpn;
};

/*
 * Internal: where the railyard tool sends every log line with its fields
 * (src/cli/journal.c).  An application's sink (ry_log_set_sink) comes first;
 * then this one; then syslog or stderr.  ev is NULL on a plain line.
 */
typedef void (*ry__log_fields_fn)(enum ry_log_level level, const char *comp,
				  const char *msg, const struct ry__log_ev *ev);
void ry__log_set_fields_sink(ry__log_fields_fn fn);
void ry__log_emit_ev(enum ry_log_level level, const char *comp,
		     const struct ry__log_ev *ev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define ry__log_event(level, comp, ev, ...)                                    \
	do {                                                                   \
		if ((int)(level) <= atomic_load_explicit(                      \
					&ry__log_level, memory_order_relaxed)) \
			ry__log_emit_ev((level), (comp), (ev), __VA_ARGS__);   \
	} while (0)

#define RY_ERR(comp, ...) ry__log(RY_LOG_ERROR, comp, __VA_ARGS__)
#define RY_WARN(comp, ...) ry__log(RY_LOG_WARN, comp, __VA_ARGS__)
#define RY_INFO(comp, ...) ry__log(RY_LOG_INFO, comp, __VA_ARGS__)
#define RY_DBG(comp, ...) ry__log(RY_LOG_DEBUG, comp, __VA_ARGS__)
#define RY_TRACE(comp, ...) ry__log(RY_LOG_TRACE, comp, __VA_ARGS__)

#endif
