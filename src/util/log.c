// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <railyard/railyard.h>

#include "src/util/clock.h"
#include "src/util/log.h"

_Atomic int ry__log_level = RY_LOG_WARN;

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static ry_log_fn sink_fn;
static void *sink_arg;
static bool use_syslog;
static ry__log_fields_fn fields_fn;

static const char *const level_names[] = {
    [RY_LOG_ERROR] = "error", [RY_LOG_WARN] = "warn",	[RY_LOG_INFO] = "info",
    [RY_LOG_DEBUG] = "debug", [RY_LOG_TRACE] = "trace",
};

const char *ry_log_level_name(enum ry_log_level l)
{
	if ((unsigned)l > RY_LOG_TRACE)
		return "?";
	return level_names[l];
}

int ry__log_level_parse(const char *s, enum ry_log_level *l)
{
	for (int i = RY_LOG_ERROR; i <= RY_LOG_TRACE; i++)
		if (!strcmp(s, level_names[i])) {
			*l = (enum ry_log_level)i;
			return 0;
		}
	return -EINVAL;
}

void ry_log_set_level(enum ry_log_level level)
{
	atomic_store_explicit(&ry__log_level, (int)level, memory_order_relaxed);
}

void ry_log_set_sink(ry_log_fn fn, void *arg)
{
	pthread_mutex_lock(&sink_lock);
	sink_fn = fn;
	sink_arg = arg;
	pthread_mutex_unlock(&sink_lock);
}

void ry__log_set_fields_sink(ry__log_fields_fn fn)
{
	pthread_mutex_lock(&sink_lock);
	fields_fn = fn;
	pthread_mutex_unlock(&sink_lock);
}

void ry_log_use_syslog(bool on)
{
	pthread_mutex_lock(&sink_lock);
	if (on && !use_syslog)
		openlog("railyard", LOG_PID, LOG_DAEMON);
	use_syslog = on;
	pthread_mutex_unlock(&sink_lock);
}

static _Thread_local struct ry__log_capture *capture;

void ry__log_capture_begin(struct ry__log_capture *c)
{
	c->msg[0] = '\0';
	capture = c;
}

void ry__log_capture_end(void)
{
	capture = NULL;
}

static void vemit(enum ry_log_level level, const char *comp,
		  const struct ry__log_ev *ev, const char *fmt, va_list ap)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
				   LOG_DEBUG};
	int saved = errno; /* keep %m and the caller's errno intact */
	char msg[512];

	vsnprintf(msg, sizeof(msg), fmt, ap);

	if (capture && level <= RY_LOG_WARN) {
		/* the first error is the cause; later ones its consequences */
		if (!capture->msg[0]) {
			size_t n = strnlen(msg, sizeof(capture->msg) - 1);

			memcpy(capture->msg, msg, n);
			capture->msg[n] = '\0';
		}
		errno = saved;
		return;
	}
	pthread_mutex_lock(&sink_lock);
	if (sink_fn) {
		sink_fn(level, comp, msg, sink_arg);
	} else if (fields_fn) {
		fields_fn(level, comp, msg, ev);
	} else if (use_syslog) {
		syslog(prio[level], "%s: %s", comp, msg);
	} else {
		uint64_t ns = ry__now_ns();

		fprintf(stderr, "[%5llu.%06llu] railyard %s %s: %s\n",
			(unsigned long long)(ns / 1000000000ull),
			(unsigned long long)(ns % 1000000000ull / 1000),
			ry_log_level_name(level), comp, msg);
	}
	pthread_mutex_unlock(&sink_lock);
	errno = saved;
}

void ry__log_emit(enum ry_log_level level, const char *comp, const char *fmt,
		  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vemit(level, comp, NULL, fmt, ap);
	va_end(ap);
}

void ry__log_emit_ev(enum ry_log_level level, const char *comp,
		     const struct ry__log_ev *ev, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vemit(level, comp, ev, fmt, ap);
	va_end(ap);
}
