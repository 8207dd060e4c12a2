#!/usr/bin/env bash
# serve --metrics is safe to expose (issue 30):
#   - with --metrics-token: no token or a wrong one is answered 401, the
#     right one 200 with the metrics; a token file others can read is
#     refused at start
#   - one source holds at most 4 connections (more are closed at once),
#     another source is still served meanwhile, and idle connections are
#     closed after 10 s
#   - the open-file limit: a soft limit below what max_sessions needs is
#     raised to the hard one; a max_sessions the file gives that cannot
#     fit under the hard limit is refused, the default is lowered to fit
#     and enforced
#     at start with the numbers
#   - the status socket: a name taken by a file, or by a socket of another
#     user, and a directory others may write, are refused at start
# Everything listens on 127.0.0.1; the processes started here are stopped
# by their PIDs.
# usage: limits.sh PATH/TO/railyard
set -euo pipefail
cli=$1
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
command -v prlimit >/dev/null || { echo "SKIP: prlimit (util-linux) not installed"; exit 77; }

dir=$(mktemp -d /tmp/ry-mlimits-XXXXXX)
serve_pid=""
cleanup() {
	[[ -n $serve_pid ]] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	echo "--- serve log"; cat "$dir/serve.log" 2>/dev/null || true
	exit 1
}

conf() { # conf FILE [extra line]
	cat >"$1" <<CONF
node = ml
control = "127.0.0.1:0"
${2:-}
rail r0 { provider = soft network = n0 address = "127.0.0.1" }
CONF
}
conf "$dir/a.conf"
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token"
chmod 600 "$dir/token"
token=$(cat "$dir/token")

# start_serve [prlimit args...]: serve with metrics and the token; sets url
start_serve() {
	prlimit "$@" -- "$cli" serve -c "$dir/a.conf" --socket "$dir/a.sock" \
		--metrics 127.0.0.1:0 --metrics-token "$dir/token" 2>"$dir/serve.log" &
	serve_pid=$!
	url=""
	for _ in $(seq 100); do
		url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/metrics' "$dir/serve.log" || true)
		[[ -n $url ]] && break
		kill -0 "$serve_pid" 2>/dev/null || fail "serve exited"
		sleep 0.1
	done
	[[ -n $url ]] || fail "serve did not print its metrics address"
}
stop_serve() {
	kill "$serve_pid"
	wait "$serve_pid" || fail "serve exited $? on SIGTERM"
	serve_pid=""
}

echo "== bearer token"
start_serve --nofile=4096:20000
code=$(curl -s -o /dev/null -w '%{http_code}' "$url")
[[ $code == 401 ]] || fail "no token: $code, not 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer x$token" "$url")
[[ $code == 401 ]] || fail "wrong token: $code, not 401"
curl -sf -H "Authorization: Bearer $token" "$url" >"$dir/m.txt" || fail "right token refused"
grep -q '^railyard_build_info' "$dir/m.txt" || fail "no metrics with the token"
echo "ok: 401 without, 200 with"

echo "== soft open-file limit raised to the hard one"
grep -E '^Max open files +20000 +20000' "/proc/$serve_pid/limits" >/dev/null ||
	fail "limits: $(grep 'open files' "/proc/$serve_pid/limits")"
echo "ok: $(grep 'open files' "/proc/$serve_pid/limits")"

echo "== per-source cap and idle timeout"
hp=${url#http://}
hp=${hp%/metrics}
fds=()
for i in $(seq 8); do
	exec {fd}<>"/dev/tcp/127.0.0.1/${hp#*:}"
	fds+=("$fd")
done
# Wait until serve has closed four (a loaded machine may take a while to
# accept them all; at most about 6 s, well within its 10 s idle timeout):
# a read that does not time out is of a connection serve closed.  The
# count below then gives every connection still open another 0.5 s to be
# closed in.
gone=() n=0
end=$((SECONDS + 5))
while :; do
	n=0
	for i in "${!fds[@]}"; do
		if [[ -z ${gone[i]:-} ]]; then
			rc=0
			read -r -t 0.1 -u "${fds[i]}" _ || rc=$?
			((rc > 128)) || gone[i]=1
		fi
		[[ -z ${gone[i]:-} ]] || n=$((n + 1))
	done
	((n < 4 && SECONDS < end)) || break
done
open=0 closed=0
for fd in "${fds[@]}"; do
	rc=0
	read -r -t 0.5 -u "$fd" _ || rc=$?
	if ((rc > 128)); then open=$((open + 1)); else closed=$((closed + 1)); fi
done
((open == 4 && closed == 4)) || fail "8 connections from one source: $open open, $closed closed (want 4 and 4)"
# another source is served while the first holds its four
curl -sf --interface 127.0.0.2 -H "Authorization: Bearer $token" "$url" >/dev/null ||
	fail "127.0.0.2 not served beside 127.0.0.1's four"
# the idle four are closed after 10 s
t0=$SECONDS
for fd in "${fds[@]}"; do
	rc=0
	read -r -t 15 -u "$fd" _ || rc=$?
	((rc <= 128)) || fail "an idle connection still open after 15 s"
	exec {fd}>&-
done
echo "ok: 4 of 8 held, another source served, idle ones closed after $((SECONDS - t0)) s"
stop_serve

echo "== a max_sessions that cannot fit"
conf "$dir/a.conf" "max_sessions = 16384"
rc=0
prlimit --nofile=1024:1024 -- "$cli" serve -c "$dir/a.conf" --socket "$dir/b.sock" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] || fail "serve with max_sessions = 16384 under a hard limit of 1024 exited $rc, not 1"
grep -q 'max_sessions 16384 needs about [0-9]* file descriptors, the limit is 1024 (hard 1024)' "$dir/err" ||
	fail "no clear refusal: $(cat "$dir/err")"
