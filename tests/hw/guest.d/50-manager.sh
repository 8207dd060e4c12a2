# The rail manager and the CLI over the verbs rail (sourced by
# guest-run.sh, whose rails, check() and now() it uses; it must not exit).
#
#   node a (railyard bench/drill)              node b (railyard serve)
#   rail r0  rxe_a0 -- veth0a 198.18.0.1 <==> 198.18.0.2 veth0b -- rxe_b0  rail r0
#   rail r1  rxe_a1 -- veth1a 198.18.1.1 <==> 198.18.1.2 veth1b -- rxe_b1  rail r1
#   control  TCP 198.18.0.1 -> 198.18.0.2:7470 (one namespace: over lo)
#
# Configs: tests/hw/etc/rxe-a.conf and rxe-b.conf (rails paired by network
# name n0/n1).  Three checks:
#   1. serve + bench --verify --json: no failed operation, no verify error,
#      ops_ok > 0, both rails carried bytes; again with node a's manager
#      on two progress contexts (`contexts = 2`: its data path in the
#      context paths, posting and polling the verbs rails' CQs without
#      the rail's lock).
#   2. drill --json with rail r1's cable pulled mid-transfer (veth1a down,
#      then up): no failed operation, no verify error, fragments replayed,
#      an "up" event for r1 after the link came back and r1 moving bytes
#      again after it.  A pull that finds r1 idle (nothing to replay) is
#      made again, in a new drill, at most three times in all.
# TCG makes everything slow: small sizes and short runs.

mgr_ry=$BUILD/src/cli/railyard
mgr_etc=$SRC/tests/hw/etc
mgr_dir=/tmp/mgr
mgr_serve_pid=
mkdir -p $mgr_dir

mgr_fail() {
	echo "guest: manager: FAIL: $*"
	return 1
}

# The policy routes of guest-run.sh's rail_up go with their device when it
# is set down; a real cable plugged back brings its connected route back,
# so put them back as the plug does.
mgr_routes() { # mgr_routes N
	ip route replace 198.18.$1.2 dev veth${1}a src 198.18.$1.1 table $((100 + $1))
	ip route replace 198.18.$1.1 dev veth${1}b src 198.18.$1.2 table $((200 + $1))
}

mgr_serve_start() { # mgr_serve_start [CONFIG of node b]
	"$mgr_ry" serve -c "${1:-$mgr_etc/rxe-b.conf}" --socket $mgr_dir/b.sock \
		--region 16M >$mgr_dir/serve.log 2>&1 &
	mgr_serve_pid=$!
	wait_sock $mgr_dir/b.sock $mgr_serve_pid && return 0
	cat $mgr_dir/serve.log
	mgr_fail "railyard serve did not start"
}

mgr_serve_stop() {
	[ -n "$mgr_serve_pid" ] || return 0
	kill $mgr_serve_pid
	wait $mgr_serve_pid
	rc=$?
	mgr_serve_pid=
	# node b's view of the runs (its connects, the drill's events)
	sed 's/^/guest: serve: /' $mgr_dir/serve.log
	[ $rc = 0 ] && return 0
	mgr_fail "railyard serve exited $rc after SIGTERM"
}

mgr_jq() { jq -r "$1" "$mgr_out"; }
# jq 1.6 accepts an empty file as valid JSON
mgr_json_ok() { [ -s "$mgr_out" ] && jq -e 'type == "object"' "$mgr_out" >/dev/null; }

