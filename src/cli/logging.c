// SPDX-License-Identifier: BSD-2-Clause
/*
 * The railyard tool's log: which level, and where the lines go.
 *
 * Level, first found wins: the command line (serve --log-level), the
 * environment (RY_LOG_LEVEL, as UCX_LOG_LEVEL or FI_LOG_LEVEL), the config
 * file (log { level }), the library's default (warn).
 *
 * Sink: when the tool runs under systemd with stderr connected to the
 * journal ($JOURNAL_STREAM names fd 2), and it was built with libsystemd,
 * every line goes to the journal natively, with PRIORITY=, RAILYARD_
 * COMPONENT= and, on events, the fields of struct ry__log_ev
 * (RAILYARD_EVENT=, RAIL=, PEER=, REASON=, DETECT_MS=, RESUME_MS=, QPN=).
 * Otherwise the library's own sinks (stderr, or syslog) stay.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifdef RY_WITH_SYSTEMD
#include <sys/uio.h>
#include <syslog.h>
/* the location would be this file's, not the caller's */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>
#endif

#include <railyard/railyard.h>

#include "src/cli/cli.h"
#include "src/util/log.h"

static int cmdline_level = -1;

int cli_log_cmdline_level(const char *name)
{
	enum ry_log_level l;

	if (ry__log_level_parse(name, &l))
		return -EINVAL;
	cmdline_level = (int)l;
	ry_log_set_level(l);
	return 0;
}

int cli_log_apply(const struct ry_config *cfg)
{
	const char *env = getenv("RY_LOG_LEVEL");
	enum ry_log_level l = cfg ? cfg->log.level : RY_LOG_WARN;

	if (cmdline_level >= 0) {
		l = (enum ry_log_level)cmdline_level;
	} else if (env && *env && ry__log_level_parse(env, &l)) {
		fprintf(stderr,
			"railyard: RY_LOG_LEVEL='%s' is not a log level "
			"(error, warn, info, debug, trace)\n",
			env);
		return -EINVAL;
	}
	ry_log_set_level(l);
	return 0;
}

#ifdef RY_WITH_SYSTEMD
/* "dev:ino" of the journal's stream, as systemd sets it (systemd.exec(5)). */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st))
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

#define NFIELD 12

static void journal_sink(enum ry_log_level level, const char *comp,
			 const char *msg, const struct ry__log_ev *ev)
{
	static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG,
				   LOG_DEBUG};
	char f[NFIELD][600];
	struct iovec iov[NFIELD];
	int n = 0;

#define FIELD(...)                                                             \
	do {                                                                   \
		snprintf(f[n], sizeof(f[n]), __VA_ARGS__);                     \
		iov[n].iov_base = f[n];                                        \
		iov[n].iov_len = strlen(f[n]);                                 \
		n++;                                                           \
	} while (0)
	FIELD("MESSAGE=%s: %s", comp, msg);
	FIELD("PRIORITY=%d", prio[level]);
	FIELD("SYSLOG_IDENTIFIER=railyard");
	FIELD("RAILYARD_COMPONENT=%s", comp);
	if (ev) {
		FIELD("RAILYARD_EVENT=%s", ev->event);
		if (ev->rail)
			FIELD("RAIL=%s", ev->rail);
		if (ev->peer)
			FIELD("PEER=%s", ev->peer);
		if (ev->reason && *ev->reason)
			FIELD("REASON=%s", ev->reason);
		if (ev->has_detect)
			FIELD("DETECT_MS=%.3f", (double)ev->detect_ns / 1e6);
		if (ev->has_resume)
			FIELD("RESUME_MS=%.3f", (double)ev->resume_ns / 1e6);
		if (ev->has_qpn)
			FIELD("QPN=0x%x", ev->qpn);
	}
#undef FIELD
	/* nothing else to tell: a journal that went away loses the line,
	 * as a closed stderr would */
	(void)sd_journal_sendv(iov, n);
}
#endif

int cli_log_init(void)
{
#ifdef RY_WITH_SYSTEMD
	if (stderr_is_journal())
		ry__log_set_fields_sink(journal_sink);
#endif
	return cli_log_apply(NULL);
}
