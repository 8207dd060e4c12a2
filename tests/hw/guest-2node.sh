# The payload of hw_qemu_2node.sh's guests (run by guest-init): one node
# each, ry_role=a (railyard drill) or b (railyard serve), with three virtio
# NICs found by MAC (52:54:00:00:0H:0I, H 1 for a, 2 for b; I 0 mg, 1 r0,
# 2 r1) and named mg, r0, r1; rxe0 on r0, rxe1 on r1.  The two guests
# meet in ry_work (a directory of the host's build tree, over 9p):
# b-ready (serve is up), delete (the host: delete rxe1 now), a-done.
ip() { /usr/sbin/ip "$@"; }
now() { cut -d' ' -f1 /proc/uptime; }
for a in $(cat /proc/cmdline); do
	case $a in
	ry_role=*) ROLE=${a#ry_role=} ;;
	ry_work=*) W=${a#ry_work=} ;;
	ry_slack=*) SLACK=${a#ry_slack=} ;;
	esac
done
H=1
[ "$ROLE" = b ] && H=2
ry=$BUILD/src/cli/railyard
say() { echo "guest-$ROLE: $*"; }
rxe_diag() { # rxe's own view: counters and any kernel warning
	for d in rxe0 rxe1; do
		c=/sys/class/infiniband/$d/ports/1/hw_counters
		[ -d $c ] || continue
		say "$d counters: $(cd $c && grep -H . * 2>/dev/null | grep -v ':0$' | tr '\n' ' ')"
	done
	dmesg | grep -A14 -- "cut here" | sed "s/^/guest-$ROLE: dmesg: /" | head -60
}
die() { say "FAIL: $*"; exit 1; }

# --- the NICs, by MAC ---
for d in /sys/class/net/*; do
	mac=$(cat "$d/address")
	case $mac in
	52:54:00:00:0$H:00) n=mg ;;
	52:54:00:00:0$H:01) n=r0 ;;
	52:54:00:00:0$H:02) n=r1 ;;
	*) continue ;;
	esac
	ip link set "${d##*/}" name $n
done
i=0
for n in mg r0 r1; do
	ip addr add 198.18.$i.$H/24 dev $n || die "no NIC $n"
	ip link set $n up
	i=$((i + 1))
done
rdma link add rxe0 type rxe netdev r0 || die "rdma link add rxe0"
rdma link add rxe1 type rxe netdev r1 || die "rdma link add rxe1"

P=$((3 - H))
conf=/tmp/$ROLE.conf
cat >$conf <<EOF
node = "$ROLE"
control = "198.18.0.$H:7470"
rail r0 { provider = verbs  network = "n0"  device = "rxe0"  address = "198.18.1.$H" }
rail r1 { provider = verbs  network = "n1"  device = "rxe1"  address = "198.18.2.$H" }
failover {
	heartbeat_ms = 50
	timeout_ms = 500
	ack_timeout_ms = 100
	op_timeout_ms = 10000
}
peer $([ "$ROLE" = a ] && echo b || echo a) {
	address = "198.18.0.$P:7470"
}
EOF

