#!/bin/bash
# Build the hw test guest: a Debian kernel (vmlinuz) and a small initramfs
# holding that kernel's RDMA modules (rdma_rxe and what it needs), busybox,
# iproute2 (ip, rdma), jq, tcpdump, perftest's ib_write_bw, ib_read_bw and
# ib_write_lat when the host has them, the rxe libibverbs provider and
# every shared library the project's binaries link.  The project's build
# and source trees are not copied: the guest mounts them over 9p at their
# host paths.
#
# usage: mkguest.sh KERNEL_DEB OUT_DIR BINARY...
#   KERNEL_DEB  a linux-image-*-amd64 .deb (unpacked with dpkg -x, never
#               installed on the host)
#   OUT_DIR     gets vmlinuz, initramfs.cpio.gz, kver
#   BINARY      project executables whose libraries the guest needs
# siw.ko is not in it (Debian builds no siw): the guest loads the one
# mksiw.sh builds from the build mount (guest.d/65-siw.sh); the image has
# what it needs (libcrc32c, the siw libibverbs provider).
set -euo pipefail
DEB=$1 OUT=$2
shift 2
HERE=$(dirname "$(readlink -f "$0")")
work=$OUT/work
rm -rf "$work"
mkdir -p "$work/kernel" "$OUT"
dpkg -x "$DEB" "$work/kernel"
KVER=$(ls "$work/kernel/lib/modules" | head -1)
[ -n "$KVER" ] || { echo "mkguest: no modules in $DEB" >&2; exit 1; }
depmod -b "$work/kernel" "$KVER"

R=$work/root
mkdir -p "$R"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,mnt}
# usrmerge, as on the host: /bin, /lib and /lib64 point into /usr
ln -s usr/bin "$R/bin"; ln -s usr/sbin "$R/sbin"
ln -s usr/lib "$R/lib"; ln -s usr/lib64 "$R/lib64"

# --- kernel modules and their dependencies ---
# crc32_generic: rxe asks the crypto API for "crc32"; without a provider
# 'rdma link add' fails with ENOENT (busybox modprobe ignores softdeps).
# virtio_net: hw_qemu_2node's guests have NICs (hw_qemu_rxe's have none).
MODS="crc32_generic crc32-pclmul rdma_rxe ib_uverbs ib_umad rdma_ucm veth sch_netem
      9p 9pnet_virtio virtio_pci virtio_net"
# siw takes crc32c from the crypto API, and iw_cm from rdma_ucm's deps
MODS="$MODS crc32c_generic libcrc32c"
for m in $MODS; do
	modprobe -d "$work/kernel" -S "$KVER" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" { print $2 }' ||
		echo "mkguest: module $m not in $KVER" >&2
done | sort -u | while read -r ko; do
	rel=${ko#"$work/kernel"}
	mkdir -p "$R/usr$(dirname "$rel")"
	cp "$ko" "$R/usr$rel"
done
# Debian compresses modules; busybox modprobe loads only plain ones
find "$R/usr/lib/modules" -name '*.ko.xz' -exec xz -d {} +
find "$R/usr/lib/modules" -name '*.ko.zst' -exec zstd -q -d --rm {} +
cp "$work/kernel/lib/modules/$KVER"/modules.builtin* "$R/usr/lib/modules/$KVER/"
depmod -b "$R/usr" "$KVER"

# --- userspace ---
copy() { # copy FILE: the file and the libraries it loads, at their paths
	local f=$1 l d
	mkdir -p "$R/usr$(dirname "${f#/usr}")"
	cp -L "$f" "$R/usr${f#/usr}"
	for l in $(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true); do
		d=/usr${l#/usr}
		[ -e "$R$d" ] && continue
		mkdir -p "$R$(dirname "$d")"
		cp -L "$l" "$R$d"
	done
}
BB=$(command -v busybox)
ldd "$BB" >/dev/null 2>&1 &&
	{ echo "mkguest: $BB is not static (apt-get install busybox-static)" >&2; exit 1; }
cp "$BB" "$R/usr/bin/busybox"
for b in /usr/sbin/ip /usr/bin/rdma /usr/sbin/tc /usr/bin/ibv_devinfo; do
	[ -x "$b" ] && copy "$b"
done
# the drills in guest.d assert on the CLI's JSON with jq, and on the
# packets' IP header with tcpdump
copy "$(command -v jq)"
copy "$(command -v tcpdump)"
# tests/bench/perftest.sh compares with perftest's tools, when the host has
# them (Debian's perftest)
for b in ib_write_bw ib_read_bw ib_write_lat; do
	command -v $b >/dev/null && copy "$(command -v $b)"
done
prov=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav*.so | head -1)
copy "$prov"
mkdir -p "$R/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
siw=$(ls /usr/lib/x86_64-linux-gnu/libibverbs/libsiw-rdmav*.so 2>/dev/null | head -1 || true)
if [ -n "$siw" ] && [ -f /etc/libibverbs.d/siw.driver ]; then
	copy "$siw"
	cp /etc/libibverbs.d/siw.driver "$R/etc/libibverbs.d/"
fi
for b in "$@"; do copy "$b"; done
for a in $("$R/usr/bin/busybox" --list); do
	[ -e "$R/usr/bin/$a" ] || [ -e "$R/usr/sbin/$a" ] ||
		ln -s busybox "$R/usr/bin/$a"
done
echo "root:x:0:0:root:/root:/bin/sh" > "$R/etc/passwd"
echo "root:x:0:" > "$R/etc/group"
cp "$HERE/guest-init" "$R/init"
chmod 755 "$R/init"

(cd "$R" && find . -print0 | cpio --null -o -H newc --quiet) |
	gzip -1 > "$OUT/initramfs.cpio.gz"
cp "$work/kernel/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
echo "$KVER" > "$OUT/kver"
rm -rf "$work"
echo "mkguest: kernel $KVER, initramfs $(du -h "$OUT/initramfs.cpio.gz" | cut -f1)"
