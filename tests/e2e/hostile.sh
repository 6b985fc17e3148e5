#!/bin/bash
# What a careless user does, round four (docs/reliability.md has rounds one to three): each case
# is one that broke, or could have broken, the user's data or made a failed job look complete.
#  - dsort-report -o onto a device, a FIFO or a symbolic link: the page replaced the node itself
#    (as root, `-o /dev/full` turned /dev/full into a regular file) and a link by a file; now a
#    node other than /dev/null is refused, /dev/null is written through, a link's target is
#    replaced and the link stays (as dsort -o and --stats do).
#  - a torn checkpoint: SIGTERM (Slurm's time limit) between the ranks' saves of one round
#    leaves one rank's manifest a round behind the others' (seen with gdb holding rank 0 in
#    dsort_ckpt_write). --resume did all the remaining work, then failed the conservation
#    check, then kept the checkpoint and asked for another --resume, which failed the same way
#    for ever. Made here by putting back one rank's manifest of the round before; the resume now
#    goes back to the round every rank kept (the other's save before) and finishes right; with
#    no save before it is refused at once, naming the tear, and leaves the checkpoint as it was.
#  - -o /dev/stdout (or /dev/fd/1) of a dsort run without mpirun, its standard output a file:
#    the commit renamed a new file over the one the shell opened, so what the log held before
#    was lost, and what the script printed after went to a deleted file. Now refused (leave out
#    -o to write standard output), the log whole.
# Usage: hostile.sh NRANKS
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
REPORT=$DSORT_BIN_DIR/dsort-report

mkdir -p "$T/in" "$T/o"
gen "$N" 20000 "$T/in/a.dat"

# ---- dsort-report's -o ----------------------------------------------------------------------
ok "$N" "$DSORT" --stats "$T/st.json" -o "$T/a.out" "$T/in/a.dat"
report_onto() { # WHAT PATH WANT-RC: dsort-report -o PATH; the node is what it was
    local what=$1 path=$2 want=$3 before
    before=$(stat -c '%F %t:%T' "$path")
    "$REPORT" "$T/st.json" -o "$path" >"$T/stdout" 2>"$T/stderr"
    eq "dsort-report -o onto $what: exit status" "$want" "$?"
    eq "dsort-report -o onto $what: still a $before" "$before" "$(stat -c '%F %t:%T' "$path")"
    eq "dsort-report -o onto $what: no temp file beside it" "" \
        "$(find "$(dirname "$path")" -name '*.tmp-*')"
}
mknod "$T/o/full" c 1 7
report_onto "a character device (1:7, /dev/full)" "$T/o/full" 2
contains "dsort-report -o onto a device: the error names it" "$T/stderr" "full.*character device"
mkfifo "$T/o/fifo"
report_onto "a FIFO" "$T/o/fifo" 2
mknod "$T/o/null" c 1 3
report_onto "a null device (1:3)" "$T/o/null" 0
echo old >"$T/o/target"
ln -s target "$T/o/link"
"$REPORT" "$T/st.json" -o "$T/o/link" >"$T/stdout" 2>"$T/stderr"
eq "dsort-report -o through a link: exit status" 0 "$?"
eq "dsort-report -o through a link: still a link" target "$(readlink "$T/o/link")"
contains "dsort-report -o through a link: the target holds the page" "$T/o/target" "</html>"

(
    echo before
    "$REPORT" "$T/st.json" -o /dev/stdout 2>"$T/stderr"
    echo "rc=$?"
    echo after
) >"$T/log"
eq "dsort-report -o /dev/stdout onto a log file: what the log holds" "before rc=2 after" \
    "$(tr '\n' ' ' <"$T/log" | sed 's/ $//')"
contains "dsort-report -o /dev/stdout: the error says why" "$T/stderr" "names an open file descriptor"

