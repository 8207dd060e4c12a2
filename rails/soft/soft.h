/* SPDX-License-Identifier: BSD-2-Clause */
/* The soft rail: userspace reliable-connected RDMA over UDP. */
#ifndef RAILYARD_SOFT_H
#define RAILYARD_SOFT_H

#include <stddef.h>
#include <stdint.h>

#include "rails/rail.h"

extern const struct ry_rail_ops ry__soft_ops;

/* Bytes of each packet that are not payload: IPv4 + UDP + our header. */
#define RY__SOFT_OVERHEAD 72

/*
 * Test hook: run one raw datagram through the rail's receive path as if it
 * had arrived from gid (IPv4-mapped) and udp_port, then flush whatever the
 * rail sends in answer.  For forged-packet tests and the fuzzer.
 */
void ry__soft_inject(struct ry_rail *rail, const void *pkt, size_t len,
		     const uint8_t gid[16], uint16_t udp_port);

/*
 * Test hook: choose the initial PSN of a QP in RESET or INIT (instead of
 * the random one), to test the 24-bit wrap.  -EINVAL in other states.
 */
int ry__soft_test_set_psn(struct ry_qp *qp, uint32_t psn);

/*
 * Test hook: how long the rail holds a packet that arrived ahead of a gap
 * (soft_net.c; RY__SOFT_HOLD_NS unless set), so tests need not race it.
 */
void ry__soft_test_set_hold(struct ry_rail *rail, uint64_t ns);

/*
 * Test hook: the data_mac field of one packet (counter and tag), for tests
 * that forge packets as a key holder would: key is the sender's mac_tx, n
 * its transmission counter, xpsn the extended PSN (soft_mac.c), hdr the
 * encoded header.
 */
void ry__soft_mac_compute(const uint8_t key[RY_QP_MAC_KEY], uint64_t n,
			  uint64_t xpsn, const void *hdr, const void *payload,
			  uint32_t paylen, uint8_t mac[24]);
/* The extended PSN of a space's first PSN (soft_mac.c). */
#define RY__SOFT_XPSN_BASE (1ull << 32)

#endif
