#!/usr/bin/env bash
# Drills on tcp rails (rails/tcp), between the namespace hosts of topo.sh.
#
# usage: test_tcp_drill.sh RAILYARD_BINARY SCENARIO
#   local | remote | silent | restart | two | all | flap | oneway
#             test_drill.sh's scenario of that name, with every rail of
#             etc/examples/netns-drill-{a,b}.conf a tcp rail (same
#             asserts: 0 failed, 0 corrupt, detection and resume times,
#             one fence per failure, back within 1 s of the repair)
#   bench     railyard bench --verify, 1 MiB writes then reads at depth 8
#             over the four tcp rails (tbf 100mbit each): every byte read
#             back matches, 0 failed, every rail carried a share
#   standby   mixed rails: r0..r2 soft (UDP), r3 a tcp rail with
#             standby = yes on both hosts.  While a primary is up r3
#             carries nothing; a's three primary cables pulled, traffic
#             goes on over r3 alone, 0 failed, 0 corrupt; plugged back,
#             the primaries carry it again and r3 idles.
# Root only; skips (77) elsewhere.
set -euo pipefail
ry=$1 scenario=$2
here=$(cd "$(dirname "$0")" && pwd)
examples=$here/../../etc/examples
source "$here/lib.sh"
ns_need_root
confs=$(mktemp -d)
trap 'rm -rf "$confs"' EXIT
for h in a b; do
	sed 's/provider = soft /provider = tcp  /' "$examples/netns-drill-$h.conf" \
		>"$confs/netns-drill-$h.conf"
	grep -q "provider = tcp" "$confs/netns-drill-$h.conf" ||
		{ echo "FAIL: cannot make tcp rails of netns-drill-$h.conf"; exit 1; }
done
case $scenario in
local | remote | silent | restart | two | all | flap | oneway)
	RY_DRILL_CONF_DIR=$confs bash "$here/test_drill.sh" "$ry" "$scenario"
	exit $?
	;;
standby | bench) ;;
*) echo "FAIL: unknown scenario $scenario"; exit 1 ;;
esac

# ---- standby: r0..r2 soft primaries, r3 a tcp standby ----
[[ $scenario == standby ]] && for h in a b; do
	sed -e 's/^\(rail r3 {\) provider = soft /\1 provider = tcp  standby = yes /' \
		"$examples/netns-drill-$h.conf" >"$confs/netns-drill-$h.conf"
	grep -q "provider = tcp  standby = yes" "$confs/netns-drill-$h.conf" ||
		{ echo "FAIL: cannot make r3 a tcp standby"; exit 1; }
done
ns_cleanup_more() { rm -rf "$confs"; }
ns_up ryt 4 "${RY_DRILL_RATE:-100mbit}"
fail() {
	echo "FAIL (standby): $*"
	jq -r '.samples[] | "\(.t) \(.total_mbyte_s) \(.rails | tostring)"' \
		"$out" 2>/dev/null | head -40
	jq -c '.events[]' "$out" 2>/dev/null | head -40
	grep -h " warn \| error " "$out.log" "$work/serve.log" 2>/dev/null | tail -20
	exit 1
}
ns_serve "$confs/netns-drill-b.conf" "$work/serve.log"

out=$work/run.json
if [[ $scenario == bench ]]; then
	for op in write read; do
		ip netns exec "$p-a" "$ry" bench -c "$confs/netns-drill-a.conf" \
			--peer b --op $op --size 1M --depth 8 --duration 4 \
			--verify --json >"$out" 2>"$out.log" || true
		jq -e 'type == "object"' "$out" >/dev/null || { cat "$out.log"; fail "no JSON from bench"; }
		[[ $(jq -r .ops_failed "$out") == 0 ]] || fail "bench $op: $(jq -r .ops_failed "$out") failed"
		[[ $(jq -r .verify_errors "$out") == 0 ]] || fail "bench $op: $(jq -r .verify_errors "$out") verify errors"
		[[ $(jq -r .ops_ok "$out") -gt 0 ]] || fail "bench $op: nothing completed"
		jq -e '[.rails[]?.bytes] | length == 4 and min > 0' "$out" >/dev/null ||
			fail "bench $op: a rail carried nothing: $(jq -c '[.rails[]? | {name, bytes}]' "$out")"
		echo "bench $op --verify over 4 tcp rails: $(jq -r .ops_ok "$out") ops, $(jq -r .gbit_per_s "$out") Gbit/s, 0 failed, 0 verify errors"
	done
	exit 0
fi
ip netns exec "$p-a" "$ry" drill -c "$confs/netns-drill-a.conf" --peer b \
	--duration 12 --load streams --json >"$out" 2>"$out.log" &
drill_pid=$!
sleep 3.5
t_pull=$(date +%s.%N)
for r in 0 1 2; do bash "$here/topo.sh" unplug $p a $r; done
sleep 4
t_plug=$(date +%s.%N)
for r in 0 1 2; do bash "$here/topo.sh" plug $p a $r; done
drill_rc=0
wait "$drill_pid" || drill_rc=$?
jq -e 'type == "object"' "$out" >/dev/null || { cat "$out.log"; fail "no JSON from drill"; }
j() { jq -r "$1" "$out"; }
[[ $(j .ops_failed) == 0 ]] || fail "$(j .ops_failed) operations failed with the standby left"
[[ $(j .verify_errors) == 0 ]] || fail "$(j .verify_errors) verify errors"
[[ $drill_rc == 0 ]] || fail "drill exited $drill_rc"
# MB/s of rail R (or "total") over the samples with A < unix time <= B
rate() {
	jq -r --arg r "$1" --argjson a "$2" --argjson b "$3" '.start_unix as $s |
		[.samples[] | select($s + .t > $a and $s + .t <= $b) |
		if $r == "total" then .total_mbyte_s else .rails[$r] end] |
		if length == 0 then "nan" else add / length end' "$out"
}
pull=$t_pull plug=$t_plug
start=$(j .start_unix)
# healthy: from 1 s after the start to the pull; outage: 1 s after the
# pull to the plug; back: 2 s after the plug to the end
before_r3=$(rate r3 "$(awk -v s="$start" 'BEGIN { printf "%.3f", s + 1.5 }')" "$pull")
out_r3=$(rate r3 "$(awk -v p="$pull" 'BEGIN { printf "%.3f", p + 1 }')" "$plug")
out_total=$(rate total "$(awk -v p="$pull" 'BEGIN { printf "%.3f", p + 1 }')" "$plug")
after_r3=$(rate r3 "$(awk -v p="$plug" 'BEGIN { printf "%.3f", p + 2.5 }')" 1e12)
after_total=$(rate total "$(awk -v p="$plug" 'BEGIN { printf "%.3f", p + 2.5 }')" 1e12)
echo "standby r3 MB/s: before $before_r3, primaries pulled $out_r3 (total $out_total), after $after_r3 (total $after_total)"
awk -v x="$before_r3" 'BEGIN { exit !(x == 0) }' || fail "r3 carried $before_r3 MB/s while the primaries were up"
awk -v x="$out_r3" 'BEGIN { exit !(x > 1) }' || fail "r3 carried $out_r3 MB/s with every primary pulled"
awk -v x="$after_r3" -v t="$after_total" 'BEGIN { exit !(x == 0 && t > 1) }' ||
	fail "after the primaries came back r3 carried $after_r3 MB/s of $after_total"
echo "standby: $(j .ops_ok) operations, 0 failed, 0 corrupt; r3 idle, then the only rail, then idle again"
