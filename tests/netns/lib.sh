# shellcheck shell=bash
# What the namespace scripts share (tests/netns/test_*.sh,
# tests/fio/test_fio.sh), sourced after `set -euo pipefail`:
#   ns_need_root        skip (77) unless root, with network namespaces and jq
#   ns_up PREFIX RAILS [RATE [--intruder]]
#                       topo.sh's hosts with namespaces $p-* (p: PREFIX, or
#                       $RY_NETNS_PREFIX, then $$) and a work directory
#                       $work; on exit serve ($serve_pid) is stopped, the
#                       script's ns_cleanup_more run if it has one, the
#                       namespaces deleted, $work kept in $RY_DRILL_KEEP if
#                       set and removed
#   ns_serve CONF LOG [ARG...]
#                       `$ry serve` in b on CONF, status socket
#                       $work/b.sock, output to LOG; returns once serve says
#                       it is up (the script's fail() if it dies or is not
#                       up within 10 s)
#   ns_drill_clean PID OUT
#                       waits for `railyard drill --json` PID, writing OUT
#                       (its stderr in OUT.log): one JSON object, 0 failed
#                       operations, 0 verify errors, some done, exit 0 (the
#                       script's fail() otherwise); j FILTER then reads OUT
ns_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

ns_need_root() {
	if [[ $(id -u) -ne 0 ]] || ! ip netns list >/dev/null 2>&1; then
		echo "SKIP: network namespaces need root (run as root, as CI does)"
		exit 77
	fi
	command -v jq >/dev/null || {
		echo "SKIP: jq is not installed (apt-get install jq)"
		exit 77
	}
}

ns_drill_clean() {
	local rc=0

	wait "$1" || rc=$?
	jq -se 'length == 1 and (.[0] | type == "object")' "$2" >/dev/null || {
		cat "$2.log"
		fail "no JSON from drill"
	}
	ns_drill_out=$2
	j() { jq -r "$1" "$ns_drill_out"; }
	echo "drill: $(j .ops_ok) ok, $(j .ops_failed) failed, $(j .verify_errors) verify errors, exit $rc"
	[[ $(j .ops_failed) == 0 ]] || fail "$(j .ops_failed) operations failed: $(j .first_error)"
	[[ $(j .verify_errors) == 0 ]] || fail "$(j .verify_errors) verify errors"
	[[ $(j .ops_ok) -gt 0 ]] || fail "no operation completed"
	[[ $rc == 0 ]] || fail "drill exited $rc"
}

ns_cleanup() {
	# serve exits 0 on SIGTERM; whatever it returns, the namespaces go
	if [[ -n ${serve_pid:-} ]]; then
		kill "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
	if declare -F ns_cleanup_more >/dev/null; then
		ns_cleanup_more || true
	fi
	bash "$ns_dir/topo.sh" down "$p"
	if [[ -n ${RY_DRILL_KEEP:-} ]]; then
		cp -r "$work" "$RY_DRILL_KEEP" || true
	fi
	rm -rf "$work"
}

ns_up() {
	p=${RY_NETNS_PREFIX:-$1}$$
	work=$(mktemp -d)
	serve_pid=
	trap ns_cleanup EXIT
	bash "$ns_dir/topo.sh" up "$p" "${@:2}"
}

# Not through a function run in the background: that is a subshell, and
# its PID is not serve's (killing it left serve running, and `wait`
# reported 143).  `ip netns exec` execs serve, so $! is serve's own PID.
# Ready once it says so: the status socket of a killed serve stays behind,
# so its presence proves nothing.
ns_serve() {
	local conf=$1 log=$2
	shift 2
	ip netns exec "$p-b" "$ry" serve -c "$conf" --socket "$work/b.sock" \
		"$@" </dev/null >"$log" 2>&1 &
	serve_pid=$!
	for _ in $(seq 100); do
		grep -q "^railyard serve: node" "$log" && return 0
		kill -0 "$serve_pid" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"
	fail "serve did not start"
}
