#!/usr/bin/env bash
# An intruder on every network (issue 11): `railyard serve` in b, a real
# peer a benchmarking it with --verify, and a third host x, named in no
# config, attacking b's control port meanwhile.
#
#   ns <P>-a              ns <P>-sw                         ns <P>-b
#  +----------+     +-------------------------+       +----------+
#  | r0 .1.1  |-----|a-r0 -[br0]- b-r0        |-------| r0 .1.2  |
#  | ..  r3   |-----|  ...  [br3]  ...        |-------| ..  r3   |
#  | mg .0.1  |-----|a-mg -[brm]- b-mg        |-------| mg .0.2  |
#  +----------+     |  x-r0 .. x-r3, x-mg     |       | serve    |
#   bench --verify  +-----------+-------------+       +----------+
#                               | one port on every bridge
#                         +-----+--------------------------+
#                         | ns <P>-x  r0..r3 .<rail+1>.3     |
#                         |           mg 198.18.0.3          |
#                         |  + .0.200-.206 on mg (prefix)    |
#                         |  intruder (tests/netns/intruder) |
#                         +--------------------------------+
#   198.18.<rail+1>.<host>/24, management 198.18.0.<host>/24
#
# Attacks from x while a's bench runs (each a run of the intruder tool,
# whose JSON says what happened to every connection):
#   1 unlisted   HELLO from x under its own name
#   2 spoof      HELLO claiming to be a (a's name and control address)
#                from x's address, every 100 ms for ~8 s
#   3 fence      HELLO as a, then FENCE_ACK with generation 2^64-1
#   4 idle       1,100 idle TCP connections
#   5 partial    200 connections each holding a 65,535-byte partial frame
# Run twice: without a key (etc/examples/netns-drill-{a,b}.conf, copied
# with a looser failover timeout_ms, see below) and with key_file added
# (and data_mac: every soft-rail packet MACed) to those copies.  In both,
# b also accepts x's extra addresses
# 198.18.0.200/29 by prefix: a node there is admitted under a name of its
# own, and must get no further.  Without a key, from there x tries
#   9 pfxname    HELLO with a's name, its own address -> refused
#  10 pfxaddr    HELLO with another name, a's address -> refused
#  11 pfxspoof   HELLO as a (name and address), every 100 ms for ~3 s
#  12 pfxfence   HELLO as itself (admitted: HELLO_ACK), then FENCE_ACK
#                2^64-1 -> that session closed, a's fences untouched
# and with the key:
#   6 nokey      HELLO without authentication       -> "requires key_file"
#   7 badproof   HELLO with a nonce, then a made-up AUTH -> "key differs"
#   8 spoofkey   as 7 but claiming to be a          -> refused by admission
# Asserts: every intruder connection refused or closed by b (none open,
# no HELLO_ACK except 7's, which then gets REFUSE); serve alive and still
# serving (a second bench after the attacks); a's bench: 0 failed, 0
# verify errors, no down events, no reconnects; serve's log names the
# refusals, at most one line per source per 10 s.
#
# usage: test_intruder.sh RAILYARD_BINARY INTRUDER_BINARY
# Root only; skips (77) elsewhere.  RY_DRILL_KEEP=DIR keeps the logs;
# RY_NETNS_PREFIX (default ryi) starts the namespace names.
set -euo pipefail
ry=$1 intruder=$2
here=$(cd "$(dirname "$0")" && pwd)
etc=$here/../../etc/examples
source "$here/lib.sh"
ns_need_root

RATE=${RY_DRILL_RATE:-100mbit}
BENCH_S=${RY_INTRUDER_BENCH_S:-14}
pids=()
ns_cleanup_more() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
}
ns_up ryi 4 "$RATE" --intruder

B=198.18.0.2:7470
A_CLAIM=198.18.0.1:7470
phase=
fail() { echo "FAIL ($phase): $*"; exit 1; }

