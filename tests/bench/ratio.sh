#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# railyard against the peer tools, side by side in one run (issue 12): each
# row runs the railyard case and its peer case back to back, RUNS times,
# and prints min/median/max of each ratio, then one JSON line.
#
#   row       railyard                           peer
#   4x2g      bench 1M d8, 4 rails, tbf 2gbit    4 x iperf3 (one stream per
#                                                rail, all at once)
#   1r1500    bench 1M d8, 1 rail unshaped 1500  iperf3 single stream
#   1r9000    same at MTU 9000                   iperf3 single stream
#   cpu4x1g   CPU-s per GB machine-wide, 4 rails 4 x iperf3 at tbf 1gbit
#             tbf 1gbit (ratio: railyard/iperf3; lower is better); and
#             (cpuproc) the same from the processes' own CPU time: serve +
#             bench, iperf3 client + server (its JSON), which the machine's
#             other load does not blur
#             (tput4x1g) and the MB/s of the same two runs, ratio
#             railyard/iperf3; extra: retransmitted packets, % of the
#             packets sent (counted as bytes / 1428, the payload of a
#             soft-rail packet at MTU 1500)
#   4k_d64    bench 4K depth 64, 1 rail: k ops/s (no peer: ratio = x/300k)
#   lat_d1    bench 4K depth 1 p50 latency       sockperf ping-pong TCP 4K,
#             (ratio railyard/sockperf;          its p50 x 2: a write is done
#             lower is better)                   when its ACK is back, a
#                                                round trip; sockperf prints
#                                                half of one
#   null4     bench_core -r 4 -w 1: M fragments/s/core (ratio = x/25)
#   thr2      bench_core -r 4 -w 1 -t 2 -c 2:    bench_core -r 4 -w 1 -t 1
#             two threads, a peer each, each     (one thread), run just
#             peer in a context of its own:      before: M fragments/s
#             M fragments/s of both (wall clock)
#   tcp1r1500, tcp4x2g, tcpcpu4x1g (+ tcpcpuproc), tcplat_d1
#             the rows above with tcp rails (rails/tcp) instead of soft
#   tcpread4x64, tcpwrite4x64, tcplat4
#             read4x64, write4x64 and lat4 with tcp rails (tcplat4 is
#             not in the default ROWS and has no target of its own)
#   tcppull   drill 4 tcp rails at tbf 1gbit,    3/4 of the healthy MB/s:
#             a's r1 unplugged for the middle    ratio = outage /
#             third: mean MB/s while it is out   (0.75 x healthy)
#   mptcp4x2g bench 1M d8, 4 tcp rails, tbf      one iperf3 stream over Linux
#             2gbit                              MPTCP (mptcpize), 4 subflows,
#                                                one per rail
#   mptcppull tcppull's drill (4 tcp rails at    the same pull under one
#             tbf 1gbit, r1 out for the middle   iperf3 --bidir stream over
#             third, streams both ways): MB/s    MPTCP with 4 subflows: the
#             while r1 is out / (0.75 x          same fraction; extra: MB/s
#             healthy)                           both ways while r1 is out,
#                                                each.  Fractions, not MB/s:
#                                                the drill's load is 3/4
#                                                writes, 1/4 reads, so one
#                                                direction fills while the
#                                                other does not; --bidir is
#                                                1:1
#   read4x64  4 client nodes (4 processes), one  4 x iperf3 -l 4K, one
#   (4K, 64K) rail, each --op read depth 64:     server each, all at once
#             MB/s summed; extra: the worst
#             client's p99/p50
#   write4x64 the same with writes               the same
#   lat4      4 client nodes at 4K depth 1: the  4 sockperf pp flows, one
#             median of their p50s (ratio lower  server each, all at once:
#             is better); extra: the worst p99   median p50 x 2 (a round
#             against the worst sockperf p99 x 2 trip), worst p99 x 2
#   The many-client rows (read4x64, write4x64, lat4 and their tcp
#   twins) run serve and clients with `lanes = LANES` (default: the
#   cores, at most 8; railyard.conf(5)): one link whose work is spread
#   over that many rail threads on the serving node.  LANES=1: one thread.
#
# Topology: tests/netns/topo.sh (two hosts, a switch namespace, one bridge
# per rail); serve runs in b, bench and the peer clients in a.  Shaping is
# tc tbf on both hosts' rail interfaces, changed between rows.  Only
# 198.18.0.0/15, only inside the namespaces, which are deleted on exit.
#
# usage (root): ratio.sh [BUILD_DIR]      (default build/gcc)
#   env: RUNS=3, T=4 (seconds per case), ROWS="4x2g 1r1500 ..." (a subset),
#        KEEP=DIR (copy the raw JSON/logs there), CPU_SIZE=1M (the op
#        size of the cpu4x1g rows at depth 8: 256K moves the same bytes
#        through a quarter of the memory, RESULTS.md "footprint")
# Not a test: prints numbers, asserts nothing.  CPU-s/GB is machine-wide
# (/proc/stat): other work on the machine counts too, both sides alike.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build/gcc}
ry=$build/src/cli/railyard
core=$build/tests/manager/bench_core
RUNS=${RUNS:-3}
T=${T:-4}
ROWS=${ROWS:-4x2g 1r1500 1r9000 cpu4x1g 4k_d64 lat_d1 null4 thr2 read4x64 write4x64 lat4 tcp1r1500 tcp4x2g tcpcpu4x1g tcplat_d1 tcppull mptcp4x2g mptcppull}
NCLI=${NCLI:-4} # client nodes of the many-client rows (env: NCLI)
LANES=${LANES:-$(n=$(nproc); echo $((n > 8 ? 8 : n)))}
lanes=1 # the lanes of the configs written next (the many-client rows: LANES)
PROV=soft # the rails' provider, for the tcp rows