# ---- a torn checkpoint ---------------------------------------------------------------------
# Made by putting back rank 0's manifest of round 2 while rank 1 keeps round 3 (its save before,
# checkpoint.prev, is round 2's). --resume goes back to round 2 on rank 1, says so, and sorts
# right (the python oracle). Without rank 1's save before, it is refused at once, naming the
# tear, and leaves the checkpoint as it was. (tests/faults/resume.sh makes the tear with a real
# signal between the ranks' saves.)
if [ "$N" -ge 2 ]; then
    mkdir "$T/ck"
    gen "$N" 100000 "$T/in/b.dat" # 10 MB: about 7 rounds at -S 2M
    py sort "$T/b.ref" 100 0 10 - "$T/in/b.dat" || die "python oracle failed"
    ck=(-S 2M --checkpoint -T "$T/ck" -o "$T/torn.out" "$T/in/b.dat")
    expect_rc 3 "$N" "$DSORT" "${ck[@]}" --stop-after=2
    cp "$T"/ck/dsort-*-r0/checkpoint "$T/r0.round2"
    expect_rc 3 "$N" "$DSORT" "${ck[@]}" --stop-after=3 --resume
    cp "$T/r0.round2" "$T"/ck/dsort-*-r0/checkpoint
    eq "a torn checkpoint: rank 1's save before is round 2" "rounds 2" \
        "$(grep '^rounds ' "$T"/ck/dsort-*-r1/checkpoint.prev)"
    mv "$T"/ck/dsort-*-r1/checkpoint.prev "$T/r1.prev"
    before=$(dir_state "$T/ck")
    run "$N" "$DSORT" "${ck[@]}" --resume
    eq "a torn checkpoint, no save before: exit status" 2 "$RC"
    contains "a torn checkpoint, no save before: the error names the tear" "$T/stderr" \
        "rank 1/$N .*torn.*round 3.*round 2.*has not kept round 2"
    eq "a torn checkpoint, no save before: no output" "" "$(ls "$T/torn.out" 2>/dev/null)"
    eq "a torn checkpoint, no save before: left as it was" "$before" "$(dir_state "$T/ck")"
    mv "$T/r1.prev" "$(echo "$T"/ck/dsort-*-r1)/checkpoint.prev"
    run "$N" "$DSORT" "${ck[@]}" --resume
    eq "a torn checkpoint: exit status" 0 "$RC"
    contains "a torn checkpoint: rank 0 says it went back" "$T/stderr" \
        "^dsort: rank 0/$N \\([^)]+\\): note: the checkpoint was torn .*resuming from round 2"
    same_file "a torn checkpoint, resumed from round 2" 100 "$T/b.ref" "$T/torn.out"
    eq "a torn checkpoint: the temp dir after" "" "$(ls -A "$T/ck")"
fi

# ---- -o naming the standard output ---------------------------------------------------------
ln -s /dev/stdout "$T/o/to-stdout" # a link to it: refused where the links are followed
for name in /dev/stdout /dev/fd/1 /proc/self/fd/1 "$T/o/to-stdout"; do
    (
        echo before
        "$DSORT" -o "$name" "$T/in/a.dat" 2>"$T/stderr"
        echo "rc=$?"
        echo after
    ) >"$T/log"
    eq "-o $name onto a log file: what the log holds" "before rc=2 after" "$(tr '\n' ' ' <"$T/log" | sed 's/ $//')"
    contains "-o $name: the error says why" "$T/stderr" "names an open file descriptor.*leave out -o"
done

# ---- --stats naming the standard output ---------------------------------------------------
# Redirected to a file, it is refused as -o is (renamed over, the log was replaced: found in
# review). (Onto a pipe or a terminal, --stats was already refused: not a regular file.)
for name in /dev/stdout "$T/o/to-stdout"; do
    (
        echo before
        "$DSORT" --stats "$name" -o "$T/st.out" "$T/in/a.dat" 2>"$T/stderr"
        echo "rc=$?"
        echo after
    ) >"$T/log"
    eq "--stats $name onto a log file: what the log holds" "before rc=2 after" "$(tr '\n' ' ' <"$T/log" | sed 's/ $//')"
    contains "--stats $name: the error says why" "$T/stderr" "names an open file descriptor.*give --stats a file name"
done

# ---- the copying path's stage on a tiny share -----------------------------------------------
# --no-map sent each rank's pieces through a 16 MiB stage, allocated and touched whatever the
# share: 200 KB at 32 oversubscribed ranks took 1 GiB of the node (--stats rss_peak_kb, 31 MiB a
# rank against 15 MiB mapped). Now the stage is no larger than the largest piece: the peak of
# every rank stays within 8 MiB of the mapped path's.
peak() { grep -o '"rss_peak_kb": *[0-9]*' "$1" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'; }
ok "$N" "$DSORT" --stats "$T/map.json" -o "$T/map.out" "$T/in/a.dat"
ok "$N" "$DSORT" --no-map --stats "$T/copy.json" -o "$T/copy.out" "$T/in/a.dat"
eq "--no-map on a tiny share: the output is the mapped path's" "" "$(cmp "$T/map.out" "$T/copy.out" 2>&1)"
eq "--no-map on a tiny share: peak RSS within 8 MiB of the mapped path's ($(peak "$T/copy.json") vs $(peak "$T/map.json") KiB)" 1 \
    "$(($(peak "$T/copy.json") < $(peak "$T/map.json") + 8192))"

# ---- a file name with a newline in an error --------------------------------------------------
# Every error is one line naming the rank: a control character in a name is shown as '?'.
expect_rc 2 "$N" "$DSORT" -o "$T/nl.out" "$T/in/no
such"
eq "a name with a newline: one line of dsort's" 1 "$(grep -c '^dsort: ' "$T/stderr")"
eq "a name with a newline: no line that is a piece of it" 0 "$(grep -c '^such' "$T/stderr")"
contains "a name with a newline: shown with '?'" "$T/stderr" "^dsort: rank 0/$N \([^)]+\): cannot open '.*/in/no\?such'"

suite_finish