start_serve() { # CONF
	rm -f "$work/b.sock"
	ip netns exec "$p-b" "$ry" serve -c "$1" --socket "$work/b.sock" \
		--metrics 127.0.0.1:9479 >"$work/serve-$phase.log" 2>&1 &
	serve_pid=$!
	for _ in $(seq 100); do [[ -S $work/b.sock ]] && break; sleep 0.1; done
	[[ -S $work/b.sock ]] || { cat "$work/serve-$phase.log"; fail "serve did not start"; }
}
stop_serve() {
	kill "$serve_pid"
	wait "$serve_pid" || true
	serve_pid=
}

# x NAME ARGS...: run the intruder in x against b, JSON to $work/PHASE-NAME.json
x() {
	local name=$1
	shift
	echo "$name $(awk -v a="$bench_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')" >>"$work/times-$phase"
	ip netns exec "$p-x" "$intruder" --connect $B --label "$name" "$@" \
		>"$work/$phase-$name.json" 2>"$work/$phase-$name.err"
}
xj() { jq -r "$2" "$work/$phase-$1.json"; }

# every connection of attack NAME ended refused or closed by b, and b
# answered no HELLO (unless ACKS, for the one that gets as far as proof)
check_refused() { # NAME [ACKS]
	local f=$work/$phase-$1.json acks=${2:-0}
	jq -se 'length == 1 and (.[0] | type == "object")' "$f" >/dev/null || { cat "$work/$phase-$1.err"; fail "$1: no JSON from intruder"; }
	echo "  $1: $(jq -c '{connections, refused, closed, open, timeout, frames, refuse_codes}' "$f")"
	[[ $(xj "$1" .connections) -gt 0 ]] || fail "$1: no connection made"
	[[ $(xj "$1" .open) == 0 ]] || fail "$1: $(xj "$1" .open) connections still open"
	[[ $(xj "$1" .timeout) == 0 ]] || fail "$1: $(xj "$1" .timeout) connects timed out"
	[[ $(xj "$1" '.refused + .closed') == $(xj "$1" .connections) ]] ||
		fail "$1: not every connection refused or closed"
	[[ $(xj "$1" '.frames.hello_ack // 0') == "$acks" ]] ||
		fail "$1: $(xj "$1" '.frames.hello_ack // 0') HELLO_ACKs (want $acks)"
}

bench() { # SECONDS OUT CONF
	ip netns exec "$p-a" "$ry" bench -c "$3" --peer b --verify --json \
		--duration "$1" >"$2" 2>"$2.log"
}
check_bench() { # OUT
	local o=$1
	jq -se 'length == 1 and (.[0] | type == "object")' "$o" >/dev/null || { cat "$o.log"; fail "no JSON from bench"; }
	echo "  bench: $(jq -c '{ops_ok, ops_failed, verify_errors, first_error,
		downs: [.events[] | select(.event == "down")] | length,
		reconnects: [.rails[].reconnects] | add,
		failovers: [.rails[].failovers] | add}' "$o")"
	[[ $(jq .ops_ok "$o") -gt 0 ]] || fail "bench completed nothing"
	[[ $(jq .ops_failed "$o") == 0 ]] || fail "$(jq .ops_failed "$o") operations failed"
	[[ $(jq .verify_errors "$o") == 0 ]] || fail "$(jq .verify_errors "$o") verify errors"
	[[ $(jq '[.events[] | select(.event == "down")] | length' "$o") == 0 ]] || {
		echo "  attacks started at (s into the bench): $(tr '\n' ' ' <"$work/times-$phase" 2>/dev/null)"
		fail "connection-down events: $(jq -c '[.events[] | select(.event == "down")]' "$o")"
	}
	[[ $(jq '[.rails[].reconnects] | add // 0' "$o") == 0 ]] || fail "rails reconnected"
	[[ $(jq '[.rails[] | select(.state != "up")] | length' "$o") == 0 ]] ||
		fail "a rail is down at the end"
}

