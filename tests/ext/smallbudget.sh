#!/bin/bash
# Small budgets (issue 3, tests "Small budgets"): -S 1M --block-size 16K, so that every rank
# spills many runs, each rank under `ulimit -n 64` or `ulimit -n 33` (the lower limit cuts
# the merge fan-in, so that extra merge passes happen), on uniform gensort ASCII data in every
# order (default, -r, -s, -u, -r -s, -u -r), skewed and all-keys-equal data in the orders
# where ties matter, and on skewed binary data. Oracles: dsort-validate (order, count,
# checksum against dsort-gen -c), byte identity with GNU sort (ASCII) or the python oracle (binary), nothing left in the temp dir, and
# --stats showing the run out of core with many runs and, somewhere, an extra merge pass.
# Rank counts: every case runs at -n 1 and -n 3 (and at any count but 2 and 4); at -n 2 and -n 4
# each runs half of the 14 cases, by their index C in the order above (uniform 0-5, skewed 6-7,
# equal 8-10, binary 11-13): -n 2 the even ones, -n 4 the odd ones. Each half has low-limit
# cases that take an extra merge pass (at -n 2 skewed and binary -r -s, at -n 4 uniform -r...).
# Usage: smallbudget.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=${DSORT_EXT_COUNT:-120000} # 12 MB: about 40 runs per rank at -n 1, 8 at -n 4
SPILL=$T/spill
mkdir -p "$SPILL" "$T/out"
MAX_PASSES=0
LOW_LIMIT_CASES=0

# sort_case NAME LIMIT "OPTS" INPUT WANT RECORDS CHECKSUM: sort INPUT under ulimit -n LIMIT
# with OPTS and check the output against WANT (the oracle's output) and the figures.
sort_case() {
    local name=$1 lim=$2 opts=$3 in=$4 want=$5 recs=$6 sum=$7
    local out=$T/out/sorted.dat stats=$T/out/stats.json o
    read -ra o <<<"$opts"
    rm -f "$out" "$stats"
    run_ulimit "$N" "$lim" "$DSORT" -S 1M --block-size 16K -T "$SPILL" --stats "$stats" \
        "${o[@]}" -o "$out" "$in"
    echo "  $name: ulimit -n $lim, dsort $opts: exit $RC, ${ELAPSED_MS} ms"
    ok_status || return
    empty_dir "$name $opts: files left in the temp dir" "$SPILL"
    eq "$name $opts: files beside the output" "sorted.dat stats.json" \
        "$(ls -A "$T/out" | tr '\n' ' ' | sed 's/ $//')"
    same_file "$name $opts: output vs oracle" 100 "$want" "$out"
    validate "$N" "$(validate_flags "${o[@]}")" "$out" "$recs" "$sum"
    eq "$name $opts: --stats out_of_core" true "$(st "$stats" top out_of_core)"
    local runs passes fan
    runs=$(st "$stats" sum runs)
    passes=$(st "$stats" max merge_passes)
    fan=$(st "$stats" ranks fan_in)
    echo "    runs per rank: $(st "$stats" ranks runs); fan-in: $fan; extra merge passes: $(st "$stats" ranks merge_passes)"
    # Every rank holds about COUNT/N records, at most 1-2 MB per run: many runs in all.
    cond "$name $opts: total runs ($runs) show a small budget" "$runs >= 8"
    [ "$passes" -gt "$MAX_PASSES" ] && MAX_PASSES=$passes
    if [ "$lim" -lt 64 ]; then
        LOW_LIMIT_CASES=$((LOW_LIMIT_CASES + 1))
        # The fan-in must respect the descriptor limit.
        local f
        for f in $fan; do
            cond "$name $opts: fan-in $f under ulimit -n $lim" "0 < $f < $lim"
        done
    fi
}

base=$(((SEED % 100000) * 100))
gen "$N" -a -b "$base" "$COUNT" "$T/uniform.txt" || suite_finish
sum_uniform=$GEN_SUM
gen "$N" -a -s -b "$base" "$COUNT" "$T/skewed.txt" || suite_finish
sum_skewed=$GEN_SUM
py setkey "$T/uniform.txt" "$T/equal.txt" 'EQUAL~KEY!' || die "setkey failed"
read -r _ sum_equal <<<"$(py sum 100 "$T/equal.txt")"

# Every order on uniform keys; on skewed and all-equal keys the orders where those keys bite
# (ties: -s keeps input order, -u keeps the first of each key, -r with them).
declare -A ORDERS=([uniform]='|-r|-s|-u|-r -s|-u -r' [skewed]='|-u -r' [equal]='-s|-r -s|-u')
k=0
c=0
declare -A SUMS=([uniform]=$sum_uniform [skewed]=$sum_skewed [equal]=$sum_equal)
for data in uniform skewed equal; do
    sum=${SUMS[$data]}
    IFS='|' read -ra orders <<<"${ORDERS[$data]}"
    for opts in "${orders[@]}"; do
        limits=(64 33)
        lim=${limits[$((k % 2))]}
        k=$((k + 1))
        share $((c++)) || continue
        gnu_sort "$opts" "$T/$data.txt" "$T/want.txt" || die "GNU sort failed"
        if [[ " $opts " == *" -u "* ]]; then
            read -r recs usum <<<"$(py sum 100 "$T/want.txt")"
            sort_case "$data" "$lim" "$opts" "$T/$data.txt" "$T/want.txt" "$recs" "$usum"
        else
            sort_case "$data" "$lim" "$opts" "$T/$data.txt" "$T/want.txt" "$COUNT" "$sum"
        fi
    done
    k=$((k + 1))
done

# Skewed binary keys (bytes 0-255), checked by the python oracle.
gen "$N" -s -b "$base" 100000 "$T/skewed.bin" || suite_finish
sum_bin=$GEN_SUM
for opts in "" "-r -s" "-u"; do
    share $((c++)) || continue
    read -ra o <<<"$opts"
    py sort "$T/want.bin" 100 0 10 "$(oracle_flags "${o[@]}")" "$T/skewed.bin"
    read -r recs usum <<<"$(py sum 100 "$T/want.bin")"
    [[ " $opts " == *" -u "* ]] || eq "python oracle keeps the records" "100000 $sum_bin" "$recs $usum"
    sort_case binary-skewed 33 "$opts" "$T/skewed.bin" "$T/want.bin" "$recs" "$usum"
done

echo "largest number of extra merge passes: $MAX_PASSES ($LOW_LIMIT_CASES cases under a low ulimit -n)"
cond "some rank took an extra merge pass under the low descriptor limit (--stats merge_passes)" \
    "$MAX_PASSES >= 1"
suite_finish
