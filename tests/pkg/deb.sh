#!/usr/bin/env bash
# The Debian packages, as a storage team would use them: build them from
# the source tree (prefix /usr, cpack -G DEB), install them with
# `apt-get install ./*.deb`, run `railyard demo` and the out-of-tree
# consumer (tests/install/consumer.c) built against the installed -dev
# package with pkg-config and with find_package, check the unit with
# systemd-analyze, then purge them and check nothing is left.
#
# It changes this machine while it runs (dpkg database, /usr, /etc): root
# only, and the EXIT trap purges whatever it installed.  Exits 77 when not
# root, without apt-get/dpkg-shlibdeps, or when railyard packages are
# already installed (they are someone's, not ours to replace).
# usage: deb.sh SOURCE_DIR SCRATCH_DIR
set -euo pipefail
src=$(cd "$1" && pwd) work=$2
pkgs=(railyard librailyard-dev librailyard0)
fail() { echo "FAIL: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || { echo "SKIP: installs packages: needs root"; exit 77; }
for t in apt-get dpkg-deb dpkg-shlibdeps cpack; do
	command -v $t >/dev/null ||
		{ echo "SKIP: no $t (Debian: apt, dpkg-dev, cmake)"; exit 77; }
done
for p in "${pkgs[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q installed; then
		echo "SKIP: package $p is already installed here"
		exit 77
	fi
done
had_user=0
getent passwd railyard >/dev/null && had_user=1

installed=0
cleanup() {
	local rc=$?
	if ((installed)); then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq \
			"${pkgs[@]}" >/dev/null 2>&1 || true
	fi
	if ((!had_user)) && getent passwd railyard >/dev/null; then
		userdel railyard 2>/dev/null || true
		getent group railyard >/dev/null && groupdel railyard || true
	fi
	exit $rc
}
trap cleanup EXIT

echo "== build with prefix /usr, cpack -G DEB"
rm -rf "$work"
mkdir -p "$work"
CC=${CC:-gcc} cmake -S "$src" -B "$work/build" -DCMAKE_INSTALL_PREFIX=/usr \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRY_BUILD_TESTS=OFF >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
(cd "$work/build" && cpack -G DEB >/dev/null)
debs=("$work"/build/*.deb)
((${#debs[@]} == 3)) || fail "expected 3 packages, got: ${debs[*]}"
for p in "${pkgs[@]}"; do
	[[ -f $(ls "$work"/build/"${p}"_*.deb) ]] || fail "no package $p"
done
# every file the build installs is in one of the packages: an install()
# rule without a COMPONENT (lib, dev, railyard) would be left out silently
DESTDIR=$work/all cmake --install "$work/build" >/dev/null
(cd "$work/all" && find . ! -type d | sed 's|^\./|/|' | sort) >"$work/installed"
for d in "${debs[@]}"; do
	dpkg-deb -c "$d" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }'
done | sort >"$work/packaged"
missing=$(comm -23 "$work/installed" "$work/packaged")
[[ -z $missing ]] ||
	fail "installed but in no package (give the install() a COMPONENT):
$missing"
lib=$(ls "$work"/build/librailyard0_*.deb)
# (listed to a file: grep -q closing the pipe early fails under pipefail)
dpkg-deb -c "$lib" >"$work/lib.list"
grep -q 'librailyard\.so\.0 ' "$work/lib.list" ||
	fail "librailyard0 does not hold librailyard.so.0"
! grep -q 'librailyard\.a$\|/include/\|librailyard\.so$' "$work/lib.list" ||
	fail "librailyard0 holds development files"
shlibs=$(dpkg-deb --ctrl-tarfile "$lib" | tar xO ./shlibs)
ver=$(dpkg-deb -f "$lib" Version)
[[ $shlibs == "librailyard 0 librailyard0 (>= $ver)" ]] ||
	fail "librailyard0's shlibs file says: $shlibs"
echo "librailyard0 shlibs: $shlibs"

echo "== apt-get install ./*.deb"
installed=1
(cd "$work/build" && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	--no-install-recommends ./*.deb >/dev/null)
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" | grep -q "install ok installed" ||
		fail "$p not installed"
done
# nothing from an earlier `make install` under /usr/local may stand in
# for the packages' files: every check below names the packaged path
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	gcc -print-multiarch)
libdir=/usr/lib/$multiarch
[[ -x /usr/bin/railyard && -f $libdir/librailyard.so.0 ]] ||
	fail "packaged files missing"
getent passwd railyard >/dev/null || fail "postinst made no railyard user"
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null ||
	echo /lib/systemd/system)
[[ -f $unitdir/railyard.service ]] || fail "no $unitdir/railyard.service"
[[ -f /etc/railyard/railyard.conf ]] || fail "no /etc/railyard/railyard.conf"
/usr/bin/railyard check-config /etc/railyard/railyard.conf >/dev/null ||
	fail "the packaged config does not pass check-config"
if command -v systemd-analyze >/dev/null; then
	out=$(systemd-analyze --man=no verify "$unitdir/railyard.service" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[[ -z $out ]] || fail "systemd-analyze verify says: $out"
	echo "installed unit: systemd-analyze verify clean"
fi

echo "== railyard demo (the packaged tool)"
# exit 0: nothing lost across the pulled and plugged rail
/usr/bin/railyard demo --duration 3 >"$work/demo.txt" 2>&1 ||
	fail "railyard demo: $(cat "$work/demo.txt")"
tail -n 1 "$work/demo.txt"

echo "== consumer with pkg-config (installed railyard.pc)"
(
	unset PKG_CONFIG_PATH
	[[ $(realpath -m "$(pkg-config --variable=libdir railyard)") == "$libdir" ]] ||
		fail "pkg-config finds railyard.pc elsewhere: $(pkg-config --variable=libdir railyard)"
	${CC:-gcc} -o "$work/consumer_pc" "$src/tests/install/consumer.c" \
		$(pkg-config --cflags --libs railyard)
)
# the library a program loads, as a real path (/lib is /usr/lib, merged)
loads() {
	realpath "$(ldd "$1" | awk '$1 == "librailyard.so.0" { print $3 }')"
}
[[ $(loads "$work/consumer_pc") == "$libdir/librailyard.so.$ver" ]] ||
	fail "consumer_pc loads $(loads "$work/consumer_pc"), not the package's"
"$work/consumer_pc"

echo "== consumer with find_package (installed CMake package)"
cmake -S "$src/tests/install" -B "$work/consumer" \
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -Drailyard_DIR= >/dev/null
dir=$(sed -n 's/^railyard_DIR:[A-Z]*=//p' "$work/consumer/CMakeCache.txt")
[[ $dir == "$libdir/cmake/railyard" ]] ||
	fail "find_package found railyard in $dir, not $libdir/cmake/railyard"
cmake --build "$work/consumer" >/dev/null
[[ $(loads "$work/consumer/consumer_shared") == "$libdir/librailyard.so.$ver" ]] ||
	fail "consumer_shared loads $(loads "$work/consumer/consumer_shared")"
"$work/consumer/consumer_shared"
"$work/consumer/consumer_static"

echo "== apt-get purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${pkgs[@]}" >/dev/null
installed=0
for p in "${pkgs[@]}"; do
	! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q installed ||
		fail "$p still installed after purge"
done
for f in /usr/bin/railyard /usr/bin/railyard-objd "$libdir/librailyard.so.0" \
	"$libdir/pkgconfig/railyard.pc" /usr/include/railyard \
	"$unitdir/railyard.service" /etc/railyard; do
	[[ ! -e $f ]] || fail "$f left after purge"
done
echo "packages: ok"
