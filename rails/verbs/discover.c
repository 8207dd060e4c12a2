// SPDX-License-Identifier: BSD-2-Clause
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <stdbool.h>

#include <infiniband/umad.h>
#include <infiniband/verbs.h>

#include "rails/verbs/discover.h"

static const char *port_state_name(unsigned s)
{
	static const char *const n[] = {"NOP",	 "DOWN",   "INIT",
					"ARMED", "ACTIVE", "ACT_DEFER"};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static const char *phys_state_name(unsigned s)
{
	static const char *const n[] = {"NOP",
					"Sleep",
					"Polling",
					"Disabled",
					"PortConfigurationTraining",
					"LinkUp",
					"LinkErrorRecovery",
					"PhyTest"};

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* GID types and the active MTU need a device context. */
static void fill_from_verbs(struct ry__verbs_port *p)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_port_attr pa;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list)
		return;
	for (int i = 0; i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), p->device))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		return;
	if (!ibv_query_port(ctx, (uint8_t)p->port, &pa)) {
		p->active_mtu = 128u << pa.active_mtu;
		p->n_gids = 0;
		for (int g = 0;
		     g < pa.gid_tbl_len && p->n_gids < RY__VERBS_MAX_GIDS;
		     g++) {
			struct ibv_gid_entry e;
			struct ry__verbs_gid *o = &p->gids[p->n_gids];

			if (ibv_query_gid_ex(ctx, (uint32_t)p->port,
					     (uint32_t)g, &e, 0))
				continue;
			o->index = e.gid_index;
			memcpy(o->raw, e.gid.raw, 16);
			snprintf(o->type, sizeof(o->type), "%s",
				 e.gid_type == IBV_GID_TYPE_IB ? "IB"
				 : e.gid_type == IBV_GID_TYPE_ROCE_V1
				     ? "RoCE v1"
				     : "RoCE v2");
			o->netdev[0] = 0;
			if (e.ndev_ifindex &&
			    !if_indextoname(e.ndev_ifindex, o->netdev))
				o->netdev[0] = 0;
			p->n_gids++;
		}
	}
	ibv_close_device(ctx);
}

static bool listed(const struct ry__verbs_port *ports, int n, const char *dev)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(ports[i].device, dev))
			return true;
	return false;
}

/* Devices libibumad does not list: iWARP ones (siw, Chelsio, E810 in
 * iWARP mode) have no MAD interface.  Appended to *ports_p. */
