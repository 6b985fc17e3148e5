#!/bin/bash
# A named pipe (FIFO) as input: dsort needs files of known size, so it must refuse one with
# exit 2 and one line naming the rank, within seconds, not block in open() waiting for a
# writer. Usage: fifo.sh NRANKS (registered at -n 1 and -n 3).
# With more than one rank, keep mpirun's default kill delay (see lib.sh): the ranks that did
# not fail get SIGTERM and 1 s to clean up, as users' jobs do.
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=20

mkfifo "$T/pipe"
mkdir "$T/out"
run "$N" "$DSORT" -o "$T/out/sorted.dat" "$T/pipe"
eq "exit status on a FIFO input (124: timed out after ${E2E_TIMEOUT}s, dsort hangs)" 2 "$RC"
eq "lines of stderr that name a rank" 1 "$(grep -c rank "$T/stderr")"
eq "no output" "" "$(ls -A "$T/out")"
run "$N" "$DSORT" -c "$T/pipe"
eq "dsort -c: exit status on a FIFO input (124: timed out)" 2 "$RC"
run "$N" "$VALIDATE" "$T/pipe"
eq "dsort-validate: exit status on a FIFO input (124: timed out)" 2 "$RC"

suite_finish
