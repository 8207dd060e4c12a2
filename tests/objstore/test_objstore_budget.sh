#!/usr/bin/env bash
# The object server's per-client budgets and namespaces (issue 30), on two
# soft rails over loopback: one railyard-objd (32 MiB, 8 MiB stored and 8
# MiB in flight per client), clients under three node names.
#   - client A PUTs 4 MiB objects until refused: refused for its budget
#     ("Disk quota exceeded", naming --client-stored), never "no room";
#     replacing one of its own objects still works
#   - client C PUTs in a loop, is stopped (SIGSTOP) mid-run, then killed
#   - meanwhile client B PUTs and GETs 4 MiB objects: every one succeeds
#     and comes back the same; B does not see A's keys (namespaces)
#   - the server exits 0 on SIGTERM and counted the refusals
# Everything listens on 127.0.0.1; processes started here are stopped by
# their PIDs.
# usage: test_objstore_budget.sh PATH/TO/railyard-objd PATH/TO/railyard-obj
set -euo pipefail
objd=$1 obj=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"

dir=$(mktemp -d /tmp/ry-objbudget-XXXXXX)
srv_pid="" stall_pid=""
cleanup() {
	if [[ -n $stall_pid ]]; then
		kill -9 "$stall_pid" 2>/dev/null
		wait "$stall_pid" 2>/dev/null
	fi
	[[ -n $srv_pid ]] && kill "$srv_pid" 2>/dev/null && wait "$srv_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- server log"; grep -v "connection qp" "$dir/srv.log" 2>/dev/null | tail -30 || true
	exit 1
}

obj_confs 'failover { op_timeout_ms = 3000 }'
obj_serve --capacity 32M --chunk 4K --client-stored 8M --client-inflight 8M
# as client NODE
c() { "$obj" "$2" -c "$dir/cli.conf" --node "$1" --server "$ctl" --timeout 20 "${@:3}"; }

head -c $((4 * 1048576)) /dev/urandom >"$dir/four"
head -c $((4 * 1048576)) /dev/urandom >"$dir/four2"

echo "== client A fills its budget"
refused=0
for i in $(seq 12); do
	rc=0
	c cla put "a-$i" "$dir/four" 2>"$dir/err" >/dev/null || rc=$?
	if ((rc)); then
		grep -q 'Disk quota exceeded.*client cla: .*budget 8388608 (--client-stored)' "$dir/err" ||
			fail "A refused, but not for its budget: $(cat "$dir/err")"
		refused=$i
		break
	fi
done
((refused == 3)) || fail "A's third 4 MiB PUT was not refused (refused at $refused)"
echo "ok: $(cat "$dir/err")"
c cla put a-1 "$dir/four2" >/dev/null || fail "A cannot replace its own object"

echo "== client C stalls mid-PUT, client B carries on"
"$obj" bench -c "$dir/cli.conf" --node clc --server "$ctl" --threads 2 \
	--keys 1 --size 2M --op put --duration 30 >/dev/null 2>&1 &
stall_pid=$!
sleep 1
kill -STOP "$stall_pid"
for i in 1 2 3; do
	c clb put "b-$i" "$dir/four" >/dev/null 2>"$dir/err" || fail "B's PUT $i: $(cat "$dir/err")"
	c clb get "b-$i" "$dir/out" >/dev/null 2>"$dir/err" || fail "B's GET $i: $(cat "$dir/err")"
	cmp -s "$dir/four" "$dir/out" || fail "B's object $i came back different"
	c clb del "b-$i" >/dev/null || fail "B's DEL $i"
done
rc=0
c clb get a-1 "$dir/out" 2>"$dir/err" >/dev/null || rc=$?
[[ $rc -eq 1 ]] && grep -q 'no such object' "$dir/err" || fail "B saw A's key: rc $rc, $(cat "$dir/err")"
c cla get a-1 "$dir/out" >/dev/null || fail "A lost its object"
cmp -s "$dir/four2" "$dir/out" || fail "A's replaced object came back different"
kill -9 "$stall_pid"
wait "$stall_pid" 2>/dev/null || true
stall_pid=""
c clb put b-after "$dir/four" >/dev/null 2>"$dir/err" || fail "B after C died: $(cat "$dir/err")"
echo "ok: B's PUT/GET all succeeded beside a full and a stalled client"

kill "$srv_pid"
rc=0
wait "$srv_pid" || rc=$?
srv_pid=""
[[ $rc -eq 0 ]] || fail "railyard-objd exited $rc on SIGTERM"
tail -1 "$dir/srv.log"
tail -1 "$dir/srv.log" | grep -q ' 0 corrupted' || fail "the server counted corrupted PUTs"
tail -1 "$dir/srv.log" | grep -Eq ' [1-9][0-9]* over a client.s budget' || fail "no refusal counted"
echo "PASS"
