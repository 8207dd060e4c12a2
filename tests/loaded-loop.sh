#!/usr/bin/env bash
# The whole test suite, N times in a row, with one core kept busy by
# stress-ng: a test that passes only on a quiet machine fails here.
#
# usage: bash tests/loaded-loop.sh [N] [-- ctest args...]
#   N defaults to 10.  Builds like the README's test command (gcc, then
#   clang ASan/UBSan + fuzz) once, then runs ctest in both build trees N
#   times; prints one line per round and "N passed, M failed" at the end.
#   Root runs the netns and hw labels too (as CI does); the ASan tree
#   leaves out hw, scale and pkg, as CI's ASan stage does (scale starts a
#   hundred client processes: the gcc tree runs it).
#   RY_LOOP_BUILDS="gcc" limits the rounds to one build tree.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
shift || true
[[ ${1:-} == -- ]] && shift
extra=("$@")
builds=${RY_LOOP_BUILDS:-gcc asan}

command -v stress-ng >/dev/null || {
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends stress-ng >/dev/null
}

for b in $builds; do
	case $b in
	gcc) CC=gcc cmake -S . -B build/gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>/dev/null ;;
	asan) CC=clang cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug \
		-DRY_SANITIZE=ON -DRY_FUZZ=ON >/dev/null ;;
	esac
	cmake --build "build/$b" -j"$(nproc)" >/dev/null
done

# as tests/run-all.sh: root lets the QEMU/rxe suite install what it needs,
# or hw_qemu_rxe skips (77) and the rounds would not be the whole suite
if [[ $(id -u) -eq 0 ]]; then
	export RY_HW_INSTALL=${RY_HW_INSTALL:-1}
fi

stress_pid=
cleanup() {
	if [[ -n $stress_pid ]]; then
		kill "$stress_pid" 2>/dev/null || true
		wait "$stress_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
stress-ng --cpu 1 --timeout 0 --quiet &
stress_pid=$!

log=$(mktemp -d)
pass=0 fail=0
for ((i = 1; i <= n; i++)); do
	ok=1 t0=$(date +%s)
	for b in $builds; do
		args=(-j"$(nproc)" --output-on-failure)
		[[ $b == asan ]] && args+=(-LE "hw|scale|pkg")
		if ! (cd "build/$b" &&
			ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
			UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			ctest "${args[@]}" "${extra[@]}") >"$log/$i-$b.log" 2>&1; then
			ok=0
		fi
	done
	if ((ok)); then
		pass=$((pass + 1))
		echo "round $i: passed ($(($(date +%s) - t0)) s)"
	else
		fail=$((fail + 1))
		echo "round $i: FAILED ($(($(date +%s) - t0)) s):"
		grep -h -E '\*\*\*Failed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)' \
			"$log/$i"-*.log | sed 's/^/  /' || true
	fi
done
echo "logs: $log"
echo "$pass passed, $fail failed"
((fail == 0))
