#!/usr/bin/env bash
# serve --metrics checked for real: promtool lints the live /metrics text,
# and a real Prometheus server (Debian package `prometheus`) scrapes a
# serve while `railyard bench` writes to it over two soft rails on
# loopback; its HTTP API must then report a rail byte counter above zero.
# Everything listens on 127.0.0.1; the processes started here are stopped
# by their PIDs.  Skips (77) only when the prometheus package is missing and
# cannot be installed (it is in tests/run-all.sh's package list; as root
# with CI=true this script installs it itself).
# usage: scrape.sh PATH/TO/railyard
set -euo pipefail
cli=$1

need=()
for t in promtool prometheus jq curl; do
	command -v "$t" >/dev/null || need+=("$t")
done
if ((${#need[@]})); then
	if [[ $(id -u) -eq 0 && ${CI:-} == true ]]; then
		pk=()
		for t in "${need[@]}"; do
			case $t in promtool) pk+=(prometheus) ;; *) pk+=("$t") ;; esac
		done
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${pk[@]}" >/dev/null ||
			{ echo "SKIP: cannot install ${pk[*]}"; exit 77; }
	else
		echo "SKIP: ${need[*]} not installed (apt-get install prometheus jq curl)"
		exit 77
	fi
fi

dir=$(mktemp -d /tmp/ry-scrape-XXXXXX)
serve_pid="" prom_pid=""
cleanup() {
	[[ -n $prom_pid ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
	[[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- serve log"; cat "$dir/serve.log" 2>/dev/null || true
	echo "--- prometheus log (tail)"; tail -20 "$dir/prom.log" 2>/dev/null || true
	exit 1
}

# serve admits only the nodes its config names; the bench client's control
# port is ephemeral, so admit loopback instead
admission='accept = {"127.0.0.0/8"}'
cat >"$dir/b.conf" <<CONF
node = sb
control = "127.0.0.1:0"
$admission
rail r0 { provider = soft network = n0 address = "127.0.0.1" }
rail r1 { provider = soft network = n1 address = "127.0.0.1" }
CONF
"$cli" serve -c "$dir/b.conf" --socket "$dir/b.sock" \
	--metrics 127.0.0.1:0 2>"$dir/serve.log" &
serve_pid=$!
url="" ctl=""
for _ in $(seq 100); do
	line=$(head -1 "$dir/serve.log" 2>/dev/null || true)
	url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' <<<"$line" || true)
	ctl=$(grep -o 'control 127\.0\.0\.1:[0-9]*' <<<"$line" | cut -d' ' -f2 || true)
	[[ -n $url && -n $ctl ]] && break
	kill -0 "$serve_pid" 2>/dev/null || fail "serve exited"
	sleep 0.1
done
[[ -n $url ]] || fail "serve did not print its metrics address"
mport=${url#http://127.0.0.1:}
mport=${mport%/metrics}
echo "serve: control $ctl, metrics $url"

lint() {
	local out
	curl -sf -D "$dir/headers" -o "$dir/metrics.txt" "$url" ||
		fail "GET $url"
	grep -qi '^content-type: text/plain; version=0.0.4' "$dir/headers" ||
		fail "content type: $(cat "$dir/headers")"
	out=$(promtool check metrics <"$dir/metrics.txt" 2>&1) ||
		fail "promtool check metrics ($1): $out"
	[[ -z $out ]] || fail "promtool check metrics ($1): $out"
	echo "promtool check metrics ($1): clean, $(grep -c '^# TYPE' "$dir/metrics.txt") families, $(grep -vc '^#' "$dir/metrics.txt") samples"
}
lint "idle"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/")
[[ $code == 404 ]] || fail "GET / answered $code, not 404"

# A free port for Prometheus: a random one nobody answers on (retried).
pport=""
for _ in $(seq 20); do
	p=$((20000 + RANDOM % 30000))
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		pport=$p
		break
	fi
done
[[ -n $pport ]] || fail "no free port for prometheus"
cat >"$dir/prom.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: railyard
    static_configs:
      - targets: ['127.0.0.1:$mport']
YML
prometheus --config.file="$dir/prom.yml" --storage.tsdb.path="$dir/tsdb" \
	--web.listen-address="127.0.0.1:$pport" >"$dir/prom.log" 2>&1 &
prom_pid=$!
api="http://127.0.0.1:$pport"
for _ in $(seq 150); do
	curl -sf "$api/-/ready" >/dev/null 2>&1 && break
	kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited"
	sleep 0.2
done
curl -sf "$api/-/ready" >/dev/null || fail "prometheus not ready"
echo "prometheus: $api (pid $prom_pid)"

cat >"$dir/a.conf" <<CONF
node = sa
control = "127.0.0.1:0"
rail r0 { provider = soft network = n0 address = "127.0.0.1" }
rail r1 { provider = soft network = n1 address = "127.0.0.1" }
peer sb { address = "$ctl" }
CONF
"$cli" bench -c "$dir/a.conf" --peer sb --duration 3 --size 256K --json \
	>"$dir/bench.json" 2>"$dir/bench.log" || {
	cat "$dir/bench.log"
	fail "bench"
}
echo "bench: $(jq -c '{ops_ok, ops_failed}' "$dir/bench.json" 2>/dev/null || tail -1 "$dir/bench.log")"
lint "after bench"

query() {
	curl -sf --get "$api/api/v1/query" --data-urlencode "query=$1"
}
val=0
for _ in $(seq 60); do
	r=$(query 'sum(railyard_rail_bytes_total{job="railyard"})' || true)
	val=$(jq -r '.data.result[0].value[1] // "0"' <<<"$r" 2>/dev/null || echo 0)
	[[ $val != 0 ]] && break
	sleep 0.5
done
echo "query sum(railyard_rail_bytes_total): $val"
[[ $val != 0 ]] || fail "Prometheus never saw rail bytes move: $r"
# serve is the target of one-sided writes: its own operations are only the
# hello replies, while the bench's data arrives through its rails'
# transports.  Both must have moved; the transport must have carried at
# least every byte the bench wrote.
wrote=$(jq -r '.ops_ok * 262144' "$dir/bench.json")
rx=0
for _ in $(seq 60); do
	r=$(query 'sum(railyard_rail_transport_rx_bytes_total{job="railyard"})' || true)
	rx=$(jq -r '.data.result[0].value[1] // "0"' <<<"$r" 2>/dev/null || echo 0)
	awk -v a="$rx" -v b="$wrote" 'BEGIN { exit !(a >= b) }' && break
	sleep 0.5
done
echo "query sum(railyard_rail_transport_rx_bytes_total): $rx (bench wrote $wrote)"
awk -v a="$rx" -v b="$wrote" 'BEGIN { exit !(a >= b && b > 0) }' ||
	fail "rails carried $rx bytes, bench wrote $wrote"
r=$(query 'railyard_rail_bytes_total')
echo "query railyard_rail_bytes_total: $(jq -c '[.data.result[] | {rail: .metric.rail, bytes: .value[1]}]' <<<"$r")"
jq -e '[.data.result[] | .value[1] | tonumber] | add > 0' <<<"$r" >/dev/null ||
	fail "per-rail bytes: $r"
r=$(query 'up{job="railyard"}')
jq -e '.data.result[0].value[1] == "1"' <<<"$r" >/dev/null ||
	fail "target not up: $r"
r=$(query 'railyard_connection_up')
echo "query railyard_connection_up: $(jq -c '[.data.result[] | {rail: .metric.rail, peer: .metric.peer, up: .value[1]}]' <<<"$r")"
echo "PASS"
