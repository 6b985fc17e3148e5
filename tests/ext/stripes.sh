#!/bin/bash
# Runs striped over the temp devices (issue 15): three -T dirs on three tmpfs mounts (three
# devices: st_dev differs), or three plain directories on one disk when not root (then a run
# is one file, as before; the sorts are still checked). Fixed records and text lines are
# sorted out of core (-S 2M --block-size 16K: many runs, in several blocks each):
#  - the output is the oracle's (dsort-validate's count and checksum against dsort-gen -c;
#    GNU sort for lines, compared byte for byte) and nothing is left in the temp dirs;
#  - stopped with a checkpoint (--stop-after=2), every run of the manifest is a file of the
#    same name in each of the three per-job directories (with tmpfs); --resume finishes it
#    with the oracle's output;
#  - stopped again, one file of a run removed from the second dir: --resume fails (exit 2)
#    naming that file as missing;
#  - under ulimit -n 40 (a striped run holds a descriptor for each of its files), it sorts;
#  - SIGTERM to every rank once a run has files in all three dirs: the job exits non-zero and
#    every file of every run is removed (the cleanup series of each directory).
# Usage: stripes.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=200000 # 20 MB
D=("$T/tA" "$T/tB" "$T/tC")
STRIPED=1
for d in "${D[@]}"; do
    if ! mount_tmpfs "$d" 96M; then
        STRIPED=0
        mkdir -p "$d"
    fi
done
if [ "$STRIPED" = 1 ]; then
    echo "temp dirs: three tmpfs mounts (three devices): runs striped over them"
else
    echo "temp dirs: three directories on one device, runs not striped ($MOUNT_WHY)"
fi
TS=(-T "${D[0]}" -T "${D[1]}" -T "${D[2]}")
mkdir -p "$T/o"
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
gen "$N" -a -b $(((SEED % 100000) * 1000 + 7)) "$COUNT" "$T/in.txt" || suite_finish
gnu_sort "" "$T/in.txt" "$T/want.txt"

nothing_left() {
    local d
    for d in "${D[@]}"; do
        empty_dir "$1: files left in the temp dir" "$d"
    done
}

# Fixed records, then lines: a whole sort.
ARGS=(-S 2M --block-size 16K "${TS[@]}")
rm -f "$T/o/out"
ok "$N" "$DSORT" "${ARGS[@]}" --stats "$T/o/stats.json" -o "$T/o/out" "$T/in.dat" &&
    validate "$N" "" "$T/o/out" "$COUNT" "$SUM"
cond "fixed records: several runs on every rank ($(st "$T/o/stats.json" ranks runs))" \
    "min([$(st "$T/o/stats.json" ranks runs | tr ' ' ',')]) >= 3"
nothing_left "fixed records"
L=(--format lines -S 2M --block-size 16K "${TS[@]}")
ok "$N" "$DSORT" "${L[@]}" -o "$T/o/out.txt" "$T/in.txt" &&
    ok 1 cmp "$T/want.txt" "$T/o/out.txt"
nothing_left "lines"

# A low open-file limit: a striped run holds a descriptor for each of its files, and the merge's
# fan-in must count them (it counted one a run: "Too many open files").
rm -f "$T/o/out"
run_ulimit "$N" 40 "$DSORT" "${ARGS[@]}" --block-size 4K -o "$T/o/out" "$T/in.dat"
eq "ulimit -n 40: exit status (stderr: $(head -c 300 "$T/stderr"))" 0 "$RC"
[ "$RC" = 0 ] && validate "$N" "" "$T/o/out" "$COUNT" "$SUM"
nothing_left "ulimit -n 40"

# A stop with a checkpoint: the manifest's runs and their files.
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=2 -o "$T/o/out" "$T/in.dat"
eq "--stop-after=2: exit status" 3 "$RC"
MAN=$(compgen -G "${D[0]}/dsort-*-r0/checkpoint" | head -n 1)
if [ -n "$MAN" ]; then
    # run RECORDS BYTES (SIZE HEXPATH)...: the number of files of each run
    files=$(awk '$1 == "run" { print (NF - 3) / 2 }' "$MAN" | sort -u | tr '\n' ' ')
    echo "  rank 0's manifest: $(grep -c '^run ' "$MAN") runs of $files file(s)"
    if [ "$STRIPED" = 1 ]; then
        eq "every run of the manifest is striped over the three devices" "3 " "$files"
        first=$(awk '$1 == "run" { print $5; exit }' "$MAN" | xxd -r -p)
        name=$(basename "$first")
        for d in "${D[@]}"; do
            cond "run $name has a file in $d" "$(compgen -G "$d/dsort-*-r0/$name" | wc -l) == 1"
        done
    else
        eq "every run of the manifest is one file" "1 " "$files"
    fi
else
    fail "no checkpoint in ${D[0]}"
fi
rm -f "$T/o/out"
ok "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat" &&
    validate "$N" "" "$T/o/out" "$COUNT" "$SUM"
nothing_left "--resume"

# A file of a striped run missing: --resume names it.
if [ "$STRIPED" = 1 ]; then
    run "$N" "$DSORT" "${L[@]}" --stop-after=1 -o "$T/o/out.txt" "$T/in.txt"
    eq "lines --stop-after=1: exit status" 3 "$RC"
    MAN=$(compgen -G "${D[0]}/dsort-*-r0/checkpoint" | head -n 1)
    gone=$(awk '$1 == "run" { print $7; exit }' "$MAN" | xxd -r -p)
    case $gone in "${D[1]}"/*) ;; *) fail "the second file of a run is not in ${D[1]}: '$gone'" ;; esac
    rm -f "$gone"
    run "$N" "$DSORT" "${L[@]}" --resume -o "$T/o/out.txt" "$T/in.txt"
    eq "--resume with a file of a run missing: exit status" 2 "$RC"
    contains "--resume names the missing file" "$T/stderr" "run '$gone' of the checkpoint.*is missing"
    for d in "${D[@]}"; do # what that stop kept
        rm -rf "${d:?}"/*
    done

    # SIGTERM while runs are spilled to all three.
    "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --block-size 8K "${TS[@]}" \
        -o "$T/o/term" "$T/in.dat" </dev/null >"$T/stdout" 2>"$T/stderr" &
    JOB=$!
    seen=0
    for ((i = 0; i < 3000 && seen == 0; i++)); do
        if compgen -G "${D[2]}/dsort-*-r0/run-000001" >/dev/null &&
            compgen -G "${D[0]}/dsort-*-r0/run-000001" >/dev/null; then
            seen=1
        else
            kill -0 "$JOB" 2>/dev/null || break
            sleep 0.01
        fi
    done
    pids=$(dsort_procs "${D[0]}")
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill -TERM $pids
    wait "$JOB"
    RC=$?
    if [ "$seen" = 1 ]; then
        cond "SIGTERM to the ranks: exit status $RC is non-zero" "$RC != 0"
        nothing_left "SIGTERM"
    else
        echo "  (the sort ended, exit $RC, before a run had files in all three dirs)"
    fi
fi
suite_finish