if [[ $(id -u) -ne 0 ]]; then
	echo "ratio.sh: needs root (network namespaces, tc)" >&2
	exit 77
fi
[[ -x $ry ]] || { echo "ratio.sh: no $ry (build first)" >&2; exit 1; }
missing=()
for p in iperf3 sockperf stress-ng linux-perf jq mptcpize; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "# installing: ${missing[*]}" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
fi

p=ryr$$
work=$(mktemp -d)
pids=()
cleanup() {
	local q
	for q in "${pids[@]}"; do kill "$q" 2>/dev/null || true; done
	for q in "${pids[@]}"; do wait "$q" 2>/dev/null || true; done
	bash "$root/tests/netns/topo.sh" down $p
	[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp -r "$work"/. "$KEEP"/
	rm -rf "$work"
}
trap cleanup EXIT
bash "$root/tests/netns/topo.sh" up $p 4
in_a() { ip netns exec "$p-a" "$@"; }
in_b() { ip netns exec "$p-b" "$@"; }

# shape RATE|none: tbf on every rail of both hosts
shape() {
	local h i
	for h in a b; do
		for i in 0 1 2 3; do
			tc -n "$p-$h" qdisc del dev r$i root 2>/dev/null || true
			[[ $1 == none ]] && continue
			tc -n "$p-$h" qdisc add dev r$i root tbf rate "$1" \
				burst 256kb latency ${RY_TBF_LATENCY:-20ms}
		done
	done
}
# mtu BYTES: rail r0's MTU on both hosts and the switch ports
set_mtu() {
	local h
	for h in a b; do
		ip -n "$p-$h" link set r0 mtu "$1"
		ip -n "$p-sw" link set "$h-r0" mtu "$1"
	done
}
# conf HOST RAILS MTU: a config like the drill's, with RAILS rails
conf() {
	local h=$1 n=$2 mtu=$3 me=1 other=2 peer=b i
	[[ $h == b ]] && me=2 other=1 peer=a
	{
		echo "node = \"$h\""
		echo "control = \"198.18.0.$me:7470\""
		echo "lanes = $lanes"
		for ((i = 0; i < n; i++)); do
			echo "rail r$i { provider = $PROV network = \"n$i\"" \
				"address = \"198.18.$((i + 1)).$me\"" \
				"interface = \"r$i\" mtu = $mtu }"
		done
		# a benchmark on a loaded two-core machine: no false failovers
		echo "failover { heartbeat_ms = 100 timeout_ms = 2000" \
			"op_timeout_ms = 10000 }"
		echo "peer $peer { address = \"198.18.0.$other:7470\" }"
		# the many-client rows' nodes c1..c4 are named by no peer section
		if [[ $h == b ]]; then echo 'accept = {"198.18.0.0/15"}'; fi
	} >"$work/$h.conf"
}
# client_conf K RAILS MTU: client node cK in a, its own control port
client_conf() {
	local i
	{
		echo "node = \"c$1\""
		echo 'control = "198.18.0.1:0"'
		echo "lanes = $lanes"
		for ((i = 0; i < $2; i++)); do
			echo "rail r$i { provider = $PROV network = \"n$i\"" \
				"address = \"198.18.$((i + 1)).1\" interface = \"r$i\" mtu = $3 }"
		done
		echo "failover { heartbeat_ms = 100 timeout_ms = 2000" \
			"op_timeout_ms = 10000 }"
		echo 'peer b { address = "198.18.0.2:7470" }'
	} >"$work/c$1.conf"
}
serve_pid=
serve_start() { # RAILS MTU
	conf a "$1" "$2"
	conf b "$1" "$2"
	rm -f "$work/b.sock"
	ip netns exec "$p-b" "$ry" serve -c "$work/b.conf" \
		--socket "$work/b.sock" >>"$work/serve.log" 2>&1 &
	serve_pid=$!
	pids+=("$serve_pid")
	for _ in $(seq 50); do [[ -S $work/b.sock ]] && return 0; sleep 0.1; done
	cat "$work/serve.log" >&2
	echo "ratio.sh: serve did not start" >&2
	exit 1
}
# CPU seconds serve has used so far
serve_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' /proc/"$serve_pid"/stat; }
serve_stop() {
	kill "$serve_pid" 2>/dev/null || true
	wait "$serve_pid" 2>/dev/null || true
	serve_pid=
}
# machine-wide busy jiffies (everything but idle and iowait)
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
hz=$(getconf CLK_TCK)
# bench OUT ARGS...: railyard bench in a, JSON to OUT; prints busy jiffies
bench() {
	local out=$1 b0 b1
	shift
	b0=$(busy)
	in_a /usr/bin/time -f "%U %S" -o "$out.time" "$ry" bench \
		-c "$work/a.conf" --peer b --duration "$T" --json \
		"$@" >"$out" 2>"$out.log" || true
	b1=$(busy)
	jq -e .bytes "$out" >/dev/null 2>&1 || { cat "$out.log" >&2; echo '{}' >"$out"; }
	echo $((b1 - b0))
}
# iperf N OUT [one [ARGS...]]: N iperf3 streams at once, stream k on rail
# k (with "one": all on rail r0, one server each), ARGS for each client;
# MB/s summed; prints "MBps bytes busy_jiffies own_cpu_s"
iperf() {
	local n=$1 out=$2 k b0 b1 sp=() cp=() one=
	shift 2
	[[ ${1:-} == one ]] && one=1 && shift
	for ((k = 0; k < n; k++)); do
		in_b iperf3 -s -1 -B "198.18.$((one ? 1 : k + 1)).2" -p $((5201 + k)) \
			>/dev/null 2>&1 &
		sp+=($!)
		pids+=($!)
	done
	sleep 0.5
	b0=$(busy)
	for ((k = 0; k < n; k++)); do
		in_a iperf3 -c "198.18.$((one ? 1 : k + 1)).2" -p $((5201 + k)) \
			-t "$T" -J "$@" >"$out.$k" 2>&1 &
		cp+=($!)
	done
	for q in "${cp[@]}"; do wait "$q" || true; done
	b1=$(busy)
	for q in "${sp[@]}"; do wait "$q" 2>/dev/null || true; done
	# the last field: client + server process CPU seconds (iperf3's own)
	jq -s --argjson j $((b1 - b0)) '[.[].end | {r: (.sum_received //
		{bytes: 0, seconds: 1}), c: (.cpu_utilization_percent //
		{host_total: 0, remote_total: 0})}] |
		"\(map(.r.bytes / .r.seconds) | add / 1e6) \(map(.r.bytes) | add) \($j) \(map((.c.host_total + .c.remote_total) / 100 * .r.seconds) | add)"' -r \
		"$out".* 2>/dev/null || echo "0 0 $((b1 - b0)) 0"
}
mbps() { jq -r 'if .bytes then .bytes / .seconds / 1e6 else 0 end' "$1"; }
# smallest rail share of the bytes, in %
minshare() {
	jq -r '[.rails[]?.bytes] as $b | if ($b | length) > 0 and ($b | add) > 0
		then ($b | min) * 100 / ($b | add) else 0 end' "$1"
}
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", (b > 0 ? a / b : 0) }'; }
# cpu-seconds per GB: jiffies, bytes
cpugb() { awk -v j="$1" -v b="$2" -v hz="$hz" 'BEGIN { printf "%.3f", (b > 0 ? j / hz / (b / 1e9) : 0) }'; }

