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
#      REQs), and no REQ from a QPN the control channel did not name.
# Not here: a cable pull on rdma_cm.  After veth1a goes down and up, the
# serve and bench that were running send no CM MAD on that rail any more
# (no packet on the veth, every REQ times out), while manual connects carry
# on.  A process started after the flap does connect through rdma_cm there
# (ib_write_bw -R); with rping, a listener made before the flap no longer
# answers after it (REQs unanswered one way, rejected "invalid service ID"
# the other) and one made after it does.  The rail does not listen again
# when its link returns (see railyard-verbs(7), rails/verbs/railyard-verbs.7).

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
