#!/bin/bash
# hw_qemu_rxe: the verbs rail on real libibverbs, in a QEMU guest.
#
#   host (no RDMA needed)             guest (QEMU/TCG, Debian kernel)
#   ---------------------             ----------------------------------
#   build tree  ==9p, same path==>    rxe_a0 - veth0a 198.18.0.1
#   source tree ==9p, same path==>                 |  veth pair
#                                     rxe_b0 - veth0b 198.18.0.2
#                                     runs tests/hw/guest-run.sh
#
# The guest has no network device (-nic none): all traffic stays inside it.
# Its exit status comes back through isa-debug-exit and is ours.
#
# usage: hw_qemu_rxe.sh SOURCE_DIR BUILD_DIR
# env:   RY_HW_INSTALL=1   install what is missing with apt-get (root); CI=true
#                          does the same when running as root
#        RY_HW_KERNEL_DEB  a linux-image .deb to use instead of downloading
#        RY_HW_KPKG        kernel meta package(s) to try (default
#                          "linux-image-6.12-amd64 linux-image-amd64")
#        RY_HW_CACHE       where the .deb and the guest image live
#                          (default BUILD_DIR/tests/hw/guest)
#        RY_HW_SMP, RY_HW_MEM (MiB), RY_HW_TIMEOUT (s), RY_HW_SHELL=1
#        TSAN_OPTIONS      passed on to the guest's tests (a TSan build)
#        RY_HW_PREPARE_ONLY=1  stop once the image is ready (hw_qemu_2node)
#        RY_HW_RUN         the guest's payload instead of guest-run.sh (a
#                          path under SOURCE_DIR; tests/bench/perftest.sh),
#                          RY_RUNS passed on to it
# exit:  the guest's status; 77 when QEMU or a kernel cannot be had here.
set -uo pipefail
SRC=$(readlink -f "$1") BUILD=$(readlink -f "$2")
HERE=$SRC/tests/hw
CACHE=${RY_HW_CACHE:-$BUILD/tests/hw/guest}
# 6.12 first: its rxe behaves better on link loss than 6.1's
KPKG_METAS=${RY_HW_KPKG:-linux-image-6.12-amd64 linux-image-amd64}
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
skip() { echo "SKIP: $*"; exit 77; }

may_install=0
if [ "$(id -u)" = 0 ] && { [ "${CI:-}" = true ] || [ "${RY_HW_INSTALL:-}" = 1 ]; }; then
	may_install=1
fi
apt_updated=0
apt_update() { # once, and only when we may install
	[ $may_install = 1 ] && [ $apt_updated = 0 ] || return 0
	apt_updated=1
	echo "HOST: apt-get update"
	apt-get update -qq >/dev/null 2>&1 || true
}

# --- tools: command -> Debian package ---
need=(qemu-system-x86_64:qemu-system-x86 busybox:busybox-static
      depmod:kmod modprobe:kmod cpio:cpio dpkg:dpkg xz:xz-utils jq:jq
      tcpdump:tcpdump)
missing=() pkgs=()
for n in "${need[@]}"; do
	command -v "${n%%:*}" >/dev/null 2>&1 ||
		{ missing+=("${n%%:*}"); pkgs+=("${n##*:}"); }
done
# busybox must be the static one: the guest has no libc of its own for it
if command -v busybox >/dev/null && ldd "$(command -v busybox)" >/dev/null 2>&1; then
	missing+=("static busybox"); pkgs+=(busybox-static)