mgr_bench() { # mgr_bench [CONFIG]
	mgr_out=$mgr_dir/bench.json
	"$mgr_ry" bench -c "${1:-$mgr_etc/rxe-a.conf}" --peer b --verify --json \
		--duration 4 --size 256K --depth 4 >$mgr_out 2>$mgr_dir/bench.log
	rc=$?
	cat $mgr_dir/bench.log
	mgr_json_ok || mgr_fail "bench printed no JSON" || return 1
	echo "guest: bench: $(mgr_jq '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors, \(.bytes) bytes in \(.seconds) s (\(.gbit_per_s) Gbit/s), latency avg \(.latency_us.avg) us p99 \(.latency_us.p99) us; rails: \([.rails[] | "\(.name) \(.bytes) B"] | join(", "))"')"
	[ "$(mgr_jq .ops_failed)" = 0 ] || mgr_fail "$(mgr_jq .ops_failed) operations failed: $(mgr_jq .first_error)" || return 1
	[ "$(mgr_jq .verify_errors)" = 0 ] || mgr_fail "$(mgr_jq .verify_errors) verify errors" || return 1
	[ "$(mgr_jq .ops_ok)" -gt 0 ] || mgr_fail "no operation completed" || return 1
	[ "$(mgr_jq '.rails | length')" = 2 ] || mgr_fail "bench does not report two rails" || return 1
	for r in r0 r1; do
		[ "$(mgr_jq ".rails[] | select(.name == \"$r\") | .bytes")" -gt 0 ] ||
			mgr_fail "rail $r carried no bytes" || return 1
	done
	[ $rc = 0 ] || mgr_fail "bench exited $rc" || return 1
}

# mgr_drill_started LOG PID: until the drill PID, logging to LOG, says it
# started (at most 30 s), or exits
mgr_drill_started() {
	i=0
	while [ $i -lt 300 ] && ! grep -q "^drill to" "$1"; do
		kill -0 "$2" 2>/dev/null || break
		i=$((i + 1))
		sleep 0.1
	done
}

# mgr_perr FILE RAIL: serve's port_errors of RAIL in status FILE
mgr_perr() { jq -r ".rails[] | select(.name == \"$2\") | .port_errors" "$1"; }

# mgr_drill_once CONFIG: one drill with r1's cable pulled and restored;
# 0 if it passed, 1 if it failed, 2 if it passed but nothing was in flight
# on r1 when its cable went (no replay to check)
mgr_drill_once() {
	# depth 8: at 4, under ThreadSanitizer in a guest on a loaded host,
	# r1 often had nothing in flight when its cable went (its share of
	# all four operations done, r0 still at its own)
	"$mgr_ry" drill -c "$1" --peer b --duration 12 \
		--size 256K --depth 8 --json --csv $mgr_dir/drill.csv \
		>$mgr_out 2>$mgr_dir/drill.log &
	pid=$!
	# pull the cable once data has been moving for a while
	mgr_drill_started $mgr_dir/drill.log $pid
	sleep 3
	echo "guest: drill: veth1a down at $(now) s"
	ip link set veth1a down
	sleep 3
	echo "guest: drill: veth1a up at $(now) s"
	ip link set veth1a up
	mgr_routes 1
	wait $pid
	rc=$?
	cat $mgr_dir/drill.log
	mgr_json_ok || mgr_fail "drill printed no JSON" || return 1
	echo "guest: drill: $(mgr_jq '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors, \(.bytes) bytes in \(.seconds) s; rails: \([.rails[] | "\(.name) \(.state) \(.bytes) B replayed \(.replayed) failovers \(.failovers) reconnects \(.reconnects)"] | join(", "))"')"
	echo "guest: drill events: $(mgr_jq '[.events[] | "\(.t) \(.rail) \(.event)\(if .detect_ms then " detect \(.detect_ms) ms" else "" end)\(if .resume_ms then " resume \(.resume_ms) ms" else "" end)"] | join("; ")')"
	echo "guest: drill r1 MB/s per second: $(mgr_jq '[.samples[] | "\(.t):\(.rails.r1)"] | join(" ")')"
	[ "$(mgr_jq .ops_failed)" = 0 ] || mgr_fail "$(mgr_jq .ops_failed) operations failed: $(mgr_jq .first_error)" || return 1
	[ "$(mgr_jq .verify_errors)" = 0 ] || mgr_fail "$(mgr_jq .verify_errors) verify errors" || return 1
	[ "$(mgr_jq .ops_ok)" -gt 0 ] || mgr_fail "no operation completed" || return 1
	down=$(mgr_jq '[.events[] | select(.rail == "r1" and .event == "down") | .t] | min')
	[ "$down" != null ] || mgr_fail "no down event for r1" || return 1
	up=$(mgr_jq "[.events[] | select(.rail == \"r1\" and .event == \"up\" and .t > $down) | .t] | min")
	[ "$up" != null ] || mgr_fail "r1 did not come back up after its link returned" || return 1
	moved=$(mgr_jq "[.samples[] | select(.t > $up + 1) | .rails.r1] | add // 0")
	awk -v m="$moved" 'BEGIN { exit !(m > 0) }' ||
		mgr_fail "r1 is up since $up s but carried nothing after it" || return 1
	[ "$(mgr_jq '.rails[] | select(.name == "r1") | .state')" = up ] ||
		mgr_fail "r1 is not up at the end" || return 1
	[ $rc = 0 ] || mgr_fail "drill exited $rc" || return 1
	[ "$(mgr_jq '[.rails[].replayed] | add')" -gt 0 ] || return 2
}

# The drill, until a pull finds fragments in flight on r1 (at most 3
# pulls: slowed by ThreadSanitizer, the rail is often idle for a moment),
# then serve's view of the pulls.
mgr_drill() { # mgr_drill [CONFIG of node a]
	local try=1 rc

	mgr_out=$mgr_dir/drill.json
	"$mgr_ry" status --socket $mgr_dir/b.sock --json >$mgr_dir/st0.json ||
		mgr_fail "status of serve failed" || return 1
	while :; do
		mgr_drill_once "${1:-$mgr_etc/rxe-a.conf}"
		rc=$?
		[ $rc = 2 ] || break
		[ $try -lt 3 ] ||
			mgr_fail "no fragment replayed in $try pulls: r1 idle each time?" || return 1
		echo "guest: drill: nothing in flight on r1 when pulled (pull $try): again"
		try=$((try + 1))
	done
	[ $rc = 0 ] || return 1
	# node b's rxe counted the pull as a port error (hw_counters/
	# link_downed) on r1 alone, and one pull does not make a rail degraded
	"$mgr_ry" status --socket $mgr_dir/b.sock --json >$mgr_dir/st.json ||
		mgr_fail "status of serve failed" || return 1
	echo "guest: serve's rails: $(jq -c '[.rails[] | {name, error_state, error_ppm, port_errors}]' $mgr_dir/st.json), port_errors before the drill: r0 $(mgr_perr $mgr_dir/st0.json r0), r1 $(mgr_perr $mgr_dir/st0.json r1)"
	[ "$(mgr_perr $mgr_dir/st.json r1)" -gt "$(mgr_perr $mgr_dir/st0.json r1)" ] ||
		mgr_fail "serve's r1 counted no port error for its pulled cable" || return 1
	[ "$(mgr_perr $mgr_dir/st.json r0)" = "$(mgr_perr $mgr_dir/st0.json r0)" ] ||
		mgr_fail "serve's r0 counted port errors, its cable stayed in" || return 1
	[ "$(jq -r '[.rails[].error_state] | unique | join(",")' $mgr_dir/st.json)" = ok ] ||
		mgr_fail "a rail is not ok after $try pulls" || return 1
}

mgr_all() {
	# check() keeps the failure of the whole run in $fail: count ours
	# apart from the suites' before us
	mgr_fail_before=$fail
	fail=0
	mgr_routes 0
	mgr_routes 1
	if mgr_serve_start; then
		check "manager: serve + bench --verify over two rxe rails" mgr_bench
		{ cat "$mgr_etc/rxe-a.conf"; echo "contexts = 2"; } >$mgr_dir/a-ctx.conf
		check "manager: bench --verify, node a on two contexts" \
			mgr_bench $mgr_dir/a-ctx.conf
		check "manager: drill, r1's cable pulled and restored" mgr_drill
		mgr_serve_stop || fail=1
	else
		fail=1
	fi
	mgr_rc=$fail
	fail=$mgr_fail_before
	return $mgr_rc
}

mgr_all
