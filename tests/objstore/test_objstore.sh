#!/usr/bin/env bash
# The reference object server on two soft rails over loopback: one
# railyard-objd, railyard-obj processes against it.
#   - usage errors exit 2, a config that cannot start 1
#   - CRC32C of "123456789" is the standard check value e3069283
#   - put/get of odd sizes (0, 1, 4097, 1000003 bytes, and 3 MiB + 1, which
#     takes a second GET with a larger buffer) returns the same bytes
#   - a missing key, a deleted key: exit 1, "no such object"
#   - bench: 4 threads, sizes drawn from 1..300001, PUT then GET with
#     checksums verified: every operation ok, 0 failed, 0 corrupted
#   - a bench client killed with -9 mid-run and started again (a new
#     incarnation of the same node): the server says so and the new run
#     has 0 failed, 0 corrupted
#   - too big for the server, then no room left: clear errors, exit 1
#   - the server exits 0 on SIGTERM and counted 0 corrupted
# Everything listens on 127.0.0.1; processes started here are stopped by
# their PIDs.
# usage: test_objstore.sh PATH/TO/railyard-objd PATH/TO/railyard-obj
set -euo pipefail
objd=$1 obj=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
command -v jq >/dev/null || { echo "SKIP: jq is not installed (apt-get install jq)"; exit 77; }

dir=$(mktemp -d /tmp/ry-objstore-XXXXXX)
srv_pid="" bench_pid=""
cleanup() {
	[[ -n $bench_pid ]] && kill -9 "$bench_pid" 2>/dev/null && wait "$bench_pid" 2>/dev/null
	[[ -n $srv_pid ]] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- server log"; grep -v "connection qp" "$dir/srv.log" 2>/dev/null | tail -30 || true
	ss -tanp | grep railyard-obj || true
	exit 1
}

obj_confs

# usage errors exit 2, a config that cannot start exits 1
rc=0; "$obj" bench -c "$dir/cli.conf" --size 5-2 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || fail "bench --size 5-2 exited $rc, not 2"
rc=0; "$objd" -c "$dir/srv.conf" --chunk 3K 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || fail "objd --chunk 3K exited $rc, not 2"
rc=0; "$obj" stat -c "$dir/missing.conf" 2>/dev/null || rc=$?
[[ $rc -eq 1 ]] || fail "a missing config exited $rc, not 1"

[[ $(printf 123456789 | "$obj" crc32c) == e3069283 ]] ||
	fail "crc32c of 123456789 is $(printf 123456789 | "$obj" crc32c), not e3069283"

# 64 MiB in 4 KiB chunks: objects up to 1024 chunks = 4 MiB
# one client fills the pool below: no per-client budget here
obj_serve --capacity 64M --chunk 4K --client-stored 0
c() { "$obj" "$1" -c "$dir/cli.conf" --server "$ctl" --timeout 20 "${@:2}"; }

echo "== put/get, odd sizes"
for n in 0 1 4097 1000003 3145729; do
	head -c $n /dev/urandom >"$dir/in.$n"
	c put "obj-$n" "$dir/in.$n" >/dev/null || fail "put of $n bytes"
done
for n in 0 1 4097 1000003 3145729; do
	c get "obj-$n" "$dir/out.$n" >/dev/null || fail "get of $n bytes"
	cmp "$dir/in.$n" "$dir/out.$n" || fail "$n bytes came back different"
	[[ $(c get "obj-$n" | "$obj" crc32c) == $("$obj" crc32c "$dir/in.$n") ]] ||
		fail "get to stdout of $n bytes differs"
done
echo "ok: 0 .. 3 MiB + 1"

echo "== missing and deleted keys"
rc=0
c get no-such-key "$dir/x" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] || fail "get of a missing key exited $rc, not 1"
grep -q 'get no-such-key: no such object' "$dir/err" || fail "missing key: $(cat "$dir/err")"
c del obj-1 >/dev/null || fail "del"
rc=0
c get obj-1 "$dir/x" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q 'no such object' "$dir/err" || fail "deleted key: rc $rc, $(cat "$dir/err")"
c stat | grep -q '^4 objects' || fail "stat: $(c stat)"
echo "ok: $(cat "$dir/err")"

echo "== bench: 4 threads, odd sizes, verified"
c bench --threads 4 --keys 4 --size 1-300001 --count 800 --verify --json \
	>"$dir/bench.json" 2>"$dir/bench.log" || { cat "$dir/bench.log"; fail "bench exited non-zero"; }
jq -c '{ops_ok, ops_failed, corrupted, puts, gets, gbit_per_s}' "$dir/bench.json"
jq -e '.ops_ok == 800 and .ops_failed == 0 and .corrupted == 0 and
	.puts > 0 and .gets > 0 and .verify and .size_max == 300001' \
	"$dir/bench.json" >/dev/null || fail "bench: $(cat "$dir/bench.json")"

echo "== a client killed mid-run, then a new incarnation"
# not through c(): a function in the background is a subshell, and its PID
# is not the client's
"$obj" bench -c "$dir/cli.conf" --server "$ctl" --threads 4 --keys 2 \
	--size 1M --duration 20 >/dev/null 2>&1 &
bench_pid=$!
sleep 2
lost=$(grep -c 'client objc: control session lost' "$dir/srv.log" || true)
kill -9 $bench_pid
wait $bench_pid 2>/dev/null || true
bench_pid=""
# as a real restart would: the new process comes once the server has seen
# the old one go (without a key_file a live session of the same name
# refuses the newcomer; railyard.conf(5): ADMISSION)
for _ in $(seq 100); do
	(($(grep -c 'client objc: control session lost' "$dir/srv.log" || true) > lost)) && break
	sleep 0.05
done
c bench --threads 4 --keys 2 --size 1-1M --count 300 --verify --json \
	>"$dir/bench2.json" 2>"$dir/bench2.log" || { cat "$dir/bench2.log"; fail "bench after the restart"; }
jq -e '.ops_ok == 300 and .ops_failed == 0 and .corrupted == 0' \
	"$dir/bench2.json" >/dev/null || fail "bench after the restart: $(cat "$dir/bench2.json")"
grep -q 'client objc restarted' "$dir/srv.log" || fail "the server did not see the client restart"
echo "ok: $(grep 'client objc restarted' "$dir/srv.log" | tail -1)"

echo "== too big, then full"
head -c $((4 * 1048576 + 1)) /dev/zero >"$dir/big"
rc=0
c put big "$dir/big" 2>"$dir/err" >/dev/null || rc=$?
[[ $rc -eq 1 ]] && grep -q 'larger than the 4194304 this server takes' "$dir/err" ||
	fail "too big: rc $rc, $(cat "$dir/err")"
head -c $((4 * 1048576)) /dev/zero >"$dir/max"
full=0
for i in $(seq 20); do
	rc=0
	c put "fill-$i" "$dir/max" 2>"$dir/err" >/dev/null || rc=$?
	if ((rc)); then
		grep -q 'no room for 4194304 bytes' "$dir/err" || fail "full: $(cat "$dir/err")"
		full=1
		break
	fi
done
((full)) || fail "64 MiB took twenty 4 MiB objects"
echo "ok: $(cat "$dir/err")"

kill "$srv_pid"
rc=0
wait "$srv_pid" || rc=$?
srv_pid=""
[[ $rc -eq 0 ]] || fail "railyard-objd exited $rc on SIGTERM"
tail -1 "$dir/srv.log"
tail -1 "$dir/srv.log" | grep -q ' 0 corrupted' || fail "the server counted corrupted PUTs"
echo "PASS"
