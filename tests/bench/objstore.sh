#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The reference object server against `railyard bench` on the same soft
# rails over loopback (issue 14): each row runs the object store case and
# the bench case back to back, RUNS times, and prints min/median/max of
# each and of their ratio.  The two move the same bytes with the same
# operation from the same side: a PUT is the server READing the client's
# buffer, like `bench --op read`; a GET is the server WRITing into it, like
# `bench --op write`; the object store adds the request and reply
# messages, its CRC32C on both ends, the chunk lists and the thread
# hand-offs.
#
#   row         railyard-obj bench                 railyard bench
#   put         --op put --threads PAR             --op read --depth PAR
#   get         --op get --threads PAR             --op write --depth PAR
#   get_verify  --op get --threads PAR --verify    --op write --depth PAR
#
# usage: objstore.sh [BUILD_DIR]      (default build/gcc)
#   env: RUNS=3, T=5 (seconds per case), SIZE=1M, PAR=4, RAILS=2
# Not a test: prints numbers, asserts nothing.  Loopback only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build/gcc}
ry=$build/src/cli/railyard
objd=$build/src/examples/objstore/railyard-objd
obj=$build/src/examples/objstore/railyard-obj
RUNS=${RUNS:-3} T=${T:-5} SIZE=${SIZE:-1M} PAR=${PAR:-4} RAILS=${RAILS:-2}

dir=$(mktemp -d /tmp/ry-objbench-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	rm -rf "$dir"
}
trap cleanup EXIT
rails() {
	for ((i = 0; i < RAILS; i++)); do
		echo "rail r$i { provider = soft network = n$i address = \"127.0.0.1\" }"
	done
}
conf() { # NODE [accept]
	{ echo "node = $1"; echo 'control = "127.0.0.1:0"'
	  [[ -n ${2:-} ]] && echo 'accept = {"127.0.0.0/8"}'; rails; } >"$dir/$1.conf"
}
conf objd yes; conf serve yes; conf objc; conf benchc
ctl_of() { # LOG
	local c=""
	for _ in $(seq 100); do
		c=$(grep -o 'control 127\.0\.0\.1:[0-9]*' "$1" | head -1 | cut -d' ' -f2 || true)
		[[ -n $c ]] && break
		sleep 0.1
	done
	echo "$c"
}
"$objd" -c "$dir/objd.conf" --capacity 1G 2>"$dir/objd.log" &
pids+=($!)
"$ry" serve -c "$dir/serve.conf" --socket "$dir/serve.sock" --region 256M 2>"$dir/serve.log" &
pids+=($!)
octl=$(ctl_of "$dir/objd.log") sctl=$(ctl_of "$dir/serve.log")
[[ -n $octl && -n $sctl ]] || { echo "servers did not start"; cat "$dir"/*.log; exit 1; }

obj_run() { # OP [--verify]
	"$obj" bench -c "$dir/objc.conf" --server "$octl" --op "$1" --threads "$PAR" \
		--size "$SIZE" --duration "$T" --json ${2:-} 2>/dev/null | jq -r .gbit_per_s
}
bench_run() { # OP
	"$ry" bench -c "$dir/benchc.conf" --peer "$sctl" --op "$1" --depth "$PAR" \
		--size "$SIZE" --duration "$T" --json 2>/dev/null | jq -r .gbit_per_s
}
stats() { sort -g | awk '{ v[NR] = $1 } END { printf "%.2f / %.2f / %.2f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }

echo "object store vs railyard bench, $RAILS soft rails on loopback, $SIZE, $PAR in flight, $T s x $RUNS; load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-11s %-24s %-24s %s\n' row "obj Gbit/s min/med/max" "bench Gbit/s" "ratio obj/bench"
for row in put get get_verify; do
	o=() b=() r=()
	for ((k = 0; k < RUNS; k++)); do
		case $row in
		put) x=$(obj_run put); y=$(bench_run read) ;;
		get) x=$(obj_run get); y=$(bench_run write) ;;
		get_verify) x=$(obj_run get --verify); y=$(bench_run write) ;;
		esac
		o+=("$x") b+=("$y") r+=("$(awk -v x="$x" -v y="$y" 'BEGIN { print x / y }')")
	done
	printf '%-11s %-24s %-24s %s\n' "$row" "$(printf '%s\n' "${o[@]}" | stats)" \
		"$(printf '%s\n' "${b[@]}" | stats)" "$(printf '%s\n' "${r[@]}" | stats)"
done
