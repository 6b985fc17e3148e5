#!/bin/bash
# Outputs that cannot or must not be written (issue 9), in memory:
#   - -o FILE and -O DIR in a read-only directory (a read-only tmpfs: chmod does not stop root):
#     exit 2 within 10 s, a line naming the rank and the path, nothing created there (skipped,
#     and reported so, when the tmpfs cannot be mounted);
#   - -O on a directory that is not empty: exit 2, the directory and its file untouched, no
#     staging directory left beside it;
#   - -o onto a character device (mknod c 1 3): whatever the exit status, the device is still
#     that device afterwards and no hidden temp is left beside it;
#   - --stats naming an input: the input is unchanged afterwards (and the sort either fails
#     with exit 2 committing nothing, or succeeds with the right output);
#   - two -o options: exit 2, and neither file exists.
# Usage: outputs.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data mem
pipeline_args mem

RO=$T/ro
RO_WHY=""
if mount_tmpfs "$RO" 1M; then
    mount -o remount,ro "$RO" 2>/dev/null || RO_WHY="cannot remount $RO read-only"
else
    RO_WHY=$MOUNT_WHY
fi

# ro_case KIND
ro_case() {
    case_begin "$([ "$1" = O ] && echo "-O DIR" || echo "-o FILE") in a read-only directory (ro tmpfs)" mem \
        "exit 2 within 10 s; error naming rank and path; nothing created"
    if [ -n "$RO_WHY" ]; then
        case_skip "$RO_WHY"
    else
        out_setup "$1" "$RO"
        run_job "$N" "${OUTARGS[@]}" "${PARGS[@]}"
        check_exit 2
        check_prompt
        check_rank_line "$RO"
        check_final
        eq "files in the read-only directory" "" "$(listing "$RO")"
    fi
    case_end
}
ro_case o-new
ro_case O

case_begin "-O on a non-empty directory" mem "exit 2; the directory and its file untouched; no staging left"
mkdir -p "$C/out/parts"
printf 'keep me\n' >"$C/out/parts/keep"
OUT_KIND=O OUT_FINAL=$C/out/parts
run_job "$N" -O "$C/out/parts" "${PARGS[@]}"
check_exit 2
check_rank_line "parts"
eq "the directory's files" keep "$(listing "$C/out/parts")"
eq "its file's content" "keep me" "$(cat "$C/out/parts/keep")"
eq "files beside it" parts "$(listing "$C/out")"
case_end

case_begin "-o onto a character device (mknod c 1 3)" mem "the device is never replaced; no temp left beside it"
if mknod "$C/out/null" c 1 3 2>/dev/null; then
    run_job "$N" -o "$C/out/null" "${PARGS[@]}"
    note "exit $RC"
    eq "what -o named afterwards" "character special file 1:3" "$(stat -c '%F %t:%T' "$C/out/null" 2>&1)"
    eq "files beside it" null "$(listing "$C/out")"
    grep -q '^dsort' "$T/stderr" && note "\"$(grep -m1 '^dsort' "$T/stderr" | short_paths | cut -c1-160)\""
else
    case_skip "mknod failed (not root?)"
fi
case_end

case_begin "--stats naming an input" mem "the input is not overwritten; exit 2 and nothing committed, or exit 0 and a right output"
cp "$MEM" "$C/input.dat"
before=$(sha256sum <"$C/input.dat")
OUT_KIND=o-new OUT_FINAL=$C/out/sorted.dat OUT_DIR=$C/out
run_job "$N" --stats "$C/input.dat" -o "$C/out/sorted.dat" "$C/input.dat"
[ "$RC" -ne 0 ] || note "exit $RC"
eq "the input's sha256 afterwards" "$before" "$(sha256sum <"$C/input.dat")"
if [ "$RC" -eq 0 ]; then
    same_file "the output" 100 "$MEM_REF" "$C/out/sorted.dat"
else
    check_exit 2
    check_final
    grep -q '^dsort' "$T/stderr" && note "\"$(grep -m1 '^dsort' "$T/stderr" | short_paths | cut -c1-160)\""
fi
case_end

case_begin "two -o options" mem "exit 2; neither file exists"
run_job "$N" -o "$C/out/a.dat" -o "$C/out/b.dat" "${PARGS[@]}"
check_exit 2
eq "files in the output directory" "" "$(listing "$C/out")"
grep -q '^dsort' "$T/stderr" && note "\"$(grep -m1 '^dsort' "$T/stderr" | short_paths | cut -c1-160)\""
case_end
suite_finish
