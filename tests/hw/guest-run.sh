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

# busybox's shell prefers its own applets: use the real iproute2
ip() { /usr/sbin/ip "$@"; }
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
fail=0
check() { # check NAME CMD...: run, report, remember a failure
	# local: a guest.d script run by check may call check itself
	local name=$1 t
	shift
	t=$(now)
	if "$@"; then
		echo "guest: PASS $name ($(since "$t") s)"
	else
		echo "guest: FAIL $name ($(since "$t") s)"
		fail=1
	fi
}

rail_up() { # rail_up N [rxe|siw]: devices TYPE_aN, TYPE_bN
	n=$1 a=veth${1}a b=veth${1}b ty=${2:-rxe}
	ip link add $a type veth peer name $b || return 1
	ip addr add 198.18.$n.1/24 dev $a
	ip addr add 198.18.$n.2/24 dev $b
	for d in $a $b all; do
		echo 1 > /proc/sys/net/ipv4/conf/$d/accept_local
		echo 0 > /proc/sys/net/ipv4/conf/$d/rp_filter
	done
	ip link set $a up
	ip link set $b up
	# The local table must not win for traffic between the two ends.
	if ! ip rule show | grep -q '^100:.*lookup local'; then
		ip rule add pref 100 lookup local
		ip rule del pref 0 lookup local
	fi
	ip route add 198.18.$n.2 dev $a src 198.18.$n.1 table $((100 + n))
	ip route add 198.18.$n.1 dev $b src 198.18.$n.2 table $((200 + n))
	ip rule add pref 10 iif lo from 198.18.$n.1 to 198.18.$n.2 lookup $((100 + n))
	ip rule add pref 10 iif lo from 198.18.$n.2 to 198.18.$n.1 lookup $((200 + n))
	rdma link add ${ty}_a$n type $ty netdev $a || return 1
	rdma link add ${ty}_b$n type $ty netdev $b || return 1
}

# wait_gid DEV IPV4: the port ACTIVE and the address's RoCE v2 GID present
# (GIDs appear asynchronously after the address is added)
wait_gid() {
	want=$(echo "$2" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	i=0
	while [ $i -lt 100 ]; do
		if grep -q ACTIVE /sys/class/infiniband/$1/ports/1/state 2>/dev/null &&
		   grep -qx "$want" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null; then
			return 0
		fi
		i=$((i + 1))
		sleep 0.1
	done
	echo "guest: $1 has no ACTIVE port with a GID for $2"
	return 1
}

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
check "rail contract suite on verbs (tests/hw/test_verbs_conformance)" \
	verbs_suite test_verbs_conformance
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
