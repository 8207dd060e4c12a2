#!/usr/bin/env bash
# Install railyard into a scratch prefix and build an out-of-tree program
# against it twice: with pkg-config and with find_package(railyard).  Also
# checks that the shared library exports only public ry_ symbols.
# usage: run.sh BUILD_DIR SCRATCH_DIR SOURCE_DIR
set -euo pipefail
build=$1 root=$2 src=$3
rm -rf "$root"
mkdir -p "$root"
cmake --install "$build" --prefix "$root/usr" >/dev/null
libdir=$(dirname "$(find "$root/usr" -name railyard.pc | head -n1)")/..
libdir=$(cd "$libdir" && pwd)
export PKG_CONFIG_PATH=$libdir/pkgconfig
export LD_LIBRARY_PATH=$libdir

echo "== pkg-config"
${CC:-cc} ${CFLAGS:-} -o "$root/consumer_pc" "$src/consumer.c" \
	$(pkg-config --cflags --libs railyard)
"$root/consumer_pc"

echo "== pkg-config --static"
${CC:-cc} ${CFLAGS:-} -o "$root/consumer_pc_static" "$src/consumer.c" \
	$(pkg-config --cflags railyard) "$libdir/librailyard.a" \
	$(pkg-config --static --libs-only-l railyard | sed 's/-lrailyard//')
"$root/consumer_pc_static"

echo "== find_package"
cmake -S "$src" -B "$root/cmake-build" -DCMAKE_PREFIX_PATH="$root/usr" \
	-DCMAKE_C_FLAGS="${CFLAGS:-}" \
	>/dev/null
cmake --build "$root/cmake-build" >/dev/null
"$root/cmake-build/consumer_shared"
"$root/cmake-build/consumer_static"

echo "== test hooks stay in the tree"
if find "$root/usr" -name testing.h | grep -q .; then
	echo "railyard/testing.h is installed"
	exit 1
fi

echo "== exported symbols"
so=$(ls "$libdir"/librailyard.so.* | head -n1)
readelf -d "$so" | grep -q 'SONAME.*librailyard.so.0' ||
	{ echo "SONAME is not librailyard.so.0"; exit 1; }
# Section bounds the fuzzer's coverage instrumentation adds (RY_FUZZ
# builds) are the toolchain's, not our API; RAILYARD_x.y is the version
# node (src/librailyard.map; tests/abi checks every symbol carries it).
bad=$(nm -D --defined-only "$so" | awk '{print $3}' |
	grep -v -E '^ry_[a-z0-9]|^__(start|stop)___sancov_|^RAILYARD_[0-9.]+$' ||
	true)
if [[ -n $bad ]]; then
	echo "symbols exported that are not public ry_ API:"
	echo "$bad"
	exit 1
fi
internal=$(nm -D --defined-only "$so" | awk '{print $3}' | grep '^ry__' || true)
[[ -z $internal ]] || { echo "internal symbols exported: $internal"; exit 1; }
echo "$(nm -D --defined-only "$so" | wc -l) symbols exported, all ry_"
echo "install consumer: ok"
