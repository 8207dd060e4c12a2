#!/usr/bin/env bash
# Install what is missing, build twice and run the whole test suite:
#   1. gcc, optimised with debug info: every label (unit, soft, netns, hw,
#      pkg: the Debian packages built, installed, used, purged), and the
#      fio engine
#   2. clang with AddressSanitizer + UBSan and the libFuzzer targets
#   3. clang with ThreadSanitizer: labels unit and soft (see below)
# Suites that cannot run here (no root for namespaces, no QEMU) skip with
# exit code 77 and say why.  Exits non-zero on any failure.
# usage: bash tests/run-all.sh     (from the repository root; root or sudo)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

pkgs=(build-essential cmake pkg-config clang clang-format libclang-rt-14-dev
      libibverbs-dev librdmacm-dev libibumad-dev libconfuse-dev libsodium-dev check
      iproute2 iputils-ping iperf3 jq curl libmicrohttpd-dev libsystemd-dev
      prometheus abigail-tools mandoc systemd fio dpkg-dev nftables)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "== installing: ${missing[*]}"
	sudo=""
	[[ $(id -u) -eq 0 ]] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends "${missing[@]}" >/dev/null
fi

# As root the QEMU/rxe suite (label hw) may install what it needs (QEMU,
# a Debian kernel package), as it does in CI: a new user who runs this
# command as root runs the verbs tests too.  RY_HW_INSTALL=0 opts out.
# It also builds siw.ko for the guest (tests/hw/mksiw.sh: ~170 MB fetched,
# unpacked in a scratch directory, not installed), so the soft-iWARP
# drills run too; RY_HW_SIW=0 leaves them out.
if [[ $(id -u) -eq 0 ]]; then
	export RY_HW_INSTALL=${RY_HW_INSTALL:-1}
	export RY_HW_SIW=${RY_HW_SIW:-1}
fi

start=$(date +%s)
status=0
failed=() # "build: test" of every failure, repeated at the end
# ct DIR CTEST-ARGS...: ctest in DIR; a failure is remembered by name, for
# the list at the end (the CI report keeps the end of the output, where a
# guest's own FAIL line would be long scrolled past)
ct() {
	local dir=$1 t
	shift
	(cd "$dir" && ctest "$@") && return 0
	status=1
	if [[ -f $dir/Testing/Temporary/LastTestsFailed.log ]]; then
		while IFS=: read -r _ t; do
			failed+=("$dir: $t")
		done <"$dir/Testing/Temporary/LastTestsFailed.log"
	else
		failed+=("$dir: ctest $*")
	fi
	return 0
}

# One format for every C file (.clang-format): a diff fails the run.
echo "== format: clang-format --dry-run --Werror"
if ! find src rails config include tests -name '*.[ch]' -print0 |
	xargs -0 clang-format --dry-run --Werror; then
	echo "== format: FAILED (clang-format -i the files above)"
	status=1
fi

# The fio engine builds against fio's own headers (no -dev package): as
# root, Debian's source of the installed fio is fetched and configured
# (tests/fio/fetch-fio-source.sh, ~40 s); elsewhere, or when that fails,
# build 1 goes without it and test fio_netns skips (in CI, CI=true, a
# failed fetch fails the run).
fio_opts=()
if [[ $(id -u) -eq 0 ]] && command -v fio >/dev/null; then
	if fio_src=$(bash tests/fio/fetch-fio-source.sh build/fio-src); then
		fio_opts=(-DRY_FIO=ON "-DFIO_SOURCE_DIR=$fio_src")
	else
		echo "== fio engine: no fio source, not built (fio_netns skips)"
		[[ ${CI:-} != true ]] || status=1
	fi
fi

echo "== build 1: gcc"
CC=gcc cmake -S . -B build/gcc -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	"${fio_opts[@]}" >/dev/null
cmake --build build/gcc -j"$jobs" >/dev/null
ct build/gcc -j"$jobs" --output-on-failure

echo "== build 2: clang, ASan + UBSan, fuzz targets"
CC=clang cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DRY_SANITIZE=ON \
	-DRY_FUZZ=ON >/dev/null
cmake --build build/asan -j"$jobs" >/dev/null
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ct build/asan -j"$jobs" --output-on-failure -LE "hw|scale|pkg"

# TSan: the unit and soft labels, less what cannot run under it:
#   test_soft_cc      root + tc-shaped veth; a resend-percentage bound for
#                     a link TSan's slowdown makes the CPU, not the shaper
#   test_cli          waits 5 s for serve, which takes ~6 s to start here
#                     (its 64 MiB target under TSan); one process per run
#   install_consumer  packaging only, ~45 s; runs in builds 1 and 2
# Of the manager's areas only test_mgr_threads(_soft) runs here, its "threads"
# case (CMake sets it).
# intercept_send=0: TSan's send*/sendmmsg interceptors mark the buffers
# read *after* the fd release that orders the receiver, so a sender's
# buffer reused once the peer has its bytes (a region after completion)
# is reported although the kernel copied it before the receiver could
# see it; a 30-line sendmmsg/recv program shows it.  Nothing else is
# suppressed (tests/tsan.supp: third-party code only, each with a reason).
echo "== build 3: clang, ThreadSanitizer"
CC=clang cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DRY_TSAN=ON >/dev/null
cmake --build build/tsan -j"$jobs" >/dev/null
tsan_opts="halt_on_error=1:second_deadlock_stack=1:intercept_send=0:suppressions=$PWD/tests/tsan.supp"
TSAN_OPTIONS=$tsan_opts ct build/tsan -j"$jobs" --output-on-failure \
	-L 'unit|soft' -E '^(test_soft_cc|test_cli|install_consumer)$'
# a few drills with a real serve and its rail threads, where the unit
# suites' single process does not go (a cable pulled on either side, a
# rail's interface recreated, a reload, the same on tcp rails): ~1.5 min;
# a race ends the process (halt_on_error), and with it the drill
TSAN_OPTIONS=$tsan_opts ct build/tsan --output-on-failure \
	-R '^netns_(drill_local|drill_remote|rail_life_recreate-b|reload|tcp_local|tcp_restart)$'
# and the verbs rail on rxe in the QEMU guest (tests/hw), its contract
# suite (test_concurrent_qps: posts and polls beside progress, no rail
# lock) and the manager's drills, with RY_HW_KERNEL_DEB when given, else
# the kernel package build 1 downloaded (none when it could not: this run
# then tries and skips as build 1's did)
deb=${RY_HW_KERNEL_DEB:-$(ls "$PWD"/build/gcc/tests/hw/guest/linux-image-*.deb \
	2>/dev/null | head -1 || true)}
RY_HW_KERNEL_DEB=$deb TSAN_OPTIONS=$tsan_opts \
	ct build/tsan --output-on-failure -R '^hw_qemu_rxe$'

for t in "${failed[@]}"; do
	echo "== FAILED $t"
	case $t in
	*hw_qemu_rxe) grep -a -h 'guest: FAIL\|^FAIL\|HOST: the guest\|Kernel panic\|Oops' \
		"${t%%:*}/tests/hw/hw_qemu_rxe.log" 2>/dev/null | sed 's/^/   /' ;;
	*hw_qemu_2node) grep -a -h 'FAIL\|Kernel panic\|Oops' \
		"${t%%:*}"/tests/hw/2node/*.log 2>/dev/null | sed 's/^/   /' ;;
	esac
done

echo "== whole suite: $(( $(date +%s) - start )) s, $([[ $status -eq 0 ]] && echo passed || echo FAILED)"
exit $status
