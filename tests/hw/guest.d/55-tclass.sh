# Traffic class per rail, seen on the wire (sourced by guest-run.sh after
# 50-manager.sh, whose rails, configs and check() it uses; must not exit).
#
#   node a (bench)                                   node b (serve)
#   r0 traffic_class 104 (DSCP 26 AF31)  veth0a <==> veth0b  r0 the same
#   r1 traffic_class 186 (DSCP 46 EF, ECN ECT(0)) veth1a <==> veth1b  r1
#
# tcpdump on veth0a and veth1a captures the RoCE v2 packets (UDP 4791) of a
# short bench, both directions (requests and the responder's ACKs and READ
# responses): every one must carry its rail's IP TOS byte, and there must be
# some on each rail.  Then `railyard status --json` of node b and
# `railyard devices -c` of node a show both rails' traffic_class.

tc_dir=/tmp/tclass
tc_ry=$BUILD/src/cli/railyard
mkdir -p $tc_dir

tc_conf() { # tc_conf IN OUT: the rails of IN with their traffic classes
	sed -e 's/^rail r0 {/rail r0 { traffic_class = 104 /' \
	    -e 's/^rail r1 {/rail r1 { traffic_class = 186 sl = 3 /' "$1" >"$2"
}

tc_fail() {
	echo "guest: tclass: FAIL: $*"
	return 1
}

# tc_count FILE TOS: "packets with that TOS / RoCE packets" in a capture
tc_count() {
	all=$(grep -c 'proto UDP' "$1")
	good=$(grep -c "(tos $2[,)]" "$1")
	echo "$good/$all"
}

tc_wire() {
	tc_conf "$SRC/tests/hw/etc/rxe-a.conf" $tc_dir/a.conf
	tc_conf "$SRC/tests/hw/etc/rxe-b.conf" $tc_dir/b.conf
	"$tc_ry" serve -c $tc_dir/b.conf --socket $tc_dir/b.sock \
		--region 4M >$tc_dir/serve.log 2>&1 &
	tc_serve=$!
	wait_sock $tc_dir/b.sock $tc_serve ||
		{ cat $tc_dir/serve.log; tc_fail "serve did not start"; return 1; }
	for n in 0 1; do
		tcpdump -Z root -i veth${n}a -nn -v -l -c 400 udp port 4791 \
			>$tc_dir/cap$n.txt 2>$tc_dir/cap$n.err &
		eval tc_cap$n=\$!
	done
	sleep 1 # tcpdump is listening before the first packet
	"$tc_ry" bench -c $tc_dir/a.conf --peer b --verify --json --duration 2 \
		--size 64K --depth 2 --op read >$tc_dir/bench.json 2>$tc_dir/bench.log
	brc=$?
	"$tc_ry" status --json --socket $tc_dir/b.sock >$tc_dir/status.json
	"$tc_ry" devices -c $tc_dir/a.conf --json >$tc_dir/devices.json
	kill $tc_cap0 $tc_cap1 2>/dev/null
	wait $tc_cap0 $tc_cap1 2>/dev/null
	kill $tc_serve
	wait $tc_serve
	[ $brc = 0 ] || { cat $tc_dir/bench.log; tc_fail "bench exited $brc"; return 1; }
	r0=$(tc_count $tc_dir/cap0.txt 0x68)
	r1=$(tc_count $tc_dir/cap1.txt 0xba)
	echo "guest: tclass: RoCE packets with the rail's TOS: r0 (0x68) $r0, r1 (0xba) $r1"
	echo "guest: tclass: first of r1: $(grep -m1 'proto UDP' $tc_dir/cap1.txt)"
	for c in "$r0" "$r1"; do
		[ "${c#*/}" -gt 10 ] || { cat $tc_dir/cap0.err; tc_fail "too few RoCE packets captured ($c)"; return 1; }
		[ "${c%/*}" = "${c#*/}" ] || tc_fail "RoCE packets without the rail's TOS ($c)" || return 1
	done
	st=$(jq -c '[.rails[] | {name, traffic_class, sl}]' $tc_dir/status.json)
	echo "guest: tclass: status: $st"
	[ "$st" = '[{"name":"r0","traffic_class":104,"sl":0},{"name":"r1","traffic_class":186,"sl":3}]' ] ||
		tc_fail "status does not show the rails' traffic_class and sl" || return 1
	dv=$(jq -c '[.rails[] | {name, found, dscp, ecn, sl}]' $tc_dir/devices.json)
	echo "guest: tclass: devices -c: $dv"
	[ "$dv" = '[{"name":"r0","found":true,"dscp":26,"ecn":0,"sl":0},{"name":"r1","found":true,"dscp":46,"ecn":2,"sl":3}]' ] ||
		tc_fail "devices -c does not show the rails' traffic_class and sl"
}

if [ -n "${TSAN_OPTIONS:-}" ]; then
	# no thread of ours in it: the TSan run spends its time elsewhere
	echo "guest: tclass: not in the TSan run"
elif command -v tcpdump >/dev/null; then
	check "tclass: each rail's traffic_class on its RoCE v2 packets" tc_wire
else
	echo "guest: tclass: SKIP: no tcpdump in the guest image (apt-get install tcpdump on the host)"
fi
