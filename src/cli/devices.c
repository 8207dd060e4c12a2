// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard devices [--json]: the HCA ports a verbs rail can use (libibumad
 * and libibverbs) and the interfaces a soft rail can use.  Exit 0 when at
 * least one RDMA port exists, 1 when none does (the interfaces are still
 * listed, and the reason is said plainly).
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <railyard/config.h>

#include "src/cli/cli.h"
#include "src/cli/json.h"
#ifdef RY_WITH_VERBS
#include "rails/verbs/discover.h"
#endif

struct ry__verbs_port;

static const char usage_text[] =
    "usage: railyard devices [--json] [-c FILE]\n"
    "\n"
    "List the RDMA devices and ports a verbs rail can use (name, port,\n"
    "state, physical state, rate, link layer, GUIDs, LID, GIDs) and the\n"
    "network interfaces a soft rail can use (state, MTU, addresses).\n"
    "Use the device name (or node GUID) and port in a rail's device and\n"
    "port options, and an interface's address in a soft rail's address.\n"
    "With -c FILE, also each verbs rail of FILE: the port it names, whether\n"
    "it is here, and the traffic class (DSCP, ECN) and SL its QPs carry.\n"
    "Exit codes: 0 RDMA ports found, 1 none found, 2 usage error.\n";

struct iface {
	char name[IF_NAMESIZE];
	bool up, running;
	unsigned mtu;
	char addrs[4][INET6_ADDRSTRLEN];
	int n_addrs;
};

static unsigned read_mtu(const char *ifname)
{
	char path[128];
	unsigned mtu = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", ifname);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%u", &mtu) != 1)
			mtu = 0;
		fclose(f);
	}
	return mtu;
}

static int list_ifaces(struct iface *out, int max)
{
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next) {
		struct iface *f = NULL;

		for (int k = 0; k < n; k++)
			if (!strcmp(out[k].name, i->ifa_name))
				f = &out[k];
		if (!f) {
			if (n == max)
				continue;
			f = &out[n++];
			memset(f, 0, sizeof(*f));
			snprintf(f->name, sizeof(f->name), "%s", i->ifa_name);
			f->up = i->ifa_flags & IFF_UP;
			f->running = i->ifa_flags & IFF_RUNNING;
			f->mtu = read_mtu(f->name);
		}
		if (!i->ifa_addr || f->n_addrs == 4)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			inet_ntop(AF_INET,
				  &((struct sockaddr_in *)(void *)i->ifa_addr)
				       ->sin_addr,
				  f->addrs[f->n_addrs++], INET6_ADDRSTRLEN);
		else if (i->ifa_addr->sa_family == AF_INET6)
			inet_ntop(AF_INET6,
				  &((struct sockaddr_in6 *)(void *)i->ifa_addr)
				       ->sin6_addr,
				  f->addrs[f->n_addrs++], INET6_ADDRSTRLEN);
	}
	freeifaddrs(ifa);
	return n;
}

static void gid_str(const uint8_t *raw, char *buf, size_t len)
{
	inet_ntop(AF_INET6, raw, buf, (socklen_t)len);
}

/* The verbs rails of a config file against the ports found. */
static void config_rails(const struct ry_config *cfg, bool json,
			 const struct ry__verbs_port *ports, int n_ports)
{
	unsigned k = 0;

	if (json)
		printf(",\"rails\":[");
	else
		printf("\nVerbs rails of %s:\n", cfg->source);
	for (unsigned i = 0; i < cfg->n_rails; i++) {
		const struct ry_rail_config *r = &cfg->rails[i];
		bool found = false;

		if (r->provider != RY_PROVIDER_VERBS)
			continue;
#ifdef RY_WITH_VERBS
		found = ry__verbs_find(ports, n_ports, r->device,
				       (int)r->port) != NULL;
#else
		(void)ports;
		(void)n_ports;
#endif
		if (json) {
			printf("%s{\"name\":", k++ ? "," : "");
			cli_json_str(stdout, r->name);
			printf(",\"device\":");
			cli_json_str(stdout, r->device);
			printf(",\"port\":%u,\"found\":%s,\"traffic_class\":%u,"
			       "\"dscp\":%u,\"ecn\":%u,\"sl\":%u}",
			       r->port, found ? "true" : "false",
			       r->traffic_class, r->traffic_class >> 2,
			       r->traffic_class & 3, r->sl);
		} else {
			k++;
			printf(
			    "  %-8s %s port %u%s, traffic_class %u (DSCP %u, "
			    "ECN %u), sl %u\n",
			    r->name, r->device, r->port,
			    found ? "" : " (not here)", r->traffic_class,
			    r->traffic_class >> 2, r->traffic_class & 3, r->sl);
		}
	}
	if (json)
		printf("]");
	else if (!k)
		printf("  none\n");
}

