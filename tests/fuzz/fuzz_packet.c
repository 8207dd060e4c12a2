// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for the soft rail's receive path, in two stages.
 *
 * First the packet bytes go to the pure header decoder alone
 * (ry__soft_wire_decode, wire.c): cheap, no rail, and a packet it accepts
 * must re-encode to the same bytes, or decoder and encoder disagree about
 * the format.
 *
 * Then the rail path: header checks, CRC, QPN demultiplexing, the
 * responder (WRITE/SEND/READ execution and every check before memory is
 * touched) and the completer (ACK/NAK/READ responses).  The first input
 * byte steers: which rail receives the packet, and which
 * fields are patched to the live connection's values (QPNs and cookie,
 * the expected PSN, a valid rkey and address, a correct CRC; and with
 * bit 5 a paylen short of the datagram, the rest padding), so the fuzzer
 * gets past the outer checks into the protocol machines.  A QP
 * that the input kills is reconnected; one connection in four has data_mac
 * on (the MAC check, and signing what the QPs send).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "rails/soft/wire.h"

#define REGION (64 * 1024)

static struct ry_rail *rail[2];
static struct ry_pd *pd[2];
static struct ry_qp *qp[2];
static struct ry_mr *mr[2];
static uint8_t *mem[2];
static unsigned inputs, connects;

static void connect_qps(void)
{
	struct ry_qp_init init = {.max_send_wr = 64};
	bool mac = connects++ % 4 == 3;

	for (int i = 0; i < 2; i++) {
		if (qp[i])
			ry__rail_destroy_qp(qp[i]);
		if (ry__rail_create_qp(pd[i], &init, &qp[i]))
			abort();
	}
	for (int i = 0; i < 2; i++) {
		struct ry_qp_attr at = {
		    .access = RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
			      RY_ACCESS_REMOTE_READ,
		    .remote = qp[1 - i]->local,
		    .mtu = 1500,
		    .ack_timeout_us = 1000,
		    .retry_cnt = 1,
		    .rnr_retry = 1,
		    .max_rd_atomic = 4,
		    .mac = mac,
		};

		memset(at.mac_tx, 1 + i, sizeof(at.mac_tx));
		memset(at.mac_rx, 2 - i, sizeof(at.mac_rx));
		if (ry__rail_modify_qp(qp[i], RY_QPS_INIT, &at) ||
		    ry__rail_modify_qp(qp[i], RY_QPS_RTR, &at) ||
		    ry__rail_modify_qp(qp[i], RY_QPS_RTS, &at))
			abort();
	}
	/* Something outstanding, so that ACKs and READ responses have a WR
	 * to act on. */
	for (int k = 0; k < 3; k++) {
		struct ry_send_wr wr = {
		    .wr_id = (uint64_t)k,
		    .opcode = k == 1 ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE,
		    .sge = {(uintptr_t)mem[0], 5000, mr[0]->lkey},
		    .remote_addr = (uintptr_t)mem[1],
		    .rkey = mr[1]->rkey,
		};

		ry__rail_post_send(qp[0], &wr, 1);
	}
}

static void setup(void)
{
	for (int i = 0; i < 2; i++) {
		struct ry_rail_config cfg = {.provider = RY_PROVIDER_SOFT,
					     .mtu = 1500};

		strcpy(cfg.name, i ? "fz1" : "fz0");
		strcpy(cfg.address, "127.0.0.1:0");
		if (ry__rail_open(&cfg, &rail[i]) ||
		    ry__rail_alloc_pd(rail[i], &pd[i]))
			abort();
		mem[i] = calloc(1, REGION);
		if (!mem[i] || ry__rail_reg_mr(pd[i], mem[i], REGION,
					       RY_ACCESS_LOCAL_WRITE |
						   RY_ACCESS_REMOTE_WRITE |
						   RY_ACCESS_REMOTE_READ,
					       &mr[i]))
			abort();
	}
	connect_qps();
}