# refusal lines from SOURCE in serve's log: at least one, and no more than
# one per 10 s of the phase (plus the first)
check_log() { # SOURCE SECONDS [PATTERN]
	local log=$work/serve-$phase.log n max
	n=$(grep -c "control session from $1 refused${3:+: .*$3}" "$log" || true)
	max=$(($2 / 10 + 2))
	echo "  serve log: $n refusal line(s) from $1${3:+ matching '$3'}"
	((n >= 1)) || { cat "$log"; fail "serve logged no refusal from $1${3:+ ($3)}"; }
	[[ -n ${3:-} ]] && return 0
	((n <= max)) || fail "$n refusal lines from $1 in $2 s: not rate-limited"
}

# The five attacks from x's own address, while a's bench runs.
attacks() { # CONF_A
	local t0=$SECONDS out=$work/bench-$phase.json bpid spid
	bench_t0=$(date +%s.%N)
	# not through a function: a background function is a subshell, and
	# its PID is not the command's
	ip netns exec "$p-a" "$ry" bench -c "$1" --peer b --verify --json \
		--duration "$BENCH_S" >"$out" 2>"$out.log" &
	bpid=$!
	pids+=("$bpid")
	sleep 3 # connected and moving before the first forged frame
	echo "spoof 3.00" >>"$work/times-$phase"
	ip netns exec "$p-x" "$intruder" --connect $B --label spoof \
		--hello a --claim $A_CLAIM --repeat 80 --interval-ms 100 \
		--hold-ms 2000 >"$work/$phase-spoof.json" 2>"$work/$phase-spoof.err" &
	spid=$!
	pids+=("$spid")
	x unlisted --hello x --claim 198.18.0.3:7470 --conns 20 --hold-ms 2000
	x fence --hello a --claim $A_CLAIM --fence-ack 18446744073709551615 \
		--conns 20 --hold-ms 2000
	x idle --conns 1100 --hold-ms 3000
	x partial --conns 200 --partial 65535 --hold-ms 3000
	if [[ -n ${keyed:-} ]]; then
		keyed_attacks
	else
		prefix_attacks
	fi
	wait "$spid" || fail "intruder (spoof) failed"
	wait "$bpid" || true
	kill -0 "$serve_pid" 2>/dev/null || fail "serve died under attack"
	# soft-rail packets of a that serve dropped for their MAC (data_mac)
	bad_mac=$(ip netns exec "$p-b" curl -s http://127.0.0.1:9479/metrics |
		awk '/^railyard_rail_transport_rx_bad_mac_total/ { s += $2 }
			END { print s + 0 }')
	echo "  serve: rx_bad_mac $bad_mac"
	check_bench "$out"
	[[ $bad_mac == 0 ]] || fail "serve dropped $bad_mac packets for their MAC"
	for a in unlisted spoof fence idle partial; do check_refused $a; done
	if [[ -n ${keyed:-} ]]; then
		check_keyed
	else
		check_prefix
	fi
	check_log 198.18.0.3 $((SECONDS - t0))
	# still serving: a new session and a short verified run
	bench 3 "$work/after-$phase.json" "$1" || true
	check_bench "$work/after-$phase.json"
	kill -0 "$serve_pid" 2>/dev/null || fail "serve died"
}

# Without a key, from addresses b's accept prefix admits: a node admitted
# for itself cannot pass for a, by name, by address or by fencing.
prefix_attacks() {
	x pfxname --from 198.18.0.203 --hello a --claim 198.18.0.203:7470 \
		--conns 5 --hold-ms 1500
	x pfxaddr --from 198.18.0.204 --hello y --claim $A_CLAIM \
		--conns 5 --hold-ms 1500
	x pfxspoof --from 198.18.0.205 --hello a --claim $A_CLAIM \
		--repeat 30 --interval-ms 100 --hold-ms 500
	x pfxfence --from 198.18.0.206 --hello z --claim 198.18.0.206:7470 \
		--fence-ack 18446744073709551615 --conns 5 --hold-ms 1500
}
check_prefix() {
	check_refused pfxname
	check_refused pfxaddr
	check_refused pfxspoof
	check_refused pfxfence 5 # admitted as z, closed for the FENCE_ACK
	check_log 198.18.0.203 0 "name with control address"
	check_log 198.18.0.204 0 "from another address"
	check_log 198.18.0.205 0 ""
}

# With a key, from addresses b's accept prefix admits.
keyed_attacks() {
	x nokey --from 198.18.0.200 --hello x --claim 198.18.0.200:7470 \
		--conns 5 --hold-ms 2000
	x badproof --from 198.18.0.201 --hello x --claim 198.18.0.201:7470 \
		--auth --data-mac --fake-proof --conns 5 --hold-ms 3000
	x spoofkey --from 198.18.0.202 --hello a --claim $A_CLAIM \
		--auth --data-mac --fake-proof --conns 5 --hold-ms 2000
}
check_keyed() {
	check_refused nokey
	check_refused badproof 5
	check_refused spoofkey
	[[ $(xj nokey '.refuse_codes["2"] // 0') == 5 ]] ||
		fail "nokey: no REFUSE(key required) frame"
	[[ $(xj badproof '.refuse_codes["1"] // 0') == 5 ]] ||
		fail "badproof: no REFUSE(key differs) frame"
	check_log 198.18.0.200 0 "requires key_file"
	check_log 198.18.0.201 0 "key differs"
	check_log 198.18.0.202 0 ""
}

# Temporary copies of the example configs, the same but for a failover
# timeout loose enough that a loaded CI machine (2 shared cores) stalling a
# process for 100 ms is not taken for a dropped connection: measured here
# without any intruder, a 12 s bench at load 6 saw 16 down events with the
# 100 ms of the examples.  The transport's own budget is loosened for the
# same reason: with the default ack_timeout_ms (20) its retries run out
# after about 120 ms of silence, and at load 10-13 (stress-ng on one core
# beside other jobs) 3 runs of 3 saw such downs before any attack that
# could have caused them; 100 gives about 600 ms.  Admission settings are
# untouched.
TIMEOUT_MS=${RY_INTRUDER_TIMEOUT_MS:-1000}
ACK_MS=${RY_INTRUDER_ACK_TIMEOUT_MS:-100}
for h in a b; do
	sed "s/timeout_ms = 100\$/timeout_ms = $TIMEOUT_MS\n\tack_timeout_ms = $ACK_MS/" \
		"$etc/netns-drill-$h.conf" >"$work/$h-nokey.conf"
	grep -q "timeout_ms = $TIMEOUT_MS" "$work/$h-nokey.conf" ||
		{ phase=setup; fail "could not set timeout_ms in the $h config copy"; }
done
printf '\naccept = {"198.18.0.200/29"}\n' >>"$work/b-nokey.conf"
for n in 200 201 202 203 204 205 206; do
	ip -n "$p-x" addr add 198.18.0.$n/24 dev mg
done
"$ry" check-config "$work/b-nokey.conf" >/dev/null ||
	{ phase=setup; fail "temporary b config is bad"; }

# ---- without a key: the example configs (admit a, and the prefix) ----
phase=nokey
echo "without a key:"
start_serve "$work/b-nokey.conf"
attacks "$work/a-nokey.conf"
stop_serve

# ---- with a key, and an accept prefix covering x's extra addresses ----
phase=key
keyed=1
echo "with key_file:"
(umask 077; head -c 32 /dev/urandom >"$work/key")
chmod 600 "$work/key"
for h in a b; do
	cp "$work/$h-nokey.conf" "$work/$h.conf"
	printf '\nkey_file = "%s"\ndata_mac = yes\n' "$work/key" >>"$work/$h.conf"
done
"$ry" check-config "$work/b.conf" >/dev/null || fail "temporary b config is bad"
start_serve "$work/b.conf"
attacks "$work/a.conf"
stop_serve
echo "PASS"
