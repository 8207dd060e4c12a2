#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Where the soft rail's CPU goes: `railyard bench` (1 MiB writes, depth 8)
# to `railyard serve` over one unshaped rail between the namespace hosts of
# tests/netns/topo.sh, with `perf record -g` on both processes (user and
# kernel) for the middle of the run.  Prints the top entries of
# `perf report --no-children` (self time, both processes together) and the
# bench's MB/s.
#
# usage (root): profile.sh [BUILD_DIR] [MTU]     (default build/gcc, 1500)
#   env: T=6 (bench seconds), TOP=15, OUT=DIR (keep perf.data there),
#        ARGS="--size 4K --depth 64" (bench options; default 1 MiB, depth 8),
#        RAILS=4 (rails r0..; default 1), PROV=tcp (the rails' provider;
#        default soft), RATE=1gbit (tc tbf on every rail
#        of both hosts, as ratio.sh's cpu4x1g row; default unshaped)
# Not a test.  Namespaces (198.18.0.0/15 only) are deleted on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build/gcc}
mtu=${2:-1500}
ry=$build/src/cli/railyard
T=${T:-6}
TOP=${TOP:-15}
[[ $(id -u) -eq 0 ]] || { echo "profile.sh: needs root" >&2; exit 77; }
command -v perf >/dev/null || apt-get install -y -qq linux-perf >/dev/null

p=ryp$$
work=${OUT:-$(mktemp -d)}
mkdir -p "$work"
serve_pid=
cleanup() {
	[[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null || true
	[[ -n $serve_pid ]] && wait "$serve_pid" 2>/dev/null || true
	bash "$root/tests/netns/topo.sh" down $p
	[[ -z ${OUT:-} ]] && rm -rf "$work"
	return 0
}
trap cleanup EXIT
rails=${RAILS:-1}
bash "$root/tests/netns/topo.sh" up $p "$rails"
for h in a b; do
	for ((i = 0; i < rails; i++)); do
		ip -n "$p-$h" link set r$i mtu "$mtu"
		ip -n "$p-sw" link set "$h-r$i" mtu "$mtu"
		[[ -n ${RATE:-} ]] && tc -n "$p-$h" qdisc replace dev r$i root \
			tbf rate "$RATE" burst 256kb latency 20ms
	done
done
for h in a b; do
	me=1 other=2 peer=b
	[[ $h == b ]] && me=2 other=1 peer=a
	{
		echo "node = \"$h\""
		echo "control = \"198.18.0.$me:7470\""
		for ((i = 0; i < rails; i++)); do
			echo "rail r$i { provider = ${PROV:-soft} network = \"n$i\"" \
				"address = \"198.18.$((i + 1)).$me\" interface = \"r$i\" mtu = $mtu }"
		done
		echo "failover { heartbeat_ms = 100 timeout_ms = 2000 op_timeout_ms = 10000 }"
		echo "peer $peer { address = \"198.18.0.$other:7470\" }"
	} >"$work/$h.conf"
done
ip netns exec "$p-b" "$ry" serve -c "$work/b.conf" --socket "$work/b.sock" \
	>"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do [[ -S $work/b.sock ]] && break; sleep 0.1; done
ip netns exec "$p-a" "$ry" bench -c "$work/a.conf" --peer b --duration "$T" \
	--json ${ARGS:-} >"$work/bench.json" 2>"$work/bench.log" &
bench_pid=$!
sleep 1.5
perf record -q -g -o "$work/perf.data" -p "$serve_pid,$bench_pid" \
	-- sleep $((T - 3)) >/dev/null 2>&1 || true
wait "$bench_pid" || true
echo "# bench ${ARGS:-}: $(jq -r '"\(.bytes / .seconds / 1e6 | floor) MB/s, \(.ops_ok / .seconds | floor) ops/s"' "$work/bench.json")," \
	"mtu $mtu, rails $rails, rate ${RATE:-none}, load $(cut -d' ' -f1-3 /proc/loadavg)"
perf report -i "$work/perf.data" --no-children --stdio -g none \
	--percent-limit 0.3 2>/dev/null | grep -E '^ +[0-9]' | head -"$TOP"
