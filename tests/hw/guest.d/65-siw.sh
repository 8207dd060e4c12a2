# Soft-iWARP (siw) rails (sourced by guest-run.sh after 50-manager.sh,
# whose functions it uses; must not exit).  Debian's kernels lack siw.ko:
# hw_qemu_rxe.sh builds it (mksiw.sh) when linux-source and the guest
# kernel's headers are on the host; without it this says SKIP.
#
#   siw_a2 -- veth2a 198.18.2.1 <==veth==> 198.18.2.2 veth2b -- siw_b2
#
# iWARP connects only through rdma_cm (iw_cm over TCP): the rails run with
# cm = auto, which picks rdma_cm for an iWARP device.
#   1. siw.ko loads and both ports are ACTIVE;
#   2. a verbs rail with cm = manual on siw is refused at open, saying why;
#   3. the manager: serve + bench --verify over one siw rail (iw_cm
#      connects it; every byte verified).
# Not here: the rail contract suite.  It fails on siw today (33 of 47
# cases, `siw_suite` runs it by hand): siw completes a WRITE posted after a
# READ first, has no RNR, reports remote errors with TERMINATE and other
# statuses, refuses some registrations and CQ resizing; see
# railyard-verbs(7), rails/verbs/railyard-verbs.7.

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

siw_conf() { # siw_conf NODE OTHER CM: a one-rail node on siw
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

if [ -n "${TSAN_OPTIONS:-}" ]; then
	# the CM thread is exercised on rxe there (60-cm.sh, the cm suite)
	echo "guest: siw: not in the TSan run"
elif [ ! -f /lib/modules/$(uname -r)/extra/siw.ko ]; then
	echo "guest: siw: SKIP: no siw.ko in the guest image (on the host: apt-get install linux-source-6.12 linux-headers-$(uname -r), or run as root with RY_HW_SIW=1 RY_HW_INSTALL=1)"
# busybox modprobe skips softdeps: libcrc32c's crc32c comes first
elif ! siw_err=$(modprobe crc32c_generic 2>&1 && modprobe siw 2>&1); then
	echo "guest: siw: modprobe siw: $siw_err"
	dmesg | tail -5
	check "siw: siw.ko loads" false
else
	check "siw: rail up (siw_a2, siw_b2 on veth2)" rail_up 2 siw
	check "siw: siw_a2 ACTIVE" siw_active siw_a2
	check "siw: siw_b2 ACTIVE" siw_active siw_b2
	check "siw: cm = manual refused on an iWARP device" siw_manual_refused
	check "siw: manager serve + bench --verify over a siw rail" siw_bench
fi