static void decode_stage(const uint8_t *pkt, size_t len)
{
	struct ry__soft_pkt p;
	struct ry__soft_hdr h;
	size_t hlen = sizeof(h);

	if (ry__soft_wire_decode(pkt, len, &p))
		return;
	if (p.flags & RY__SOFT_F_MAC) {
		if (p.mac != pkt + sizeof(h))
			abort();
		hlen += RY__SOFT_MAC_LEN;
	} else if (p.mac) {
		abort();
	}
	/* bytes after the payload only where padding is allowed */
	if (len < hlen || p.paylen > len - hlen || p.payload != pkt + hlen ||
	    (p.paylen != len - hlen && !ry__soft_may_pad(p.opcode, p.flags)))
		abort();
	ry__soft_hdr_encode(&h, &p);
	ry__soft_hdr_seal(&h, p.payload, p.paylen);
	if (memcmp(&h, pkt, sizeof(h)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t pkt[4096 + 64];
	struct ry__soft_hdr h;
	uint8_t ctl;
	int to;

	if (!rail[0])
		setup();
	if (size < 1 || size > 4096)
		return 0;
	decode_stage(data + 1, size - 1);
	ctl = data[0];
	size--;
	memcpy(pkt, data + 1, size);
	to = ctl & 1;
	if (size >= sizeof(h)) {
		struct ry__soft_qp *dst = to_sqp(qp[to]);
		size_t hl = sizeof(h);

		memcpy(&h, pkt, sizeof(h));
		if ((h.flags & RY__SOFT_F_MAC) &&
		    size >= sizeof(h) + RY__SOFT_MAC_LEN)
			hl += RY__SOFT_MAC_LEN;
		if (ctl & 2) {
			uint64_t cookie = htobe64(qp[to]->local.cookie);

			h.version = RY__SOFT_WIRE_VERSION;
			ry__soft_put24(h.dqpn, qp[to]->qp_num);
			memcpy(h.cookie, &cookie, sizeof(cookie));
			h.paylen = htobe16((uint16_t)(size - hl));
			/* the last bytes as GSO padding (wire.h): as many as
			 * the shared word's low byte says */
			if ((ctl & 32) && size > hl)
				h.paylen = htobe16(
				    (uint16_t)(size - hl -
					       be32toh(h.imm_msn) % 256 %
						   (size - hl + 1)));
		}
		if (ctl & 4)
			ry__soft_put24(h.psn,
				       to ? dst->resp.psn : dst->comp.psn);
		if (ctl & 8) {
			uint64_t va;

			memcpy(&va, h.reth_va, sizeof(va));
			va = htobe64((uintptr_t)mem[to] +
				     (be64toh(va) % REGION));
			h.reth_rkey = htobe32(mr[to]->rkey);
			memcpy(h.reth_va, &va, sizeof(va));
		}
		memcpy(pkt, &h, sizeof(h));
		if (ctl & 16) {
			/* over paylen (padding is outside the CRC), never
			 * past the datagram */
			uint32_t pl = be16toh(h.paylen);

			if (pl > size - hl)
				pl = (uint32_t)(size - hl);
			ry__soft_hdr_seal((struct ry__soft_hdr *)(void *)pkt,
					  pkt + hl, pl);
		}
	}
	ry__soft_inject(rail[to], pkt, size, qp[1 - to]->local.gid,
			qp[1 - to]->local.udp_port);
	for (int i = 0; i < 2; i++)
		ry__rail_progress(rail[i]);
	{
		struct ry_wc wc[16];

		for (int i = 0; i < 2; i++)
			while (ry__rail_poll_cq(rail[i], wc, 16) > 0)
				;
	}
	if (qp[0]->state == RY_QPS_ERR || qp[1]->state == RY_QPS_ERR ||
	    ++inputs % 256 == 0)
		connect_qps();
	return 0;
}
