#!/bin/bash
# Build soft-iWARP (siw.ko) for the hw guest's kernel.  Debian's kernels do
# not ship it (CONFIG_RDMA_SIW is not set), so it is built out of tree from
# Debian's linux-source-X.Y against linux-headers-KVER, the guest kernel's
# own headers: its vermagic then matches the guest kernel.  About 10 s.
#
# usage: mksiw.sh KVER OUT_KO
#   KVER    the guest kernel's release, e.g. 6.12.118+deb12-amd64
#   OUT_KO  where siw.ko goes (hw_qemu_rxe.sh keeps it beside the image)
# env:     RY_HW_SIW=1 and RY_HW_INSTALL=1 (as root) install
#          linux-source-X.Y and linux-headers-KVER with apt-get when they
#          are missing (a download of ~200 MB, and the headers package pulls
#          the kernel's linux-image package onto the host: opt-in)
# exit:    0 built; 77 the source or headers are not here (says which)
set -uo pipefail
KVER=$1 OUT=$2
XY=$(echo "$KVER" | cut -d. -f1-2)
HDR=/usr/src/linux-headers-$KVER
TARBALL=/usr/src/linux-source-$XY.tar.xz
pkgs=()
[ -d "$HDR" ] || pkgs+=("linux-headers-$KVER")
[ -f "$TARBALL" ] || pkgs+=("linux-source-$XY")
if [ ${#pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && [ "${RY_HW_INSTALL:-}" = 1 ] &&
	   [ "${RY_HW_SIW:-}" = 1 ]; then
		echo "mksiw: installing ${pkgs[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends "${pkgs[@]}" >/dev/null 2>&1 ||
			{ echo "mksiw: apt-get install ${pkgs[*]} failed"; exit 77; }
	else
		echo "mksiw: no ${pkgs[*]}: 'apt-get install ${pkgs[*]}' (or run as root with RY_HW_SIW=1 RY_HW_INSTALL=1)"
		exit 77
	fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$TARBALL" -C "$work" --wildcards \
	"linux-source-$XY/drivers/infiniband/sw/siw/*" \
	"linux-source-$XY/include/uapi/rdma/siw-abi.h" ||
	{ echo "mksiw: $TARBALL has no siw sources"; exit 1; }
S=$work/linux-source-$XY
make -s -C "$HDR" M="$S/drivers/infiniband/sw/siw" CONFIG_RDMA_SIW=m \
	EXTRA_CFLAGS="-I$S/include" modules >"$work/build.log" 2>&1 ||
	{ tail -20 "$work/build.log"; echo "mksiw: building siw.ko failed"; exit 1; }
mkdir -p "$(dirname "$OUT")"
cp "$S/drivers/infiniband/sw/siw/siw.ko" "$OUT"
echo "mksiw: $OUT ($(modinfo -F vermagic "$OUT" | cut -d' ' -f1))"
