#!/usr/bin/env bash
# Fetch Debian's source of the installed fio (same version) and configure
# it, for building the railyard fio engine against its headers: fio ships
# no -dev package.  apt-get source needs a deb-src entry; this script
# brings its own (a private sources list and apt state under DIR), so the
# machine's apt configuration is not touched.
# usage: fetch-fio-source.sh DIR     prints the configured source tree
# Exits 1 with the reason when fio is not installed or the source cannot
# be had (no network, no such version in the archive).
set -euo pipefail
dir=$(mkdir -p "$1" && cd "$1" && pwd)
ver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) ||
	{ echo "fetch-fio-source: fio is not installed (apt-get install fio)" >&2; exit 1; }
upstream=${ver%-*}
upstream=${upstream#*:}
src=$dir/fio-$upstream
if [[ -f $src/config-host.h ]]; then
	echo "$src"
	exit 0
fi
# shellcheck disable=SC1091
. /etc/os-release
codename=${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}
apt=$dir/apt
mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
cat >"$apt/parts/deb-src.sources" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
o=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
   -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
   -o APT::Sandbox::User=root)
apt-get "${o[@]}" update -qq >&2 ||
	{ echo "fetch-fio-source: apt-get update of deb-src failed" >&2; exit 1; }
(cd "$dir" && apt-get "${o[@]}" source --download-only -qq "fio=$ver" >&2) ||
	{ echo "fetch-fio-source: no source of fio $ver" >&2; exit 1; }
rm -rf "$src"
dpkg-source --no-check -x "$dir"/fio_"${ver#*:}".dsc "$src" >/dev/null
# Debian's own flags (debian/rules) less the GUI and libnbd, which need
# their -dev packages and change nothing an engine sees
(cd "$src" && ./configure --disable-native --prefix=/usr >"$dir/configure.log" 2>&1) ||
	{ echo "fetch-fio-source: fio's configure failed: $dir/configure.log" >&2; exit 1; }
echo "$src"
