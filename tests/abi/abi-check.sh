#!/usr/bin/env bash
# The ABI of librailyard.so against the dump of the last release
# (tests/abi/librailyard.abi), with abidiff from Debian's abigail-tools.
# Fails on any change the suppressions (librailyard.suppr) do not call
# compatible: a removed or changed function, a changed public type.  Added
# functions pass.  How to announce a break on purpose: tests/abi/README.md.
#   abi-check.sh LIBRARY.so SOURCE_DIR           compare
#   abi-check.sh --update LIBRARY.so SOURCE_DIR  write a new baseline
set -euo pipefail
update=0
if [[ ${1:-} == --update ]]; then
	update=1
	shift
fi
so=$1 src=$2
dir=$src/tests/abi
if ! command -v abidiff >/dev/null || ! command -v abidw >/dev/null; then
	echo "SKIP: abidiff/abidw not installed (Debian: abigail-tools)"
	exit 77
fi
if ! readelf -S "$so" | grep -q '\.debug_info'; then
	echo "SKIP: $so has no debug info (a Release build): nothing to compare"
	exit 77
fi
# Types defined in the public headers are the ABI; the library's own
# (struct ry_manager's insides, libc's, libibverbs') are not: their
# changes are not reported.  abidiff matches headers by absolute path.
hdir=$(cd "$src/include/railyard" && pwd)
if ((update)); then
	abidw --no-corpus-path --no-comp-dir-path --short-locs \
		--drop-private-types --hd "$hdir" \
		--out-file "$dir/librailyard.abi" "$so"
	echo "wrote $dir/librailyard.abi"
	exit 0
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
set +e
abidiff --leaf-changes-only --hd2 "$hdir" --drop-private-types \
	"$dir/librailyard.abi" "$so" >"$out"
rc=$?
set -e
cat "$out"
# abidiff's exit status is a bit field: 1 error, 2 usage, 4 a change,
# 8 an incompatible change
if ((rc & 3)); then
	echo "abidiff could not compare (exit $rc)"
	exit 1
fi
# The one change allowed without an announcement: struct ry_config grown
# by members appended at its end, which the library recognises by rc_size
# and completes with defaults (include/railyard/config.h).  Checked here
# rather than with a suppression file: abigail-tools 2.2's
# has_data_member_inserted_at = end also hides a struct whose members
# moved when nothing was inserted into it.
# "At the end" means past the old dump's last member: a member appended
# into the old tail padding leaves the size as it was, so the size is no
# guide.
last_member=$(awk "/class-decl name='ry_config' /,/<\/class-decl>/" \
	"$dir/librailyard.abi" |
	sed -n "s/.*layout-offset-in-bits='\([0-9]*\)'.*/\1/p" | tail -1)
appended_only() {
	awk -v last="${last_member:-0}" '
	/^Removed\/Changed\/Added functions summary:/ {
		if ($4 != 0 || $6 != 0) bad = 1 }
	/^Removed\/Changed\/Added variables summary:/ {
		if ($4 != 0 || $6 != 0) bad = 1 }
	/^\x27/ { blk = ($0 ~ /^\x27struct ry_config at /) ? "cfg" : "other"
		 if (blk == "other") bad = 1; next }
	blk == "cfg" && /type size (changed from|hasn.t changed)/ { next }
	blk == "cfg" && /data member insertions?:/ { next }
	blk == "cfg" && /, at offset [0-9]+ \(in bits\)/ {
		for (i = 1; i <= NF; i++) if ($i == "offset") off = $(i + 1)
		if (off + 0 <= last + 0) bad = 1; next }
	blk == "cfg" && NF { bad = 1 }
	END { exit bad }' "$out"
}
if ((rc & 8)) || { ((rc & 4)) && ! appended_only; }; then
	echo "ABI changed against tests/abi/librailyard.abi ($([[ $((rc & 8)) -ne 0 ]] && echo incompatible || echo unannounced))."
	echo "If that is meant: tests/abi/README.md (bump the version node and SOVERSION, refresh the dump)."
	exit 1
fi
echo "ABI unchanged against tests/abi/librailyard.abi (compatible additions allowed)"
