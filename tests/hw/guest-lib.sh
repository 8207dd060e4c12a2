# Sourced by the guests' payloads (guest-run.sh, guest-perftest.sh): the
# rails of guest-run.sh's topology, and the check/report helpers.
# shellcheck shell=sh

# busybox's shell prefers its own applets: use the real iproute2
ip() { /usr/sbin/ip "$@"; }
now() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
fail=0
check() { # check NAME CMD...: run, report, remember a failure
	# local: a guest.d script run by check may call check itself
	local name=$1 t
	shift
	t=$(now)
	if "$@"; then
		echo "guest: PASS $name ($(since "$t") s)"
	else
		echo "guest: FAIL $name ($(since "$t") s)"
		fail=1
	fi
}

rail_up() { # rail_up N [rxe|siw]: devices TYPE_aN, TYPE_bN
	n=$1 a=veth${1}a b=veth${1}b ty=${2:-rxe}
	ip link add $a type veth peer name $b || return 1
	ip addr add 198.18.$n.1/24 dev $a
	ip addr add 198.18.$n.2/24 dev $b
	for d in $a $b all; do
		echo 1 > /proc/sys/net/ipv4/conf/$d/accept_local
		echo 0 > /proc/sys/net/ipv4/conf/$d/rp_filter
	done
	ip link set $a up
	ip link set $b up
	# The local table must not win for traffic between the two ends.
	if ! ip rule show | grep -q '^100:.*lookup local'; then
		ip rule add pref 100 lookup local
		ip rule del pref 0 lookup local
	fi
	ip route add 198.18.$n.2 dev $a src 198.18.$n.1 table $((100 + n))
	ip route add 198.18.$n.1 dev $b src 198.18.$n.2 table $((200 + n))
	ip rule add pref 10 iif lo from 198.18.$n.1 to 198.18.$n.2 lookup $((100 + n))
	ip rule add pref 10 iif lo from 198.18.$n.2 to 198.18.$n.1 lookup $((200 + n))
	rdma link add ${ty}_a$n type $ty netdev $a || return 1
	rdma link add ${ty}_b$n type $ty netdev $b || return 1
}

# wait_gid DEV IPV4: the port ACTIVE and the address's RoCE v2 GID present
# (GIDs appear asynchronously after the address is added)
wait_gid() {
	want=$(echo "$2" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	i=0
	while [ $i -lt 100 ]; do
		if grep -q ACTIVE /sys/class/infiniband/$1/ports/1/state 2>/dev/null &&
		   grep -qx "$want" /sys/class/infiniband/$1/ports/1/gids/* 2>/dev/null; then
			return 0
		fi
		i=$((i + 1))
		sleep 0.1
	done
	echo "guest: $1 has no ACTIVE port with a GID for $2"
	return 1
}

# wait_sock SOCKET PID: until railyard serve (PID) has made its status
# socket, at most 20 s; fails at once if serve exits
wait_sock() {
	i=0
	while [ $i -lt 200 ] && [ ! -S "$1" ]; do
		kill -0 "$2" 2>/dev/null || break
		i=$((i + 1))
		sleep 0.1
	done
	[ -S "$1" ]
}

# siw.ko comes from the host: hw_qemu_rxe.sh builds it (mksiw.sh), in the
# background while the tests before the siw ones run, and hands it over in
# $BUILD/tests/hw/siw, whose 'status' says "ok", "skip WHY" or "fail WHY".
# siw_word: that word, waiting up to 180 s for it
siw_word() {
	i=0
	while [ ! -f "$BUILD/tests/hw/siw/status" ] && [ $i -lt 1800 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	cat "$BUILD/tests/hw/siw/status" 2>/dev/null ||
		echo "fail the host said nothing about siw.ko in 180 s"
}

# siw_load: load it (busybox modprobe skips softdeps: libcrc32c's crc32c
# first); prints why not
siw_load() {
	modprobe crc32c_generic 2>&1 && modprobe libcrc32c 2>&1 &&
		insmod "$BUILD/tests/hw/siw/siw.ko" 2>&1
}
