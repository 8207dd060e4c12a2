#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# railyard against perftest on the same verbs rails (issue 29, point 4): a
# benchmark, not a test.  Boots the hw guest (tests/hw/hw_qemu_rxe.sh, soft
# RoCE under QEMU) with tests/hw/guest-perftest.sh as its payload, which
# runs each row's railyard case and its perftest case one after the other,
# RUNS times; prints min/median/max of each ratio and one JSON line.
#
#   row      railyard                          perftest
#   write1   bench 1 MiB depth 8, one rail     ib_write_bw -s 1M -t 8
#   read1    the same, --op read               ib_read_bw -s 1M -t 8
#   write2   bench 1 MiB depth 8, two rails    ib_write_bw on both rails at once
#   lat1     bench 4 KiB depth 1: p50 us       ib_write_lat -s 4096: 2 x t_typical
#   siw_*    write1, read1 and lat1 on soft-   the same tools with -R (rdma_cm)
#            iWARP (siw), cm = auto (rdma_cm);
#            when the guest has siw.ko (RY_HW_SIW=1, tests/hw/README.md)
#
# Bandwidth ratios are railyard/perftest (higher is better), the latency
# ratio railyard/perftest (lower is better).  ib_write_lat polls memory on
# both ends: on the guest's two emulated CPUs that starves rxe's own kernel
# work, so its figure is not a fair floor here (guest-perftest.sh).  rxe under TCG makes the
# absolute figures meaningless; the ratio is what the manager adds on top
# of the same verbs.
#
# usage (root, to install perftest and QEMU): perftest.sh [BUILD_DIR]
#   env: RUNS (3), and hw_qemu_rxe.sh's (RY_HW_KERNEL_DEB, RY_HW_CACHE, ...)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build/gcc}" && pwd)
RUNS=${RUNS:-3}
if ! command -v ib_write_bw >/dev/null; then
	[[ $(id -u) -eq 0 ]] ||
		{ echo "perftest.sh: perftest is not installed (apt-get install perftest)"; exit 77; }
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		perftest >/dev/null
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
RY_HW_INSTALL=${RY_HW_INSTALL:-1} RY_RUNS=$RUNS RY_HW_TIMEOUT=$((300 + 240 * RUNS)) \
	RY_HW_RUN="$root/tests/hw/guest-perftest.sh" \
	bash "$root/tests/hw/hw_qemu_rxe.sh" "$root" "$build" >"$log" 2>&1 || rc=$?
if ((rc)); then
	tail -30 "$log"
	echo "perftest.sh: the guest run ended with $rc"
	exit "$rc"
fi
grep '^perftest: ' "$log" | tr -d '\r' >"$log.rows" || true
mmm() { sort -g | awk '{ v[NR] = $1 } END { if (!NR) { print "- - -"; exit }
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.3g %.3g %.3g", v[1], m, v[NR] }'; }
declare -A LABEL=(
	[write1]="1 MiB writes d8, 1 rail, Gbit/s"
	[read1]="1 MiB reads d8, 1 rail, Gbit/s"
	[write2]="1 MiB writes d8, 2 rails, Gbit/s"
	[lat1]="4 KiB write d1 p50 us vs ib_write_lat"
	[siw_write1]="siw: 1 MiB writes d8, 1 rail, Gbit/s"
	[siw_read1]="siw: 1 MiB reads d8, 1 rail, Gbit/s"
	[siw_lat1]="siw: 4 KiB write d1 p50 us vs ib_write_lat"
)
echo "# $(date -u +%FT%TZ), RUNS=$RUNS, $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
printf "%-40s %-20s %-22s %-22s %s\n" row "ratio min/med/max" "railyard min/med/max" \
	"perftest min/med/max" measured
json="{\"runs\":$RUNS"
for row in write1 read1 write2 lat1 siw_write1 siw_read1 siw_lat1; do
	grep -q "^perftest: $row " "$log.rows" || continue
	# a run where either side measured nothing is left out, and counted
	ok=$(awk -v r="$row" '$2 == r && $5 > 0 && $7 > 0' "$log.rows")
	ry=$(awk '{ print $5 }' <<<"$ok")
	pt=$(awk '{ print $7 }' <<<"$ok")
	ra=$(awk 'NF { printf "%.4f\n", $5 / $7 }' <<<"$ok")
	printf "%-40s %-20s %-22s %-22s %s\n" "${LABEL[$row]}" "$(mmm <<<"$ra" | tr ' ' /)" \
		"$(mmm <<<"$ry" | tr ' ' /)" "$(mmm <<<"$pt" | tr ' ' /)" \
		"$(grep -c . <<<"$ok" || true) of $(awk -v r="$row" '$2 == r' "$log.rows" | grep -c . || true) runs"
	json+=",\"$row\":{\"ratio\":[$(paste -sd, <<<"$ra")],\"railyard\":[$(paste -sd, <<<"$ry")],\"perftest\":[$(paste -sd, <<<"$pt")]}"
done
rm -f "$log.rows"
echo "$json}"