int cli_devices(int argc, char **argv)
{
	struct iface ifs[64];
	bool json = false;
	char why[512] = "";
	int n_ports = 0, n_ifs;
	struct ry_config *cfg = NULL;
	const char *file = NULL;
#ifdef RY_WITH_VERBS
	struct ry__verbs_port *ports = NULL;
#else
	struct ry__verbs_port *ports = NULL;
#endif

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--help") ||
			   !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return RY_EXIT_OK;
		} else {
			fprintf(stderr,
				"railyard devices: unknown argument '%s'\n\n%s",
				argv[i], usage_text);
			return RY_EXIT_USAGE;
		}
	}
	if (file &&
	    ry_config_load(file, &cfg, cli_print_config_error, stderr)) {
		fprintf(stderr, "railyard devices: %s is not usable\n", file);
		return RY_EXIT_USAGE;
	}
#ifdef RY_WITH_VERBS
	n_ports = ry__verbs_discover(&ports, why, sizeof(why));
	if (n_ports < 0) {
		fprintf(stderr, "railyard devices: discovery failed: %s\n",
			strerror(-n_ports));
		ry_config_free(cfg);
		return RY_EXIT_FAIL;
	}
#else
	snprintf(why, sizeof(why),
		 "this railyard was built without the verbs rail "
		 "(RY_WITH_VERBS=OFF)");
#endif
	n_ifs = list_ifaces(ifs, 64);

	if (json) {
		printf("{\"rdma_ports\":[");
#ifdef RY_WITH_VERBS
		for (int i = 0; i < n_ports; i++) {
			struct ry__verbs_port *p = &ports[i];

			printf("%s{\"device\":", i ? "," : "");
			cli_json_str(stdout, p->device);
			printf(",\"port\":%d,\"state\":\"%s\",\"phys_state\":"
			       "\"%s\","
			       "\"rate_gbps\":%u,\"link_layer\":\"%s\","
			       "\"node_guid\":\"0x%016" PRIx64 "\","
			       "\"port_guid\":\"0x%016" PRIx64 "\",\"lid\":%u,"
			       "\"active_mtu\":%u,\"gids\":[",
			       p->port, p->state, p->phys_state, p->rate_gbps,
			       p->link_layer, p->node_guid, p->port_guid,
			       p->lid, p->active_mtu);
			for (unsigned g = 0; g < p->n_gids; g++) {
				char b[INET6_ADDRSTRLEN];

				gid_str(p->gids[g].raw, b, sizeof(b));
				printf("%s{\"index\":%u,\"gid\":\"%s\","
				       "\"type\":\"%s\",\"netdev\":",
				       g ? "," : "", p->gids[g].index, b,
				       p->gids[g].type);
				cli_json_str(stdout, p->gids[g].netdev);
				printf("}");
			}
			printf("]}");
		}
#endif
		printf("],\"no_rdma_reason\":");
		cli_json_str(stdout, n_ports ? "" : why);
		printf(",\"interfaces\":[");
		for (int i = 0; i < n_ifs; i++) {
			printf("%s{\"name\":", i ? "," : "");
			cli_json_str(stdout, ifs[i].name);
			printf(",\"up\":%s,\"running\":%s,\"mtu\":%u,"
			       "\"addresses\":[",
			       ifs[i].up ? "true" : "false",
			       ifs[i].running ? "true" : "false", ifs[i].mtu);
			for (int a = 0; a < ifs[i].n_addrs; a++)
				printf("%s\"%s\"", a ? "," : "",
				       ifs[i].addrs[a]);
			printf("]}");
		}
		printf("]");
		if (cfg)
			config_rails(cfg, json, ports, n_ports);
		printf("}\n");
	} else {
		printf("RDMA devices (verbs rails):\n");
#ifdef RY_WITH_VERBS
		for (int i = 0; i < n_ports; i++) {
			struct ry__verbs_port *p = &ports[i];

			printf("  %s port %d: %s (%s), %u Gb/s, %s, node GUID "
			       "%016" PRIx64 ", port GUID %016" PRIx64
			       ", LID %u, MTU %u\n",
			       p->device, p->port, p->state, p->phys_state,
			       p->rate_gbps, p->link_layer, p->node_guid,
			       p->port_guid, p->lid, p->active_mtu);
			for (unsigned g = 0; g < p->n_gids; g++) {
				char b[INET6_ADDRSTRLEN];

				gid_str(p->gids[g].raw, b, sizeof(b));
				printf("      gid %u %s %s%s%s\n",
				       p->gids[g].index, b, p->gids[g].type,
				       p->gids[g].netdev[0] ? " on " : "",
				       p->gids[g].netdev);
			}
		}
#endif
		if (!n_ports)
			printf("  none: %s\n", why);
		printf("\nInterfaces (soft rails):\n");
		for (int i = 0; i < n_ifs; i++) {
			printf("  %-12s %-4s mtu %-6u", ifs[i].name,
			       ifs[i].up && ifs[i].running ? "up" : "down",
			       ifs[i].mtu);
			for (int a = 0; a < ifs[i].n_addrs; a++)
				printf(" %s", ifs[i].addrs[a]);
			printf("\n");
		}
		if (cfg)
			config_rails(cfg, json, ports, n_ports);
	}
	ry_config_free(cfg);
#ifdef RY_WITH_VERBS
	free(ports);
#endif
	return n_ports > 0 ? RY_EXIT_OK : RY_EXIT_FAIL;
}