echo "ok: $(grep max_sessions "$dir/err")"
conf "$dir/a.conf" "max_sessions = 512"
start_serve --nofile=1024:1024
stop_serve
echo "ok: max_sessions = 512 fits under 1024"

echo "== the default max_sessions under a low limit: lowered, and enforced"
# One rail, no peers: 136 descriptors are kept for the rest, so a hard
# limit of 200 leaves 64 sessions.  The 65th connection is refused at
# accept; the first 64 are held (no HELLO within a minute is allowed).
conf "$dir/a.conf" "accept = {\"127.0.0.0/8\"}
max_sessions_per_source = 100
handshake_timeout_ms = 60000"
start_serve --nofile=200:200
grep -q 'warning: max_sessions lowered from its default 16384 to 64 to fit under the open-file limit 200 (hard 200)' \
	"$dir/serve.log" || fail "no warning that the default was lowered"
echo "ok: $(grep -o 'max_sessions lowered.*' "$dir/serve.log")"
port=""
for _ in $(seq 50); do
	port=$("$cli" status --socket "$dir/a.sock" --json 2>/dev/null |
		grep -o '"control":"127\.0\.0\.1:[0-9]*"' | grep -o '[0-9]*"$' | tr -d '"' || true)
	[[ -n $port ]] && break
	sleep 0.1
done
[[ -n $port ]] || fail "no control address in status"
held=()
for i in $(seq 64); do
	exec {fd}<>"/dev/tcp/127.0.0.1/$port" || fail "connection $i not accepted"
	held+=("$fd")
done
exec {fd}<>"/dev/tcp/127.0.0.1/$port" || fail "connection 65 not connected at all"
for _ in $(seq 100); do
	grep -q 'refused: max_sessions reached' "$dir/serve.log" && break
	sleep 0.1
done
grep -q 'refused: max_sessions reached' "$dir/serve.log" ||
	fail "the 65th session was not refused as past max_sessions"
echo "ok: $(grep -o 'control session from .* refused: max_sessions reached' "$dir/serve.log" | head -1)"
exec {fd}>&-
for fd in "${held[@]}"; do exec {fd}>&-; done
kill -0 "$serve_pid" || fail "serve died"
stop_serve
conf "$dir/a.conf"

echo "== a token file others can read"
chmod 644 "$dir/token"
rc=0
"$cli" serve -c "$dir/a.conf" --socket "$dir/c.sock" --metrics 127.0.0.1:0 \
	--metrics-token "$dir/token" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q 'chmod 600' "$dir/err" || fail "token file mode 644: rc $rc, $(cat "$dir/err")"
echo "ok: $(cat "$dir/err")"
echo "== the status socket's name and directory"
chmod 600 "$dir/token"
: >"$dir/taken.sock"
rc=0
"$cli" serve -c "$dir/a.conf" --socket "$dir/taken.sock" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q 'the name is taken (not a socket' "$dir/err" ||
	fail "a file at the socket path: rc $rc, $(cat "$dir/err")"
mkdir -m 0777 "$dir/open"
rc=0
"$cli" serve -c "$dir/a.conf" --socket "$dir/open/s.sock" 2>"$dir/err" || rc=$?
[[ $rc -eq 1 ]] && grep -q 'others could replace the socket' "$dir/err" ||
	fail "a world-writable directory: rc $rc, $(cat "$dir/err")"
if [[ $(id -u) -eq 0 ]] && id nobody >/dev/null 2>&1; then
	mkdir -m 0700 "$dir/other"
	chown nobody "$dir/other"
	rc=0
	"$cli" serve -c "$dir/a.conf" --socket "$dir/other/s.sock" 2>"$dir/err" || rc=$?
	[[ $rc -eq 1 ]] && grep -q 'owned by uid' "$dir/err" ||
		fail "another user's directory: rc $rc, $(cat "$dir/err")"
fi
echo "ok: $(cat "$dir/err")"
echo "PASS"