declare -A RATIO RY PEER NOTE EXTRA OWN
# own_cpu SERVE0 SERVE1 JSON UNIT: serve + bench CPU seconds per UNIT bytes
# (1e9: CPU-s/GB), or with UNIT 1e-6 CPU microseconds per operation
own_cpu() {
	local t
	t=$(cat "$3.time" 2>/dev/null || echo "0 0")
	jq -r --argjson a "$1" --argjson b "$2" --argjson u "$4" \
		--arg t "$t" '($t | split(" ") | map(tonumber) | add) as $c |
		($b - $a + $c) as $cpu | if $u < 1 then
		(if .ops_ok then $cpu / .ops_ok / $u else 0 end) else
		(if .bytes then $cpu / (.bytes / $u) else 0 end) end |
		. * 100 | round / 100' "$3"
}
add() { # ROW RATIO RY PEER [EXTRA]
	RATIO[$1]+="$2 "
	RY[$1]+="$3 "
	PEER[$1]+="$4 "
	EXTRA[$1]+="${5:-} "
}

row_tput() { # ROW RAILS MTU RATE
	local row=$1 n=$2 mtu=$3 r=$4 ry_mbs ip s0 s1 ibytes ipc
	shape "$r"
	set_mtu "$mtu"
	serve_start "$n" "$mtu"
	s0=$(serve_cpu)
	bench "$work/$row.$run.json" --size 1M --depth 8 >/dev/null
	s1=$(serve_cpu)
	serve_stop
	ry_mbs=$(mbps "$work/$row.$run.json")
	ip=$(iperf "$n" "$work/$row.$run.iperf")
	read -r _ ibytes _ ipc <<<"$ip"
	add "$row" "$(div "$ry_mbs" "${ip%% *}")" "$ry_mbs" "${ip%% *}" \
		"$(minshare "$work/$row.$run.json")"
	OWN[$row]+="$(own_cpu "$s0" "$s1" "$work/$row.$run.json" 1e9)/$(awk \
		-v c="$ipc" -v b="$ibytes" 'BEGIN { printf "%.2f", (b > 0 ? c / (b / 1e9) : 0) }') "
}

