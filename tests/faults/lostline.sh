#!/bin/bash
# An error with no message (issue 25, item 7): the temp dir, the output and the error log all on
# one file system that fills in the final merge. The job's error line ("rank 0/2: cannot write
# 'out' at offset N: No space left on device") goes through mpirun, whose standard error is the
# log on the full file system: mpirun drops a line it cannot write and says nothing, and writes
# its own banner later, once the ranks have removed their runs. So the log held Open MPI's banner
# and no line from dsort. What must hold, in every one of ROUNDS runs (the loss depends on who
# frees space first, so one run proves little): exit 2, and the log holds a line naming the rank,
# the file on the full file system and "No space left on device"; nothing left behind.
# A log with room gets the line once (faults.enospc counts it). Needs root to mount; otherwise it
# says why and exits 77 (skipped). Usage: lostline.sh NRANKS [ROUNDS]
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
# The write that fails mid-run is the case: the space preflight (issue 29), which would refuse
# the job before it starts, is off (tests/ext/diskfull.sh tests it).
export DSORT_NO_SPACE_CHECK=1
ROUNDS=${2:-8}
FULL=$T/full
data ext
# The input (30 MB, outside) spills about 29 MB of runs at -S 8M; 38 MiB hold the runs but not
# the output too (each rank frees its runs when its own merge ends, so 44 MiB may hold both):
# the final merge fills the file system.
mount_tmpfs "$FULL" 38M || skip "$MOUNT_WHY"
pipeline_args ext

case_begin "ENOSPC in the final merge, the error log on the full file system ($ROUNDS runs)" ext \
    "exit 2 every time; the log names rank, file and ENOSPC every time; nothing left"
# mpirun's standard error (start_job's $T/stderr) is the log on the full file system.
rm -f "$T/stderr"
ln -s "$FULL/log" "$T/stderr"
TMP_DIR=$FULL/tmp
mkdir -p "$TMP_DIR"
out_setup o-new "$FULL/out"
mkdir -p "$OUT_DIR"
lost=0 again=0 codes=""
for r in $(seq 1 "$ROUNDS"); do
    # a run that went wrong leaves nothing for the next to trip on
    rm -rf "$FULL/log" "${TMP_DIR:?}"/* "${OUT_DIR:?}"/*
    run_job "$N" -T "$TMP_DIR" "${OUTARGS[@]}" "${PARGS[@]}"
    codes="$codes $RC"
    if [ "$RC" -ne 2 ]; then
        fail "run $r: exit status $RC, expected 2"
    fi
    if ! grep -Eq "^dsort: rank [0-9]+/$N \([^)]+\): .*'$FULL/.*No space left on device" "$FULL/log"; then
        lost=$((lost + 1))
        fail "run $r: no line naming the rank, the file and ENOSPC in the log: $(tr '\n' ' ' <"$FULL/log" | cut -c1-200)"
    fi
    grep -q "said again" "$FULL/log" && again=$((again + 1))
    check_final
    eq "run $r: files in the temp dir" "" "$(listing "$TMP_DIR")"
    eq "run $r: files in the output directory" "" "$(listing "$OUT_DIR")"
done
note "exit status$codes; the line in $((ROUNDS - lost)) of $ROUNDS logs; said again (first line maybe lost) in $again"
case_end
rm -f "$T/stderr"
suite_finish
