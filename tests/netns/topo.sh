#!/usr/bin/env bash
# Namespace drill topology: two hosts, a switch with one bridge per rail,
# and a management link for the control channel.
#
#   ns <P>-a                  ns <P>-sw                    ns <P>-b
#  +-----------+         +-------------------+         +-----------+
#  | r0 .1.1/24|---veth--|a-r0 -[br0]- b-r0  |--veth---|r0 .1.2/24 |
#  | r1 .2.1/24|---veth--|a-r1 -[br1]- b-r1  |--veth---|r1 .2.2/24 |
#  | ...       |         |  ...              |         | ...       |
#  | mg .0.1/24|---veth--|a-mg -[brm]- b-mg  |--veth---|mg .0.2/24 |
#  +-----------+         +-------------------+         +-----------+
#   addresses 198.18.<rail+1>.<host>/24; management 198.18.0.<host>/24
#
# With --intruder a third host, ns <P>-x (host number 3), hangs off every
# bridge the same way (x-r0 .. x-mg in the switch): a node named in
# neither config that can reach both (tests/netns/test_intruder.sh).
# Without it nothing differs.
#
# Each host's cable ends in the switch, so unplugging host a's cable
# (`ip link set r0 down` inside a) leaves b's port up: b sees nothing
# locally and must notice the loss itself, as with a real switch.
#
# usage (root):
#   topo.sh up PREFIX RAILS [RATE] [--intruder]
#                                    build it; RATE shapes every rail with
#                                    tc tbf on both hosts (e.g. 200mbit);
#                                    --intruder adds host x (not shaped)
#   topo.sh unplug PREFIX a|b RAIL   pull host's cable of rail RAIL
#   topo.sh plug PREFIX a|b RAIL     plug it back
#   topo.sh blackhole PREFIX RAIL    the switch silently drops rail RAIL's
#                                    frames both ways; both hosts' links stay
#                                    up (a dead switch port, a bad cable)
#   topo.sh unblackhole PREFIX RAIL  the switch forwards them again
#   topo.sh oneway PREFIX RAIL       the switch drops rail RAIL's IP frames
#                                    from b to a only (ARP still passes, so
#                                    a->b keeps working)
#   topo.sh twoway PREFIX RAIL       both ways again
#   topo.sh mtu PREFIX MTU           every rail's links (hosts, switch ports)
#                                    at MTU, e.g. 9000 (jumbo frames)
#   topo.sh swmtu PREFIX RAIL MTU    the switch's ports of rail RAIL at MTU:
#                                    larger frames from the hosts are dropped
#                                    silently (a path-MTU black hole), GSO
#                                    batches of larger frames too (a veth
#                                    checks no GSO batch against its MTU;
#                                    a tbf qdisc drops one whose frames
#                                    exceed its burst)
#   topo.sh delete PREFIX a|b RAIL   delete host's interface of rail RAIL
#                                    (the veth pair: a NIC that went away)
#   topo.sh create PREFIX a|b RAIL [MAC]
#                                    create it again as topo up did (same
#                                    name and address; MAC if given), up
#   topo.sh down PREFIX              delete the namespaces (x too)
# Only addresses from 198.18.0.0/15 are used, only inside these namespaces.
set -euo pipefail

ns_up() {
	local p=$1 rails=$2 rate=${3:-} intruder=${4:-}
	ip netns add "$p-a"
	ip netns add "$p-b"
	ip netns add "$p-sw"
	for ns in "$p-a" "$p-b" "$p-sw"; do
		ip -n "$ns" link set lo up
	done
	local i h n br
	for ((i = 0; i <= rails; i++)); do
		if ((i == rails)); then n=mg; br=brm; net=0; else n=r$i; br=br$i; net=$((i + 1)); fi
		ip -n "$p-sw" link add "$br" type bridge
		ip -n "$p-sw" link set "$br" up
		for h in a b; do
			local hostnum=1
			[[ $h == b ]] && hostnum=2
			ip link add "$p$h$n" type veth peer name "$p${h}s$n"
			ip link set "$p$h$n" netns "$p-$h" name "$n"
			ip link set "$p${h}s$n" netns "$p-sw" name "$h-$n"
			ip -n "$p-sw" link set "$h-$n" master "$br" up
			ip -n "$p-$h" addr add "198.18.$net.$hostnum/24" dev "$n"
			ip -n "$p-$h" link set "$n" up
			if [[ -n $rate && $n != mg ]]; then
				tc -n "$p-$h" qdisc add dev "$n" root tbf \
					rate "$rate" burst 256kb latency ${RY_TBF_LATENCY:-20ms}
			fi
		done
	done
	[[ -n $intruder ]] && ns_intruder "$p" "$rails"
	return 0
}

