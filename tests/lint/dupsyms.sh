#!/usr/bin/env bash
# build.dupsyms: no global symbol is defined twice among what one program links. A static
# library's member is pulled only for a symbol still undefined, so a name defined both in a
# program's own objects and in a library (or in two libraries) links without a word, and the
# program silently calls whichever definition the linker met first: dsort's --stats once wrote
# '"format": ,' because the core's JSON writer shared its name with a function of the CLI's
# json_min.c. This check sees it at build time.
# Usage: dupsyms.sh LIB.a... -- OBJDIR...   (each OBJDIR: one program's CMakeFiles/X.dir)
set -u
libs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do libs+=("$1"); shift; done
shift
status=0
defined() { # the global, strong definitions in the files given, one "symbol file" a line
    local f
    for f in "$@"; do
        nm -g --defined-only "$f" 2>/dev/null | awk -v f="${f##*/}" 'NF == 3 && $2 ~ /^[TDBRG]$/ {print $3, f}'
    done
}
for lib in "${libs[@]}"; do
    [ -f "$lib" ] || { echo "dupsyms: no library '$lib' (build first)"; exit 1; }
done
for dir in "$@"; do
    mapfile -t objs < <(find "$dir" -name '*.o' | sort)
    [ "${#objs[@]}" -gt 0 ] || { echo "dupsyms: no objects in '$dir' (build first)"; exit 1; }
    dups=$( { defined "${objs[@]}"; defined "${libs[@]}"; } | sort -u | awk '
        { n[$1]++; w[$1] = w[$1] " " $2 }
        END { for (s in n) if (n[s] > 1) print s ":" w[s] }' | sort)
    if [ -n "$dups" ]; then
        echo "FAIL: ${dir##*/} and its libraries define a symbol twice:"
        echo "$dups" | sed 's/^/  /'
        status=1
    fi
done
[ "$status" = 0 ] && echo "dupsyms: ${#libs[@]} libraries, $# programs: every global symbol defined once"
exit "$status"
