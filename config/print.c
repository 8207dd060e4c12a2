// SPDX-License-Identifier: BSD-2-Clause
/* The effective configuration, in config-file syntax: what check-config
 * prints, so an operator sees every default that applies. */
#include <inttypes.h>
#include <stdio.h>

#include "config/config_int.h"

static void print_rate(FILE *out, uint64_t bps)
{
	if (!bps)
		fprintf(out, "\"0\"");
	else if (bps % 1000000000ull == 0)
		fprintf(out, "\"%" PRIu64 "G\"", (uint64_t)(bps / 1000000000u));
	else if (bps % 1000000ull == 0)
		fprintf(out, "\"%" PRIu64 "M\"", (uint64_t)(bps / 1000000u));
	else
		fprintf(out, "\"%" PRIu64 "\"", bps);
}

void ry_config_print(const struct ry_config *cfg, FILE *out)
{
	const struct ry_failover_config *f = &cfg->failover;

	fprintf(out, "# effective configuration of %s\n", cfg->source);
	fprintf(out, "node = \"%s\"\n", cfg->node);
	fprintf(out, "control = \"%s\"\n", cfg->control);
	fprintf(out, "fragment_size = %u\n", cfg->fragment_size);
	fprintf(out, "ops_in_flight = %u\n", cfg->ops_in_flight);
	fprintf(out, "max_op_size = %" PRIu64 "\n", cfg->max_op_size);
	fprintf(out, "wr_per_qp = %u\n", cfg->wr_per_qp);
	fprintf(out, "frags_per_wr = %u\n", cfg->frags_per_wr);
	for (unsigned i = 0; i < cfg->n_rails; i++) {
		const struct ry_rail_config *r = &cfg->rails[i];

		fprintf(out, "\nrail %s {\n", r->name);
		fprintf(out, "\tprovider = %s\n", ry_provider_name(r->provider));
		fprintf(out, "\tnetwork = \"%s\"\n", r->network);
		if (r->address[0])
			fprintf(out, "\taddress = \"%s\"\n", r->address);
		if (r->interface[0])
			fprintf(out, "\tinterface = \"%s\"\n", r->interface);
		if (r->provider == RY_PROVIDER_VERBS) {
			fprintf(out, "\tdevice = \"%s\"\n", r->device);
			fprintf(out, "\tport = %u\n", r->port);
			fprintf(out, "\tgid_index = %d\n", r->gid_index);
		}
		fprintf(out, "\tmtu = %u\n", r->mtu);
		fprintf(out, "\tweight = %u\n", r->weight);
		fprintf(out, "\trate = ");
		print_rate(out, r->rate_bps);
		fprintf(out, "\n");
		if (r->fault.down || r->fault.drop > 0 ||
		    r->fault.duplicate > 0 || r->fault.reorder > 0 ||
		    r->fault.corrupt > 0 || r->fault.delay_us)
			fprintf(out,
				"\tfault {\n\t\tdown = %s\n\t\tdrop = %g\n"
				"\t\tduplicate = %g\n\t\treorder = %g\n"
				"\t\tcorrupt = %g\n\t\tdelay_us = %u\n\t}\n",
				r->fault.down ? "yes" : "no", r->fault.drop,
				r->fault.duplicate, r->fault.reorder,
				r->fault.corrupt, r->fault.delay_us);
		fprintf(out, "}\n");
	}
	fprintf(out, "\nfailover {\n");
	fprintf(out, "\theartbeat_ms = %u\n", f->heartbeat_ms);
	fprintf(out, "\ttimeout_ms = %u\n", f->timeout_ms);
	fprintf(out, "\tack_timeout_ms = %u\n", f->ack_timeout_ms);
	fprintf(out, "\tretry_count = %u\n", f->retry_count);
	fprintf(out, "\trnr_retry = %u\n", f->rnr_retry);
	fprintf(out, "\treconnect_min_ms = %u\n", f->reconnect_min_ms);
	fprintf(out, "\treconnect_max_ms = %u\n", f->reconnect_max_ms);
	fprintf(out, "\top_timeout_ms = %u\n", f->op_timeout_ms);
	fprintf(out, "\tfence = %s\n", f->fence ? "yes" : "no");
	fprintf(out, "}\n");
	for (unsigned i = 0; i < cfg->n_peers; i++)
		fprintf(out, "\npeer %s {\n\taddress = \"%s\"\n}\n",
			cfg->peers[i].name, cfg->peers[i].address);
	fprintf(out, "\nlog {\n\tlevel = %s\n\tsyslog = %s\n}\n",
		ry_log_level_name(cfg->log.level),
		cfg->log.syslog ? "yes" : "no");
}
