#!/usr/bin/env bash
# The generated systemd unit: its paths are the install's, its hardening is
# there, `systemd-analyze verify` finds nothing, and the exposure
# `systemd-analyze security` rates stays at most MAX_EXPOSURE.
# usage: unit-verify.sh UNIT BINDIR CONFDIR RAILYARD_BINARY
# Exits 77 when systemd-analyze is absent.
set -euo pipefail
unit=$1 bindir=$2 confdir=$3 cli=$4
max_exposure=2.5
command -v systemd-analyze >/dev/null ||
	{ echo "SKIP: no systemd-analyze (Debian: systemd)"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

grep -qx "ExecStart=$bindir/railyard serve -c $confdir/railyard.conf" "$unit" ||
	fail "ExecStart does not run $bindir/railyard with $confdir/railyard.conf"
grep -q "ExecStartPre=$bindir/railyard check-config $confdir/railyard.conf" \
	"$unit" || fail "ExecStartPre does not check $confdir/railyard.conf"
! grep -n '@[A-Z_]*@' "$unit" || fail "unsubstituted @VARIABLE@ left"
for want in ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
	LimitMEMLOCK=infinity User=railyard DevicePolicy=closed \
	'DeviceAllow=char-infiniband_verbs rw' NoNewPrivileges=yes; do
	grep -qx "$want" "$unit" || fail "missing $want"
done

# verify needs the binaries it names to exist: point them at the build's.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s#$bindir/railyard#$cli#g" "$unit" >"$tmp/railyard.service"
# --man=no: man:railyard(1) exists once installed, not in a build tree.
out=$(systemd-analyze --man=no verify "$tmp/railyard.service" 2>&1) ||
	fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify says: $out"
echo "systemd-analyze verify: clean"

sec=$(systemd-analyze security --offline=yes "$tmp/railyard.service" 2>&1) ||
	true
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' \
	<<<"$sec")
[[ -n $exposure ]] || fail "no exposure figure from systemd-analyze security: $sec"
echo "systemd-analyze security: exposure $exposure (at most $max_exposure)"
awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }' ||
	fail "exposure $exposure above $max_exposure: $(grep '✗' <<<"$sec")"
echo "unit: ok"
