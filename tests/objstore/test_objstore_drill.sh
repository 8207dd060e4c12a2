#!/usr/bin/env bash
# The reference object server in the namespace drill topology
# (tests/netns/topo.sh): railyard-objd in b, `railyard-obj bench` in a
# (4 threads, odd sizes 1..1 MiB, PUT and GET mixed, every GET's bytes
# checksummed), four rails shaped to the same rate, and while it runs:
#   +4 s   a's cable of r1 pulled        +8 s   plugged back
#   +10 s  b's cable of r2 pulled        +14 s  plugged back
#   +16 s  r3 black-holed in the switch  +19 s  forwarding again
# Asserts from the client's JSON: 0 failed, 0 corrupted, PUTs and GETs
# done; from the server (whose rails carry every READ and WRITE): a clean
# exit, 0 corrupted, 0 failed, and each fault made it declare that rail's
# connection down within 2 s.
# Root only; skips (77) elsewhere.  Namespaces hO<pid>-*, deleted at exit.
# usage: test_objstore_drill.sh PATH/TO/railyard-objd PATH/TO/railyard-obj
set -euo pipefail
objd=$1 obj=$2
here=$(cd "$(dirname "$0")" && pwd)
topo=$here/../netns/topo.sh
etc=$here/../../etc/examples
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: network namespaces need root (run as root, as CI does)"
	exit 77
fi
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

RATE=${RY_DRILL_RATE:-100mbit}
p=hO$$
work=$(mktemp -d)
srv_pid="" bench_pid=""
cleanup() {
	[[ -n $bench_pid ]] && kill -9 "$bench_pid" 2>/dev/null && wait "$bench_pid" 2>/dev/null
	[[ -n $srv_pid ]] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
	bash "$topo" down $p
	[[ -n ${RY_DRILL_KEEP:-} ]] && cp -r "$work" "$RY_DRILL_KEEP"
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- client (tail)"; tail -30 "$work/bench.log" 2>/dev/null || true
	echo "--- server (tail)"; grep -v 'connection qp' "$work/srv.log" 2>/dev/null | tail -30 || true
	exit 1
}
bash "$topo" up $p 4 "$RATE"

# not through a function: a background function is a subshell, and its
# PID is not the program's
ip netns exec "$p-b" "$objd" -c "$etc/netns-drill-b.conf" --capacity 128M \
	2>"$work/srv.log" &
srv_pid=$!
for _ in $(seq 100); do grep -q ': ready' "$work/srv.log" && break; sleep 0.1; done
grep -q ': ready' "$work/srv.log" || fail "railyard-objd did not start"

ip netns exec "$p-a" "$obj" bench -c "$etc/netns-drill-a.conf" --server b \
	--threads 4 --keys 4 --size 1-1M --op mixed --duration 24 --verify \
	--json >"$work/bench.json" 2>"$work/bench.log" &
bench_pid=$!
for _ in $(seq 200); do grep -q 'preload done' "$work/bench.log" && break; sleep 0.1; done
grep -q 'preload done' "$work/bench.log" || fail "the bench did not start"
t0=$(date +%s.%N)
at() { sleep "$(awk -v t0="$t0" -v t="$1" -v now="$(date +%s.%N)" 'BEGIN { d = t0 + t - now; print (d > 0 ? d : 0) }')"; }
# fault WHEN RAIL what...: do it at t0 + WHEN, remember the wall time
faults=()
fault() {
	at "$1"
	local t r=$2
	t=$(date +%s.%N)
	bash "$topo" "${@:3}"
	faults+=("$r:$t")
	echo "+$1 s: r$r: ${*:3}"
}
fault 4 1 unplug $p a 1
at 8; bash "$topo" plug $p a 1; echo "+8 s: plugged"
fault 10 2 unplug $p b 2
at 14; bash "$topo" plug $p b 2; echo "+14 s: plugged"
fault 16 3 blackhole $p 3
at 19; bash "$topo" unblackhole $p 3; echo "+19 s: forwarding again"

rc=0
wait $bench_pid || rc=$?
bench_pid=""
out=$work/bench.json
jq -se 'length == 1 and (.[0] | type == "object")' "$out" >/dev/null || fail "no JSON from the bench (exit $rc)"
grep -E '^ +[0-9.]+ s ' "$work/bench.log" || true
jq -c '{ops_ok, ops_failed, corrupted, puts, gets, mbyte_per_s, latency_us, first_error}' "$out"
jq -e '.ops_failed == 0 and .corrupted == 0 and .puts > 0 and .gets > 0' \
	"$out" >/dev/null || fail "failed or corrupted operations: $(jq -c . "$out")"
((rc == 0)) || fail "the bench exited $rc"

kill "$srv_pid"
rc=0
wait "$srv_pid" || rc=$?
srv_pid=""
((rc == 0)) || fail "railyard-objd exited $rc on SIGTERM"
grep '^railyard-objd: ' "$work/srv.log" | tail -5
grep -q ' 0 corrupted,.* 0 failed,' "$work/srv.log" || fail "the server counted corrupted or failed requests"
# each fault hit the server's traffic: the server declared that rail's
# connection down within 2 s of it (a black hole is noticed by missed
# heartbeats, 100 ms here).  Only existence is asserted: on a starved
# machine a stalled process makes every rail fail now and then as well.
for f in "${faults[@]}"; do
	r=${f%%:*} t=${f#*:}
	grep -o "\[[0-9.]*\] rail r$r to a: connection down" "$work/srv.log" |
		tr -d '[]' | awk -v t="$t" '$1 >= t - 0.05 && $1 <= t + 2 { ok = 1 }
			END { exit !ok }' ||
		fail "the server saw no connection down on r$r within 2 s of the fault at $t"
	echo "r$r: $(grep -o "\[[0-9.]*\] rail r$r to a: connection down.*" "$work/srv.log" |
		tr -d '[]' | awk -v t="$t" '$1 >= t - 0.05 && $1 <= t + 2 {
			printf "down %.3f s after the fault: %s\n", $1 - t, $0; exit }')"
done
echo "PASS"
