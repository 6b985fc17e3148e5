#!/bin/bash
# Memory budget (-S): a budget too small to sort with at all (-S 1K) is refused with exit 2
# and one line naming the rank and the budget, leaving no output; a small budget that the data
# does not fit (-S 64K, -S 1M on 2 MB) is either refused in the same way or honoured (the
# output is then correct), never a crash or another error; an ample budget (-S 256M, -S 10%)
# sorts. Usage: memory.sh NRANKS
# With more than one rank, keep mpirun's default kill delay (see lib.sh): the ranks that did
# not fail get SIGTERM and 1 s to clean up, as users' jobs do.
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"

mkdir -p "$T/out"
gen "$N" -b $((SEED % 1000000)) 20000 "$T/bin.dat"
sum=$GEN_SUM
py sort "$T/want" 100 0 10 - "$T/bin.dat"
state=$(file_state "$T/bin.dat")

# refused BUDGET-TEXT-REGEX: the last run was refused properly.
refused() {
    eq "refusal: exit status" 2 "$RC" || show_output
    eq "refusal: lines of stderr that name a rank" 1 "$(grep -c rank "$T/stderr")"
    contains "refusal names the rank and the budget" "$T/stderr" "^dsort: rank [0-9]+/$N \(.*\): .*budget.*$1"
    eq "refusal leaves no output" "" "$(ls -A "$T/out")"
    eq "refusal leaves the input unchanged" "$state" "$(file_state "$T/bin.dat")"
    eq "refusal leaves nothing in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
    rm -rf "${TMPDIR:?}"/* "$T/out"/* "$T/out"/.[!.]*
}

run "$N" "$DSORT" -S 1K -o "$T/out/sorted.dat" "$T/bin.dat"
refused '1(\.0+)? ?K'
run "$N" "$DSORT" -S 1K -O "$T/out/d" "$T/bin.dat"
refused '1(\.0+)? ?K'

for budget in 64K 1M; do
    rm -rf "$T/out"/*
    run "$N" "$DSORT" -S "$budget" -o "$T/out/sorted.dat" "$T/bin.dat"
    if [ "$RC" -eq 0 ]; then
        pass
        same_records "-S $budget: the output" 100 "$T/want" "$T/out/sorted.dat"
        eq "-S $budget: files in the output directory" sorted.dat "$(ls -A "$T/out")"
        eq "-S $budget: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
    else
        echo "  (-S $budget must either sort correctly or refuse naming the budget)" >&2
        refused "${budget%?}(\.0+)? ?${budget: -1}"
    fi
done

for budget in 256M 10%; do
    rm -rf "$T/out"/*
    ok "$N" "$DSORT" -S "$budget" -o "$T/out/sorted.dat" "$T/bin.dat" &&
        same_records "-S $budget" 100 "$T/want" "$T/out/sorted.dat"
done
sums_equal "sorted vs dsort-gen -c" 100 "20000 $sum" "$T/out/sorted.dat"

suite_finish
