#!/usr/bin/env bash
# Structured logs: `railyard demo` (two nodes in one process, rail r1
# pulled and plugged back) with its stderr taken for the journal's stream,
# as systemd connects a service's, sends its lines to the journal with
# fields; journalctl then selects them by RAILYARD_EVENT=, RAIL=, PEER=
# and reads REASON=, DETECT_MS=, RESUME_MS=, QPN= back.  RY_LOG_LEVEL=info
# (the environment over the default) brings the info-level events in.
#
# A journald of its own: the test runs in a private mount namespace with
# tmpfs over /run and the journal directories, so it neither needs a
# booted systemd nor writes to this machine's journal.  Exits 77 when not
# root, or without unshare, systemd-journald or journalctl.
# usage: journal.sh PATH/TO/railyard
set -euo pipefail
cli=$(realpath "$1")

if [[ ${RY_JOURNAL_INNER:-} != 1 ]]; then
	[[ $(id -u) -eq 0 ]] ||
		{ echo "SKIP: a private journald needs root"; exit 77; }
	journald=""
	for j in /lib/systemd/systemd-journald /usr/lib/systemd/systemd-journald; do
		[[ -x $j ]] && journald=$j && break
	done
	[[ -n $journald ]] && command -v journalctl >/dev/null ||
		{ echo "SKIP: no systemd-journald/journalctl (Debian: systemd)"; exit 77; }
	command -v unshare >/dev/null || { echo "SKIP: no unshare"; exit 77; }
	unshare --mount --propagation private true 2>/dev/null ||
		{ echo "SKIP: no mount namespace here (unshare --mount fails)"; exit 77; }
	command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
	exec env RY_JOURNAL_INNER=1 RY_JOURNALD="$journald" \
		unshare --mount --propagation private bash "$0" "$cli"
fi

# ---- inside the private mount namespace ----
fail() { echo "FAIL: $*"; exit 1; }
mount -t tmpfs tmpfs /run ||
	{ echo "SKIP: cannot mount a tmpfs in a mount namespace here"; exit 77; }
if [[ -d /var/log/journal ]]; then
	mount -t tmpfs tmpfs /var/log/journal
fi
mkdir -p /run/systemd/journal /run/log/journal
dir=$(mktemp -d /run/ry-journal-XXXXXX)
"$RY_JOURNALD" >"$dir/journald.log" 2>&1 &
jpid=$!
trap 'kill $jpid 2>/dev/null; wait $jpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
	[[ -S /run/systemd/journal/socket ]] && break
	kill -0 $jpid 2>/dev/null ||
		{ echo "SKIP: systemd-journald does not start here: $(cat "$dir/journald.log")"; exit 77; }
	sleep 0.1
done
[[ -S /run/systemd/journal/socket ]] ||
	{ echo "SKIP: systemd-journald made no socket in 10 s"; exit 77; }

# stderr is the journal's stream as far as the tool can tell: systemd
# sets JOURNAL_STREAM to the device:inode of the stream it hands over
touch "$dir/stderr"
stream=$(stat -c '%d:%i' "$dir/stderr")
# A rail pulled with nothing of its in flight needs no replay and so has
# no resume: up to four runs, until one replays (the demo says "traffic
# resumed"); each run's down and up events count as well.
resumed=0
for run in 1 2 3 4; do
	JOURNAL_STREAM=$stream RY_LOG_LEVEL=info "$cli" demo --duration 3 \
		>"$dir/demo.out" 2>>"$dir/stderr" ||
		fail "demo failed: $(cat "$dir/demo.out" "$dir/stderr")"
	grep -q "r1 down" "$dir/demo.out" || fail "the demo pulled no rail"
	if grep -q "traffic resumed" "$dir/demo.out"; then
		resumed=1
		break
	fi
	echo "demo run $run: no replay needed, again"
done

# journald takes datagrams asynchronously: wait for the entries
q() { journalctl --no-pager -o json "$@" 2>/dev/null || true; }
arrived() {
	[[ -n $(q RAILYARD_EVENT=up RAIL=r1) ]] &&
		{ ((!resumed)) || [[ -n $(q RAILYARD_EVENT=resume) ]]; }
}
for _ in $(seq 50); do
	arrived && break
	sleep 0.1
done
q RAILYARD_EVENT=down RAIL=r1 >"$dir/down.json"
q RAILYARD_EVENT=resume RAIL=r1 >"$dir/resume.json"
q RAILYARD_EVENT=up RAIL=r1 >"$dir/up.json"
q SYSLOG_IDENTIFIER=railyard >"$dir/all.json"
echo "journal: $(wc -l <"$dir/all.json") railyard entries," \
	"$(wc -l <"$dir/down.json") RAILYARD_EVENT=down RAIL=r1"

# the rail's link went down: no peer, warning priority
jq -se 'map(select(.PEER == null and .REASON == "link down" and
	.PRIORITY == "4")) | length >= 1' "$dir/down.json" >/dev/null ||
	fail "no rail-down entry: $(cat "$dir/down.json")"
# its connection to the other node failed: peer, reason, detection, QPN
jq -se 'map(select(.PEER != null and (.REASON | length) > 0 and
	(.DETECT_MS | tonumber) >= 0 and (.QPN | test("^0x[0-9a-f]+$"))))
	| length >= 1' "$dir/down.json" >/dev/null ||
	fail "no connection-down entry with PEER, REASON, DETECT_MS, QPN: $(cat "$dir/down.json")"
# traffic resumed on the other rails: both times
((resumed)) || echo "no run needed a replay: resume fields not checked"
((!resumed)) || jq -se 'map(select(.PEER != null and (.RESUME_MS | tonumber) >= 0 and
	(.DETECT_MS | tonumber) >= 0)) | length >= 1' "$dir/resume.json" \
	>/dev/null || fail "no resume entry with RESUME_MS: $(cat "$dir/resume.json" "$dir/demo.out"; journalctl --no-pager -o cat SYSLOG_IDENTIFIER=railyard | tail -30)"
# info level came from RY_LOG_LEVEL: the rail back up, a connection up
jq -se 'length >= 1' "$dir/up.json" >/dev/null ||
	fail "no RAILYARD_EVENT=up RAIL=r1 at RY_LOG_LEVEL=info"
jq -se 'all(.RAILYARD_COMPONENT != null and (.MESSAGE | length) > 0)' \
	"$dir/all.json" >/dev/null || fail "entries without component or message"
# and the lines went to the journal, not to stderr as text
! grep -q "link down" "$dir/stderr" ||
	fail "log lines went to stderr too: $(head -3 "$dir/stderr")"
[[ -z ${RY_JOURNAL_SHOW:-} ]] || journalctl --no-pager -o verbose RAILYARD_EVENT=resume | head -30
echo "journal fields: ok"