row_cpu() { # [ROW PROCROW TPUTROW]
	local row=${1:-cpu4x1g} j bytes ip ry_c ip_c s0 s1 pc ipc ibytes ij imbs rt
	shape 1gbit
	set_mtu 1500
	serve_start 4 1500
	s0=$(serve_cpu)
	j=$(bench "$work/$row.$run.json" --size "${CPU_SIZE:-1M}" --depth 8)
	s1=$(serve_cpu)
	serve_stop
	bytes=$(jq -r '.bytes // 0' "$work/$row.$run.json")
	ip=$(iperf 4 "$work/$row.$run.iperf")
	ry_c=$(cpugb "$j" "$bytes")
	read -r imbs ibytes ij ipc <<<"$ip"
	ip_c=$(cpugb "$ij" "$ibytes")
	add $row "$(div "$ry_c" "$ip_c")" "$ry_c" "$ip_c" "$(mbps "$work/$row.$run.json")"
	rt=$(jq -r --argjson b "$bytes" '[.rails[]?.retransmits] | add // 0 |
		if $b > 0 then . * 100 / (. + $b / 1428) * 1000 | round / 1000
		else 0 end' "$work/$row.$run.json")
	add "${3:-tput4x1g}" "$(div "$(mbps "$work/$row.$run.json")" "$imbs")" \
		"$(mbps "$work/$row.$run.json")" "$imbs" "$rt"
	# the same from the processes' own CPU time (serve + bench; iperf3
	# client + server): what the machine's other load does not blur
	pc=$(awk -v a="$s0" -v b="$s1" -v t="$(cat "$work/$row.$run.json.time")" \
		-v by="$bytes" 'BEGIN { split(t, u, " ");
		printf "%.3f", (by > 0 ? (b - a + u[1] + u[2]) / (by / 1e9) : 0) }')
	ipc=$(awk -v c="$ipc" -v by="$ibytes" 'BEGIN { printf "%.3f", (by > 0 ? c / (by / 1e9) : 0) }')
	add "${2:-cpuproc}" "$(div "$pc" "$ipc")" "$pc" "$ipc"
}

row_4k() {
	local row=4k_d64 ops s0 s1
	shape none
	set_mtu 1500
	serve_start 1 1500
	s0=$(serve_cpu)
	bench "$work/$row.$run.json" --size 4K --depth 64 >/dev/null
	s1=$(serve_cpu)
	serve_stop
	OWN[$row]+="$(own_cpu "$s0" "$s1" "$work/$row.$run.json" 1e-6) "
	ops=$(jq -r 'if .seconds then .ops_ok / .seconds / 1000 else 0 end' "$work/$row.$run.json")
	add $row "$(div "$ops" 300)" "$ops" 300
}

row_lat() { # [ROW]
	local row=${1:-lat_d1} ry_p50 sp sq
	shape none
	set_mtu 1500
	serve_start 1 1500
	bench "$work/$row.$run.json" --size 4K --depth 1 >/dev/null
	serve_stop
	ry_p50=$(jq -r '.latency_us.p50 // 0' "$work/$row.$run.json")
	# not through in_b: a function run in the background is a subshell,
	# and killing its PID left sockperf running after the script ended
	ip netns exec "$p-b" sockperf sr --tcp -i 198.18.1.2 -p 11111 \
		>/dev/null 2>&1 &
	sq=$!
	pids+=("$sq")
	sleep 0.5
	in_a sockperf pp --tcp -i 198.18.1.2 -p 11111 -m 4096 -t "$T" \
		>"$work/$row.$run.sockperf" 2>&1 || true
	kill "$sq" 2>/dev/null || true
	wait "$sq" 2>/dev/null || true
	# sockperf prints half the round trip as its latency; a write is
	# complete only when its ACK is back, a whole round trip: compare
	# with the round trip (2 x sockperf's p50)
	sp=$(awk '/percentile 50.000 =/ { print 2 * $NF }' "$work/$row.$run.sockperf")
	add $row "$(div "$ry_p50" "${sp:-0}")" "$ry_p50" "${sp:-0}"
}

row_null() {
	local row=null4 m
	if [[ ! -x $core ]]; then
		NOTE[$row]="no $core"
		return
	fi
	m=$("$core" -r 4 -w 1 -s "$T" | sed -n 's/.* \([0-9.]*\) M fragments\/s\/core.*/\1/p')
	add $row "$(div "${m:-0}" 25)" "${m:-0}" 25
}

# a rail pulled mid-run at 4 x 1gbit (tcp rails): the outage's MB/s
# against 3/4 of the healthy MB/s, from the drill's per-second samples
# healthy and outage MB/s of per-second samples (JSON on stdin, a jq path
# to the samples, the field with MB/s): healthy t in (1, T], outage
# (T + 1, 2T]
pull_means() {
	jq -r --argjson t "$T" "[$1] as \$s | def mean: if length > 0
		then add / length else 0 end;
		[([\$s[] | select(.t > 1 and .t <= \$t) | $2] | mean),
		 ([\$s[] | select(.t > \$t + 1 and .t <= 2 * \$t) | $2] | mean)] |
		map(tostring) | join(\" \")"
}
# pull_ry OUT: the tcp rails' drill with a's r1 unplugged for the middle
# third; prints "healthy outage ops_failed" (MB/s)
pull_ry() {
	local out=$1 dur=$((3 * T)) dp
	PROV=tcp
	shape 1gbit
	set_mtu 1500
	serve_start 4 1500
	in_a "$ry" drill -c "$work/a.conf" --peer b --duration "$dur" \
		--load streams --json >"$out" 2>"$out.log" &
	dp=$!
	sleep "$T"
	ip -n "$p-a" link set r1 down
	sleep "$T"
	ip -n "$p-a" link set r1 up
	wait "$dp" || true
	serve_stop
	PROV=soft
	echo "$(pull_means '.samples[]?' .total_mbyte_s <"$out")" \
		"$(jq -r '.ops_failed // "?"' "$out")"
}
row_pull() {
	local h o f
	read -r h o f <<<"$(pull_ry "$work/tcppull.$run.json")"
	add tcppull "$(div "$o" "$(awk -v h="$h" 'BEGIN { print 0.75 * h }')")" \
		"$o" "$(awk -v h="$h" 'BEGIN { printf "%.2f", 0.75 * h }')" "$f"
}

# Linux MPTCP between the hosts: b announces its rails r1..r3 (r0 carries
# the first subflow), a accepts the announcements and opens a subflow to
# each, so one connection has 4 subflows, one per rail.  Once per run of
# the script.
mptcp_ready=
mptcp_setup() {
	local h i
	[[ -n $mptcp_ready ]] && return
	for h in a b; do
		ip netns exec "$p-$h" sysctl -qw net.mptcp.enabled=1
		ip -n "$p-$h" mptcp limits set subflow 8 add_addr_accepted 8
	done
	for i in 1 2 3; do
		ip -n "$p-b" mptcp endpoint add "198.18.$((i + 1)).2" dev "r$i" signal
	done
	mptcp_ready=1
}
# mptcp OUT SECONDS [ARGS...]: one iperf3 stream over MPTCP from a to b's
# r0 address (the server listens on every address: the joins arrive at
# r1..r3's), ARGS for the client
mptcp() {
	local out=$1 secs=$2 sp
	shift 2
	mptcp_setup
	in_b mptcpize run iperf3 -s -1 -p 5301 >/dev/null 2>&1 &
	sp=$!
	pids+=($sp)
	sleep 0.5
	in_a mptcpize run iperf3 -c 198.18.1.2 -p 5301 -t "$secs" -J "$@" \
		>"$out" 2>&1 || true
	wait "$sp" 2>/dev/null || true
}
row_mptcp() {
	local row=mptcp4x2g out=$work/mptcp4x2g.$run ry_mbs mp
	PROV=tcp
	shape 2gbit
	set_mtu 1500
	serve_start 4 1500
	bench "$out.json" --size 1M --depth 8 >/dev/null
	serve_stop
	PROV=soft
	ry_mbs=$(mbps "$out.json")
	mptcp "$out.iperf" "$T"
	mp=$(jq -r '.end.sum_received | if .bytes then .bytes / .seconds / 1e6
		else 0 end' "$out.iperf" 2>/dev/null || echo 0)
	add $row "$(div "$ry_mbs" "$mp")" "$ry_mbs" "$mp" \
		"$(minshare "$out.json")"
}
# the same pull, railyard's tcp rails and then MPTCP: ratio of the MB/s
# while r1 is out; extra: each one's outage / (0.75 x its healthy)
row_mptcp_pull() {
	local row=mptcppull out=$work/mptcppull.$run h o f mh mo
	read -r h o f <<<"$(pull_ry "$out.json")"
	shape 1gbit
	mptcp_setup
	# the drill's streams go both ways: so does this stream (--bidir)
	mptcp "$out.iperf" $((3 * T)) --bidir &
	local mp=$!
	sleep $((T + 1))
	ip -n "$p-a" link set r1 down
	sleep "$T"
	ip -n "$p-a" link set r1 up
	wait "$mp" || true
	read -r mh mo <<<"$(pull_means '.intervals[]? | {t: ((.sum.start +
		.sum.end) / 2), mb: ((.sum.bytes + (.sum_bidir_reverse.bytes //
		0)) / .sum.seconds / 1e6)}' .mb <"$out.iperf")"
	local fr fm
	fr=$(div "$o" "$(awk -v h="$h" 'BEGIN { print 0.75 * h }')")
	fm=$(div "$mo" "$(awk -v h="$mh" 'BEGIN { print 0.75 * h }')")
	add $row "$(div "$fr" "$fm")" "$fr" "$fm" \
		"\"$(printf '%.0f/%.0f' "$o" "$mo")/$f\""
}

