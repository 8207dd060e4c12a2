#!/usr/bin/env bash
# librailyard.so exports the public API and nothing else, every symbol
# under a version node: the functions its dynamic symbol table defines,
# the RY_API declarations of the installed headers and the global list of
# src/librailyard.map are one and the same set, each named by a manual
# page of src/man/.
# usage: check-symbols.sh LIBRARY.so SOURCE_DIR
set -euo pipefail
so=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$so" | awk '{print $2, $3}' >"$tmp/nm"
bad=0
# versions nodes show as absolute symbols; sancov bounds come with RY_FUZZ
while read -r type name; do
	case $type:$name in
	A:RAILYARD_*) ;;
	[TDBRVW]:ry_*@@RAILYARD_* | [TDBRVW]:ry_*@RAILYARD_*)
		[[ $name != ry__* ]] || { echo "internal symbol exported: $name"; bad=1; } ;;
	*:__start___sancov_* | *:__stop___sancov_*) ;;
	*) echo "exported without a version node or not public: $type $name"
	   bad=1 ;;
	esac
done <"$tmp/nm"
grep -o '^ry_[a-z0-9_]*' <(awk '{print $2}' "$tmp/nm") | sort -u >"$tmp/lib"
[[ -s $tmp/lib ]] || { echo "no ry_ symbol exported"; exit 1; }

# RY_API name( in the installed headers (testing.h is not installed)
for h in "$src"/include/railyard/*.h; do
	[[ $(basename "$h") == testing.h ]] && continue
	tr '\n' ' ' <"$h" | grep -o 'RY_API [^(;]*(' |
		grep -o 'ry_[a-z0-9_]*($' | tr -d '(' || true
done | sort -u >"$tmp/hdr"
sed -n '/global:/,/local:/p' "$src/src/librailyard.map" |
	grep -o '^[[:space:]]*ry_[a-z0-9_]*;' | tr -d ' \t;' | sort -u >"$tmp/map"

for pair in "lib hdr library headers" "map hdr src/librailyard.map headers"; do
	set -- $pair
	if ! diff -u "$tmp/$1" "$tmp/$2" >"$tmp/diff"; then
		echo "$3 and $4 differ (- $3 only, + $4 only):"
		grep '^[-+]ry_' "$tmp/diff"
		bad=1
	fi
done
# and each has a manual page: a .Nm of src/man/*.3
grep -h '^\.Nm ry_' "$src"/src/man/*.3 | awk '{print $2}' | sort -u >"$tmp/man"
undoc=$(comm -23 "$tmp/lib" "$tmp/man")
if [[ -n $undoc ]]; then
	echo "exported without a manual page (src/man/*.3):" $undoc
	bad=1
fi
if grep -qE '^RY_API ' "$src/include/railyard/testing.h"; then
	echo "testing.h marks a test hook RY_API: it would be exported"
	bad=1
fi
((bad == 0)) || exit 1
echo "$(wc -l <"$tmp/lib") ry_ symbols exported, each versioned; headers and map agree"
