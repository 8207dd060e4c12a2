#!/usr/bin/env bash
# Failover drills with the real commands between namespace hosts (see
# topo.sh for the picture): `railyard serve` in b, `railyard drill` in a,
# four rails shaped to the same rate, cables pulled while it runs.
#
# usage: test_drill.sh RAILYARD_BINARY SCENARIO
#   local     unplug one of a's cables mid-run, plug it back
#   remote    unplug one of b's cables (a's link stays up)
#   silent    the switch drops one rail's frames both ways; neither host's
#             link goes down, so only missed heartbeats can tell
#   two       unplug two of a's cables
#   all       unplug all of a's cables: operations fail after op_timeout
#             with a clear error; after restoring, the next run succeeds
#   flap      flap one of a's cables every 200 ms for 10 s
# Asserts from the drill's JSON.  Root only; skips (77) elsewhere.
set -euo pipefail
ry=$1 scenario=$2
here=$(cd "$(dirname "$0")" && pwd)
etc=$here/../../etc/examples
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: network namespaces need root (run as root, as CI does)"
	exit 77
fi
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

RATE=${RY_DRILL_RATE:-100mbit}
p=ryd$$
work=$(mktemp -d)
serve_pid=
cleanup() {
	# serve exits 0 on SIGTERM; whatever it returns, the namespaces go
	if [[ -n $serve_pid ]]; then
		kill "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
	bash "$here/topo.sh" down $p
	[[ -n ${RY_DRILL_KEEP:-} ]] && cp -r "$work" "$RY_DRILL_KEEP"
	rm -rf "$work"
}
trap cleanup EXIT
bash "$here/topo.sh" up $p 4 "$RATE"

in_a() { ip netns exec "$p-a" "$@"; }
in_b() { ip netns exec "$p-b" "$@"; }
fail() { echo "FAIL ($scenario): $*"; exit 1; }

# Not through in_b: a function in the background is a subshell, and its
# PID is not serve's -- killing it left serve running and made `wait`
# report 143, which failed the test (set -e) before the namespaces went.
ip netns exec "$p-b" "$ry" serve -c "$etc/netns-drill-b.conf" \
	--socket "$work/b.sock" >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do [[ -S $work/b.sock ]] && break; sleep 0.1; done
[[ -S $work/b.sock ]] || { cat "$work/serve.log"; fail "serve did not start"; }

# drill DURATION OUT: runs in the background, JSON to OUT
drill() {
	in_a "$ry" drill -c "$etc/netns-drill-a.conf" --peer b --duration "$1" \
		--json --csv "$work/drill.csv" --plot "$work/drill.svg" \
		>"$2" 2>"$2.log" &
	drill_pid=$!
}
finish() {
	wait "$drill_pid" || true
	jq -e . "$1" >/dev/null || { cat "$1.log"; fail "no JSON from drill"; }
}
j() { jq -r "$1" "$out"; }
# mean total MB/s of the samples with from < t <= to
mean() { jq -r --argjson a "$1" --argjson b "$2" \
	'[.samples[] | select(.t > $a and .t <= $b) | .total_mbyte_s] | add / length' "$out"; }
ge() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x >= y) }'; }

out=$work/run.json
case $scenario in
local | remote | two | silent)
	drill 12 "$out"
	sleep 4
	case $scenario in
	local) bash "$here/topo.sh" unplug $p a 1 ;;
	remote) bash "$here/topo.sh" unplug $p b 1 ;;
	silent) bash "$here/topo.sh" blackhole $p 1 ;;
	two) bash "$here/topo.sh" unplug $p a 1; bash "$here/topo.sh" unplug $p a 2 ;;
	esac
	sleep 4
	[[ $scenario == silent ]] && bash "$here/topo.sh" unblackhole $p 1
	for r in 1 2; do
		bash "$here/topo.sh" plug $p a $r
		bash "$here/topo.sh" plug $p b $r
	done
	finish "$out"
	lost=1; [[ $scenario == two ]] && lost=2
	[[ $(j .ops_failed) == 0 ]] || fail "$(j .ops_failed) operations failed with a path left"
	[[ $(j .verify_errors) == 0 ]] || fail "$(j .verify_errors) verify errors"
	[[ $(j .ops_ok) -gt 0 ]] || fail "no operation completed"
	healthy=$(mean 1 4)
	outage=$(mean 5 8)
	want=$(awk -v h="$healthy" -v l=$lost 'BEGIN { print 0.9 * h * (4 - l) / 4 }')
	ge "$outage" "$want" || fail "outage throughput $outage MB/s < $want (healthy $healthy)"
	# design targets: a local port-down under 50 ms; a far side the local
	# port cannot see under 300 ms
	limit=50; [[ $scenario == remote || $scenario == silent ]] && limit=300
	d=$(j '[.events[] | select(.event == "down") | .detect_ms] | max')
	[[ $d != null ]] || fail "no down event recorded"
	awk -v d="$d" -v l=$limit 'BEGIN { exit !(d < l) }' ||
		fail "detection took $d ms (target < $limit ms)"
	r=$(j '[.events[] | select(.event == "down") | .resume_ms] | max')
	awk -v d="$d" -v r="$r" -v l=$limit 'BEGIN { exit !(d + r < l) }' ||
		fail "detection $d + resume $r ms exceeds $limit ms"
	[[ $(j '[.events[] | select(.event == "up")] | length') -ge $lost ]] ||
		fail "rail did not come back"
	echo "$scenario: healthy $healthy MB/s, outage $outage MB/s, detect $d ms, resume $r ms"
	;;
all)
	drill 14 "$out"
	sleep 3
	for r in 0 1 2 3; do bash "$here/topo.sh" unplug $p a $r; done
	sleep 7 # op_timeout_ms is 5000 in netns-drill-a.conf
	for r in 0 1 2 3; do bash "$here/topo.sh" plug $p a $r; done
	finish "$out"
	[[ $(j .ops_failed) -gt 0 ]] || fail "no operation failed with every cable pulled"
	[[ $(j .verify_errors) == 0 ]] || fail "$(j .verify_errors) verify errors"
	grep -q "peer b" "$out.log" || fail "the error does not name the peer"
	out=$work/after.json
	drill 5 "$out"
	finish "$out"
	[[ $(j .ops_failed) == 0 ]] || fail "$(j .ops_failed) failed after restore"
	[[ $(j .ops_ok) -gt 0 ]] || fail "nothing completed after restore"
	echo "all: failed with a clear error, then recovered"
	;;
flap)
	drill 14 "$out"
	sleep 2
	end=$((SECONDS + 10))
	while ((SECONDS < end)); do
		bash "$here/topo.sh" unplug $p a 1; sleep 0.2
		bash "$here/topo.sh" plug $p a 1; sleep 0.2
	done
	finish "$out"
	[[ $(j .ops_failed) == 0 ]] || fail "$(j .ops_failed) operations failed while flapping"
	[[ $(j .verify_errors) == 0 ]] || fail "$(j .verify_errors) verify errors"
	echo "flap: $(j .ops_ok) operations, none failed"
	;;
*) fail "unknown scenario" ;;
esac
[[ -s $work/drill.csv && -s $work/drill.svg ]] || fail "drill left no CSV or plot"
