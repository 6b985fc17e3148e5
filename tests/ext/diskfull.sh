#!/bin/bash
# Disk full (issue 3): the only temp dir is a 4 MiB tmpfs and the data needs 20 MB of runs.
# dsort must exit 2 within seconds; stderr has exactly one line that names a rank
# ("dsort: rank R/N (host): ...") and that line names the temp dir and says "No space left
# on device"; the temp dir is empty afterwards and nothing (not even a hidden temporary file)
# is left under the output's name; with -o and with -O. Needs root to mount; otherwise it
# says why and exits 77 (skipped). Usage: diskfull.sh NRANKS
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
    run "$N" "$DSORT" -S 2M --block-size 64K -T "$FULL" "$@" "$T/in.dat"
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
suite_finish