fi
if [ ${#missing[@]} -gt 0 ]; then
	read -r -a pkgs <<< "$(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' ')"
	if [ $may_install = 1 ]; then
		echo "HOST: installing ${pkgs[*]}"
		inst() {
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends "${pkgs[@]}" >/dev/null
		}
		inst || { apt_update; inst; } ||
			skip "apt-get install ${pkgs[*]} failed"
	else
		skip "missing ${missing[*]}; install with 'apt-get install ${pkgs[*]}'" \
		     "(or run as root with RY_HW_INSTALL=1 or CI=true)"
	fi
fi
ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so >/dev/null 2>&1 ||
	skip "the rxe libibverbs provider is missing: apt-get install ibverbs-providers"

# --- the project's binaries the guest runs ---
TEST_BINS=("$BUILD/tests/hw/test_verbs_conformance" "$BUILD/tests/hw/test_verbs_rail")
CLI_BIN=$BUILD/src/cli/railyard
for b in "${TEST_BINS[@]}" "$CLI_BIN"; do
	[ -x "$b" ] || { echo "FAIL: $b is not built"; exit 1; }
done

# --- the kernel package: downloaded, unpacked, never installed ---
mkdir -p "$CACHE"
DEB=${RY_HW_KERNEL_DEB:-}
if [ -z "$DEB" ]; then
	kpkg() { # the versioned image package a meta package names
		for m in $KPKG_METAS; do
			KPKG=$(apt-cache depends "$m" 2>/dev/null |
			       awk '/Depends: linux-image-/ { print $2; exit }')
			[ -n "$KPKG" ] && return 0
		done
		return 1
	}
	kpkg || { apt_update; kpkg; } ||
		skip "apt knows none of $KPKG_METAS here (set RY_HW_KERNEL_DEB to a linux-image .deb)"
	DEB=$(ls "$CACHE/${KPKG}"_*.deb 2>/dev/null | head -1)
	if [ -z "$DEB" ]; then
		[ $may_install = 1 ] ||
			skip "kernel package $KPKG not downloaded; run as root with RY_HW_INSTALL=1" \
			     "(or CI=true), or 'cd $CACHE && apt-get download $KPKG', or set RY_HW_KERNEL_DEB"
		echo "HOST: downloading $KPKG"
		(cd "$CACHE" && apt-get download -q "$KPKG" >/dev/null 2>&1) ||
			skip "apt-get download $KPKG failed (offline?)"
		DEB=$(ls "$CACHE/${KPKG}"_*.deb | head -1)
	fi
fi
[ -f "$DEB" ] || skip "kernel package $DEB not found"

# --- soft-iWARP: siw.ko for that kernel, built once (mksiw.sh) and kept
# beside the kernel package (the TSan run shares build 1's).  Built in the
# background while the image is made and the guest runs the rxe tests; it
# reaches the guest through $SIW_DIR on the build mount, where
# guest.d/65-siw.sh waits for 'status': "ok" (siw.ko beside it), "skip WHY"
# or "fail WHY" (asked for siw, RY_HW_SIW=1, and what it is built from was
# there, but the build failed).  Another payload (RY_HW_RUN) gets it
# before boot. ---
KVER_DEB=$(dpkg-deb -f "$DEB" Package | sed 's/^linux-image-//; s/-unsigned$//')
SIW_KO=$(dirname "$DEB")/siw-$KVER_DEB.ko
[ -w "$(dirname "$DEB")" ] || SIW_KO=$CACHE/siw-$KVER_DEB.ko
SIW_DIR=$BUILD/tests/hw/siw
siw_pid=
siw_build() {
	local src st
	RY_HW_INSTALL=$may_install bash "$HERE/mksiw.sh" "$KVER_DEB" \
		"$SIW_KO.part" >"$SIW_DIR/log" 2>&1
	src=$?
	if [ $src = 0 ] && mv "$SIW_KO.part" "$SIW_KO" &&
	   cp "$SIW_KO" "$SIW_DIR/siw.ko"; then
		st=ok
	elif [ $src != 77 ] && [ "${RY_HW_SIW:-}" = 1 ]; then
		st="fail RY_HW_SIW=1 and siw.ko did not build: $(tail -1 "$SIW_DIR/log")"
	else
		st="skip $(tail -1 "$SIW_DIR/log")"
	fi
	echo "$st" >"$SIW_DIR/status.part" && mv "$SIW_DIR/status.part" "$SIW_DIR/status"
}
if [ "${RY_HW_PREPARE_ONLY:-}" != 1 ]; then
	rm -rf "$SIW_DIR"
	mkdir -p "$SIW_DIR"
	if [ -f "$SIW_KO" ]; then
		cp "$SIW_KO" "$SIW_DIR/siw.ko" && echo ok >"$SIW_DIR/status"
	elif [ -n "${RY_HW_RUN:-}" ]; then
		siw_build # another payload (perftest.sh) wants it at once
	else
		echo "HOST: building siw.ko in the background (mksiw.sh, log: $SIW_DIR/log)"
		siw_build &
		siw_pid=$!
	fi
fi

# --- the guest image, rebuilt only when its inputs change ---
key=$( { echo "$DEB"; stat -c %s "$DEB"; cat "$HERE/mkguest.sh" "$HERE/guest-init";
	 command -v ib_write_bw ib_read_bw ib_write_lat;
	 ldd "${TEST_BINS[@]}" "$CLI_BIN" | grep -oE '/[^ ]+' | sort -u; } | sha256sum | cut -c1-16)
if [ "$(cat "$CACHE/key" 2>/dev/null)" != "$key" ] || [ ! -f "$CACHE/initramfs.cpio.gz" ]; then
	echo "HOST: building the guest image"
	bash "$HERE/mkguest.sh" "$DEB" "$CACHE" "${TEST_BINS[@]}" "$CLI_BIN" ||
		{ echo "FAIL: mkguest.sh failed"; exit 1; }
	echo "$key" > "$CACHE/key"
fi
echo "HOST: guest image ready after $(elapsed) s (kernel $(cat "$CACHE/kver"))"
# hw_qemu_2node.sh boots its own guests from this image
[ "${RY_HW_PREPARE_ONLY:-}" = 1 ] && exit 0

# --- boot ---
APPEND="console=ttyS0 quiet loglevel=4 panic=-1 ry_src=$SRC ry_build=$BUILD"
APPEND+=" ry_run=${RY_HW_RUN:-$HERE/guest-run.sh}"
[ -n "${RY_RUNS:-}" ] && APPEND+=" ry_runs=$RY_RUNS"
[ "${RY_HW_SHELL:-}" = 1 ] && APPEND+=" ry_shell=1"
# a TSan build's options (no spaces: one word of the command line)
[ -n "${TSAN_OPTIONS:-}" ] && APPEND+=" ry_tsan=$TSAN_OPTIONS"
# shellcheck disable=SC2054 # commas belong to QEMU's option syntax
args=(-accel tcg -cpu max -m "${RY_HW_MEM:-1024}" -smp "${RY_HW_SMP:-2}"
      -nographic -nic none -no-reboot -monitor none -serial stdio
      -kernel "$CACHE/vmlinuz" -initrd "$CACHE/initramfs.cpio.gz"
      -append "$APPEND"
      -device isa-debug-exit,iobase=0xf4,iosize=4
      -virtfs "local,path=$SRC,mount_tag=src,security_model=none,readonly=on,id=src"
      -virtfs "local,path=$BUILD,mount_tag=build,security_model=none,id=build")
LOG=$BUILD/tests/hw/hw_qemu_rxe.log
boot=$(elapsed)
if [ "${RY_HW_SHELL:-}" = 1 ]; then
	# interactive: the console is this terminal, no time limit
	qemu-system-x86_64 "${args[@]}"
	qrc=$?
else
	# A guest kernel that dies gives no result of ours.  Seen under
	# multi-threaded TCG: a half-patched int3 executed while the kernel
	# patches its static keys ("Oops: int3" in early boot, before
	# guest-init), and slab corruption under rxe's requester that panics
	# the kernel mid-run (hw_qemu_2node.sh sees it too).  Boot once more,
	# and say so.  A guest that reported a result, pass or fail, is never
	# run again.
	for attempt in 1 2; do
		timeout "${RY_HW_TIMEOUT:-300}" qemu-system-x86_64 "${args[@]}" \
			</dev/null 2>&1 | tee "$LOG"
		qrc=${PIPESTATUS[0]}
		[ "$qrc" = 124 ] && break
		[ $((qrc & 1)) = 1 ] && break
		if ! grep -q 'guest: kernel ' "$LOG"; then
			echo "HOST: the guest kernel died before guest-init ran (attempt $attempt); see $LOG"
		elif grep -q 'Kernel panic - not syncing' "$LOG"; then
			echo "HOST: the guest kernel panicked mid-run, no result of ours (attempt $attempt); see $LOG"
		else
			break
		fi
		[ "$attempt" = 2 ] || cp "$LOG" "$LOG.boot$attempt"
	done
fi
if [ -n "$siw_pid" ]; then
	wait "$siw_pid"
	echo "HOST: siw.ko: $(cat "$SIW_DIR/status" 2>/dev/null)"
fi
echo "HOST: QEMU exited $qrc, $(awk -v a="$boot" -v b="$(elapsed)" 'BEGIN { printf "%.1f", b - a }') s after boot, $(elapsed) s in all (log: $LOG)"
[ "$qrc" = 124 ] && { echo "FAIL: the guest timed out"; exit 1; }
# isa-debug-exit: QEMU's status is (guest status << 1) | 1
if [ $((qrc & 1)) = 1 ]; then
	rc=$((qrc >> 1))
	# 77 from the guest means a skip in there too
	exit $rc
fi
echo "FAIL: the guest ended without a result (QEMU status $qrc)"
exit 1
