#!/bin/bash
# Sorting in place, as GNU sort does: -o FILE naming one of the inputs (the same name, another
# spelling, a hard link, a symbolic link), checked against `LC_ALL=C sort` of a copy, for text
# lines and fixed records, in memory and out of core (--out-of-core -S 64K). The output
# replaces FILE by a rename once every rank has read everything, so a run that fails after
# reading (a write of the staged output fails, or the commit's rename fails: faults injected
# with tests/faults' LD_PRELOAD shim) leaves FILE byte for byte as it was, with its inode and
# times. Refused with --checkpoint (the checkpoint names the inputs; also tests/e2e/badinput.sh).
# Usage: inplace.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=60
RUN_FLAGS=(-q)
export LC_ALL=C

D=$T/data
mkdir -p "$D" "$T/w/sub"
python3 - "$SEED" "$D" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]))
d = sys.argv[2]
with open(d + "/lines", "w") as out:  # "word num" lines, with duplicates; about 250 KB
    words = ["ann", "Bob", "cy", "dee", "", "z z"]
    for _ in range(20000):
        out.write("%s %d\n" % (rnd.choice(words), rnd.randint(-500, 500)))
with open(d + "/recs", "w") as out:  # 8-byte records: 7 digits and a newline; 160 KB
    out.write("".join("%07d\n" % rnd.randint(0, 99999) for _ in range(20000)))
with open(d + "/more", "w") as out:
    out.write("".join("%07d\n" % rnd.randint(0, 99999) for _ in range(3000)))
EOF
W=$T/w

# inplace WHAT FILE_TO_COPY -- DSORT_ARG... -- SORT_ARG...: copy the data to $W/in (the names
# $W/in, ./ spellings, $W/hard and $W/sym reach it), run dsort with DSORT_ARGs (which name the
# output), and compare $W/in (or $W/hard when CHECK_HARD=1: the output is a new file under the
# name given, so the file's other hard links keep the old data) with GNU sort's output for
# SORT_ARGs on the original data.
inplace() {
    local what=$1 src=$2 dargs=() sargs=()
    shift 3
    while [ "$1" != -- ]; do
        dargs+=("$1")
        shift
    done
    shift
    sargs=("$@")
    rm -f "$W/in" "$W/hard" "$W/sym" "$W/sub/in2"
    cp "$src" "$W/in"
    cp "$D/more" "$W/sub/in2"
    ln "$W/in" "$W/hard"
    ln -s in "$W/sym"
    sort "${sargs[@]}" >"$T/gnu.out" </dev/null
    ok "$N" "$DSORT" "${dargs[@]}" || return 1
    local f=$W/in
    [ "${CHECK_HARD:-0}" = 1 ] && f=$W/hard
    CHECKS=$((CHECKS + 1))
    if ! cmp -s "$T/gnu.out" "$f"; then
        fail "$what: the sorted-in-place file differs from GNU sort's output: $(cmp "$T/gnu.out" "$f" 2>&1 | head -n 1)"
        return 1
    fi
    eq "$what: the symbolic link stays a link" "in" "$(readlink "$W/sym")"
    eq "$what: no temp files left in \$TMPDIR or beside the file" "" "$(ls -A "$TMPDIR"; ls -A "$W" | grep -v '^\(in\|hard\|sym\|sub\)$')"
}

L=(--format lines)
F=(--format fixed:8:0:8)
EXT=(--out-of-core -S 64K)
for mode in mem ext; do
    x=() xf=()
    [ "$mode" = ext ] && x=("${EXT[@]}") xf=(--out-of-core -S 2M)
    echo "== $mode: lines"
    inplace "$mode lines -k2,2n -o the input" "$D/lines" -- "${L[@]}" "${x[@]}" -k2,2n "$W/in" -o "$W/in" -- \
        -k2,2n "$D/lines"
    inplace "$mode lines -r -o ./ spelling" "$D/lines" -- "${L[@]}" "${x[@]}" -r "$W/in" -o "$W/sub/../in" -- \
        -r "$D/lines"
    inplace "$mode lines -u -o through a symlink" "$D/lines" -- "${L[@]}" "${x[@]}" -u "$W/in" -o "$W/sym" -- \
        -u "$D/lines"
    CHECK_HARD=1 inplace "$mode lines, two inputs, -o the first by its hard link" "$D/lines" -- "${L[@]}" "${x[@]}" \
        -k1,1 -k2,2nr "$W/in" "$W/sub/in2" -o "$W/hard" -- -k1,1 -k2,2nr "$D/lines" "$D/more"
    echo "== $mode: fixed records"
    inplace "$mode fixed:8:0:8 -o the input" "$D/recs" -- "${F[@]}" "${xf[@]}" "$W/in" -o "$W/in" -- "$D/recs"
    inplace "$mode fixed:8:0:8 -o a symlink, the input given twice" "$D/recs" -- "${F[@]}" "${xf[@]}" \
        "$W/sub/in2" "$W/in" "$W/in" -o "$W/sym" -- "$D/more" "$D/recs" "$D/recs"
done

echo "== a run that fails after reading leaves the input untouched"
SHIM=${DSORT_FAULT_SHIM:-}
if [ -n "$SHIM" ] && [ -f "$SHIM" ]; then
    rm -f "$W/hard" "$W/sym"
    for mode in mem ext; do
        x=() xf=()
        [ "$mode" = ext ] && x=("${EXT[@]}") xf=(--out-of-core -S 2M)
        for fault in "FAULT_MODE=eio FAULT_OP=write FAULT_PATH=/.in.dsort-" "FAULT_RENAME=/w/in"; do
            for fmt in lines fixed:8:0:8; do
                rm -f "$W/in"
                cp "$D/recs" "$W/in"
                before=$(file_state "$W/in"; stat -c '%i' "$W/in")
                # shellcheck disable=SC2086 # the fault's words, on purpose
                run "$N" env LD_PRELOAD="$SHIM" \
                    ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" $fault "$DSORT" --format "$fmt" \
                    $([ "$fmt" = lines ] && echo "${x[*]} -k1,1r" || echo "${xf[*]} -r") "$W/in" -o "$W/in"
                eq "$mode $fmt, $fault: exit status 2" 2 "$RC"
                contains "$mode $fmt, $fault: the error names a rank" "$T/stderr" "^dsort: rank [0-9]+/$N "
                eq "$mode $fmt, $fault: the input is byte for byte as it was (same inode and times)" \
                    "$before" "$(file_state "$W/in"; stat -c '%i' "$W/in")"
                eq "$mode $fmt, $fault: nothing left beside it" "in" "$(ls -A "$W" | grep -v '^sub$')"
                eq "$mode $fmt, $fault: nothing left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
            done
        done
    done
else
    echo "note: skipped the fault cases: DSORT_FAULT_SHIM is not set (run through ctest)"
fi

echo "== refused with --checkpoint"
cp "$D/lines" "$W/in"
ln -sf in "$W/sym"
before=$(file_state "$W/in")
expect_rc 2 "$N" "$DSORT" "${L[@]}" --checkpoint "$W/in" -o "$W/sym"
contains "--checkpoint in place: refused" "$T/stderr" \
    "^dsort: rank 0/$N .*output '$W/sym' is also an input: sorting in place does not go with --checkpoint"
eq "--checkpoint in place: the input is untouched" "$before" "$(file_state "$W/in")"
suite_finish
