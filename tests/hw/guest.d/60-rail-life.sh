# A verbs rail that comes and goes (src/rail_life.c), with 50-manager.sh's
# nodes, configs and helpers (sourced by guest-run.sh after it; it must
# not exit).  One drill from node a, node b's serve started with rail r1's
# device deleted (`rdma link delete rxe_b1`):
#   - serve starts anyway; `railyard status --json` shows r1 up 0 and why;
#   - t~3 s: rxe_b1 added again (`rdma link add`): r1 opens by its
#     configured device name, connects, carries bytes;
#   - t~9 s: rxe_b1 deleted mid-drill: the HCA goes away under an open
#     rail (IBV_EVENT_DEVICE_FATAL; rxe's removal waits for the rail to
#     close its device); t~12 s added again: r1 back and carrying bytes.
# Asserts: 0 failed operations, 0 verify errors, r1 up after each return
# and bytes on it after the last; serve said gone and back.

life_dir=/tmp/life
mkdir -p $life_dir

life_fail() {
	echo "guest: rail life: FAIL: $*"
	return 1
}

life_status_r1() { # life_status_r1 UP: status --json shows r1 with up UP
	"$mgr_ry" status --socket $mgr_dir/b.sock --json >$life_dir/st.json ||
		return 1
	jq -e --argjson u "$1" '[.rails[] | select(.name == "r1" and .up == $u)] |
		length == 1' $life_dir/st.json >/dev/null
}

life_drill() {
	rdma link delete rxe_b1 || life_fail "cannot delete rxe_b1" || return 1
	mgr_serve_start || return 1
	grep "rail r1: absent" $mgr_dir/serve.log ||
		life_fail "serve did not say r1 is absent" || return 1
	life_status_r1 0 || life_fail "status: $(cat $life_dir/st.json)" || return 1
	echo "guest: rail life: b started without r1: $(jq -c '.rails[] | select(.name == "r1")' $life_dir/st.json)"
	mgr_out=$life_dir/drill.json
	"$mgr_ry" drill -c "$mgr_etc/rxe-a.conf" --peer b --duration 22 \
		--size 256K --depth 4 --json >$mgr_out 2>$life_dir/drill.log &
	pid=$!
	mgr_drill_started $life_dir/drill.log $pid
	sleep 3
	echo "guest: rail life: rdma link add rxe_b1 at $(now) s"
	rdma link add rxe_b1 type rxe netdev veth1b
	i=0
	while [ $i -lt 50 ] && ! life_status_r1 1; do
		i=$((i + 1))
		sleep 0.1
	done
	echo "guest: rail life: r1 open in b after $((i / 10)).$((i % 10)) s"
	sleep 5
	echo "guest: rail life: rdma link delete rxe_b1 at $(now) s"
	# rxe's removal waits (unkillable) until every user closed the
	# device: serve must notice and close its rail for it to finish
	rdma link delete rxe_b1 &
	del_pid=$!
	i=0
	while [ $i -lt 100 ] && [ -e /sys/class/infiniband/rxe_b1 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if [ -e /sys/class/infiniband/rxe_b1 ]; then
		life_gone_stuck=1
		echo "guest: rail life: rxe_b1 still there 10 s after its delete"
	else
		wait $del_pid
		echo "guest: rail life: rxe_b1 deleted at $(now) s"
	fi
	sleep 2
	echo "guest: rail life: rdma link add rxe_b1 at $(now) s"
	rdma link add rxe_b1 type rxe netdev veth1b
	t_add=$(now)
	wait $pid
	rc=$?
	cat $life_dir/drill.log
	mgr_json_ok || life_fail "drill printed no JSON" || return 1
	echo "guest: rail life: drill: $(mgr_jq '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors"')"
	echo "guest: rail life: events: $(mgr_jq '[.events[] | "\(.t) \(.rail) \(.event)"] | join("; ")')"
	echo "guest: rail life: r1 MB/s per second: $(mgr_jq '[.samples[] | "\(.t):\(.rails.r1)"] | join(" ")')"
	[ -z "${life_gone_stuck:-}" ] ||
		life_fail "serve did not let go of rxe_b1 when it was deleted" || return 1
	[ "$(mgr_jq .ops_failed)" = 0 ] || life_fail "$(mgr_jq .ops_failed) operations failed: $(mgr_jq .first_error)" || return 1
	[ "$(mgr_jq .verify_errors)" = 0 ] || life_fail "$(mgr_jq .verify_errors) verify errors" || return 1
	# r1 connected after the first add, went down with the device, and
	# came up again: at least two up/connect events, the last after a down
	n_up=$(mgr_jq '[.events[] | select(.rail == "r1" and (.event == "up" or .event == "connect"))] | length')
	[ "$n_up" -ge 2 ] || life_fail "r1 came up $n_up times, want 2" || return 1
	down=$(mgr_jq '[.events[] | select(.rail == "r1" and .event == "down") | .t] | max')
	[ "$down" != null ] || life_fail "no down event for r1 when its device went" || return 1
	up=$(mgr_jq "[.events[] | select(.rail == \"r1\" and .event == \"up\" and .t > $down) | .t] | min")
	[ "$up" != null ] || life_fail "r1 did not come back after its device returned" || return 1
	# a sample ending after the up: r1 carried nothing while it was down
	moved=$(mgr_jq "[.samples[] | select(.t > $up) | .rails.r1] | add // 0")
	awk -v m="$moved" 'BEGIN { exit !(m > 0) }' ||
		life_fail "r1 is up since $up s but carried nothing after it" || return 1
	grep -q "rail r1: gone" $mgr_dir/serve.log || life_fail "serve did not say r1 is gone" || return 1
	[ "$(grep -c "rail r1: back" $mgr_dir/serve.log)" -ge 2 ] ||
		life_fail "serve did not say r1 is back twice" || return 1
	[ $rc = 0 ] || life_fail "drill exited $rc" || return 1
}

life_all() {
	life_gone_stuck=
	life_fail_before=$fail
	fail=0
	check "rail life: serve without rxe_b1, added, deleted and added mid-drill" life_drill
	mgr_serve_stop || fail=1
	[ -n "$life_gone_stuck" ] && wait
	# the next scripts find rxe_b1 as guest-run.sh left it
	[ -e /sys/class/infiniband/rxe_b1 ] ||
		rdma link add rxe_b1 type rxe netdev veth1b || fail=1
	life_rc=$fail
	fail=$life_fail_before
	return $life_rc
}

# Not in the TSan run: the guest's 300 s are spent by then on a loaded
# machine; tests/manager/test_rail_life runs the same manager paths with
# progress threads under TSan.
if [ -n "${TSAN_OPTIONS:-}" ]; then
	echo "guest: rail life: skipped under TSan (see test_rail_life)"
else
	life_all
fi
