# shellcheck shell=bash
# What the loopback object-server scripts share (test_objstore.sh,
# test_objstore_budget.sh), sourced after `set -euo pipefail` with $dir (a
# work directory), $objd (railyard-objd) and fail() set:
#   obj_confs [LINE...]  $dir/srv.conf and $dir/cli.conf: two soft rails on
#                        127.0.0.1; the server admits loopback (a client's
#                        control port is ephemeral) and has LINE... too
#   obj_serve [ARG...]   railyard-objd on $dir/srv.conf with ARG..., stderr
#                        to $dir/srv.log; sets srv_pid, and ctl once the
#                        server says its control address and that it is
#                        ready (fail() if it exits or is not within 10 s)

obj_confs() {
	local rails='rail r0 { provider = soft network = n0 address = "127.0.0.1" }
rail r1 { provider = soft network = n1 address = "127.0.0.1" }'

	printf '%s\n' 'node = objd' 'control = "127.0.0.1:0"' \
		'accept = {"127.0.0.0/8"}' "$rails" "$@" >"$dir/srv.conf"
	printf '%s\n' 'node = objc' 'control = "127.0.0.1:0"' "$rails" \
		>"$dir/cli.conf"
}

obj_serve() {
	"$objd" -c "$dir/srv.conf" "$@" 2>"$dir/srv.log" &
	srv_pid=$!
	ctl=""
	for _ in $(seq 100); do
		ctl=$(grep -o 'control 127\.0\.0\.1:[0-9]*' "$dir/srv.log" | cut -d' ' -f2 || true)
		[[ -n $ctl ]] && break
		kill -0 "$srv_pid" 2>/dev/null || fail "railyard-objd exited"
		sleep 0.1
	done
	[[ -n $ctl ]] || fail "railyard-objd did not say its control address"
	grep -q ': ready' "$dir/srv.log" || fail "railyard-objd not ready"
}
