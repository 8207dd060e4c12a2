#!/bin/sh
# Runs inside the hw test guest (see hw_qemu_rxe.sh), with $SRC and $BUILD
# mounted at their host paths.  Two rails, each a pair of soft-RoCE devices
# on a veth pair:
#
#   "node A"  rxe_a0 -- veth0a 198.18.0.1 <==veth==> 198.18.0.2 veth0b -- rxe_b0  "node B"
#             rxe_a1 -- veth1a 198.18.1.1 <==veth==> 198.18.1.2 veth1b -- rxe_b1
#
# rxe (before 6.17) opens its UDP socket in init_net only, so both nodes
# live in the guest's one namespace.  Policy routing sends A->B traffic
# out of veth0a (and B->A out of veth0b) instead of short-cutting it over
# lo; accept_local lets each end take packets from a local source address.
#
# Tests: `railyard devices` lists the rxe ports and exits 0; the rail
# contract suite (tests/hw/test_verbs_conformance, the source the soft rail
# runs too) and the verbs-only cases (tests/hw/test_verbs_rail) pass over
# rxe_a0 <-> rxe_b0; then every
# tests/hw/guest.d/*.sh (more drills, e.g. the manager's serve+bench),
# sourced with this file's functions and topology: its last status is its
# result, and it must not call exit.
# Exit: 0 all passed, 1 a failure.

# rail_up, wait_gid, wait_sock, check, now, since
. "$SRC/tests/hw/guest-lib.sh"

devices_lists_rxe() {
	out=$("$BUILD/src/cli/railyard" devices) || { echo "$out"; return 1; }
	echo "$out"
	for d in rxe_a0 rxe_b0 rxe_a1 rxe_b1; do
		echo "$out" | grep "$d" | grep -q ACTIVE ||
			{ echo "guest: 'railyard devices' does not show $d ACTIVE"; return 1; }
	done
	json=$("$BUILD/src/cli/railyard" devices --json) || return 1
	echo "$json" | grep -q '"device":"rxe_a0"' || { echo "$json"; return 1; }
}

verbs_suite() { # verbs_suite EXECUTABLE [CM [CASE]]
	env ${3:+CK_RUN_CASE=$3} RY_HW_CM=${2:-} RY_HW_DEV_A=rxe_a0 RY_HW_DEV_B=rxe_b0 CK_DEFAULT_TIMEOUT=120 \
		RY_HW_NETDEV_A=veth0a RY_HW_NETDEV_B=veth0b RY_HW_ADDR_A=198.18.0.1 \
		RY_HW_GUID_A=$(cat /sys/class/infiniband/rxe_a0/node_guid) \
		CK_VERBOSITY=${CK_VERBOSITY:-verbose} "$BUILD/tests/hw/$1"
}

t0=$(now)
for n in 0 1; do
	check "rail $n up (rxe_a$n, rxe_b$n on veth$n)" rail_up $n
	check "rxe_a$n ACTIVE with its GID" wait_gid rxe_a$n 198.18.$n.1
	check "rxe_b$n ACTIVE with its GID" wait_gid rxe_b$n 198.18.$n.2
done
echo "guest: rail setup took $(since $t0) s"
check "railyard devices lists the rxe ports" devices_lists_rxe
# under TSan only its "contract" case: own_cq repeats 13 of its
# single-threaded cases on CQs of their own, which gives TSan nothing
# "contract" does not
check "rail contract suite on verbs (tests/hw/test_verbs_conformance)" \
	verbs_suite test_verbs_conformance "" ${TSAN_OPTIONS:+contract}
check "verbs-only cases (tests/hw/test_verbs_rail)" verbs_suite test_verbs_rail
# the contract again with librdmacm connecting the QPs (cm = rdma_cm):
# its "contract" case (own_cq repeats 13 of them on other CQs, nothing the
# connection mode changes)
check "rail contract suite on verbs with cm = rdma_cm" \
	verbs_suite test_verbs_conformance rdma_cm contract
for t in "$SRC"/tests/hw/guest.d/*.sh; do
	[ -f "$t" ] && check "${t#"$SRC"/}" . "$t"
done
echo "guest: all tests took $(since $t0) s, fail=$fail"
if [ $fail != 0 ]; then
	echo "guest: the kernel's last messages:"
	dmesg | tail -40
fi
exit $fail
