#!/usr/bin/env bash
# Rails that come and go (src/rail_life.c), with the real commands between
# namespace hosts (topo.sh): `railyard serve` in b, `railyard drill
# --verify` in a, four soft rails bound to their interfaces.
#
# usage: test_rail_life.sh RAILYARD_BINARY SCENARIO
#   recreate-a   a's interface r1 deleted mid-drill (`ip link del`: a NIC
#                that went away; the soft rail's socket is bound to its
#                index) and created again 1 s later with the same name,
#                address and MAC: a's r1 is gone, then back, and carries
#                bytes again
#   recreate-b   the same on b (serve's side)
#   absent-b     b's r1 deleted before serve starts: serve starts anyway,
#                says so once, `railyard status --json` shows r1 up 0 with
#                the reason; r1 created 4 s into the drill: open, up and
#                carrying bytes
# Asserts: 0 failed operations, 0 verify errors, the rail's connection up
# within 1 s of the interface's return (+ RY_DRILL_SLACK_MS, 250 ms by
# default, for a loaded two-core machine) and bytes on it afterwards.
# Root only; skips (77) elsewhere.
set -euo pipefail
ry=$1 scenario=$2
here=$(cd "$(dirname "$0")" && pwd)
etc=$here/../../etc/examples
source "$here/lib.sh"
ns_need_root

slack=${RY_DRILL_SLACK_MS:-250}
ns_up hL 4 "${RY_DRILL_RATE:-100mbit}"
fail() {
	echo "FAIL ($scenario): $*"
	[[ -s ${out:-/nonexistent} ]] && jq -c '.events' "$out"
	tail -20 "$work/serve.log" "${out:-/dev/null}.log" 2>/dev/null
	exit 1
}
mac_of() { ip -n "$p-$1" -j link show r1 | jq -r '.[0].address'; }
host=a
[[ $scenario == *-b ]] && host=b
mac=$(mac_of $host)

if [[ $scenario == absent-b ]]; then
	bash "$here/topo.sh" delete $p b 1
fi
ns_serve "$etc/netns-drill-b.conf" "$work/serve.log"

if [[ $scenario == absent-b ]]; then
	grep -q "rail r1: absent: .*r1.*starting without it" "$work/serve.log" ||
		fail "no line saying r1 is absent and why"
	[[ $(grep -c "rail r1: absent" "$work/serve.log") == 1 ]] ||
		fail "r1's absence said more than once"
	st=$("$ry" status --socket "$work/b.sock" --json)
	jq -e '[.rails[] | select(.name == "r1" and .up == 0 and
		(.reason | length > 0))] | length == 1' <<<"$st" >/dev/null ||
		fail "status does not show r1 missing: $st"
	jq -e '[.rails[] | select(.up == 1)] | length == 3' <<<"$st" >/dev/null ||
		fail "status does not show the 3 others up: $st"
	echo "b started without r1: $(jq -c '.rails[] | select(.name == "r1")' <<<"$st")"
fi

out=$work/run.json
ip netns exec "$p-a" "$ry" drill -c "$etc/netns-drill-a.conf" --peer b \
	--duration 12 --json >"$out" 2>"$out.log" &
drill_pid=$!

if [[ $scenario == recreate-* ]]; then
	sleep 4
	bash "$here/topo.sh" delete $p $host 1
	echo "$host's r1 deleted"
	sleep 1
fi
[[ $scenario == absent-b ]] && sleep 4
t_back=$(date +%s.%N)
bash "$here/topo.sh" create $p $host 1 "$mac"
echo "$host's r1 created again (MAC $mac)"

if [[ $host == b ]]; then
	for _ in $(seq 30); do
		"$ry" status --socket "$work/b.sock" --json |
			jq -e '[.rails[] | select(.name == "r1" and .up == 1)] |
			length == 1' >/dev/null && break
		sleep 0.1
	done
	st=$("$ry" status --socket "$work/b.sock" --json) ||
		fail "serve does not answer (its log's end below)"
	jq -e '[.rails[] | select(.up == 1)] | length == 4' <<<"$st" >/dev/null ||
		fail "r1 not open in b 3 s after its return: $st"
fi

ns_drill_clean "$drill_pid" "$out"

case $scenario in
recreate-a)
	jq -e '[.events[] | select(.rail == "r1" and .event == "rail-gone")] |
		length == 1' "$out" >/dev/null || fail "a's drill saw no rail-gone for r1"
	jq -e '[.events[] | select(.rail == "r1" and .event == "rail-back")] |
		length == 1' "$out" >/dev/null || fail "a's drill saw no rail-back for r1"
	;;
recreate-b)
	grep -q "rail r1: gone: .*r1.*deleted" "$work/serve.log" ||
		fail "serve did not say r1 is gone"
	grep -q "rail r1: back" "$work/serve.log" || fail "serve did not say r1 is back"
	;;
absent-b)
	grep -q "rail r1: back" "$work/serve.log" || fail "serve did not say r1 is open"
	;;
esac

# r1's connection up within 1 s (+ slack) of the interface's return, and
# bytes on it in a later sample
up=$(jq -r --argjson h "$t_back" '.start_unix as $s | [.events[] |
	select(.rail == "r1" and (.event == "up" or .event == "connect") and
	$s + .t >= $h - 0.1) | $s + .t] | min // empty' "$out")
[[ -n $up ]] || fail "r1: no connection up after its return"
ms=$(awk -v u="$up" -v h="$t_back" 'BEGIN { printf "%d", (u - h) * 1000 }')
((ms <= 1000 + slack)) || fail "r1 came back $ms ms after its return"
jq -e --argjson h "$t_back" '.start_unix as $s | [.samples[] |
	select($s + .t >= $h + 2) | .rails.r1] | length > 0 and any(. > 0)' \
	"$out" >/dev/null || fail "r1 carries no bytes after its return: $(jq -c '[.samples[] | .rails.r1]' "$out")"
echo "PASS ($scenario): r1 up $ms ms after its return, carrying bytes; 0 failed, 0 corrupt"
