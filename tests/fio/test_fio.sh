#!/usr/bin/env bash
# fio over railyard between namespace hosts (tests/netns/topo.sh: hosts a
# and b, two rails r0 r1 through a switch, management link for control):
# `railyard serve` in b, fio with the railyard engine in a.
#   1. etc/fio/railyard-verify.fio: two jobs write their regions and read
#      them back with verify=crc32c; every byte written is read back and
#      no job has an error
#   2. the same job throttled (rate=) while a's cable of rail r1 is pulled
#      and plugged back: serve sees the connections fail, fio sees nothing
#      but its verify passing
#   then a job larger than serve's region: it fails, saying so
#   3. the same write job through fio and through `railyard bench`
#      (--size 64K --depth 8, 3 s each): both figures are printed side by
#      side (not asserted: the machine is shared)
# usage: test_fio.sh RAILYARD ENGINE_SO    (ENGINE_SO "": not built, skip)
# Root only; skips (77) without root, fio or the engine.
set -euo pipefail
ry=$1 engine=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
etc=$here/../../etc/fio
[[ -n $engine && -f $engine ]] || {
	echo "SKIP: the fio engine is not built (cmake -DRY_FIO=ON" \
		"-DFIO_SOURCE_DIR=\$(tests/fio/fetch-fio-source.sh DIR))"
	exit 77
}
command -v fio >/dev/null || { echo "SKIP: fio is not installed"; exit 77; }
source "$here/../netns/lib.sh"
ns_need_root

ns_up ryf 2
fail() {
	echo "FAIL: $*"
	echo "--- serve (b)"; tail -20 "$work/serve.log" || true
	exit 1
}
in_a() { ip netns exec "$p-a" "$@"; }

# conf NODE HOST PORT: $work/NODE.conf for topo.sh's host number HOST
conf() {
	cat >"$work/$1.conf" <<CONF
node = "$1"
control = "198.18.0.$2:$3"
accept = {"198.18.0.0/24"}
rail r0 { provider = soft  network = "n0"  address = "198.18.1.$2"  interface = "r0" }
rail r1 { provider = soft  network = "n1"  address = "198.18.2.$2"  interface = "r1" }
failover { heartbeat_ms = 10  timeout_ms = 100 }
CONF
}
conf b 2 7470
conf a 1 0
ns_serve "$work/b.conf" "$work/serve.log"

cd "$work" # whatever fio leaves behind goes with the rest
export RY_FIO_ENGINE=$engine RY_FIO_CONFIG=$work/a.conf \
	RY_FIO_TARGET=198.18.0.2:7470
# fio's JSON: one entry (group_reporting); bytes in KiB-free units
fio_json() {
	local out=$1
	shift
	in_a fio --output-format=json --output="$out" "$@" ||
		fail "fio $*: exit $? $(cat "$out" 2>/dev/null | tail -5)"
}
check_verify() {
	local out=$1 want=$2
	jq -e --argjson w "$want" '.jobs | length == 1 and .[0].error == 0 and
		.[0].write.io_bytes == $w and .[0].read.io_bytes == $w' \
		"$out" >/dev/null ||
		fail "$(basename "$out"): want $want bytes written and read back, no error: $(jq -c '.jobs[0] | {error, w: .write.io_bytes, r: .read.io_bytes}' "$out")"
}

echo "== 1. $etc/railyard-verify.fio: 2 jobs x 16 MiB, verify=crc32c"
fio_json "$work/verify.json" "$etc/railyard-verify.fio"
check_verify "$work/verify.json" $((2 * 16 << 20))
jq -r '.jobs[0] | "write \(.write.bw / 1024 | floor) MiB/s, verify read \(.read.bw / 1024 | floor) MiB/s"' \
	"$work/verify.json"

echo "== 2. the same, throttled, while rail r1 is pulled for 0.8 s"
fails_before=$(grep -c "rail r1: connection qp" "$work/serve.log" || true)
fio_json "$work/failover.json" "$etc/railyard-verify.fio" --rate=8m &
fio_pid=$!
sleep 0.8
bash "$here/../netns/topo.sh" unplug $p a 1
sleep 0.8
bash "$here/../netns/topo.sh" plug $p a 1
wait $fio_pid || fail "fio during the failover"
check_verify "$work/failover.json" $((2 * 16 << 20))
fails=$(grep -c "rail r1: connection qp" "$work/serve.log" || true)
((fails > fails_before)) ||
	fail "serve saw no connection on r1 fail: the cable pull missed the run"
echo "failover under fio: $((fails - fails_before)) connection(s) failed on r1, verify passed"

echo "== a job larger than serve's region fails, and says why"
if in_a fio --name=big --ioengine=external:"$engine" \
	--ry_config="$work/a.conf" --ry_target=198.18.0.2:7470 --rw=write \
	--bs=1m --iodepth=4 --size=65m >"$work/big.log" 2>&1; then
	fail "fio wrote 65 MiB into serve's 64 MiB region"
fi
grep -q "is size= larger than serve's --region" "$work/big.log" ||
	fail "no hint at the region's size: $(tail -5 "$work/big.log")"

echo "== 3. the same write job: fio beside railyard bench"
fio_json "$work/cmp.json" --name=cmp --ioengine=external:"$engine" \
	--ry_config="$work/a.conf" --ry_target=198.18.0.2:7470 \
	--rw=write --bs=64k --iodepth=8 --size=64m --time_based --runtime=3
in_a "$ry" bench -c "$work/a.conf" --peer 198.18.0.2:7470 --op write \
	--size 64K --depth 8 --duration 3 --json >"$work/bench.json" \
	2>"$work/bench.log" || fail "bench: $(tail -3 "$work/bench.log")"
fio_mib=$(jq '.jobs[0].write.bw / 1024 | floor' "$work/cmp.json")
bench_mib=$(jq '.bytes / .seconds / 1048576 | floor' "$work/bench.json")
printf '%-28s %10s\n' "write 64 KiB x depth 8, 3 s" "MiB/s" \
	"fio (railyard engine)" "$fio_mib" "railyard bench" "$bench_mib"
((fio_mib > 0)) || fail "fio moved nothing"
echo "fio: ok"
