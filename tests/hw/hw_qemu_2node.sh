#!/bin/bash
# hw_qemu_2node: two nodes, two kernels, real unplugs.
#
#   guest a (QEMU/TCG)                          guest b (QEMU/TCG)
#   railyard drill                              railyard serve
#   eth mg 198.18.0.1 ==dgram 127.0.0.1==  eth mg 198.18.0.2   control
#   rxe0 - eth r0 198.18.1.1 ==dgram==  eth r0 198.18.1.2 - rxe0  rail r0
#   rxe1 - eth r1 198.18.2.1 ==dgram==  eth r1 198.18.2.2 - rxe1  rail r1
#
# Each guest is a node of its own (kernel, RDMA stack, rxe devices on
# virtio NICs); each pair of NICs is joined by a QEMU dgram backend on
# 127.0.0.1.  A cable is pulled the way the NIC sees it: QEMU's monitor
# `set_link NIC off`, then `on`.  One drill (a) against serve (b), while
# this script, timed from a's "drill to" line:
#   before boot  b's r1 cable out (b is started paused, -S, and runs only
#                once the monitor has pulled it): serve starts without r1
#   t+1 s        b's r1 plugged: r1 opens, connects, carries bytes
#   t+4..6 s     a's r1 cable out, then in (client-side pull)
#   t+9..11 s    b's r1 cable out, then in (server-side pull)
#   t+14..16 s   both rails' cables out on a (operations wait), then in
#   t+20 s       b deletes rxe1 (`rdma link delete`: the HCA goes away under
#                serve) and adds it again 2 s later (guest-2node.sh)
# guest-2node.sh asserts on the drill's JSON: 0 failed operations, 0
# verify errors, r1 up again after each return with bytes after the
# last, each cable's rail up within 1 s (+ RY_HW_SLACK_MS, default 1500
# for TCG) of its plug, detect/resume times per event; the serve log:
# absent, back, gone.
#
# usage: hw_qemu_2node.sh SOURCE_DIR BUILD_DIR
# env:   as hw_qemu_rxe.sh (which builds the shared guest image);
#        RY_HW_TIMEOUT (s, default 240)
# exit:  guest a's status (b's failure is a's too); 77 when QEMU or a
#        kernel cannot be had here.
set -uo pipefail
SRC=$(readlink -f "$1") BUILD=$(readlink -f "$2")
HERE=$SRC/tests/hw
CACHE=${RY_HW_CACHE:-$BUILD/tests/hw/guest}
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# the image (and the tools, the kernel): hw_qemu_rxe.sh's, shared
RY_HW_PREPARE_ONLY=1 bash "$HERE/hw_qemu_rxe.sh" "$SRC" "$BUILD"
rc=$?
[ $rc = 0 ] || exit $rc

W=$BUILD/tests/hw/2node
rm -rf "$W"
mkdir -p "$W"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT

