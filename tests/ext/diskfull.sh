#!/bin/bash
# Disk full (issue 3): the only temp dir is a 4 MiB tmpfs and the data needs 20 MB of runs.
# dsort must exit 2 within seconds; stderr has exactly one line that names a rank
# ("dsort: rank R/N (host): ...") and that line names the temp dir and says "No space left
# on device"; the temp dir is empty afterwards and nothing (not even a hidden temporary file)
# is left under the output's name; with -o and with -O. Those cases run with the space
# preflight off (DSORT_NO_SPACE_CHECK=1: the write that fails mid-run is what they test).
# The preflight (issue 29): a 20 MiB tmpfs output and a 30 MiB tmpfs -T dir, each too small
# for a 25 MB (40 MB) job: refused within 5 s, before anything is read, with one line naming
# the rank, the file system, the bytes needed and the bytes free; nothing left behind. At 3
# ranks each rank's spill (13 MB) fits the 30 MiB alone: only the node's ranks counted
# together do not. The escape hatch lets such a job through to the mid-run error; the -o file
# of fixed records still fails at once, where it is created and reserved (fallocate).
# Needs root to mount; otherwise it says why and exits 77 (skipped). Usage: diskfull.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

FULL=$T/full
mount_tmpfs "$FULL" 4M || skip "$MOUNT_WHY"
COUNT=200000 # 20 MB
mkdir -p "$T/out"
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish

full_case() {
    local name=$1
    shift
    rm -rf "$T/out"/* "$T/out"/.[!.]*
    DSORT_NO_SPACE_CHECK=1 run "$N" "$DSORT" -S 2M --block-size 64K -T "$FULL" "$@" "$T/in.dat"
    echo "  $name: exit $RC after ${ELAPSED_MS} ms; stderr:"
    sed 's/^/  | /' "$T/stderr"
    eq "$name: exit status" 2 "$RC" || show_output
    cond "$name: dsort stopped within seconds (${ELAPSED_MS} ms)" "$ELAPSED_MS < 10000"
    eq "$name: lines of stderr that name a rank" 1 "$(grep -Ec "rank [0-9]+/$N" "$T/stderr")"
    contains "$name: the error names the rank, the temp dir and ENOSPC" "$T/stderr" \
        "^dsort: rank [0-9]+/$N \(.+\): .*$FULL.*No space left on device"
    empty_dir "$name: files left in the temp dir" "$FULL"
    empty_dir "$name: files under the output directory" "$T/out"
}

full_case "-o" -o "$T/out/sorted.dat"
full_case "-O" -O "$T/out/parts"
full_case "-u -o" -u -o "$T/out/sorted.dat"

# preflight_case NAME FS INPUT ARGS...: refused at once for want of space on FS.
preflight_case() {
    local name=$1 fs=$2 input=$3
    shift 3
    rm -rf "$T/out"/* "$T/out"/.[!.]*
    run "$N" "$DSORT" "$@" "$input"
    echo "  $name: exit $RC after ${ELAPSED_MS} ms; stderr:"
    sed 's/^/  | /' "$T/stderr"
    eq "$name: exit status" 2 "$RC" || show_output
    cond "$name: refused within 5 s (${ELAPSED_MS} ms)" "$ELAPSED_MS < 5000"
    eq "$name: lines of stderr that name a rank" 1 "$(grep -Ec "rank [0-9]+/$N" "$T/stderr")"
    contains "$name: the line names the rank, the file system, bytes free and needed" "$T/stderr" \
        "^dsort: rank [0-9]+/$N \(.+\): not enough space .*file system $fs \(tmpfs on [^)]*\) has [0-9]+ bytes free, the job needs [0-9]+ bytes there"
    # A refusal before any write is no full disk: the line is not said a second time (the
    # repeat is for lines a full file system may have swallowed).
    eq "$name: said once" 0 "$(grep -c 'said again' "$T/stderr")"
    empty_dir "$name: files left on the small file system" "$fs"
    empty_dir "$name: files under the output directory" "$T/out"
}

OUT20=$T/out20 TMP30=$T/tmp30
mount_tmpfs "$OUT20" 20M || skip "$MOUNT_WHY"
mount_tmpfs "$TMP30" 30M || skip "$MOUNT_WHY"
gen "$N" -b 7000000 250000 "$T/in25.dat" || suite_finish
gen "$N" -b 9000000 400000 "$T/in40.dat" || suite_finish
preflight_case "20 MiB output, -o" "$OUT20" "$T/in25.dat" -o "$OUT20/sorted.dat"
preflight_case "20 MiB output, -O" "$OUT20" "$T/in25.dat" -O "$OUT20/parts"
preflight_case "30 MiB -T" "$TMP30" "$T/in40.dat" -S 4M -T "$TMP30" -o "$T/out/sorted.dat"
# Without the preflight, the -o file of fixed records is reserved (fallocate) when it is
# created: the 20 MiB output fails there, before any sorting, not at the write.
rm -rf "$T/out"/*
DSORT_NO_SPACE_CHECK=1 run "$N" "$DSORT" -o "$OUT20/sorted.dat" "$T/in25.dat"
eq "reserved output: exit status" 2 "$RC"
contains "reserved output: refused at the reservation" "$T/stderr" \
    "^dsort: rank 0/$N \(.+\): cannot reserve 25000000 bytes for '$OUT20/sorted.dat': No space left on device"
empty_dir "reserved output: files left on the small file system" "$OUT20"
# The escape hatch: the check is skipped, and the job fails where it runs out (fast at -S 4M:
# the spill fills the tmpfs within seconds).
rm -rf "$T/out"/*
DSORT_NO_SPACE_CHECK=1 run "$N" "$DSORT" -S 4M -T "$TMP30" -o "$T/out/sorted.dat" "$T/in40.dat"
eq "DSORT_NO_SPACE_CHECK=1: exit status" 2 "$RC"
contains "DSORT_NO_SPACE_CHECK=1: the job ran into the full temp dir" "$T/stderr" \
    "^dsort: rank [0-9]+/$N \(.+\): .*$TMP30.*No space left on device"
eq "DSORT_NO_SPACE_CHECK=1: preflight lines" 0 "$(grep -c 'not enough space' "$T/stderr")"
empty_dir "DSORT_NO_SPACE_CHECK=1: files left in the temp dir" "$TMP30"
suite_finish
