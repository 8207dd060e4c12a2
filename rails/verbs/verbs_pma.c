// SPDX-License-Identifier: BSD-2-Clause
/*
 * The port's error counters from its Performance Management Agent, for an
 * InfiniBand port whose sysfs has no counters/ (verbs_health.c reads sysfs
 * first): a PerfMgmt Get(PortCounters) to the port's own LID on QP1
 * through libibumad, the answer's error fields summed as sysfs's are.
 *
 * PortCounters (IBA 16.1.3.5), from byte 64 of the MAD (a 24-byte MAD
 * header, 40 reserved bytes): symbol errors (16 bits at 68), link error
 * recoveries (8 at 70), link downs (8 at 71), receive errors (16 at 72),
 * remote physical receive errors (16 at 74), transmit discards (16 at 78),
 * local link integrity errors (the high 4 bits of 83) and excessive
 * buffer overruns (the low 4).  The counters saturate rather than wrap; a
 * saturated one stops rising, which the health sampler reads as quiet.
 *
 * RoCE and iWARP ports have no LID and no PMA on QP1 to ask; their
 * drivers keep the counters in sysfs, or in none.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "rails/verbs/verbs_int.h"

#define MAD_LEN 256
#define PERF_CLASS 0x04
#define GET 0x01
#define GET_RESP 0x81
#define PORT_COUNTERS 0x0012
#define DATA 64
#define QP1_QKEY 0x80010000u

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

int ry__verbs_pma_parse(const uint8_t *mad, size_t len, unsigned port,
			uint64_t *sum_p)
{
	const uint8_t *d = mad + DATA;

	if (len < DATA + 40 || mad[0] != 1 || mad[1] != PERF_CLASS ||
	    mad[2] != 1 || mad[3] != GET_RESP ||
	    be16(mad + 16) != PORT_COUNTERS)
		return -EPROTO;
	if (be16(mad + 4)) /* MAD status: unsupported, bad attribute, ... */
		return -EOPNOTSUPP;
	if (d[1] != port && d[1] != 0xff)
		return -EPROTO;
	*sum_p = (uint64_t)be16(d + 4) + d[6] + d[7] + be16(d + 8) +
		 be16(d + 10) + be16(d + 14) + (d[19] >> 4) + (d[19] & 0xf);
	return 0;
}

void ry__verbs_pma_request(uint8_t *mad, unsigned port, uint64_t tid)
{
	memset(mad, 0, MAD_LEN);
	mad[0] = 1; /* base version */
	mad[1] = PERF_CLASS;
	mad[2] = 1; /* class version */
	mad[3] = GET;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = (uint8_t)(tid >> (56 - 8 * i));
	mad[16] = PORT_COUNTERS >> 8;
	mad[17] = PORT_COUNTERS & 0xff;
	mad[DATA + 1] = (uint8_t)port;
}

int ry__verbs_pma_port_errors(const char *dev, unsigned port, uint16_t lid,
			      uint64_t *sum_p)
{
	static uint64_t tid_next = 0x7279000000000000ull; /* "ry" */
	void *umad;
	int fd, agent, len, ret;
	uint64_t tid;

	if (!lid)
		return -ENOENT; /* RoCE, iWARP: no PMA to ask */
	/* without the ib_umad module libibumad says so on stderr itself */
	if (access("/sys/class/infiniband_mad/abi_version", R_OK) ||
	    umad_init() < 0)
		return -ENODEV;
	fd = umad_open_port(dev, (int)port);
	if (fd < 0)
		return fd;
	agent = umad_register(fd, PERF_CLASS, 1, 0, NULL);
	if (agent < 0) {
		umad_close_port(fd);
		return agent;
	}
	umad = umad_alloc(1, umad_size() + MAD_LEN);
	if (!umad) {
		umad_unregister(fd, agent);
		umad_close_port(fd);
		return -ENOMEM;
	}
	tid = __atomic_fetch_add(&tid_next, 1, __ATOMIC_RELAXED);
	ry__verbs_pma_request(umad_get_mad(umad), port, tid);
	umad_set_addr(umad, lid, 1, 0, QP1_QKEY);
	/* the manager's timer waits on this: short, no retry (the next
	 * sample asks again) */
	ret = umad_send(fd, agent, umad, MAD_LEN, 100, 0);
	if (!ret) {
		len = MAD_LEN;
		ret = umad_recv(fd, umad, &len, 200);
		if (ret >= 0 && umad_status(umad))
			ret = -ETIMEDOUT;
		else if (ret >= 0)
			ret = ry__verbs_pma_parse(umad_get_mad(umad),
						  (size_t)len, port, sum_p);
	}
	umad_free(umad);
	umad_unregister(fd, agent);
	umad_close_port(fd);
	return ret < 0 ? ret : 0;
}
