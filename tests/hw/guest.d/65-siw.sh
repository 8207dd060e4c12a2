# Soft-iWARP (siw) rails (sourced by guest-run.sh after 50-manager.sh,
# whose functions it uses; must not exit).  Debian's kernels lack siw.ko:
# hw_qemu_rxe.sh builds it (mksiw.sh) when linux-source and the guest
# kernel's headers are on the host, while the tests before this one run,
# and hands it over on the build mount; without it this says SKIP.
#
#   siw_a2 -- veth2a 198.18.2.1 <==veth==> 198.18.2.2 veth2b -- siw_b2
#
# iWARP connects only through rdma_cm (iw_cm over TCP): the rails run with
# cm = auto, which picks rdma_cm for an iWARP device.
#   1. siw.ko loads and both ports are ACTIVE;
#   2. the rail contract suite (tests/hw/test_verbs_conformance) on
#      siw_a2 <-> siw_b2: where siw lacks what rxe has (immediate data,
#      RNR) the rail says so (no_imm, no_rnr in rails/rail.h) and the
#      cases assert what it does instead;
#   3. a verbs rail with cm = manual on siw is refused at open, saying why;
#   4. the manager: serve + bench --verify over one siw rail (iw_cm
#      connects it; every byte verified);
#   5. a drill over two siw rails (s3 on veth3 as well) with s3's cable
#      pulled mid-transfer: nothing failed or corrupted, fragments
#      replayed on s2, s3 up again after its link returned and carrying
#      bytes after it.
# See railyard-verbs(7), rails/verbs/railyard-verbs.7, for what holds on
# siw.

siw_dir=/tmp/siw
mkdir -p $siw_dir

siw_active() { # siw_active DEV
	i=0
	while [ $i -lt 100 ]; do
		grep -q ACTIVE /sys/class/infiniband/$1/ports/1/state 2>/dev/null && return 0
		i=$((i + 1))
		sleep 0.1
	done
	echo "guest: siw: $1 has no ACTIVE port"
	return 1
}

siw_suite() {
	RY_HW_DEV_A=siw_a2 RY_HW_DEV_B=siw_b2 RY_HW_IP_A=198.18.2.1 \
		RY_HW_IP_B=198.18.2.2 CK_DEFAULT_TIMEOUT=120 \
		CK_VERBOSITY=${CK_VERBOSITY:-normal} \
		"$BUILD/tests/hw/test_verbs_conformance"
}

siw_conf() { # siw_conf NODE OTHER CM [two]: a node on siw, one rail or two
	n=$1 o=$2
	[ $n = a ] && i=1 || i=2
	[ $o = a ] && j=1 || j=2
	cat <<-CONF
	node = "$n"
	control = "198.18.0.$i:7471"
	rail s2 { provider = verbs  network = "n2"  device = "siw_${n}2"  address = "198.18.2.$i"  cm = $3 }
	failover { heartbeat_ms = 50  timeout_ms = 500  ack_timeout_ms = 100  op_timeout_ms = 10000 }
	peer $o { address = "198.18.0.$j:7471" }
	CONF
	[ -z "${4:-}" ] ||
		echo "rail s3 { provider = verbs  network = \"n3\"  device = \"siw_${n}3\"  address = \"198.18.3.$i\"  cm = $3 }"
}

siw_manual_refused() {
	siw_conf a b manual >$siw_dir/manual.conf
	out=$("$mgr_ry" bench -c $siw_dir/manual.conf --peer b --duration 1 2>&1)
	echo "$out" | grep -q "iWARP device: its QPs connect through rdma_cm only" ||
		{ echo "$out"; mgr_fail "cm = manual on siw not refused with its reason"; }
}

siw_bench() {
	siw_conf a b auto >$siw_dir/a.conf
	siw_conf b a auto >$siw_dir/b.conf
	mgr_serve_start $siw_dir/b.conf || return 1
	mgr_out=$mgr_dir/bench.json
	"$mgr_ry" bench -c $siw_dir/a.conf --peer b --verify --json \
		--duration 4 --size 256K --depth 4 >$mgr_out 2>$mgr_dir/bench.log
	rc=$?
	mgr_serve_stop >$siw_dir/serve.out || rc=1
	cat $mgr_dir/bench.log
	mgr_json_ok || mgr_fail "bench printed no JSON" || return 1
	echo "guest: siw: bench: $(mgr_jq '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors, \(.gbit_per_s) Gbit/s"')"
	[ "$(mgr_jq .ops_failed)" = 0 ] && [ "$(mgr_jq .verify_errors)" = 0 ] &&
		[ "$(mgr_jq .ops_ok)" -gt 0 ] || mgr_fail "bench over siw: $(mgr_jq .first_error)" || return 1
	[ $rc = 0 ] || { cat $siw_dir/serve.out; mgr_fail "bench or serve exited badly"; }
}

