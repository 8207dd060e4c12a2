/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device discovery for verbs rails and `railyard devices`: every HCA port
 * with its state, rate, link layer, GUIDs, LID and GIDs, from libibumad
 * (sysfs: works without opening the device) and libibverbs (GID types and
 * the active MTU, which only a device context tells).
 */
#ifndef RAILYARD_VERBS_DISCOVER_H
#define RAILYARD_VERBS_DISCOVER_H

#include <stdint.h>
#include <stddef.h>

#define RY__VERBS_MAX_GIDS 8

struct ry__verbs_gid {
	uint32_t index;
	uint8_t raw[16];
	char type[12]; /* "IB", "RoCE v1", "RoCE v2" */
	char
	    netdev[32]; /* RoCE: the interface it belongs to (>= IF_NAMESIZE) */
};

struct ry__verbs_port {
	char device[64];
	int port;
	char state[16];	     /* DOWN, INIT, ARMED, ACTIVE */
	char phys_state[16]; /* LinkUp, Disabled, Polling, ... */
	unsigned rate_gbps;
	char link_layer[24]; /* InfiniBand, Ethernet */
	uint64_t node_guid;  /* host order */
	uint64_t port_guid;
	uint16_t lid;
	unsigned active_mtu; /* bytes; 0 if the device could not be opened */
	unsigned n_gids;
	struct ry__verbs_gid gids[RY__VERBS_MAX_GIDS];
};

/*
 * List every port of every RDMA device.  Returns the number of ports (0
 * when there is no device) and a malloc'd array in *ports_p (free()), or a
 * negative errno.  `why` receives a plain explanation when no device is
 * found: what the kernel side lacks and how to check it.
 */
int ry__verbs_discover(struct ry__verbs_port **ports_p, char *why,
		       size_t why_len);

/* Find a port by device name or node GUID ("0x..." or "xxxx:xxxx:..."). */
const struct ry__verbs_port *ry__verbs_find(const struct ry__verbs_port *ports,
					    int n, const char *device,
					    int port);

struct ibv_context;

/*
 * Pick the source GID of a verbs rail on an open device: gid_index when it
 * is >= 0; else the GID holding `address` (an IPv4 or IPv6 address, as a
 * RoCE GID carries it; "" for none), RoCE v2 preferred; else on Ethernet
 * the first RoCE v2 GID with an IPv4-mapped address, then any RoCE v2 GID;
 * on InfiniBand index 0.  Returns 0 with *index_p and gid, or -ENOENT /
 * -EINVAL with a plain reason in `why`.
 */
int ry__verbs_pick_gid(struct ibv_context *ctx, int port, int gid_index,
		       const char *address, uint32_t *index_p, uint8_t gid[16],
		       char *why, size_t why_len);

#endif
