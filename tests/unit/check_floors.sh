#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The manager's floors (README, layout): no circle of more than MAX files
# among src/, counting calls (a symbol one object file uses and another
# defines, from nm) and includes (#include "src/..." lines).  A circle is
# a strongly connected component of that graph: every file in it reaches
# every other one.
#
#   check_floors.sh SRC_DIR BUILD_DIR [MAX]
#
# Prints every circle of more than one file, largest first; exits 1 if one
# has more than MAX files (default 5), 77 if there are no object files.
set -euo pipefail

src=${1:?source dir}
build=${2:?build dir}
max=${3:-5}

mapfile -t objs < <(find "$build" -name '*.c.o' \
	\( -path '*ry_core.dir/src/*' -o -path '*railyard-cli.dir/*' \) |
	sort)
if ((${#objs[@]} == 0)); then
	echo "check_floors: no object files under $build (build first)"
	exit 77
fi

# "src/x.c" for an object file
name_of() {
	case $1 in
	*ry_core.dir/*) echo "${1#*ry_core.dir/}" | sed 's/\.o$//' ;;
	*railyard-cli.dir/*) echo "src/cli/${1#*railyard-cli.dir/}" |
		sed 's/\.o$//' ;;
	esac
}

# an object left in a build tree by a source since removed is not code
live=()
for o in "${objs[@]}"; do
	[[ ! -f $src/$(name_of "$o") ]] || live+=("$o")
done
objs=("${live[@]}")

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
{
	# calls: "D file sym" for a definition, "U file sym" for a use
	for o in "${objs[@]}"; do
		f=$(name_of "$o")
		nm -P "$o" | awk -v f="$f" '
			$2 == "U" { print "U", f, $1; next }
			$2 ~ /^[TDBRVW]$/ { print "D", f, $1 }'
	done | awk '
		$1 == "D" { def[$3] = $2; next }
		{ use[NR] = $2 " " $3 }
		END {
			for (i in use) {
				split(use[i], u, " ")
				if ((u[2] in def) && def[u[2]] != u[1])
					print u[1], def[u[2]]
			}
		}'
	# includes of our own headers
	(cd "$src" && grep -H -o '^#include "src/[^"]*"' \
		$(find src -name '*.[ch]') 2>/dev/null || true) |
		sed 's/:#include "\(.*\)"$/ \1/'
} | sort -u >"$edges"

# Strongly connected components by transitive closure (a few dozen files).
awk -v max="$max" '
	{
		if (!($1 in id)) { id[$1] = n; nm[n++] = $1 }
		if (!($2 in id)) { id[$2] = n; nm[n++] = $2 }
		r[id[$1], id[$2]] = 1
	}
	END {
		for (k = 0; k < n; k++)
			for (i = 0; i < n; i++)
				if ((i, k) in r)
					for (j = 0; j < n; j++)
						if ((k, j) in r)
							r[i, j] = 1
		worst = 1
		for (i = 0; i < n; i++) {
			if (i in done)
				continue
			cnt = 1
			list = nm[i]
			for (j = 0; j < n; j++)
				if (j != i && ((i, j) in r) && ((j, i) in r)) {
					done[j] = 1
					cnt++
					list = list " " nm[j]
				}
			if (cnt > 1)
				printf "%d %s\n", cnt, list | "sort -rn"
			if (cnt > worst)
				worst = cnt
		}
		close("sort -rn")
		printf "largest circle: %d files (at most %d allowed)\n", worst, max
		exit worst > max
	}' "$edges"