# many OUT OP SIZE DEPTH: NCLI client nodes' benches at once, one rail;
# their JSON in OUT.K
many() {
	local out=$1 op=$2 size=$3 depth=$4 k cp=()
	for ((k = 1; k <= NCLI; k++)); do
		client_conf $k 1 1500
		in_a "$ry" bench -c "$work/c$k.conf" --peer b --op "$op" \
			--size "$size" --depth "$depth" --duration "$T" --json \
			>"$out.$k" 2>"$out.$k.log" &
		cp+=($!)
	done
	for q in "${cp[@]}"; do wait "$q" || true; done
	for ((k = 1; k <= NCLI; k++)); do
		jq -e .bytes "$out.$k" >/dev/null 2>&1 ||
			{ cat "$out.$k.log" >&2; echo '{}' >"$out.$k"; }
	done
}
# row_many ROW OP SIZE: NCLI clients at depth 64 on one rail against NCLI
# iperf3 streams writing SIZE at a time (reads: -R, the server sends)
row_many() {
	local row=$1 op=$2 size=$3 out ry_mbs ip worst rev=
	[[ $op == read ]] && rev=-R
	shape none
	set_mtu 1500
	lanes=$LANES
	serve_start 1 1500
	out=$work/$row.$run
	many "$out.json" "$op" "$size" 64
	serve_stop
	lanes=1
	ry_mbs=$(jq -s '[.[] | if .bytes then .bytes / .seconds else 0 end] |
		add / 1e6' "$out".json.?)
	# the worst client's p99 / p50: a client starved by the others shows
	worst=$(jq -s '[.[] | .latency_us // {p50: 0, p99: 0} |
		if .p50 > 0 then .p99 / .p50 else 0 end] | max * 10 | round / 10' \
		"$out".json.?)
	ip=$(iperf "$NCLI" "$out.iperf" one -l "$size" $rev)
	ip=${ip%% *}
	add "$row" "$(div "$ry_mbs" "$ip")" "$ry_mbs" "$ip" "$worst"
}
# NCLI clients at 4K depth 1 against NCLI sockperf flows, one server each
row_lat4() {
	local row=${1:-lat4} out k sq=() cp=() ry50 ry99 sp50 sp99
	shape none
	set_mtu 1500
	lanes=$LANES
	serve_start 1 1500
	out=$work/$row.$run
	many "$out.json" write 4K 1
	serve_stop
	lanes=1
	ry50=$(jq -s '[.[] | .latency_us.p50 // 0] | sort | if length % 2 == 1
		then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2
		end' "$out".json.?)
	ry99=$(jq -s '[.[] | .latency_us.p99 // 0] | max' "$out".json.?)
	for ((k = 0; k < NCLI; k++)); do
		ip netns exec "$p-b" sockperf sr --tcp -i 198.18.1.2 \
			-p $((11111 + k)) >/dev/null 2>&1 &
		sq+=($!)
		pids+=($!)
	done
	sleep 0.5
	for ((k = 0; k < NCLI; k++)); do
		in_a sockperf pp --tcp -i 198.18.1.2 -p $((11111 + k)) -m 4096 \
			-t "$T" >"$out.sockperf.$k" 2>&1 &
		cp+=($!)
	done
	for q in "${cp[@]}"; do wait "$q" || true; done
	for q in "${sq[@]}"; do kill "$q" 2>/dev/null || true; done
	for q in "${sq[@]}"; do wait "$q" 2>/dev/null || true; done
	# a round trip: 2 x the half that sockperf prints
	sp50=$(cat "$out".sockperf.? | awk '/percentile 50.000 =/ { print 2 * $NF }' |
		sort -g | awk '{ v[NR] = $1 } END { if (!NR) print 0; else
		print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
	sp99=$(cat "$out".sockperf.? | awk '/percentile 99.000 =/ { v = 2 * $NF;
		if (v > m) m = v } END { print m + 0 }')
	add $row "$(div "$ry50" "$sp50")" "$ry50" "$sp50" \
		"$(div "$ry99" "$sp99")"
}

# two posting threads, a context each, against one thread, back to back
row_threads() {
	local row=thr2 one two
	if [[ ! -x $core ]]; then
		NOTE[$row]="no $core"
		return
	fi
	one=$("$core" -r 4 -w 1 -s "$T" | sed -n 's/.* \([0-9.]*\) M fragments\/s\/core.*/\1/p')
	two=$("$core" -r 4 -w 1 -s "$T" -t 2 -c 2 | sed -n 's/.* \([0-9.]*\) M fragments\/s all threads.*/\1/p')
	add $row "$(div "${two:-0}" "${one:-1}")" "${two:-0}" "${one:-0}"
}

echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) cpus, RUNS=$RUNS T=$T s, LANES=$LANES," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
for run in $(seq "$RUNS"); do
	for row in $ROWS; do
		echo "# run $run: $row" >&2
		case $row in
		4x2g) row_tput 4x2g 4 1500 2gbit ;;
		1r1500) row_tput 1r1500 1 1500 none ;;
		1r9000) row_tput 1r9000 1 9000 none ;;
		cpu4x1g) row_cpu ;;
		4k_d64) row_4k ;;
		lat_d1) row_lat ;;
		null4) row_null ;;
		thr2) row_threads ;;
		read4x64) row_many read4x4k read 4K; row_many read4x64k read 64K ;;
		write4x64) row_many write4x4k write 4K; row_many write4x64k write 64K ;;
		lat4) row_lat4 ;;
		tcp1r1500) PROV=tcp; row_tput tcp1r1500 1 1500 none; PROV=soft ;;
		tcp4x2g) PROV=tcp; row_tput tcp4x2g 4 1500 2gbit; PROV=soft ;;
		tcpcpu4x1g) PROV=tcp; row_cpu tcpcpu4x1g tcpcpuproc tcptput4x1g; PROV=soft ;;
		tcplat_d1) PROV=tcp; row_lat tcplat_d1; PROV=soft ;;
		tcpread4x64) PROV=tcp; row_many tcpread4x4k read 4K
			row_many tcpread4x64k read 64K; PROV=soft ;;
		tcpwrite4x64) PROV=tcp; row_many tcpwrite4x4k write 4K
			row_many tcpwrite4x64k write 64K; PROV=soft ;;
		tcplat4) PROV=tcp; row_lat4 tcplat4; PROV=soft ;;
		tcppull) row_pull ;;
		mptcp4x2g) row_mptcp ;;
		mptcppull) row_mptcp_pull ;;
		*) echo "ratio.sh: unknown row $row" >&2; exit 2 ;;
		esac
	done
