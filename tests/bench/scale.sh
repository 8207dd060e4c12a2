#!/usr/bin/env bash
# Scale benchmark: one `railyard serve` (4 soft rails, namespace b of
# tests/netns/topo.sh) against N client nodes emulated by ry-swarm
# from namespace a, plus real client nodes (`railyard bench`, also in a)
# that move verified data: one for the latency steps, RY_SCALE_ACTIVE more
# during the rail pull.
#
# usage (root): scale.sh [--check] N
#   RAILYARD=path/to/railyard   (default: build/src/cli/railyard, then
#                                build/gcc/src/cli/railyard)
#   RY_SWARM=path/to/ry-swarm   (default: tests/swarm/ry-swarm of the
#                                same build tree)
#   RY_SCALE_HB_MS=1000         heartbeat_ms of serve and the swarm
#   RY_SCALE_IDLE_HB_MS=30000   idle_heartbeat_ms of serve and the swarm
#   RY_SCALE_IDLE_S=30          idle measuring window (default: one idle
#                               heartbeat period, at least 10 s; 5 s with
#                               --check)
#   RY_SCALE_ACTIVE=100         real client nodes moving verified data
#                               across the rail pull (issue 13: 100)
#   RY_SCALE_CLIENT_NICE=19     their nice: they stand for other machines
#                               (at 0, a hundred of them starve serve)
#   RY_SCALE_RATE=20            writes a second each of them starts (each
#                               read back): 100 clients flat out on the
#                               server's two cores would measure which
#                               process the scheduler starves, not failover
#
# Steps: serve starts; a 4 KiB write latency is measured from the real
# client alone (bench --size 4K --depth 1, p50); the swarm connects N nodes
# x 4 rails (connect_s: first dial to the last connection up); serve's RSS
# growth per connection; serve's CPU and the packets on its rail
# interfaces over an idle window; the same latency again with the swarm
# idle beside it; then RY_SCALE_ACTIVE more real client nodes (c1, c2, ...,
# each a `railyard bench --verify` process with a node name of its own)
# write and read back while serve's cable of rail r0 is pulled for 2 s,
# and are stopped (SIGTERM: in-flight work completes, each reports) 2 s
# after every emulated node is back on r0 (failover_failed_ops: their
# operations that failed or did not verify, summed; failover_clients_hit:
# how many saw r0 fail under them; rail_back_s: from the replug until
# every emulated node is connected on r0 again, failover_clients_r0_back_s
# the same for the active clients (their first r0 "up" event after the
# pull; 0 if it came while the plug command was still returning); failover_clients_release_s:
# from their exit until serve holds no record of them); then a tenth of the emulated nodes die at once
# (kill_*: how soon serve releases them, its RSS, the slowest 4 KiB write
# of the real client across it); finally the swarm exits and serve must
# drop every peer record (released).  The last line of stdout is one JSON
# object.  --check (the CTest `scale` label) also asserts correctness
# only: every connection up, every active client ran across the pull and
# saw r0 fail, 0 failed or corrupted operations across the pull and the kill,
# the active clients forgotten after they left, every rail back, the killed and then all released.
# Nothing about speed is asserted.
set -euo pipefail
check=
if [[ ${1:-} == --check ]]; then
	check=1
	shift