# One drill over s2 and s3 with s3's cable (veth3a) pulled for 3 s.
siw_drill() {
	siw_conf a b auto two >$siw_dir/a2.conf
	siw_conf b a auto two >$siw_dir/b2.conf
	mgr_serve_start $siw_dir/b2.conf || return 1
	mgr_out=$siw_dir/drill.json
	"$mgr_ry" drill -c $siw_dir/a2.conf --peer b --duration 14 \
		--size 256K --depth 8 --json >$mgr_out 2>$siw_dir/drill.log &
	pid=$!
	mgr_drill_started $siw_dir/drill.log $pid
	sleep 3
	echo "guest: siw: drill: veth3a down at $(now) s"
	ip link set veth3a down
	sleep 3
	echo "guest: siw: drill: veth3a up at $(now) s"
	ip link set veth3a up
	ip route replace 198.18.3.2 dev veth3a src 198.18.3.1 table 103
	ip route replace 198.18.3.1 dev veth3b src 198.18.3.2 table 203
	wait $pid
	rc=$?
	mgr_serve_stop >$siw_dir/serve.out || rc=1
	cat $siw_dir/drill.log
	mgr_json_ok || mgr_fail "drill printed no JSON" || return 1
	echo "guest: siw: drill: $(mgr_jq '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors; rails: \([.rails[] | "\(.name) \(.state) \(.bytes) B replayed \(.replayed) reconnects \(.reconnects)"] | join(", "))"')"
	echo "guest: siw: drill events: $(mgr_jq '[.events[] | "\(.t) \(.rail) \(.event)"] | join("; ")')"
	[ "$(mgr_jq .ops_failed)" = 0 ] || mgr_fail "$(mgr_jq .ops_failed) operations failed: $(mgr_jq .first_error)" || return 1
	[ "$(mgr_jq .verify_errors)" = 0 ] || mgr_fail "$(mgr_jq .verify_errors) verify errors" || return 1
	down=$(mgr_jq '[.events[] | select(.rail == "s3" and .event == "down") | .t] | min')
	[ "$down" != null ] || mgr_fail "no down event for s3" || return 1
	up=$(mgr_jq "[.events[] | select(.rail == \"s3\" and .event == \"up\" and .t > $down) | .t] | min")
	[ "$up" != null ] || mgr_fail "s3 did not come back up after its link returned" || return 1
	moved=$(mgr_jq "[.samples[] | select(.t > $up + 1) | .rails.s3] | add // 0")
	awk -v m="$moved" 'BEGIN { exit !(m > 0) }' ||
		mgr_fail "s3 is up since $up s but carried nothing after it" || return 1
	[ "$(mgr_jq '[.rails[].replayed] | add')" -gt 0 ] ||
		mgr_fail "nothing replayed: s3 idle when pulled?" || return 1
	[ $rc = 0 ] || { cat $siw_dir/serve.out; mgr_fail "drill or serve exited badly"; }
}

if [ -n "${TSAN_OPTIONS:-}" ]; then
	# the CM thread is exercised on rxe there (60-cm.sh, the cm suite)
	echo "guest: siw: not in the TSan run"
elif siw_st=$(siw_word) && [ "${siw_st%% *}" = skip ]; then
	echo "guest: siw: SKIP: no siw.ko: ${siw_st#skip } (on the host: apt-get install linux-source-6.12 linux-headers-$(uname -r), or run as root with RY_HW_SIW=1 RY_HW_INSTALL=1)"
elif [ "$siw_st" != ok ]; then
	echo "guest: siw: ${siw_st#fail }"
	check "siw: siw.ko built on the host" false
elif ! siw_err=$(siw_load); then
	echo "guest: siw: loading siw.ko: $siw_err"
	dmesg | tail -5
	check "siw: siw.ko loads" false
else
	check "siw: rail up (siw_a2, siw_b2 on veth2)" rail_up 2 siw
	check "siw: siw_a2 ACTIVE" siw_active siw_a2
	check "siw: siw_b2 ACTIVE" siw_active siw_b2
	check "siw: rail contract suite on siw (tests/hw/test_verbs_conformance)" siw_suite
	check "siw: cm = manual refused on an iWARP device" siw_manual_refused
	check "siw: manager serve + bench --verify over a siw rail" siw_bench
	check "siw: rail up (siw_a3, siw_b3 on veth3)" rail_up 3 siw
	check "siw: siw_a3 ACTIVE" siw_active siw_a3
	check "siw: siw_b3 ACTIVE" siw_active siw_b3
	check "siw: drill over two siw rails, s3's cable pulled and restored" siw_drill
fi
