#!/usr/bin/env bash
# The environment overrides of the railyard tool, and their precedence:
# command line > environment > config.
#   RY_LOG_LEVEL  over log { level }; serve --log-level over both; a bad
#                 value is a usage error (exit 2), said once
#   RY_METRICS    serve's --metrics ADDR:PORT when the option is not given
# Everything listens on 127.0.0.1; serve is stopped by its PID.
# usage: env.sh PATH/TO/railyard [METRICS]   (METRICS 0: built without
#        libmicrohttpd, RY_METRICS not tested)
set -euo pipefail
cli=$1 metrics=${2:-1}
dir=$(mktemp -d /tmp/ry-env-XXXXXX)
pid=""
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

cat >"$dir/b.conf" <<CONF
node = sb
control = "127.0.0.1:0"
log { level = error }
rail r0 { provider = soft network = n0 address = "127.0.0.1" }
CONF

# start [VAR=value...] -- [serve options...]: serve until its startup
# line is out; leaves $pid running.  Returns 1 if serve exited instead.
start() {
	local envs=()
	while [[ $1 != -- ]]; do envs+=("$1"); shift; done
	shift
	: >"$dir/err"
	env -u RY_LOG_LEVEL -u RY_METRICS "${envs[@]}" "$cli" serve \
		-c "$dir/b.conf" --socket "$dir/s.sock" "$@" 2>"$dir/err" &
	pid=$!
	for _ in $(seq 300); do
		grep -q "^railyard serve: node sb" "$dir/err" && return 0
		kill -0 "$pid" 2>/dev/null || { wait "$pid" || true; pid=""; return 1; }
		sleep 0.1
	done
	fail "serve did not start in 30 s: $(cat "$dir/err")"
}
stop() { kill -INT "$pid"; wait "$pid" || true; pid=""; }

echo "== RY_LOG_LEVEL: a bad value is a usage error"
set +e
RY_LOG_LEVEL=loud "$cli" serve -c "$dir/b.conf" 2>"$dir/err"
rc=$?
set -e
((rc == 2)) || fail "RY_LOG_LEVEL=loud: exit $rc, not 2"
grep -q "RY_LOG_LEVEL='loud' is not a log level" "$dir/err" ||
	fail "no clear message: $(cat "$dir/err")"

echo "== the config's level (error): no info lines"
start -- || fail "serve: $(cat "$dir/err")"
stop
! grep -q "railyard info " "$dir/err" || fail "info lines at level error"

echo "== RY_LOG_LEVEL=info over the config"
start RY_LOG_LEVEL=info -- || fail "serve: $(cat "$dir/err")"
stop
grep -q "railyard info mgr: node sb" "$dir/err" ||
	fail "RY_LOG_LEVEL=info did not win over the config: $(cat "$dir/err")"

echo "== --log-level error over RY_LOG_LEVEL=info"
start RY_LOG_LEVEL=info -- --log-level error || fail "serve: $(cat "$dir/err")"
stop
! grep -q "railyard info " "$dir/err" ||
	fail "--log-level error did not win over RY_LOG_LEVEL=info"

if ((metrics)); then
	echo "== RY_METRICS when --metrics is not given"
	start RY_METRICS=127.0.0.1:0 -- ||
		fail "serve with RY_METRICS: $(cat "$dir/err")"
	url=$(grep -o 'http://127.0.0.1:[0-9]*/metrics' "$dir/err" | head -1)
	[[ -n $url ]] || { stop; fail "RY_METRICS served nothing: $(cat "$dir/err")"; }
	body=$(curl -sf "$url") || { stop; fail "GET $url failed"; }
	stop
	grep -q "^# TYPE railyard_rail_failover_detection_duration_seconds histogram" \
		<<<"$body" || fail "no failover histogram at $url"

	echo "== a bad RY_METRICS is refused, naming it"
	! start RY_METRICS=not-an-address -- || { stop; fail "serve started"; }
	grep -q "not-an-address" "$dir/err" ||
		fail "the refusal does not name the value: $(cat "$dir/err")"

	echo "== --metrics over RY_METRICS"
	start RY_METRICS=not-an-address -- --metrics 127.0.0.1:0 ||
		fail "--metrics did not win over RY_METRICS: $(cat "$dir/err")"
	stop
fi
echo "env overrides: ok"