fi
N=${1:?usage: scale.sh [--check] N}
[[ $N =~ ^[0-9]+$ ]] && ((N >= 1)) || { echo "N must be a positive integer" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
	echo "SKIP: network namespaces need root (run as root)"
	exit 77
fi
command -v jq >/dev/null || apt-get install -y --no-install-recommends jq >/dev/null
ry=${RAILYARD:-}
if [[ -z $ry ]]; then
	for c in "$root/build/src/cli/railyard" "$root/build/gcc/src/cli/railyard"; do
		[[ -x $c ]] && { ry=$c; break; }
	done
fi
[[ -x ${ry:-} ]] || { echo "no railyard binary (build first, or set RAILYARD)" >&2; exit 1; }
swarm=${RY_SWARM:-$(dirname "$ry")/../../tests/swarm/ry-swarm}
[[ -x $swarm ]] || { echo "no ry-swarm binary (build the tests, or set RY_SWARM)" >&2; exit 1; }
HB=${RY_SCALE_HB_MS:-1000}
IDLE_HB=${RY_SCALE_IDLE_HB_MS:-30000}
# the window holds one idle heartbeat period, so every connection beats
# about once in it (the swarm's at random phases, serve's a period after
# they came up, which is inside it); --check asserts nothing about it, so
# it does not wait that long
IDLE=${RY_SCALE_IDLE_S:-$((check ? 5 : (IDLE_HB > 10000 ? IDLE_HB : 10000) / 1000))}
ACTIVE=${RY_SCALE_ACTIVE:-100}
RATE=${RY_SCALE_RATE:-20}
[[ $ACTIVE =~ ^[0-9]+$ ]] && ((ACTIVE >= 1 && ACTIVE <= 1000)) ||
	{ echo "RY_SCALE_ACTIVE must be 1..1000" >&2; exit 2; }

p=rys$$
work=$(mktemp -d)
serve_pid= swarm_pid= fo_pids=()
cleanup() {
	for pid in "${fo_pids[@]}" $swarm_pid $serve_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	bash "$root/tests/netns/topo.sh" down $p
	[[ -n ${RY_SCALE_KEEP:-} ]] && cp -r "$work" "$RY_SCALE_KEEP"
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL (scale $N): $*" >&2; exit 1; }
log() { echo "scale: $*" >&2; }
bash "$root/tests/netns/topo.sh" up $p 4
in_a() { ip netns exec "$p-a" "$@"; }
in_b() { ip netns exec "$p-b" "$@"; }
now() { date +%s.%N; }

rails() {
	local h=$1 i
	for i in 0 1 2 3; do
		echo "rail r$i { provider = soft  network = \"n$i\"  address = \"198.18.$((i + 1)).$h\"  interface = \"r$i\" }"
	done
}
cat >"$work/b.conf" <<EOF
node = "b"
control = "198.18.0.2:7470"
accept = {"198.18.0.0/15"}
max_sessions = $((N + ACTIVE + 256))
max_sessions_per_source = $((N + ACTIVE + 64))
$(rails 2)
failover {
	heartbeat_ms = $HB
	idle_heartbeat_ms = $IDLE_HB
	timeout_ms = $((HB * 3))
	op_timeout_ms = 10000
}
EOF
client_conf() { # NODE CONTROL: a real client node's config
	cat <<EOF
node = "$1"
control = "$2"
$(rails 1)
failover {
	heartbeat_ms = $HB
	idle_heartbeat_ms = $IDLE_HB
	timeout_ms = $((HB * 3))
	op_timeout_ms = 10000
}
peer b {
	address = "198.18.0.2:7470"
}
EOF
}
client_conf a 198.18.0.1:7470 >"$work/a.conf"
# the active clients: kernel-chosen control and rail ports on a's addresses
for ((i = 1; i <= ACTIVE; i++)); do
	client_conf "c$i" 198.18.0.1:0 >"$work/c$i.conf"
done

# serve: as many fds as sessions and rails need
ip netns exec "$p-b" bash -c "ulimit -n $((N * 2 + 1024)); exec \"\$0\" serve -c \"\$1\" --socket \"\$2\" --targets \"\$3\"" \
	"$ry" "$work/b.conf" "$work/b.sock" $((ACTIVE + 16)) >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do [[ -S $work/b.sock ]] && break; sleep 0.1; done
[[ -S $work/b.sock ]] || { cat "$work/serve.log" >&2; fail "serve did not start"; }
rss() { awk '/VmRSS/ { print $2 * 1024 }' "/proc/$serve_pid/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$serve_pid/stat"; }
pkts() {
	local t=0 i
	for i in 0 1 2 3; do
		t=$((t + $(in_b cat /sys/class/net/r$i/statistics/rx_packets) + $(in_b cat /sys/class/net/r$i/statistics/tx_packets)))
	done
	echo $t
}
# peer records serve still holds for swarm nodes (the real client "a" stays:
# serve handed it to its application when it answered its hello)
# serve_peers RE: how many peer records serve holds whose node name (or,
# before its hello, name) matches RE
serve_peers() { "$ry" status --socket "$work/b.sock" --json 2>/dev/null |
	jq --arg re "$1" '[.peers[] | select(.node // .name | test($re))] | length'; }
peers_json() { serve_peers '^swarm-'; }

lat4k() { # p50 of 4 KiB writes, one in flight, from the real client
	# a bench that failed an operation still reports; no JSON at all: null
	local v
	v=$(in_a "$ry" bench -c "$work/a.conf" --peer b --size 4K --depth 1 \
		--duration 3 --json 2>>"$work/bench.log" | jq -r '.latency_us.p50' 2>/dev/null) || true
	echo "${v:-null}"
}

# the peer tool in the same run: UDP ping-pong of 4 KiB on rail r0 (round
# trip p50, the same thing bench's per-operation latency is)
sockperf_p50() {
	command -v sockperf >/dev/null || { echo null; return; }
	ip netns exec "$p-b" sockperf server -i 198.18.1.2 -p 11111 >/dev/null 2>&1 &
	local sp=$! v
	sleep 0.5
	v=$(in_a sockperf ping-pong -i 198.18.1.2 -p 11111 -t 3 -m 4096 --full-rtt 2>&1 |
		awk '/percentile 50.000/ { print $NF }')
	kill $sp 2>/dev/null || true
	wait $sp 2>/dev/null || true
	echo "${v:-null}"
}

log "serve up ($ry), N=$N, heartbeat ${HB} ms, idle ${IDLE_HB} ms"
lat_alone=$(lat4k)
sock_alone=$(sockperf_p50)
sleep 1
rss0=$(rss)

# not through in_a: a function in the background is a subshell, and its
# PID is not the swarm's
ip netns exec "$p-a" "$swarm" --server 198.18.0.2:7470 --source 198.18.0.1 --nodes "$N" \
	--heartbeat-ms "$HB" --idle-heartbeat-ms "$IDLE_HB" --status-file "$work/swarm.st" --json \
	--rail n0=198.18.1.1 --rail n1=198.18.2.1 --rail n2=198.18.3.1 \
	--rail n3=198.18.4.1 >"$work/swarm.json" 2>"$work/swarm.log" &
swarm_pid=$!
st() { jq -r "$1" "$work/swarm.st" 2>/dev/null || echo -1; }
active_min() { st '.active | min'; }
# seconds from T0 until CMD prints WANT (polled every EVERY s), or -1
# after LIMIT s: until_s LIMIT T0 CMD WANT EVERY
until_s() {
	local limit=$1 t0=$2 cmd=$3 want=$4 every=$5
	while awk -v a="$(now)" -v b="$t0" -v l="$limit" 'BEGIN { exit !(a - b < l) }'; do
		if [[ $($cmd) == "$want" ]]; then
			awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.2f", a - b }'
			return
		fi
		sleep "$every"
	done
	echo -1
}
limit=$((60 + N / 20))
t0=$(now)
while :; do
	[[ -f $work/swarm.st ]] && [[ $(st .connect_s) != -1* ]] && break
	kill -0 $swarm_pid 2>/dev/null || { tail "$work/swarm.log" >&2; fail "swarm exited"; }
	if awk -v a="$(now)" -v b="$t0" -v l=$limit 'BEGIN { exit !(a - b > l) }'; then
		tail -3 "$work/swarm.log" >&2
		if [[ -n $check ]]; then fail "not every node connected within $limit s"; fi
		break
	fi
	sleep 0.2
done
connect_s=$(st .connect_s)
connections=$(st .connections)
log "$connections connections, connect_s $connect_s"
sleep 2
rss1=$(rss)

hbs() { "$ry" status --socket "$work/b.sock" --json 2>/dev/null | jq '[.rails[].heartbeats] | add'; }
c0=$(cpu_ticks) k0=$(pkts) h0=$(hbs) s0=$(st .heartbeats_sent) w0=$(now)
perf_pid=
if [[ -n ${RY_SCALE_PERF:-} ]] && command -v perf >/dev/null; then
	perf record -g -o "$work/perf.data" -p "$serve_pid" -- sleep "$IDLE" >/dev/null 2>&1 &
	perf_pid=$!
fi
sleep "$IDLE"
c1=$(cpu_ticks) k1=$(pkts) h1=$(hbs) s1=$(st .heartbeats_sent) w1=$(now)
[[ -n $perf_pid ]] && { wait $perf_pid || true; }
[[ -n ${RY_SCALE_PERF:-} && -f $work/perf.data ]] &&
	perf report -i "$work/perf.data" --no-children --stdio --percent-limit 2 2>/dev/null |
	grep -E '^ +[0-9.]+%' | head -20 >&2
hb_idle=$(awk -v a=$((h1 - h0)) -v b=$((s1 - s0)) -v n="$connections" -v x=$w0 -v y=$w1 \
	'BEGIN { printf "%.3f", (n ? (a + b) / n / (y - x) : 0) }')
hz=$(getconf CLK_TCK)
idle=$(awk -v c=$((c1 - c0)) -v hz=$hz -v a=$w0 -v b=$w1 -v k=$((k1 - k0)) -v n=$connections \
	'BEGIN { printf "%.1f %.3f", 100 * c / hz / (b - a), (n ? k / n / (b - a) : 0) }')
idle_cpu=${idle% *} idle_msgs=${idle#* }
log "idle: serve CPU $idle_cpu %, $hb_idle heartbeats/conn/s (both ways), $idle_msgs packets/conn/s on serve's rail interfaces"

lat_loaded=$(lat4k)
sock_loaded=$(sockperf_p50)
log "4 KiB write p50: alone $lat_alone us, with the swarm $lat_loaded us (sockperf 4 KiB UDP round trip p50 on r0: $sock_alone / $sock_loaded us)"

# serve's records of the active clients (c1, c2, ...)
clients_json() { serve_peers '^c[0-9]+$'; }

# failover: ACTIVE real client nodes write and read back (verified) while
# serve's cable of r0 is out for 2 s.  Each runs until told to stop, so the
# pull falls inside every run however long the start of a hundred
# processes takes on a loaded machine.
# They stand for other machines: at nice RY_SCALE_CLIENT_NICE (19) they
# take only what CPU serve and the swarm leave, as remote clients would
# take none of the server's.
for ((i = 1; i <= ACTIVE; i++)); do
	nice -n "${RY_SCALE_CLIENT_NICE:-19}" ip netns exec "$p-a" "$ry" bench -c "$work/c$i.conf" --peer b --size 64K \
		--depth 2 --rate "$RATE" --duration 3600 --verify --json >"$work/fo-$i.json" 2>"$work/fo-$i.log" &
	fo_pids+=($!)
done
# a client prints "bench to b" once it has its target and its rails
fo_started() { grep -l '^bench to b' "$work"/fo-*.log 2>/dev/null | wc -l; }
fo_start_s=$(until_s $((30 + ACTIVE / 2)) "$(now)" fo_started "$ACTIVE" 0.2)
[[ $fo_start_s == -1 ]] && log "only $(fo_started) of $ACTIVE active clients started"
sleep 1
t_unplug=$(now)
bash "$root/tests/netns/topo.sh" unplug $p b 0
sleep 2
bash "$root/tests/netns/topo.sh" plug $p b 0
t_plug=$(now)
rail_back_s=$(until_s 120 "$t_plug" active_min "$N" 0.05)
sleep 2
fo_known=$(clients_json)
kill -TERM "${fo_pids[@]}" 2>/dev/null || true
fo_bad_exit=0
for pid in "${fo_pids[@]}"; do
	wait "$pid" || fo_bad_exit=$((fo_bad_exit + 1))
done
fo_pids=()
# summed over the clients that reported; ran: their run spans the pull;
# hit: r0 failed under them (a failover counted on their rail r0)
fo=$(for ((i = 1; i <= ACTIVE; i++)); do jq -c . "$work/fo-$i.json" 2>/dev/null || true; done |
	jq -s -c --argjson u "$t_unplug" --argjson p "$t_plug" '{
		reported: length,
		ok: (map(.ops_ok) | add // 0),
		failed: (map(.ops_failed) | add // 0),
		verify: (map(.verify_errors) | add // 0),
		mbyte_s: ((map(.bytes / .seconds) | add // 0) / 1e6 * 10 | round / 10),
		ran: (map(select(.start_unix <= $u and .start_unix + .seconds >= $p)) | length),
		hit: (map(select(any(.rails[]; .name == "r0" and .failovers > 0))) | length),
		back: (map(.start_unix as $s | [.events[] | select(.rail == "r0" and
			.event == "up" and $s + .t >= $u) | [$s + .t - $p, 0] | max] | min) |
			if length == 0 or any(. == null) then null else max * 100 | round / 100 end)}')
fo_reported=$(jq .reported <<<"$fo") fo_ok=$(jq .ok <<<"$fo")
fo_failed=$(jq .failed <<<"$fo") fo_verify=$(jq .verify <<<"$fo")
fo_ran=$(jq .ran <<<"$fo") fo_hit=$(jq .hit <<<"$fo") fo_mbs=$(jq .mbyte_s <<<"$fo")
fo_back=$(jq .back <<<"$fo")
if ((fo_reported < ACTIVE)); then
	for ((i = 1; i <= ACTIVE; i++)); do
		jq -e . "$work/fo-$i.json" >/dev/null 2>&1 || { tail -3 "$work/fo-$i.log" >&2; break; }
	done
fi
log "failover: $fo_reported of $ACTIVE active clients reported ($fo_ran ran across the pull, $fo_hit saw r0 fail, $fo_bad_exit exited non-zero): $fo_ok ok ($fo_mbs MB/s together), $fo_failed failed, $fo_verify bytes differed; r0 back for all emulated nodes in $rail_back_s s, for all active clients in $fo_back s"
# the active clients have left (their sessions closed at exit): serve
# must forget them as it does the emulated nodes, though each sent it
# messages (hellos for its target)
fo_release_s=$(until_s 60 "$(now)" clients_json 0 0.2)
log "the $ACTIVE active clients left (serve knew $fo_known of them): serve forgot them in $fo_release_s s"

# a tenth of the clients die at once (swarm SIGUSR1: sessions close, QPs
# vanish, they never return) while the real client writes 4 KiB one at a
# time: serve must notice, release them (kill_release_s; its RSS against
# what the survivors cost pro rata) and keep serving without a stall
# (kill_lat_max_us: the slowest write across the kill)
K=$((N / 10 > 0 ? N / 10 : 1))
rss_k0=$(rss)
in_a "$ry" bench -c "$work/a.conf" --peer b --size 4K --depth 1 --duration 8 \
	--json >"$work/kill.json" 2>"$work/kill.log" &
bench_pid=$!
sleep 2
kill -USR1 $swarm_pid
t_kill=$(now)
kill_release_s=$(until_s 60 "$t_kill" peers_json $((N - K)) 0.1)
kill_rc=0
wait $bench_pid || kill_rc=$?
bench_pid=
rss_k1=$(rss)
kill_failed=$(jq -r '.ops_failed // "null"' "$work/kill.json" 2>/dev/null || echo null)
kill_ok=$(jq -r '.ops_ok // "null"' "$work/kill.json" 2>/dev/null || echo null)
kill_lat_max=$(jq -r '.latency_us.max // "null"' "$work/kill.json" 2>/dev/null || echo null)
kill_lat_p50=$(jq -r '.latency_us.p50 // "null"' "$work/kill.json" 2>/dev/null || echo null)
# what serve held before the kill, less the killed nodes' share of what
# connecting the swarm cost (the active clients' peer records and targets
# are still held: they left less than TARGET_GRACE_S ago)
kill_rss_pro_rata=$(awk -v a=$rss0 -v b=$rss1 -v c=$rss_k0 -v n=$N -v k=$K 'BEGIN { printf "%.0f", c - (b - a) * k / n }')
log "killed $K clients: released in $kill_release_s s; serve RSS $rss_k0 -> $rss_k1 (survivors pro rata: $kill_rss_pro_rata); 4 KiB writes across it: $kill_ok ok, $kill_failed failed, p50 $kill_lat_p50 us, max $kill_lat_max us"

# the clients leave: serve must let go of every peer
kill -TERM $swarm_pid
wait $swarm_pid || true
swarm_pid=
t_exit=$(now) released=false
release_s=$(until_s 60 "$t_exit" peers_json 0 0.2)
[[ $release_s == -1 ]] || released=true
serve_rss_after=$(rss)

# UDP datagrams dropped for a full receive buffer, serve's side and the
# clients' side, over the whole run
udp_drops() { ip netns exec "$1" awk '/^Udp:/ { if (h) print $6; h = 1 }' /proc/net/snmp; }
drops_b=$(udp_drops "$p-b") drops_a=$(udp_drops "$p-a")
conn_per_s=$(awk -v n="$connections" -v s="$connect_s" 'BEGIN { r = 0; if (s > 0) r = n / s; printf "%.0f", r }')
bpc=$(awk -v a=$rss0 -v b=$rss1 -v n="$connections" 'BEGIN { printf "%.0f", n ? (b - a) / n : 0 }')
[[ -n ${RY_SCALE_DEBUG:-} ]] && set -x
result=$(jq -nc --argjson peers "$N" --argjson connections "$connections" \
	--argjson connect_s "$connect_s" --argjson conn_per_s "$conn_per_s" \
	--argjson bytes_per_conn "$bpc" --argjson idle_cpu_pct "$idle_cpu" \
	--argjson idle_msgs_per_conn_s "$hb_idle" --argjson idle_iface_pkts_per_conn_s "$idle_msgs" \
	--argjson lat_p50_us_alone "$lat_alone" --argjson lat_p50_us_loaded "$lat_loaded" \
	--argjson sockperf_rtt_p50_us_alone "$sock_alone" --argjson sockperf_rtt_p50_us_loaded "$sock_loaded" \
	--argjson failover_failed_ops "$fo_failed" --argjson failover_verify_errors "$fo_verify" \
	--argjson failover_ok_ops "$fo_ok" --argjson rail_back_s "$rail_back_s" \
	--argjson failover_active_clients "$ACTIVE" --argjson failover_clients_reported "$fo_reported" \
	--argjson failover_clients_ran "$fo_ran" --argjson failover_clients_hit "$fo_hit" \
	--argjson failover_clients_bad_exit "$fo_bad_exit" --argjson failover_start_s "$fo_start_s" \
	--argjson failover_rate "$RATE" --argjson failover_mbyte_s "$fo_mbs" \
	--argjson failover_clients_r0_back_s "$fo_back" \
	--argjson failover_clients_known "$fo_known" --argjson failover_clients_release_s "$fo_release_s" \
	--argjson released "$released" --argjson release_s "$release_s" \
	--argjson udp_rcvbuf_errors_serve "$drops_b" --argjson udp_rcvbuf_errors_clients "$drops_a" \
	--argjson heartbeat_ms "$HB" --argjson idle_heartbeat_ms "$IDLE_HB" --argjson serve_rss_before "$rss0" \
	--argjson serve_rss_connected "$rss1" --argjson serve_rss_after "$serve_rss_after" \
	--argjson killed "$K" --argjson kill_release_s "$kill_release_s" \
	--argjson kill_rss_before "$rss_k0" --argjson kill_rss_after "$rss_k1" \
	--argjson kill_rss_pro_rata "$kill_rss_pro_rata" \
	--argjson kill_ops_ok "$kill_ok" --argjson kill_ops_failed "$kill_failed" \
	--argjson kill_lat_p50_us "$kill_lat_p50" --argjson kill_lat_max_us "$kill_lat_max" \
	--argjson swarm "$(cat "$work/swarm.json" 2>/dev/null || echo null)" \
	'$ARGS.named')
if [[ -n $check ]]; then
	((connections == 4 * N)) || fail "$connections of $((4 * N)) connections up"
	((fo_reported == ACTIVE && fo_ran == ACTIVE && fo_hit == ACTIVE)) ||
		fail "failover: $fo_reported of $ACTIVE active clients reported, $fo_ran ran across the pull, $fo_hit saw r0 fail"
	((fo_bad_exit == 0 && fo_failed == 0 && fo_verify == 0 && fo_ok > 0)) ||
		fail "failover: $fo_ok ok, $fo_failed failed, $fo_verify bytes differed ($fo_bad_exit clients exited non-zero)"
	[[ $rail_back_s != -1 ]] || fail "r0 did not come back for every node within 120 s"
	((fo_known == ACTIVE)) || fail "serve listed $fo_known of the $ACTIVE active clients as peers"
	[[ $fo_release_s != -1 ]] || fail "serve still holds $(clients_json) of the $ACTIVE active clients 60 s after they left"
	[[ $kill_release_s != -1 ]] || fail "serve still holds $(peers_json) swarm peers 60 s after $K of $N were killed (want $((N - K)))"
	[[ $kill_rc == 0 && $kill_failed == 0 ]] ||
		fail "across the kill: $kill_ok ok, $kill_failed failed (bench exit $kill_rc)"
	[[ $released == true ]] || fail "serve still holds $(peers_json) swarm peers 60 s after the clients exited"
fi
echo "$result"
