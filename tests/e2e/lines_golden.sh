#!/bin/bash
# Golden cases of --format lines: each directory of tests/e2e/golden/ (see its README.md) holds
# inputs, options and the expected output (made by GNU sort and read by hand). dsort sorts each
# case at NRANKS ranks with -o FILE and with -O DIR (the parts concatenated in name order, and
# _SUCCESS); both must equal the expected file byte for byte, and nothing may be left in the
# temp dir. The expected files are also compared with this machine's GNU sort (a difference
# there is only a note: the committed file is the reference). Usage: lines_golden.sh NRANKS
# DSORT_LINES_CMD runs another program instead of dsort (a stand-in while developing).
. "$(dirname "$0")/lib.sh"
suite_init "$1"

GOLDEN=$(cd "$(dirname "$0")/golden" && pwd)
DSORT=${DSORT_LINES_CMD:-$DSORT}
cases=0

# same WHAT EXPECTED ACTUAL: byte-identical; else show the first differences (cat -A).
same() {
    CHECKS=$((CHECKS + 1))
    if ! cmp -s "$2" "$3"; then
        fail "$1: differs from $2"
        diff <(cat -A "$2") <(cat -A "$3" 2>&1) | head -n 20 | sed 's/^/  | /' >&2
        return 1
    fi
}

# lok N CMD...: ok, and when the status is not 0, dsort's own lines of stderr too.
lok() {
    ok "$@" && return 0
    grep -a -m 3 '^dsort' "$T/stderr" | sed 's/^/  dsort said: /' >&2
    return 1
}

for dir in "$GOLDEN"/*/; do
    dir=${dir%/}
    name=$(basename "$dir")
    if [ ! -f "$dir/args" ] || [ ! -f "$dir/expected" ]; then die "$dir: no args or expected file"; fi
    read -ra opts <<<"$(grep -v '^#' "$dir/args" | head -n 1)"
    inputs=("$dir"/input*)
    [ -f "${inputs[0]}" ] || die "$dir: no input"
    cases=$((cases + 1))
    if ! LC_ALL=C sort "${opts[@]}" "${inputs[@]}" 2>&1 | cmp -s - "$dir/expected"; then
        echo "note: $name: GNU sort here ($(sort --version | head -n 1)) no longer prints $dir/expected"
    fi
    rm -rf "$T/o"
    mkdir "$T/o"
    lok "$N" "$DSORT" --format lines "${opts[@]}" -o "$T/o/sorted" "${inputs[@]}" &&
        same "$name: dsort ${opts[*]} -o" "$dir/expected" "$T/o/sorted"
    lok "$N" "$DSORT" --format lines "${opts[@]}" -O "$T/o/d" "${inputs[@]}" && {
        parts=()
        for ((i = 0; i < N; i++)); do parts+=("$(printf '%s/part-%05d' "$T/o/d" "$i")"); done
        eq "$name: -O: files in the directory" \
            "$(printf '%s\n' "${parts[@]##*/}" _SUCCESS | LC_ALL=C sort | tr '\n' ' ')" \
            "$(find "$T/o/d" -mindepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ')"
        cat "${parts[@]}" >"$T/cat" 2>/dev/null
        same "$name: dsort ${opts[*]} -O, parts concatenated" "$dir/expected" "$T/cat"
    }
    eq "$name: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")" || find "$TMPDIR" -mindepth 1 -delete
    echo "  $name: dsort --format lines ${opts[*]} ${inputs[*]##*/}"
done
[ "$cases" -ge 10 ] || die "only $cases golden cases in $GOLDEN"
suite_finish
