#!/usr/bin/env bash
# Long libFuzzer campaign over every fuzz target: the CTest runs (label
# fuzz) stop at 20000 executions, which is a smoke test, not a search.
#
# usage: tests/fuzz/run-long.sh [-n RUNS] [-t SECONDS] [-b BUILD_DIR] [-k]
#                                [-T "ctl msg ..."]
#   -n RUNS     executions per target (default 1000000)
#   -t SECONDS  time cap per target, whichever comes first (default 3600)
#   -b DIR      build tree (default build/asan; configured with clang,
#               -DRY_SANITIZE=ON -DRY_FUZZ=ON and built here if needed)
#   -k          keep the scratch corpora (their path is printed)
#   -T NAMES    only these targets (short names: ctl, msg, config, ...)
# Targets are the fuzz_* executables in DIR/tests/fuzz, run one after
# another (they share the machine with whatever else runs).  Each starts
# from a fresh scratch corpus plus its committed seeds.  Findings go to
# DIR/fuzz-long/<target>/.  Exit: 0 clean, 1 a finding or a target that
# did not build, 77 no clang.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD

runs=1000000
secs=3600
build=build/asan
keep=0
only=""
while getopts "n:t:b:kT:h" opt; do
	case $opt in
	n) runs=$OPTARG ;;
	t) secs=$OPTARG ;;
	b) build=$OPTARG ;;
	k) keep=1 ;;
	T) only=" $OPTARG " ;;
	h) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
	esac
done
[[ $runs =~ ^[0-9]+$ && $secs =~ ^[0-9]+$ ]] || {
	echo "run-long.sh: -n and -t take whole numbers" >&2
	exit 2
}

if ! command -v clang >/dev/null; then
	echo "run-long.sh: SKIP: no clang, and libFuzzer needs it"
	exit 77
fi

# Configure only a tree that is not already a fuzz build, so a tree the
# developer set up (other options, other generator) is left as it is.
if ! grep -qs '^RY_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
	echo "== configuring $build (clang, ASan + UBSan, fuzz targets)"
	CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug \
		-DRY_SANITIZE=ON -DRY_FUZZ=ON >/dev/null
fi
echo "== building $build"
cmake --build "$build" -j"${JOBS:-$(nproc)}" >/dev/null

mapfile -t bins < <(find "$(realpath "$build")/tests/fuzz" -maxdepth 1 -type f \
	-name 'fuzz_*' -perm -u+x 2>/dev/null | sort)
if ((${#bins[@]} == 0)); then
	echo "run-long.sh: no fuzz_* executables in $build/tests/fuzz" >&2
	exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/ry-fuzz-long.XXXXXX")
if ((keep)); then
	echo "== scratch corpora kept in $scratch"
else
	trap 'rm -rf "$scratch"' EXIT
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

pass=0
fail=0
lines=()

# A target's committed seeds: corpus/<short name>, and for the config
# loader the shipped configuration files, as CTest gives them.
seeds() {
	local short=${1#fuzz_}
	[[ -d $src/tests/fuzz/corpus/$short ]] &&
		echo "$src/tests/fuzz/corpus/$short"
	if [[ $short == config ]]; then
		echo "$src/etc"
		echo "$src/etc/examples"
	fi
	return 0
}

for bin in "${bins[@]}"; do
	name=$(basename "$bin")
	[[ -z $only || $only == *" ${name#fuzz_} "* ]] || continue
	# an executable whose source is gone is a leftover of an older tree
	if ! compgen -G "$src/tests/fuzz/$name.c" >/dev/null &&
		! grep -qsw "$name" "$src"/tests/fuzz/*.cmake \
			"$src/tests/fuzz/CMakeLists.txt"; then
		echo "== $name: stale (no source in tests/fuzz), skipped"
		continue
	fi
	corpus=$scratch/$name
	art=$(realpath "$build")/fuzz-long/$name
	mkdir -p "$corpus" "$art"
	log=$art/log
	mapfile -t seed < <(seeds "$name")
	echo "== $name: up to $runs runs or $secs s"
	start=$(date +%s.%N)
	rc=0
	# -timeout catches a single input that hangs; -max_total_time is the cap
	(cd "$art" && "$bin" -runs="$runs" -max_total_time="$secs" \
		-timeout=10 -print_final_stats=1 -artifact_prefix="$art/" \
		"$corpus" "${seed[@]}") >"$log" 2>&1 || rc=$?
	elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')

	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	# after a crash there may be no final stats: use the last status line
	last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
	[[ -n $execs ]] || execs=$(sed -E 's/^#([0-9]+).*/\1/' <<<"$last")
	[[ -n $rate ]] || rate=$(sed -nE 's/.*exec\/s: ([0-9]+).*/\1/p' <<<"$last")
	# libFuzzer divides by whole seconds: a run under one second shows 0
	if [[ ${rate:-0} == 0 && -n $execs ]]; then
		rate=$(awk -v n="$execs" -v a="$start" -v b="$(date +%s.%N)" \
			'BEGIN { printf "%.0f", n / (b - a) }')
	fi
	ncorp=$(find "$corpus" -type f | wc -l)
	artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)

	if ((rc == 0)) && [[ -z $artifact ]]; then
		result=ok
	elif grep -q 'ERROR: libFuzzer: timeout' "$log"; then
		result=timeout
	elif grep -q 'ERROR: LeakSanitizer' "$log"; then
		result=leak
	elif grep -q 'ERROR: libFuzzer: out-of-memory' "$log"; then
		result=oom
	elif [[ -n $artifact ]] || grep -qE 'deadly signal|Sanitizer|runtime error' "$log"; then
		result=crash
	else
		result=error # did not run: see the log
	fi
	if [[ $result == ok ]]; then
		pass=$((pass + 1))
		if ((${execs:-0} < runs)); then
			result="ok (time cap after ${elapsed} s)"
		fi
	else
		fail=$((fail + 1))
		result="$result: ${artifact:-no artifact, see $log} (exit $rc)"
	fi
	line=$(printf '%-14s %10s execs %8s exec/s %6s corpus  %s' \
		"$name" "${execs:-?}" "${rate:-?}" "$ncorp" "$result")
	echo "$line"
	lines+=("$line")
done

# A target in tests/fuzz that did not build is a failure, not a skip.
for c in "$src"/tests/fuzz/fuzz_*.c; do
	name=$(basename "$c" .c)
	if [[ ! -x $build/tests/fuzz/$name ]]; then
		line=$(printf '%-14s %s' "$name" "not built (is it in CMakeLists.txt?)")
		echo "$line"
		lines+=("$line")
		fail=$((fail + 1))
	fi
done

echo "== summary"
printf '%s\n' "${lines[@]}"
echo "$pass passed, $fail failed"
((fail == 0))
