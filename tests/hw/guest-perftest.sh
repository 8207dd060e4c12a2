#!/bin/sh
# The guest payload of tests/bench/perftest.sh (not a test: it measures).
# On guest-run.sh's rails (rxe_a0/rxe_b0 on veth0, rxe_a1/rxe_b1 on veth1),
# RUNS times, each row's railyard case and then its perftest case, one
# after the other:
#
#   write1   railyard bench --size 1M --depth 8, rail r0      ib_write_bw -s 1M -t 8 -n 50
#   read1    the same with --op read                          ib_read_bw -s 1M -t 8 -n 50
#   write2   railyard bench over r0 and r1                    ib_write_bw on both at once
#   lat1     railyard bench --size 4K --depth 1: p50 us       ib_write_lat -s 4096: 2 x
#            (a write and its acknowledgement)                t_typical (it prints half
#                                                             a round trip)
#   siw_write1, siw_read1, siw_lat1
#            the one-rail rows on soft-iWARP (siw_a2/siw_b2   the same tools with -R
#            on veth2), the rail with cm = auto (rdma_cm)     (rdma_cm, as iWARP needs)
#            when the image has siw.ko (RY_HW_SIW=1)
#
# ib_write_lat polls memory on both ends; on the guest's two emulated CPUs
# that starves rxe's own kernel work and its figure swings by 2x from run
# to run.  ib_send_lat -e (completion events, as railyard waits) would be
# the fairer peer, but it hangs on rxe in this guest (its client never
# finished in 100 s).
#
# Prints one line per case, "perftest: ROW RUN railyard X perftest Y", for
# the host to gather; bandwidth in Gbit/s, latency in us.  Emulated devices
# make the absolute figures meaningless: the ratio is what the manager
# costs on top of the same verbs.
# env (kernel command line ry_runs=N): RUNS, 3 by default.

. "$SRC/tests/hw/guest-lib.sh"

RUNS=${RY_RUNS:-3}
T=4
ry=$BUILD/src/cli/railyard
etc=$SRC/tests/hw/etc
dir=/tmp/perf
mkdir -p $dir

