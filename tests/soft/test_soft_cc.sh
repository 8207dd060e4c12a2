#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Congestion control on the soft rail (rails/soft/soft_cc.c): one QP pair
# across a path shaped like a slow switch port, 64 MiB by RDMA WRITE and
# back by RDMA READ, with the manager's QP timers (ack timeout 20 ms, retry
# count 5).  Passes when every WR succeeds (no retry exceeded on a path
# that is alive), every byte arrives, and under 3 % of the packets were
# sent again.  Once with the shaper's queue at 20 ms, once at 400 ms (a
# deep buffer: a loss-only window would fill it and time out).
#
#    netns ry-cc-a-PID                          netns ry-cc-b-PID
#   +--------------------+                    +--------------------+
#   | cca 198.18.0.1/24  |====== veth ========| ccb 198.18.0.2/24  |
#   | tbf 100mbit        |                    | tbf 100mbit        |
#   +--------------------+                    +--------------------+
#
# usage: test_soft_cc.sh SOFT_CC_TRANSFER_BINARY
# Root only (skips with 77 elsewhere); the namespaces are deleted on exit.
set -euo pipefail
bin=$1
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1 ||
	! command -v tc >/dev/null; then
	echo "SKIP: needs root, ip netns and tc"
	exit 77
fi
A=ry-cc-a-$$
B=ry-cc-b-$$
cleanup() {
	ip netns del "$A" 2>/dev/null || true
	ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$A"
ip netns add "$B"
ip link add cca netns "$A" type veth peer name ccb netns "$B"
ip -n "$A" addr add 198.18.0.1/24 dev cca
ip -n "$B" addr add 198.18.0.2/24 dev ccb
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set cca up
ip -n "$B" link set ccb up

rc=0
for latency in 20ms 400ms; do
	for pair in "$A cca" "$B ccb"; do
		set -- $pair
		tc -n "$1" qdisc replace dev "$2" root tbf rate 100mbit \
			burst 256kb latency $latency
	done
	echo "== tbf 100mbit (12.5 MB/s) burst 256kb latency $latency"
	"$bin" -A /var/run/netns/"$A" -a 198.18.0.1:0 \
		-B /var/run/netns/"$B" -b 198.18.0.2:0 -s 64 -p 3 || rc=1
done
exit $rc
