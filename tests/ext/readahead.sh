#!/bin/bash
# The read-ahead of the rounds (issue 27): out of core at a budget that holds a third chunk
# buffer, a reader thread reads the next chunk during a round when DSORT_READAHEAD=1 asks for
# it (off by default). Both give a valid output (dsort-validate: order, count and the generator's checksum)
# and the same bytes (default order, -s, -u); with the thread the chunk is smaller, so a rank
# takes more rounds (what says it was on), and the runs still fit one merge (no extra pass,
# as without it); peak RSS stays within the budget's bound (rss.sh's: x 1.1 + 64 MiB).
# Usage: readahead.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"
COUNT=300000 # 30 MB
BUDGET=16M
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
mkdir -p "$T/spill" "$T/out"

# sort_with NAME ENV... -- OPTS...: sort into $T/out/NAME.dat with --stats $T/out/NAME.json.
sort_with() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1") && shift; done
    shift
    ok "$N" env "${envs[@]}" "$DSORT" "$@" -S "$BUDGET" -T "$T/spill" \
        --stats "$T/out/$name.json" -o "$T/out/$name.dat" "$T/in.dat"
}

for opts in "" "-s" "-u"; do
    # shellcheck disable=SC2086
    sort_with on DSORT_READAHEAD=1 -- $opts || continue
    # shellcheck disable=SC2086
    sort_with off DSORT_READAHEAD=0 -- $opts || continue
    empty_dir "${opts:-default}: the temp dir" "$T/spill"
    recs=$COUNT sum=$SUM
    if [ "$opts" = -u ]; then
        py sort "$T/want.dat" 100 0 10 "$(oracle_flags -u)" "$T/in.dat"
        read -r recs sum <<<"$(py sum 100 "$T/want.dat")"
    fi
    # shellcheck disable=SC2046
    validate "$N" "$(validate_flags $opts)" "$T/out/on.dat" "$recs" "$sum"
    eq "${opts:-default}: with and without read-ahead, the same bytes" "" \
        "$(cmp "$T/out/on.dat" "$T/out/off.dat" 2>&1)"
    on=$(st "$T/out/on.json" max rounds) off=$(st "$T/out/off.json" max rounds)
    cond "${opts:-default}: read-ahead on takes more rounds ($on) than off ($off)" "$on > $off"
    eq "${opts:-default}: no extra merge pass with read-ahead" 0 \
        "$(st "$T/out/on.json" sum merge_passes)"
    rss=$(st "$T/out/on.json" max rss_peak_kb)
    cond "${opts:-default}: peak RSS ${rss} KiB within 16 MiB x 1.1 + 64 MiB" \
        "$rss <= 16 * 1024 * 1.1 + 64 * 1024"
done
suite_finish
