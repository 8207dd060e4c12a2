// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail contract suite (tests/rail/rail_conformance.c, the same source
 * the soft rail runs) against the verbs rail on two RDMA devices.  Exits
 * 77 with a plain message without them; tests/hw/hw_qemu_rxe.sh runs it
 * in a QEMU guest with soft-RoCE (rxe_a0 <-> rxe_b0).
 */
#include "rail/rail_conformance.h"
#include "verbs_provider.h"

int main(void)
{
	return verbs_run_suite("verbs_conformance", rail_conformance_add);
}
