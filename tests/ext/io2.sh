#!/bin/bash
# The 2-IO property (issue 3): with the default budget the data fits and nothing is spilled
# (--stats: out_of_core false, no runs, no spill bytes; about 1 x the data read and written);
# forced out of core (--out-of-core) and out of core because the budget is small, with runs
# that fit one merge (merge_passes 0), the bytes read over all phases and ranks (from
# /proc/self/io, reported by --stats) are 2.0-2.3 x the data, and so are the bytes written.
# Usage: io2.sh NRANKS [DSORT_OPTIONS...] (for example -u, or -r -s)
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"
shift
OPTS=("$@")
COUNT=250000 # 25 MB

SPILL=$T/spill
mkdir -p "$SPILL" "$T/out"
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
WANT_RECS=$COUNT
WANT_SUM=$SUM
if [[ " ${OPTS[*]} " == *" -u "* ]]; then
    # shellcheck disable=SC2046
    py sort "$T/want.dat" 100 0 10 "$(oracle_flags "${OPTS[@]}")" "$T/in.dat"
    read -r WANT_RECS WANT_SUM <<<"$(py sum 100 "$T/want.dat")"
fi

# io_case NAME LOW HIGH DSORT_ARGS...: sort with DSORT_ARGS and check that the I/O over all
# phases is between LOW and HIGH times the data, for reads and for writes.
io_case() {
    local name=$1 lo=$2 hi=$3
    shift 3
    local out=$T/out/sorted.dat stats=$T/out/stats.json
    rm -f "$out" "$stats"
    ok "$N" "$DSORT" "${OPTS[@]}" -T "$SPILL" --stats "$stats" "$@" -o "$out" "$T/in.dat" || return
    local cmd=$LAST_CMD ms=$ELAPSED_MS
    empty_dir "$name: files left in the temp dir" "$SPILL"
    # shellcheck disable=SC2046
    validate "$N" "$(validate_flags "${OPTS[@]}")" "$out" "$WANT_RECS" "$WANT_SUM"
    local rd wr
    LAST_CMD=$cmd
    read -r rd wr <<<"$(st "$stats" io)"
    echo "  $name: ${ms} ms; out_of_core $(st "$stats" top out_of_core); runs $(st "$stats" ranks runs);" \
        "extra merge passes $(st "$stats" ranks merge_passes); read ${rd} x, written ${wr} x the data"
    cond "$name: bytes read over all phases are $lo-$hi x the data, not $rd x" "$lo <= $rd <= $hi"
    cond "$name: bytes written over all phases are $lo-$hi x the data, not $wr x" "$lo <= $wr <= $hi"
    STATS=$stats
}

# In memory with the default budget: nothing spilled. The input copied (--no-map): a mapped
# input is read by page faults, which /proc/self/io does not count (checked below).
io_case "default budget (in memory)" 0.98 1.10 --no-map
if [ -n "${STATS:-}" ]; then
    eq "default budget: --stats out_of_core" false "$(st "$STATS" top out_of_core)"
    eq "default budget: --stats runs is 0 on every rank" 0 "$(st "$STATS" sum runs)"
    eq "default budget: --stats spill_bytes is 0 on every rank" 0 "$(st "$STATS" sum spill_bytes)"
    eq "default budget: --stats extra_merge_bytes is 0" 0 "$(st "$STATS" sum extra_merge_bytes)"
fi

# In memory with the input mapped (the default on one node, not with -u): read through the
# page cache's mapping, not read(2); written once.
rm -f "$T/out/sorted.dat" "$T/out/stats.json"
if ok "$N" "$DSORT" "${OPTS[@]}" -T "$SPILL" --stats "$T/out/stats.json" -o "$T/out/sorted.dat" \
    "$T/in.dat"; then
    # shellcheck disable=SC2046
    validate "$N" "$(validate_flags "${OPTS[@]}")" "$T/out/sorted.dat" "$WANT_RECS" "$WANT_SUM"
    read -r rd wr <<<"$(st "$T/out/stats.json" io)"
    want=true
    [[ " ${OPTS[*]} " == *" -u "* ]] && want=false
    eq "in memory: --stats mapped (-u copies)" "$want" "$(st "$T/out/stats.json" top mapped)"
    [ "$want" = false ] || cond "mapped: bytes read by read(2) are under 0.1 x the data, not $rd x" "$rd < 0.1"
    cond "mapped: bytes written are 0.98-1.10 x the data, not $wr x" "0.98 <= $wr <= 1.10"
fi

# Out of core, forced, and because the budget is too small; blocks small enough that all
# runs fit one merge (fan-in) so that no extra pass is needed.
# -u out of core is documented to take one more pass (its output size, and so every rank's
# offset, is known only after the final merge): 3 reads + 3 writes.
HI=2.3
[[ " ${OPTS[*]} " == *" -u "* ]] && HI=3.3
# -S 8M at the default 4M --block-size: the run files' blocks shrink (to about 300K) so that
# the 8 runs that -n 1 makes merge at once (blocks of budget/16 allowed 6: an extra pass).
for args in "--out-of-core -S 8M --block-size 64K" "-S 4M --block-size 64K" "-S 8M"; do
    STATS=""
    # shellcheck disable=SC2086
    io_case "dsort ${OPTS[*]} $args" 2.0 "$HI" $args
    [ -n "$STATS" ] || continue
    eq "$args: --stats out_of_core" true "$(st "$STATS" top out_of_core)"
    eq "$args: --stats merge_passes (the ratio check assumes none)" 0 "$(st "$STATS" max merge_passes)"
    cond "$args: runs on every rank ($(st "$STATS" ranks runs))" \
        "min([$(st "$STATS" ranks runs | tr ' ' ',')]) >= 1"
    cond "$args: spill_bytes ($(st "$STATS" sum spill_bytes)) about the data ($((COUNT * 100)))" \
        "$((COUNT * 100)) <= $(st "$STATS" sum spill_bytes) <= $((COUNT * 100)) * 1.15"
done
suite_finish
