// SPDX-License-Identifier: BSD-2-Clause
/*
 * The layout of struct ry_config as a program was compiled, against the
 * library's (include/railyard/config.h says why and what may change).
 * Every entry point that takes a config from the application passes it
 * through ry__config_adopt() before reading a field past the sizes.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "config/config_int.h"
#include "src/util/log.h"

/* The first layout released: every field up to and including peers.
 * Fields appended after it since take their defaults when absent. */
#define SIZE_FIRST (offsetof(struct ry_config, peers) + sizeof(void *))

static const char *layout_problem(size_t size, size_t rail, size_t peer)
{
	if (!size)
		return "struct ry_config was not set up by "
		       "ry_config_init_defaults()";
	if (rail != sizeof(struct ry_rail_config) ||
	    peer != sizeof(struct ry_peer_config))
		return "struct ry_config of a program built against another "
		       "railyard/config.h (rail or peer sections differ): "
		       "rebuild the program";
	if (size > sizeof(struct ry_config))
		return "struct ry_config of a program built against a newer "
		       "railyard/config.h than this library: upgrade the "
		       "library or rebuild the program";
	if (size < SIZE_FIRST)
		return "struct ry_config too short: not set up by "
		       "ry_config_init_defaults()";
	return NULL;
}

static void fill_defaults(struct ry_config *cfg)
{
	char host[RY_NAME_MAX] = "railyard";

	memset(cfg, 0, sizeof(*cfg));
	cfg->rc_size = sizeof(*cfg);
	cfg->rc_rail_size = sizeof(struct ry_rail_config);
	cfg->rc_peer_size = sizeof(struct ry_peer_config);
	snprintf(cfg->source, sizeof(cfg->source), "<defaults>");
	if (gethostname(host, sizeof(host) - 1) || !host[0])
		snprintf(host, sizeof(host), "railyard");
	host[sizeof(host) - 1] = 0;
	snprintf(cfg->node, sizeof(cfg->node), "%s", host);
	ry__opt_defaults("", cfg);
	ry__opt_defaults("failover", cfg);
	ry__opt_defaults("log", cfg);
}

int ry_config_init(struct ry_config *cfg, size_t size, size_t rail_size,
		   size_t peer_size)
{
	struct ry_config def;
	const char *why;

	if (!cfg || size < offsetof(struct ry_config, source))
		return -EINVAL;
	fill_defaults(&def);
	why = layout_problem(size, rail_size, peer_size);
	if (size <= sizeof(def)) {
		memcpy(cfg, &def, size);
	} else {
		memcpy(cfg, &def, sizeof(def));
		memset((char *)cfg + sizeof(def), 0, size - sizeof(def));
	}
	cfg->rc_size = (uint32_t)size;
	cfg->rc_rail_size = (uint16_t)rail_size;
	cfg->rc_peer_size = (uint16_t)peer_size;
	if (why) {
		RY_ERR("config", "%s", why);
		return -EINVAL;
	}
	return 0;
}

int ry__config_adopt(const struct ry_config *in, struct ry_config *out,
		     const char **why_p)
{
	const char *why;

	if (!in)
		return -EINVAL;
	why = layout_problem(in->rc_size, in->rc_rail_size, in->rc_peer_size);
	if (why) {
		*why_p = why;
		return -EINVAL;
	}
	fill_defaults(out);
	memcpy(out, in, in->rc_size);
	out->rc_size = sizeof(*out);
	return 0;
}