static int add_verbs_only(struct ry__verbs_port **ports_p, int n)
{
	struct ibv_device **list;
	int nd = 0;

	list = ibv_get_device_list(&nd);
	if (!list)
		return n;
	for (int d = 0; d < nd; d++) {
		const char *name = ibv_get_device_name(list[d]);
		struct ibv_device_attr da;
		struct ibv_context *ctx;

		if (listed(*ports_p, n, name))
			continue;
		ctx = ibv_open_device(list[d]);
		if (!ctx)
			continue;
		if (ibv_query_device(ctx, &da)) {
			ibv_close_device(ctx);
			continue;
		}
		for (int i = 1; i <= da.phys_port_cnt; i++) {
			struct ibv_port_attr pa;
			struct ry__verbs_port *p;
			void *v;

			if (ibv_query_port(ctx, (uint8_t)i, &pa))
				continue;
			v = realloc(*ports_p,
				    (size_t)(n + 1) * sizeof(**ports_p));
			if (!v)
				break;
			*ports_p = v;
			p = &(*ports_p)[n++];
			memset(p, 0, sizeof(*p));
			snprintf(p->device, sizeof(p->device), "%s", name);
			p->port = i;
			snprintf(p->state, sizeof(p->state), "%s",
				 port_state_name(pa.state));
			snprintf(p->phys_state, sizeof(p->phys_state), "%s",
				 phys_state_name(pa.phys_state));
			snprintf(p->link_layer, sizeof(p->link_layer), "%s",
				 pa.link_layer == IBV_LINK_LAYER_INFINIBAND
				     ? "InfiniBand"
				     : "Ethernet");
			p->node_guid = be64toh(da.node_guid);
			p->lid = pa.lid;
			fill_from_verbs(p);
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return n;
}

int ry__verbs_discover(struct ry__verbs_port **ports_p, char *why,
		       size_t why_len)
{
	char names[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
	struct ry__verbs_port *ports = NULL;
	int n_cas, n = 0;

	/* With no device, libibumad still returns one made-up default name
	 * ("mthca0") whose umad_get_ca() then fails: count ports, not names. */
	n_cas = umad_get_cas_names(names, UMAD_MAX_DEVICES);
	for (int c = 0; c < n_cas; c++) {
		umad_ca_t ca;

		if (umad_get_ca(names[c], &ca))
			continue;
		for (int i = 0; i < UMAD_CA_MAX_PORTS; i++) {
			umad_port_t *up = ca.ports[i];
			struct ry__verbs_port *p;
			void *v;

			if (!up)
				continue;
			v = realloc(ports, (size_t)(n + 1) * sizeof(*ports));
			if (!v) {
				umad_release_ca(&ca);
				free(ports);
				return -ENOMEM;
			}
			ports = v;
			p = &ports[n++];
			memset(p, 0, sizeof(*p));
			snprintf(p->device, sizeof(p->device), "%s",
				 ca.ca_name);
			p->port = up->portnum;
			snprintf(p->state, sizeof(p->state), "%s",
				 port_state_name(up->state));
			snprintf(p->phys_state, sizeof(p->phys_state), "%s",
				 phys_state_name(up->phys_state));
			p->rate_gbps = up->rate;
			snprintf(p->link_layer, sizeof(p->link_layer), "%s",
				 up->link_layer);
			p->node_guid = be64toh(ca.node_guid);
			p->port_guid = be64toh(up->port_guid);
			p->lid = (uint16_t)up->base_lid;
			fill_from_verbs(p);
		}
		umad_release_ca(&ca);
	}
	n = add_verbs_only(&ports, n);
	if (!n && why)
		snprintf(why, why_len,
			 "no RDMA device found: /sys/class/infiniband is %s. "
			 "Check the kernel side: 'lsmod | grep -E "
			 "\"mlx5_ib|irdma|rdma_rxe|siw\"', "
			 "'rdma link show' (iproute2), and 'ls "
			 "/sys/class/infiniband'; "
			 "for soft-RoCE on an Ethernet port: 'rdma link add "
			 "rxe0 type rxe netdev eth0'. "
			 "Soft rails (provider = soft) need no RDMA device.",
			 access("/sys/class/infiniband", F_OK)
			     ? "missing (the kernel has no RDMA support loaded)"
			     : "empty");
	*ports_p = ports;
	return n;
}

static int guid_matches(uint64_t guid, const char *s)
{
	unsigned a, b, c, d;
	char *end;
	uint64_t v;

	if (sscanf(s, "%4x:%4x:%4x:%4x", &a, &b, &c, &d) == 4)
		return guid == ((uint64_t)a << 48 | (uint64_t)b << 32 |
				(uint64_t)c << 16 | d);
	v = strtoull(s, &end, 16);
	return *end == 0 && end != s && v == guid;
}

const struct ry__verbs_port *ry__verbs_find(const struct ry__verbs_port *ports,
					    int n, const char *device, int port)
{
	for (int i = 0; i < n; i++)
		if (ports[i].port == port &&
		    (!strcmp(ports[i].device, device) ||
		     guid_matches(ports[i].node_guid, device)))
			return &ports[i];
	return NULL;
}

/* "a.b.c.d", "a.b.c.d:port", "v6" or "[v6]:port" -> the GID form. */
static int address_gid(const char *address, uint8_t raw[16])
{
	char buf[128], *end;
	struct in_addr a4;

	snprintf(buf, sizeof(buf), "%s",
		 address[0] == '[' ? address + 1 : address);
	end = strchr(buf, ']');
	if (end)
		*end = 0;
	if (inet_pton(AF_INET6, buf, raw) == 1)
		return 0;
	end = strchr(buf, ':');
	if (end)
		*end = 0;
	if (inet_pton(AF_INET, buf, &a4) != 1)
		return -EINVAL;
	/* RoCE carries an IPv4 address as ::ffff:a.b.c.d */
	memset(raw, 0, 10);
	raw[10] = raw[11] = 0xff;
	memcpy(raw + 12, &a4, 4);
	return 0;
}

static bool gid_is_v4mapped(const uint8_t *raw)
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0,	  0,
					0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(raw, pfx, 12);
}

static bool gid_is_zero(const uint8_t *raw)
{
	static const uint8_t z[16];

	return !memcmp(raw, z, 16);
}

static size_t dev_ports(struct ibv_context *ctx)
{
	struct ibv_device_attr a;

	return ibv_query_device(ctx, &a) || !a.phys_port_cnt ? 1
							     : a.phys_port_cnt;
}

int ry__verbs_pick_gid(struct ibv_context *ctx, int port, int gid_index,
		       const char *address, uint32_t *index_p, uint8_t gid[16],
		       char *why, size_t why_len)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	struct ibv_gid_entry *tbl;
	uint8_t want[16];
	int best = -1, score = 0;
	uint8_t best_raw[16];
	ssize_t n;
	int rc = ibv_query_port(ctx, (uint8_t)port, &pa);

	if (rc) {
		snprintf(why, why_len, "cannot query port %d: %s", port,
			 strerror(rc));
		return -rc;
	}
	if (gid_index >= 0) {
		if (gid_index >= pa.gid_tbl_len ||
		    ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)gid_index,
				     &e, 0) ||
		    gid_is_zero(e.gid.raw)) {
			snprintf(
			    why, why_len,
			    "GID index %d of port %d is empty (the port has %d "
			    "entries; 'railyard devices' lists them)",
			    gid_index, port, pa.gid_tbl_len);
			return -ENOENT;
		}
		*index_p = (uint32_t)gid_index;
		memcpy(gid, e.gid.raw, 16);
		return 0;
	}
	if (address && address[0] && address_gid(address, want)) {
		snprintf(why, why_len, "address '%s' is not an IP address",
			 address);
		return -EINVAL;
	}
	if (pa.link_layer != IBV_LINK_LAYER_ETHERNET &&
	    !(address && address[0])) {
		if (ibv_query_gid_ex(ctx, (uint32_t)port, 0, &e, 0)) {
			snprintf(why, why_len, "port %d has no GID 0", port);
			return -ENOENT;
		}
		*index_p = 0;
		memcpy(gid, e.gid.raw, 16);
		return 0;
	}
	/* One call for the whole table (of every port): only the valid
	 * entries come back, rxe has 1024 slots per port. */
	tbl = calloc((size_t)pa.gid_tbl_len * dev_ports(ctx), sizeof(*tbl));
	if (!tbl)
		return -ENOMEM;
	n = ibv_query_gid_table(ctx, tbl,
				(size_t)pa.gid_tbl_len * dev_ports(ctx), 0);
	for (ssize_t i = 0; i < n; i++) {
		struct ibv_gid_entry *t = &tbl[i];
		int s;

		if (t->port_num != (uint32_t)port || gid_is_zero(t->gid.raw))
			continue;
		if (address && address[0]) {
			if (memcmp(t->gid.raw, want, 16))
				continue;
			s = t->gid_type == IBV_GID_TYPE_ROCE_V2 ? 3 : 2;
		} else {
			if (t->gid_type != IBV_GID_TYPE_ROCE_V2)
				continue;
			/* routable IPv4 beats the link-local fe80:: one */
			s = gid_is_v4mapped(t->gid.raw) ? 2 : 1;
		}
		/* lowest index wins among equals: the table is not sorted */
		if (s > score ||
		    (s == score && t->gid_index < (uint32_t)best)) {
			score = s;
			best = (int)t->gid_index;
			memcpy(best_raw, t->gid.raw, 16);
		}
	}
	free(tbl);
	if (best < 0) {
		if (address && address[0])
			snprintf(
			    why, why_len,
			    "no GID of port %d carries address %s (is the "
			    "address on the port's netdev, and the netdev up?)",
			    port, address);
		else
			snprintf(why, why_len,
				 "port %d has no RoCE v2 GID (does its netdev "
				 "have an IP address?)",
				 port);
		return -ENOENT;
	}
	*index_p = (uint32_t)best;
	memcpy(gid, best_raw, 16);
	return 0;
}
