#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Soft rail RDMA WRITE bandwidth (4 KiB .. 1 MiB) against iperf3 single-stream
# TCP on the same path, in the same run:
#
#   1. loopback: two soft rails on 127.0.0.1, iperf3 on 127.0.0.1; as root
#      inside a private namespace whose lo has the rail's MTU (1500, 9000,
#      65000), so that both see the same MTU
#   2. veth (root only): two namespaces joined by one veth pair
#
#        netns ry-bench-a-PID              netns ry-bench-b-PID
#        +--------------------+            +--------------------+
#        | rya 198.18.0.1/24  |============| ryb 198.18.0.2/24  |
#        +--------------------+    veth    +--------------------+
#
#      at MTU 1500 and at MTU 9000.  The namespaces are deleted on exit.
#
# usage: bench_soft.sh [BENCH_BINARY]   (env T=seconds per point, default 2;
#        SKIP_LO=1 skips loopback, MTUS="1500 9000" picks the veth MTUs)
# Not a test: it prints numbers and asserts nothing.
set -euo pipefail

BIN=${1:-$(dirname "$0")/bench_soft_write}
T=${T:-2}
PORT=5299
NSA=ry-bench-a-$$
NSB=ry-bench-b-$$
NSL=ry-bench-lo-$$
PIDS=()

cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	ip netns del "$NSA" 2>/dev/null || true
	ip netns del "$NSB" 2>/dev/null || true
	ip netns del "$NSL" 2>/dev/null || true
}
trap cleanup EXIT

if ! command -v iperf3 >/dev/null; then
	if [ "$(id -u)" = 0 ]; then apt-get install -y iperf3 >/dev/null; fi
fi

# iperf3 MB/s (10^6 bytes/s) received; $1 = netns prefix for the client
iperf_mbs() {
	local client=$1 server=$2 addr=$3
	$server iperf3 -s -1 -B "$addr" -p $PORT >/dev/null 2>&1 &
	PIDS+=($!)
	sleep 0.5
	$client iperf3 -c "$addr" -p $PORT -t "$T" -J |
		python3 -c 'import json,sys; d=json.load(sys.stdin);
print("%.1f" % (d["end"]["sum_received"]["bits_per_second"]/8e6))'
	wait "${PIDS[-1]}" 2>/dev/null || true
}

# print the soft table with the iperf3 figure and the ratio
table() {
	local label=$1 ip=$2
	shift 2
	echo "== $label: iperf3 TCP single stream $ip MB/s"
	printf "%10s %12s %12s %8s\n" size soft_MB/s iperf3_MB/s ratio
	${BIN_EX:-} "$BIN" -w -t "$T" "$@" | awk -v ip="$ip" '!/^#/ && $1 ~ /^[0-9]+$/ {
		printf "%10s %12s %12s %8.2f\n", $1, $2, ip, $2 / ip }'
}

echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) cpus, T=$T s per point," \
	"load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "${SKIP_LO:-}" ]; then
	# Same path, same MTU: as root, loopback in a private namespace with
	# lo's MTU set to the rail's, so iperf3's TCP sees that MTU too.
	# Otherwise the host's lo (MTU 65536 for iperf3).  iperf3 runs again
	# before each table: the machine's load drifts.
	for mtu in 1500 9000 65000; do
		if [ "$(id -u)" = 0 ]; then
			ip netns add "$NSL"
			ip -n "$NSL" link set lo up mtu $mtu
			ex="ip netns exec $NSL"
			label="loopback (netns lo mtu $mtu)"
		else
			ex=""
			label="loopback (host lo) rail mtu $mtu"
		fi
		ip_lo=$(iperf_mbs "$ex" "$ex" 127.0.0.1)
		BIN_EX="$ex" table "$label" "$ip_lo" -m $mtu
		if [ "$(id -u)" = 0 ]; then ip netns del "$NSL"; fi
	done
fi

if [ "$(id -u)" != 0 ]; then
	echo "# veth between namespaces skipped: needs root"
	exit 0
fi
ip netns add "$NSA"
ip netns add "$NSB"
ip link add rya netns "$NSA" type veth peer name ryb netns "$NSB"
ip -n "$NSA" addr add 198.18.0.1/24 dev rya
ip -n "$NSB" addr add 198.18.0.2/24 dev ryb
for ns in "$NSA" "$NSB"; do ip -n "$ns" link set lo up; done
ip -n "$NSA" link set rya up
ip -n "$NSB" link set ryb up
for mtu in ${MTUS:-1500 9000}; do
	ip -n "$NSA" link set rya mtu $mtu
	ip -n "$NSB" link set ryb mtu $mtu
	sleep 0.2
	ipv=$(iperf_mbs "ip netns exec $NSA" "ip netns exec $NSB" 198.18.0.2)
	table "veth mtu $mtu" "$ipv" -m $mtu \
		-A /var/run/netns/"$NSA" -a 198.18.0.1:0 \
		-B /var/run/netns/"$NSB" -b 198.18.0.2:0
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
