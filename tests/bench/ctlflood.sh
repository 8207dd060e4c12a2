#!/usr/bin/env bash
# An admitted peer flooding the control channel (issue 30, point 3): a
# benchmark, not a test.  `railyard serve` in b, a real peer a running
# `railyard bench --verify` against it over 4 soft rails shaped to RATE,
# first alone, then while host x (admitted through an accept prefix) sends
# CONN_REQ and FENCE_REQ frames as fast as its sockets take them
# (tests/netns/intruder --flood, reconnecting every second).  Prints a's
# throughput both times, the ratio, a's down events and failovers during
# the flood, how many frames x sent and how many serve dropped.  Figures on
# a loaded machine are indicative only.
#
# usage (root): ctlflood.sh RAILYARD_BINARY INTRUDER_BINARY [SECONDS]
set -euo pipefail
ry=$1 intruder=$2 secs=${3:-10}
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../netns
etc=$here/../../etc/examples
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq is not installed"; exit 77; }

RATE=${RY_FLOOD_RATE:-200mbit}
p=ryf$$
work=$(mktemp -d)
serve_pid="" x_pid=""
cleanup() {
	[[ -n $x_pid ]] && kill "$x_pid" 2>/dev/null && wait "$x_pid" 2>/dev/null
	[[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	bash "$netns/topo.sh" down $p
	rm -rf "$work"
}
trap cleanup EXIT
bash "$netns/topo.sh" up $p 4 "$RATE" --intruder

cp "$etc/netns-drill-a.conf" "$work/a.conf"
cp "$etc/netns-drill-b.conf" "$work/b.conf"
printf '\naccept = {"198.18.0.3/32"}\n' >>"$work/b.conf"
ip netns exec "$p-b" "$ry" serve -c "$work/b.conf" --socket "$work/b.sock" \
	--metrics 127.0.0.1:9479 >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do [[ -S $work/b.sock ]] && break; sleep 0.1; done
[[ -S $work/b.sock ]] || { cat "$work/serve.log"; exit 1; }

bench() { # OUT
	ip netns exec "$p-a" "$ry" bench -c "$work/a.conf" --peer b --verify \
		--json --duration "$secs" >"$1" 2>"$1.log"
}
summary() { # OUT
	jq -c '{gbit_per_s, ops_ok, ops_failed, verify_errors,
		downs: [.events[] | select(.event == "down")] | length,
		failovers: [.rails[].failovers] | add}' "$1"
}

bench "$work/alone.json"
echo "alone:       $(summary "$work/alone.json")"
ip netns exec "$p-x" "$intruder" --connect 198.18.0.2:7470 --from 198.18.0.3 \
	--hello flooder --flood --repeat $((secs + 4)) --interval-ms 1000 \
	--hold-ms 1000 --label flood >"$work/x.json" 2>"$work/x.err" &
x_pid=$!
sleep 1
bench "$work/flood.json"
wait "$x_pid" || true
x_pid=""
echo "under flood: $(summary "$work/flood.json")"
jq -c '.events[] | select(.event == "down")' "$work/flood.json" | head -4
echo "flooder:     $(jq -c '{connections, refused, closed, flood_frames, frames}' "$work/x.json")"
ip netns exec "$p-b" curl -s http://127.0.0.1:9479/metrics |
	grep -E '^railyard_control_(frames_dropped|sessions_flooding)_total' || true
awk -v a="$(jq .gbit_per_s "$work/alone.json")" -v b="$(jq .gbit_per_s "$work/flood.json")" \
	'BEGIN { printf "ratio: %.1f %% of the throughput alone\n", 100 * b / a }'
grep -c 'control frames above' "$work/serve.log" | sed 's/^/serve log lines about the flood: /'