done

# min/median/max of a space-separated list
mmm() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 }
	END { if (!NR) { print "- - -"; exit }
	printf "%.3g %.3g %.3g", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'; }
declare -A LABEL=(
	[4x2g]="4x2gbit tbf, MB/s vs 4 x iperf3"
	[1r1500]="1 rail mtu 1500, MB/s vs iperf3 1 stream"
	[1r9000]="1 rail mtu 9000, MB/s vs iperf3 1 stream"
	[cpu4x1g]="CPU-s/GB 4x1gbit, ry/iperf3 (lower=better)"
	[cpuproc]="  same, the processes' own CPU (not the machine)"
	[tput4x1g]="  same runs: 4x1gbit tbf, MB/s vs 4 x iperf3"
	[4k_d64]="4K writes depth 64, k ops/s vs 300k target"
	[lat_d1]="4K depth 1 p50 us vs sockperf pp RTT (lower=better)"
	[null4]="null rail -r 4 -w 1, M frag/s/core vs 25"
	[thr2]="null rail, 2 threads (contexts 2) vs 1, M frag/s"
	[read4x4k]="4 clients 4K reads d64, MB/s vs 4 x iperf3 -R"
	[read4x64k]="4 clients 64K reads d64, MB/s vs 4 x iperf3 -R"
	[write4x4k]="4 clients 4K writes d64, MB/s vs 4 x iperf3"
	[write4x64k]="4 clients 64K writes d64, MB/s vs 4 x iperf3"
	[lat4]="4 clients 4K d1 p50 us vs 4 sockperf RTT (lower)"
	[tcplat4]="tcp: 4 clients 4K d1 p50 vs 4 sockperf RTT (lower)"
	[tcp1r1500]="tcp: 1 rail mtu 1500, MB/s vs iperf3 1 stream"
	[tcp4x2g]="tcp: 4x2gbit tbf, MB/s vs 4 x iperf3"
	[tcpcpu4x1g]="tcp: CPU-s/GB 4x1gbit, ry/iperf3 (lower=better)"
	[tcpcpuproc]="  same, the processes' own CPU (not the machine)"
	[tcptput4x1g]="  same runs: 4x1gbit tbf, MB/s vs 4 x iperf3"
	[tcplat_d1]="tcp: 4K depth 1 p50 us vs sockperf RTT (lower=better)"
	[tcppull]="tcp: r1 pulled at 4x1gbit, MB/s vs 3/4 healthy"
	[tcpread4x4k]="tcp: 4 clients 4K reads d64 vs 4 x iperf3 -R"
	[tcpread4x64k]="tcp: 4 clients 64K reads d64 vs 4 x iperf3 -R"
	[tcpwrite4x4k]="tcp: 4 clients 4K writes d64 vs 4 x iperf3"
	[tcpwrite4x64k]="tcp: 4 clients 64K writes d64 vs 4 x iperf3"
	[mptcp4x2g]="tcp: 4x2gbit tbf, MB/s vs MPTCP 4 subflows"
	[mptcppull]="tcp: r1 pulled at 4x1gbit, outage/(3/4 healthy) vs MPTCP's"
)
declare -A TARGET=([4x2g]=">=0.97" [1r1500]=">=1.0" [1r9000]=">=1.0"
	[cpu4x1g]="<=1.2" [cpuproc]="<=1.2" [tput4x1g]=">=0.98" [4k_d64]=">=1.0" [lat_d1]="<=1.2" [null4]=">=1.0" [thr2]=">=1.6"
	[read4x4k]=">=1.0" [read4x64k]=">=1.0" [write4x4k]=">=1.0" [write4x64k]=">=1.0" [lat4]="<=1.2"
	[tcp1r1500]=">=1.0" [tcp4x2g]=">=0.97" [tcpcpu4x1g]="<=1.2" [tcpcpuproc]="<=1.2" [tcptput4x1g]=">=0.97"
	[tcplat_d1]="<=1.1" [tcplat4]="-" [tcppull]=">=0.97" [mptcp4x2g]="-" [mptcppull]="-"
	[tcpread4x4k]=">=1.0" [tcpread4x64k]=">=1.0" [tcpwrite4x4k]=">=1.0"
	[tcpwrite4x64k]=">=1.0")
printf "%-48s %-20s %-22s %-22s %-7s %s\n" row "ratio min/med/max" \
	"railyard min/med/max" "peer min/med/max" target extra
json="{\"runs\":$RUNS,\"seconds\":$T"
rows=" $ROWS "
rows=${rows/ cpu4x1g / cpu4x1g cpuproc tput4x1g }
rows=${rows/ tcpcpu4x1g / tcpcpu4x1g tcpcpuproc tcptput4x1g }
rows=${rows/ read4x64 / read4x4k read4x64k }
rows=${rows/ write4x64 / write4x4k write4x64k }
rows=${rows/ tcpread4x64 / tcpread4x4k tcpread4x64k }
rows=${rows/ tcpwrite4x64 / tcpwrite4x4k tcpwrite4x64k }
for row in $rows; do
	if [[ -n ${NOTE[$row]:-} ]]; then
		printf "%-48s not run: %s\n" "${LABEL[$row]}" "${NOTE[$row]}"
		json+=",\"$row\":{\"not_run\":\"${NOTE[$row]}\"}"
		continue
	fi
	read -r a b c <<<"$(mmm "${RATIO[$row]:-}")"
	read -r d e f <<<"$(mmm "${RY[$row]:-}")"
	read -r g h i <<<"$(mmm "${PEER[$row]:-}")"
	ex=""
	[[ $row == *4x2g ]] && ex="min rail share % $(mmm "${EXTRA[$row]}" | tr ' ' /)"
	[[ $row == *1r* || $row == *4x2g ]] &&
		[[ -n ${OWN[$row]:-} ]] &&
		ex+="${ex:+; }own CPU-s/GB ry/iperf3 ${OWN[$row]}"
	[[ $row == 4k_d64 ]] && ex="own CPU us/op ${OWN[$row]}"
	[[ $row == tcppull ]] && ex="ops failed ${EXTRA[$row]}"
	[[ $row == mptcppull ]] &&
		ex="MB/s while r1 out ry/mptcp/ops failed: ${EXTRA[$row]//\"/}"
	[[ $row == *read4x* || $row == *write4x* ]] &&
		ex="worst client p99/p50 $(mmm "${EXTRA[$row]}" | tr ' ' /) (target <=5)"
	[[ $row == *lat4 ]] && ex="worst p99 ratio $(mmm "${EXTRA[$row]}" | tr ' ' /) (target <=2)"
	[[ $row == *cpu4x1g ]] && ex="railyard MB/s $(mmm "${EXTRA[$row]}" | tr ' ' /)"
	[[ $row == *tput4x1g ]] && ex="retransmits % of packets $(mmm "${EXTRA[$row]}" | tr ' ' /)"
	printf "%-48s %-20s %-22s %-22s %-7s %s\n" "${LABEL[$row]}" "$a/$b/$c" \
		"$d/$e/$f" "$g/$h/$i" "${TARGET[$row]}" "$ex"
	json+=",\"$row\":{\"ratio\":[${RATIO[$row]// /,}],\"railyard\":[${RY[$row]// /,}],\"peer\":[${PEER[$row]// /,}]"
	[[ -n ${EXTRA[$row]// /} ]] && json+=",\"extra\":[${EXTRA[$row]// /,}]"
	json+="}"
done
json=${json//,]/]}
echo "$json}"
