# The rail manager over rdma_cm (sourced by guest-run.sh after
# 50-manager.sh, whose topology, configs and mgr_* functions it uses; must
# not exit).  The same two nodes and rails as 50-manager.sh, every rail
# with cm = rdma_cm: librdmacm resolves the peer's address and route and
# runs REQ/REP/RTU for every QP the manager connects, the control channel
# carrying the listener's port in the endpoint.
#   1. serve + bench --verify --json: nothing failed or corrupted, both
#      rails carried bytes;
#   2. node b's log shows its rails listening through rdma_cm, its QPs
#      connected through the CM (b answers a's connects, so b sends the
#      REQs), and no REQ from a QPN the control channel did not name;
#   3. the cable-pull drill of 50-manager.sh (veth1a down for 3 s, then
#      up) on rdma_cm: nothing failed or corrupted, fragments replayed, r1
#      connected again through the CM once its link was back; and every
#      port's GSI QP (QP1, which carries the CM's messages) still in RTS.
# The last is the trap this drill found: rxe moves QP1 to ERR for good
# when a CM message (the DREQ of a QP destroyed as its link went) is sent
# while the netdev is down, and then no connect on that port is ever
# answered again.  The rail holds its ended CM connections until the port
# is back (rails/verbs/verbs_cm.c, reap_dead).

cm_dir=/tmp/cm
mkdir -p $cm_dir

cm_conf() { # cm_conf IN OUT [LEVEL]: IN with every rail on rdma_cm
	sed -e 's/^rail \(r[01]\) {/rail \1 { cm = rdma_cm /' \
	    -e "s/level = info/level = ${3:-info}/" "$1" >"$2"
}

cm_listening() {
	grep -q "rail r0: rdma_cm listening on 198.18.0.2 port" $mgr_dir/serve.log &&
		grep -q "rail r1: rdma_cm listening on 198.18.1.2 port" $mgr_dir/serve.log ||
		mgr_fail "node b's rails are not listening through rdma_cm" || return 1
	# node b answers node a's connects: its QPs send the CM's REQ
	n=$(grep -c ": connected to qp" $mgr_dir/serve.log)
	echo "guest: cm: node b connected $n QPs through the CM"
	[ "$n" -ge 2 ] || mgr_fail "node b connected no QP through rdma_cm" || return 1
	! grep -q "connected by qp" $mgr_dir/serve.log ||
		mgr_fail "a CM connection from a QP the control channel did not name"
}

# every rxe port's GSI QP (QP1) in RTS: one in ERR answers no CM message
cm_gsi_ok() {
	gsi=$(rdma res show qp 2>&1 | grep "type GSI")
	echo "$gsi" | sed 's/^/guest: cm: /'
	[ -n "$gsi" ] || mgr_fail "rdma res show qp lists no GSI QP" || return 1
	! echo "$gsi" | grep -v "state RTS" | grep -q . ||
		mgr_fail "a port's QP1 left RTS: its CM is dead until the device is made again"
}

cm_all() {
	cm_fail_before=$fail
	fail=0
	cm_conf "$mgr_etc/rxe-a.conf" $cm_dir/a.conf
	# node b logs its CM's work (debug), checked after it stops
	cm_conf "$mgr_etc/rxe-b.conf" $cm_dir/b.conf debug
	mgr_routes 0
	mgr_routes 1
	if mgr_serve_start $cm_dir/b.conf; then
		check "cm: serve + bench --verify over two rxe rails on rdma_cm" \
			mgr_bench $cm_dir/a.conf
		check "cm: drill, r1's cable pulled and restored" \
			mgr_drill $cm_dir/a.conf
		check "cm: every port's QP1 (GSI) still RTS after the pull" \
			cm_gsi_ok
		# its log is complete once it has stopped
		mgr_serve_stop >$cm_dir/serve.out ||
			{ fail=1; tail -30 $cm_dir/serve.out; }
		check "cm: node b's rails on rdma_cm" cm_listening
	else
		fail=1
	fi
	cm_rc=$fail
	fail=$cm_fail_before
	return $cm_rc
}

if [ -n "${TSAN_OPTIONS:-}" ]; then
	# the CM thread meets the owner's calls in the cm contract suite
	echo "guest: cm: manager bench not in the TSan run"
else
	cm_all
fi
