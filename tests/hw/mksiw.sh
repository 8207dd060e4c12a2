#!/bin/bash
# Build soft-iWARP (siw.ko) for the hw guest's kernel.  Debian's kernels do
# not ship it (CONFIG_RDMA_SIW is not set), so it is built out of tree from
# Debian's linux-source-X.Y against linux-headers-KVER, the guest kernel's
# own headers: its vermagic then matches the guest kernel.
#
# Where the two are installed (/usr/src), they are used.  Otherwise, with
# RY_HW_SIW=1 and RY_HW_INSTALL=1 as root, the packages are fetched with
# apt-get download and unpacked into a scratch directory, not installed:
# linux-headers-KVER would pull the kernel's linux-image package onto the
# host.  That is ~170 MB to fetch and about 30 s in all here (the siw
# sources out of the source tarball 10 s, the build 12 s).
#
# usage: mksiw.sh KVER OUT_KO
#   KVER    the guest kernel's release, e.g. 6.12.118+deb12-amd64
#   OUT_KO  where siw.ko goes (hw_qemu_rxe.sh keeps it beside the image)
# exit:    0 built; 77 the source or headers cannot be had (says why)
set -uo pipefail
KVER=$1 OUT=$2
XY=$(echo "$KVER" | cut -d. -f1-2)
KBASE=${KVER%-*} # 6.12.118+deb12: the kbuild and -common packages' name
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
HDR=/usr/src/linux-headers-$KVER
siw_files=("linux-source-$XY/drivers/infiniband/sw/siw/*"
	   "linux-source-$XY/include/uapi/rdma/siw-abi.h")

if [ -d "$HDR" ] && [ -f "/usr/src/linux-source-$XY.tar.xz" ]; then
	tar -xJf "/usr/src/linux-source-$XY.tar.xz" -C "$work" --wildcards \
		"${siw_files[@]}" ||
		{ echo "mksiw: /usr/src/linux-source-$XY.tar.xz has no siw sources"; exit 1; }
elif [ "$(id -u)" = 0 ] && [ "${RY_HW_INSTALL:-}" = 1 ] &&
     [ "${RY_HW_SIW:-}" = 1 ]; then
	pkgs=("linux-headers-$KVER" "linux-headers-$KBASE-common"
	      "linux-kbuild-$KBASE" "linux-source-$XY")
	echo "mksiw: fetching ${pkgs[*]} (unpacked here, not installed)"
	# apt-get download writes into the current directory
	if ! (cd "$work" && apt-get download "${pkgs[@]}" >/dev/null 2>&1); then
		apt-get update -qq >/dev/null 2>&1
		(cd "$work" && apt-get download "${pkgs[@]}" >/dev/null 2>&1) ||
			{ echo "mksiw: apt-get download ${pkgs[*]} failed"; exit 77; }
	fi
	for p in "${pkgs[@]:0:3}"; do
		dpkg -x "$work/${p}"_*.deb "$work/root" ||
			{ echo "mksiw: cannot unpack $p"; exit 1; }
	done
	HDR=$work/root/usr/src/linux-headers-$KVER
	# its Makefile includes the -common tree by its installed path
	sed -i "s|/usr/src/|$work/root/usr/src/|" "$HDR/Makefile"
	dpkg-deb --fsys-tarfile "$work/linux-source-${XY}"_*.deb |
		tar -xO "./usr/src/linux-source-$XY.tar.xz" |
		tar -xJ -C "$work" --wildcards "${siw_files[@]}" ||
		{ echo "mksiw: linux-source-$XY has no siw sources"; exit 1; }
else
	echo "mksiw: no linux-headers-$KVER and linux-source-$XY:" \
	     "'apt-get install linux-headers-$KVER linux-source-$XY'" \
	     "(or run as root with RY_HW_SIW=1 RY_HW_INSTALL=1)"
	exit 77
fi
S=$work/linux-source-$XY
# No BTF for the module: Debian's kernel asks for it, which runs pahole
# (package dwarves, not on a fresh machine: "pahole: not found", error
# 127), and a module loads without it.
make -s -C "$HDR" M="$S/drivers/infiniband/sw/siw" CONFIG_RDMA_SIW=m \
	CONFIG_DEBUG_INFO_BTF_MODULES= \
	EXTRA_CFLAGS="-I$S/include" modules >"$work/build.log" 2>&1 ||
	{ tail -20 "$work/build.log"; echo "mksiw: building siw.ko failed"; exit 1; }
mkdir -p "$(dirname "$OUT")"
cp "$S/drivers/infiniband/sw/siw/siw.ko" "$OUT"
echo "mksiw: $OUT ($(modinfo -F vermagic "$OUT" | cut -d' ' -f1))"