# Host x: one port on every bridge, address .3 on each network.
ns_intruder() {
	local p=$1 rails=$2 i n br net
	ip netns add "$p-x"
	ip -n "$p-x" link set lo up
	for ((i = 0; i <= rails; i++)); do
		if ((i == rails)); then n=mg; br=brm; net=0; else n=r$i; br=br$i; net=$((i + 1)); fi
		ip link add "${p}x$n" type veth peer name "${p}xs$n"
		ip link set "${p}x$n" netns "$p-x" name "$n"
		ip link set "${p}xs$n" netns "$p-sw" name "x-$n"
		ip -n "$p-sw" link set "x-$n" master "$br" up
		ip -n "$p-x" addr add "198.18.$net.3/24" dev "$n"
		ip -n "$p-x" link set "$n" up
	done
}

# One host's cable of one rail, as ns_up makes it (no tbf shaping).
ns_cable() {
	local p=$1 h=$2 i=$3 mac=${4:-} hostnum=1
	[[ $h == b ]] && hostnum=2
	ip link add "$p$h""r$i" type veth peer name "$p${h}sr$i"
	ip link set "$p$h""r$i" netns "$p-$h" name "r$i"
	ip link set "$p${h}sr$i" netns "$p-sw" name "$h-r$i"
	ip -n "$p-sw" link set "$h-r$i" master "br$i" up
	[[ -n $mac ]] && ip -n "$p-$h" link set "r$i" address "$mac"
	ip -n "$p-$h" addr add "198.18.$((i + 1)).$hostnum/24" dev "r$i"
	ip -n "$p-$h" link set "r$i" up
}

ns_down() {
	local p=$1 ns
	for ns in "$p-a" "$p-b" "$p-sw" "$p-x"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}

cmd=${1:-}
case $cmd in
up)
	if [[ ${4:-} == --intruder ]]; then
		ns_up "$2" "$3" "" --intruder
	else
		ns_up "$2" "$3" "${4:-}" "$([[ ${5:-} == --intruder ]] && echo 1)"
	fi
	;;
down) ns_down "$2" ;;
delete) ip -n "$2-$3" link del "r$4" ;;
create) ns_cable "$2" "$3" "$4" "${5:-}" ;;
unplug) ip -n "$2-$3" link set "r$4" down ;;
plug) ip -n "$2-$3" link set "r$4" up ;;
blackhole)
	# take a's port out of the rail's bridge: carriers stay up on both
	# hosts, frames go nowhere (netem is not in every kernel)
	ip -n "$2-sw" link set "a-r$3" nomaster
	;;
unblackhole) ip -n "$2-sw" link set "a-r$3" master "br$3" ;;
oneway)
	# a queue of no packets on the switch's port towards a: everything
	# b sends to a is lost (tc actions and nft may be missing from the
	# kernel; qdiscs are not).  a keeps b's MAC, as it would with the ARP
	# entry still fresh, so a->b really keeps working.
	mac=$(ip -n "$2-b" -j link show "r$3" | jq -r '.[0].address')
	ip -n "$2-a" neigh replace "198.18.$(($3 + 1)).2" lladdr "$mac" \
		dev "r$3" nud permanent
	tc -n "$2-sw" qdisc add dev "a-r$3" root pfifo limit 0
	;;
twoway)
	tc -n "$2-sw" qdisc del dev "a-r$3" root
	ip -n "$2-a" neigh del "198.18.$(($3 + 1)).2" dev "r$3"
	;;
mtu)
	for dev in $(ip -n "$2-sw" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
		grep -E '^[abx]-r[0-9]+$'); do
		ip -n "$2-sw" link set "$dev" mtu "$3"
		h=${dev%%-*}
		ip -n "$2-$h" link set "${dev#*-}" mtu "$3"
	done
	;;
swmtu)
	for dev in $(ip -n "$2-sw" -o link show | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
		grep -E "^[abx]-r$3\$"); do
		ip -n "$2-sw" link set "$dev" mtu "$4"
		tc -n "$2-sw" qdisc replace dev "$dev" root tbf rate 10gbit \
			burst $(($4 + 14)) latency 50ms
	done
	;;
*)
	sed -n '2,53p' "$0"
	exit 2
	;;
esac