if [ "$ROLE" = b ]; then
	# the host pulled r1's cable before this kernel ran: no carrier
	i=0
	while [ "$(cat /sys/class/net/r1/carrier)" != 0 ] && [ $i -lt 20 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	[ "$(cat /sys/class/net/r1/carrier)" = 0 ] ||
		die "r1 has carrier at boot: its cable should be out"
	"$ry" serve -c $conf --socket /tmp/b.sock --region 16M \
		>/tmp/serve.log 2>&1 &
	spid=$!
	i=0
	while [ $i -lt 300 ] && [ ! -S /tmp/b.sock ]; do i=$((i + 1)); sleep 0.1; done
	[ -S /tmp/b.sock ] || { cat /tmp/serve.log; die "serve did not start"; }
	"$ry" status --socket /tmp/b.sock --json >/tmp/st.json
	say "started: $(jq -c '[.rails[] | {name, up, reason}]' /tmp/st.json)"
	: >"$W/b-ready"
	i=0
	while [ ! -e "$W/delete" ] && [ ! -e "$W/a-done" ] && [ $i -lt 1500 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	if [ -e "$W/delete" ]; then
		say "rdma link delete rxe1 at $(now) s"
		rdma link delete rxe1 &
		i=0
		while [ -e /sys/class/infiniband/rxe1 ] && [ $i -lt 100 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		[ -e /sys/class/infiniband/rxe1 ] && stuck=1
		say "rxe1 gone after $((i / 10)).$((i % 10)) s"
		sleep 2
		rdma link add rxe1 type rxe netdev r1
		say "rdma link add rxe1 at $(now) s"
	fi
	while [ ! -e "$W/a-done" ] && [ $i -lt 1500 ]; do i=$((i + 1)); sleep 0.1; done
	rxe_diag
	kill $spid
	wait $spid
	src=$?
	sed 's/^/guest-b: serve: /' /tmp/serve.log | grep -v "target for\|hello" | tail -40
	[ -z "${stuck:-}" ] || die "serve did not let go of rxe1 when it was deleted"
	[ $src = 0 ] || die "serve exited $src"
	grep -q "rail r1: absent" /tmp/serve.log || die "serve did not say r1 is absent at start"
	grep -q "rail r1: gone" /tmp/serve.log || die "serve did not say r1 is gone"
	[ "$(grep -c "rail r1: back" /tmp/serve.log)" -ge 2 ] || die "serve did not say r1 is back twice"
	say "PASS"
	exit 0
fi

# --- a: the drill ---
i=0
while [ ! -e "$W/b-ready" ] && [ $i -lt 1200 ]; do i=$((i + 1)); sleep 0.1; done
[ -e "$W/b-ready" ] || die "b never got ready"
( "$ry" drill -c $conf --peer b --duration 30 --size 256K --depth 4 \
	--json >/tmp/drill.json; echo $? >/tmp/drill.rc ) 2>&1 | tee /tmp/drill.log
: >"$W/a-done"
rxe_diag
j() { jq -r "$1" /tmp/drill.json; }
[ -s /tmp/drill.json ] && jq -e 'type == "object"' /tmp/drill.json >/dev/null ||
	die "drill printed no JSON"
say "drill: $(j '"\(.ops_ok) ops ok, \(.ops_failed) failed, \(.verify_errors) verify errors"')"
say "events: $(j '[.events[] | "\(.t) \(.rail) \(.event)\(if .detect_ms then " detect \(.detect_ms) ms" else "" end)\(if .resume_ms then " resume \(.resume_ms) ms" else "" end)"] | join("; ")')"
say "r1 MB/s: $(j '[.samples[] | "\(.t):\(.rails.r1)"] | join(" ")')"
[ "$(j .ops_failed)" = 0 ] || die "$(j .ops_failed) operations failed: $(j .first_error)"
[ "$(j .verify_errors)" = 0 ] || die "$(j .verify_errors) verify errors"
[ "$(j .ops_ok)" -gt 0 ] || die "no operation completed"
# r1: connected once b plugged it, then back after each of the four
# losses (a's pull, b's pull, both out, rxe1 deleted on b)
n=$(j '[.events[] | select(.rail == "r1" and (.event == "up" or .event == "connect"))] | length')
[ "$n" -ge 5 ] || die "r1 came up $n times, want 5 (plug, and back after 4 losses)"
n=$(j '[.events[] | select(.rail == "r0" and .event == "up")] | length')
[ "$n" -ge 1 ] || die "r0 never came back after both cables were out"
last=$(j '[.events[] | select(.rail == "r1" and .event == "up") | .t] | max')
moved=$(j "[.samples[] | select(.t > $last + 1) | .rails.r1] | add // 0")
awk -v m="$moved" 'BEGIN { exit !(m > 0) }' || die "r1 up since $last s but carried nothing after"
# each cable plugged back (the host's times, in the drill's clock): its
# rail's connection up within 1 s, plus TCG's slack
while read -r t r; do
	up=$(j "[.events[] | select(.rail == \"$r\" and (.event == \"up\" or .event == \"connect\") and .t >= $t - 0.2) | .t] | min")
	[ "$up" != null ] || die "$r: no connection up after its cable came back at $t s"
	ms=$(awk -v u="$up" -v t="$t" 'BEGIN { printf "%d", (u - t) * 1000 }')
	say "$r: cable back at $t s, up $ms ms later"
	[ "$ms" -le $((1000 + ${SLACK:-1500})) ] || die "$r up $ms ms after its cable came back"
done <"$W/returns"
[ "$(cat /tmp/drill.rc)" = 0 ] || die "drill exited $(cat /tmp/drill.rc)"
say "PASS"
exit 0