gid_index() { # gid_index DEV IPV4: the index of its IPv4-mapped GID
	want=$(echo "$2" | awk -F. '{ printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4 }')
	for g in /sys/class/infiniband/$1/ports/1/gids/*; do
		[ "$(cat "$g")" = "$want" ] && { basename "$g"; return 0; }
	done
	return 1
}

# one_rail IN OUT: the config without rail r1
one_rail() { grep -v '^rail r1 ' "$1" >"$2"; }

serve_pid=
serve_start() { # serve_start CONFIG
	"$ry" serve -c "$1" --socket $dir/b.sock --region 64M >$dir/serve.log 2>&1 &
	serve_pid=$!
	wait_sock $dir/b.sock $serve_pid || { cat $dir/serve.log; return 1; }
}
serve_stop() {
	kill $serve_pid
	wait $serve_pid
	serve_pid=
	rm -f $dir/b.sock
}
# ry_bench CONFIG_A CONFIG_B JQ ARGS...: a bench against a fresh serve;
# prints JQ of its JSON (0 when it printed none)
ry_bench() {
	ca=$1 cb=$2 q=$3
	shift 3
	serve_start "$cb" || { echo 0; return; }
	"$ry" bench -c "$ca" --peer b --duration $T --json "$@" \
		>$dir/bench.json 2>$dir/bench.log
	serve_stop
	jq -r "$q // 0" $dir/bench.json 2>/dev/null || echo 0
}
# pt TOOL N ARGS...: TOOL between rxe_bN (server) and rxe_aN; its output.
# PT_DEV=siw: between siw_bN and siw_aN through rdma_cm (-R; iWARP has
# no GID to give it).
# A server whose client never came (it started too early, and perftest's
# client does not retry) would wait for ever: both have a time limit, and
# the client is started again until the server has gone.
pt() {
	tool=$1 n=$2 dv=${PT_DEV:-rxe}
	shift 2
	if [ "$dv" = siw ]; then
		xs=-R xc=-R
	else
		xs="-x $(gid_index rxe_b$n 198.18.$n.2)"
		xc="-x $(gid_index rxe_a$n 198.18.$n.1)"
	fi
	# shellcheck disable=SC2086 # xs, xc: one option and its value
	timeout 120 "$tool" -d ${dv}_b$n -i 1 $xs \
		-F -p $((18515 + n)) "$@" >$dir/pt_srv.$n 2>&1 &
	srv=$!
	tries=0
	while [ $tries -lt 5 ] && kill -0 $srv 2>/dev/null; do
		sleep 2
		# shellcheck disable=SC2086
		timeout 100 "$tool" -d ${dv}_a$n -i 1 $xc \
			-F -p $((18515 + n)) "$@" 198.18.$n.2 >$dir/pt_cli.$n 2>&1 && break
		tries=$((tries + 1))
	done
	wait $srv
	sed "s/^/perftest-raw: $tool: /" $dir/pt_cli.$n >&2
	cat $dir/pt_cli.$n
}
# the first number line's field F (perftest prints one result line under
# its header)
pt_field() { awk -v f="$1" '$1 ~ /^[0-9]+$/ && NF >= f { print $f; exit }'; }

# bw TOOL N: Gbit/s of 50 transfers of 1 MiB, 8 outstanding (about T s
# here).  Not -D: in duration mode perftest printed an average of 0 for
# about one run in four on rxe here.
bw() {
	pt "$1" "$2" -s 1048576 -t 8 -n 50 --report_gbits | pt_field 4
}

for r in 0 1; do
	rail_up $r || exit 1
	wait_gid rxe_a$r 198.18.$r.1 || exit 1
	wait_gid rxe_b$r 198.18.$r.2 || exit 1
done
for b in ib_write_bw ib_read_bw ib_write_lat; do
	command -v $b >/dev/null ||
		{ echo "guest: $b is not in the image (install perftest on the host)"; exit 77; }
done
one_rail $etc/rxe-a.conf $dir/a1.conf
one_rail $etc/rxe-b.conf $dir/b1.conf

# soft-iWARP on veth2, when the host built siw.ko (as guest.d/65-siw.sh)
siw=0
siw_conf() { # siw_conf NODE OTHER: one verbs rail on siw, rdma_cm
	i=1 j=2
	[ "$1" = b ] && i=2 j=1
	cat <<-CONF
	node = "$1"
	control = "198.18.0.$i:7470"
	rail s2 { provider = verbs  network = "n2"  device = "siw_${1}2"  address = "198.18.2.$i"  cm = auto }
	failover { heartbeat_ms = 50  timeout_ms = 500  ack_timeout_ms = 100  op_timeout_ms = 10000 }
	peer $2 { address = "198.18.0.$j:7470" }
	CONF
}
if [ "$(siw_word)" = ok ] && siw_load >/dev/null && rail_up 2 siw; then
	i=0
	while [ $i -lt 100 ] &&
		! grep -q ACTIVE /sys/class/infiniband/siw_b2/ports/1/state 2>/dev/null; do
		i=$((i + 1))
		sleep 0.1
	done
	siw_conf a b >$dir/siw-a.conf
	siw_conf b a >$dir/siw-b.conf
	siw=1
else
	echo "guest: perftest: no siw ($(siw_word); RY_HW_SIW=1 builds it); no siw rows"
fi

run=1
while [ $run -le "$RUNS" ]; do
	echo "perftest: write1 $run railyard $(ry_bench $dir/a1.conf $dir/b1.conf .gbit_per_s \
		--size 1M --depth 8) perftest $(bw ib_write_bw 0)"
	echo "perftest: read1 $run railyard $(ry_bench $dir/a1.conf $dir/b1.conf .gbit_per_s \
		--op read --size 1M --depth 8) perftest $(bw ib_read_bw 0)"
	y=$(ry_bench $etc/rxe-a.conf $etc/rxe-b.conf .gbit_per_s --size 1M --depth 8)
	bw ib_write_bw 1 >$dir/bw1 &
	b1=$!
	p0=$(bw ib_write_bw 0)
	wait $b1
	p1=$(cat $dir/bw1)
	echo "perftest: write2 $run railyard $y perftest $(awk -v a="$p0" -v b="$p1" \
		'BEGIN { print a + b }')"
	y=$(ry_bench $dir/a1.conf $dir/b1.conf .latency_us.p50 --size 4K --depth 1)
	# -n, not -D: in duration mode it prints no median
	p=$(pt ib_write_lat 0 -s 4096 -n 5000 | pt_field 5)
	echo "perftest: lat1 $run railyard $y perftest $(awk -v t="$p" \
		'BEGIN { print 2 * t }')"
	if [ $siw = 1 ]; then
		y=$(ry_bench $dir/siw-a.conf $dir/siw-b.conf .gbit_per_s \
			--size 1M --depth 8)
		echo "perftest: siw_write1 $run railyard $y perftest $(PT_DEV=siw bw ib_write_bw 2)"
		y=$(ry_bench $dir/siw-a.conf $dir/siw-b.conf .gbit_per_s \
			--op read --size 1M --depth 8)
		echo "perftest: siw_read1 $run railyard $y perftest $(PT_DEV=siw bw ib_read_bw 2)"
		y=$(ry_bench $dir/siw-a.conf $dir/siw-b.conf .latency_us.p50 \
			--size 4K --depth 1)
		p=$(PT_DEV=siw pt ib_write_lat 2 -s 4096 -n 5000 | pt_field 5)
		echo "perftest: siw_lat1 $run railyard $y perftest $(awk -v t="$p" \
			'BEGIN { print 2 * t }')"
	fi
	run=$((run + 1))
done
exit 0