# free UDP/TCP ports on 127.0.0.1, from this PID
base=$((20000 + ($$ % 2000) * 10))
# netdev NAME PORT_HERE PORT_THERE
netdev() {
	echo "-netdev dgram,id=$1,local.type=inet,local.host=127.0.0.1,local.port=$2,remote.type=inet,remote.host=127.0.0.1,remote.port=$3"
}
mport() { if [ "$1" = a ]; then echo $((base + 6)); else echo $((base + 7)); fi; }
# boot ROLE [QEMU_OPTION...]: ports mg r0 r1 are base+0..2 for a,
# base+3..5 for b
boot() {
	local role=$1 me there mac i n args
	shift
	if [ "$role" = a ]; then me=$base there=$((base + 3)); else me=$((base + 3)) there=$base; fi
	args=(-accel tcg -cpu max -m "${RY_HW_MEM:-768}" -smp 1
	      -nographic -no-reboot -serial stdio
	      -monitor "tcp:127.0.0.1:$(mport "$role"),server,nowait"
	      -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initramfs.cpio.gz"
	      -append "console=ttyS0 quiet loglevel=4 panic=-1 ry_src=$SRC ry_build=$BUILD ry_run=$HERE/guest-2node.sh ry_role=$role ry_work=$W ry_slack=${RY_HW_SLACK_MS:-1500}"
	      -device isa-debug-exit,iobase=0xf4,iosize=4
	      -virtfs "local,path=$SRC,mount_tag=src,security_model=none,readonly=on,id=src"
	      -virtfs "local,path=$BUILD,mount_tag=build,security_model=none,id=build"
	      "$@")
	i=0
	for n in mg r0 r1; do
		mac=52:54:00:00:0$([ "$role" = a ] && echo 1 || echo 2):0$i
		# shellcheck disable=SC2207 # one word per option
		args+=($(netdev "$n" $((me + i)) $((there + i)))
		       -device "virtio-net-pci,netdev=$n,id=$n,mac=$mac,romfile=")
		i=$((i + 1))
	done
	timeout "${RY_HW_TIMEOUT:-240}" qemu-system-x86_64 "${args[@]}" \
		</dev/null >"$W/$role.log" 2>&1 &
	pids+=($!)
	eval "pid_$role=$!"
}
# monitor ROLE COMMAND: one command on the guest's QEMU monitor; QEMU
# on a loaded machine has taken over 3 s to listen, so wait up to 30, but
# not for a QEMU that has exited (its guest's kernel panicked: seen)
monitor() {
	local port _ pid
	port=$(mport "$1")
	eval "pid=\$pid_$1"
	for _ in $(seq 150); do
		kill -0 "$pid" 2>/dev/null || break
		if { exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
			printf '%s\n' "$2" >&3
			sent=$(date +%s.%N)
			sleep 0.2
			exec 3>&-
			echo "HOST: $(elapsed) s: $1: $2"
			return 0
		fi
		sleep 0.2
	done
	echo "HOST: no monitor for $1"
	return 1
}

# b's r1 cable is out before b's kernel sees its NIC: a set_link that
# lands while the guest's virtio driver probes can leave the guest with
# carrier and QEMU dropping every frame
boot b -S
if ! monitor b "set_link r1 off" || ! monitor b cont; then
	echo "FAIL: could not pull b's r1 cable before b booted"
	exit 1
fi
boot a
wait_line() { # wait_line ROLE PATTERN SECONDS
	local i=0
	while [ $i -lt $(($3 * 10)) ]; do
		grep -q "$2" "$W/$1.log" 2>/dev/null && return 0
		kill -0 "$pid_a" 2>/dev/null || return 1
		i=$((i + 1))
		sleep 0.1
	done
	return 1
}
if wait_line a "^drill to" 150; then
	t=$(date +%s.%N)
	at() { # at SECONDS: sleep until t + SECONDS
		local d
		d=$(awk -v t="$t" -v s="$1" -v n="$(date +%s.%N)" 'BEGIN { d = t + s - n; print (d > 0 ? d : 0) }')
		sleep "$d"
	}
	# back RAIL: when the last cable command went, in the drill's time
	# (its start is when a printed "drill to"), for guest a's check
	back() { awk -v t="$t" -v n="$sent" -v r="$1" \
		'BEGIN { printf "%.3f %s\n", n - t, r }' >>"$W/returns"; }
	at 1; monitor b "set_link r1 on"; back r1
	at 4; monitor a "set_link r1 off"
	at 6; monitor a "set_link r1 on"; back r1
	at 9; monitor b "set_link r1 off"
	at 11; monitor b "set_link r1 on"; back r1
	at 14; monitor a "set_link r0 off"; monitor a "set_link r1 off"
	at 16; monitor a "set_link r0 on"; back r0
	monitor a "set_link r1 on"; back r1
	at 20; echo "HOST: $(elapsed) s: b: rdma link delete rxe1"; : >"$W/delete"
else
	echo "HOST: a's drill never started"
fi
wait "$pid_a"
qa=$?
wait "$pid_b"
qb=$?
pids=()
sed 's/^/b: /' "$W/b.log" | tail -60
sed 's/^/a: /' "$W/a.log" | tail -80
echo "HOST: guests exited (a $qa, b $qb) $(elapsed) s in all"
# A guest whose kernel died (seen: a double fault in the slab allocator
# under rxe's requester, under TCG, now and then) gave no result of
# ours: run the whole test once more, and say so.  A guest that reported
# a failure is never run again.
if ! { [ $((qa & 1)) = 1 ] && [ $((qb & 1)) = 1 ]; } &&
	grep -q "Kernel panic - not syncing" "$W/a.log" "$W/b.log" &&
	[ -z "${RY_HW_2NODE_AGAIN:-}" ]; then
	echo "HOST: a guest's kernel panicked (not railyard's code; logs kept in $W.panic): running the test again once"
	rm -rf "$W.panic"
	cp -r "$W" "$W.panic"
	RY_HW_2NODE_AGAIN=1 exec bash "$0" "$SRC" "$BUILD"
fi
[ "$qa" = 124 ] || [ "$qb" = 124 ] && { echo "FAIL: a guest timed out"; exit 1; }
if [ $((qa & 1)) = 1 ] && [ $((qb & 1)) = 1 ]; then
	ra=$((qa >> 1)) rb=$((qb >> 1))
	[ $rb = 0 ] || { echo "FAIL: node b: $rb"; exit 1; }
	exit $ra
fi
echo "FAIL: a guest ended without a result"
exit 1
