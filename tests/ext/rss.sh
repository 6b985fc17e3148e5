#!/bin/bash
# Bounded memory (issue 3): with -S 32M on 100 MB of data (out of core), every rank's peak
# RSS, measured by /usr/bin/time -f %M around each rank, stays at or below
# 32 MiB x 1.1 + 64 MiB; in the default order, with -u, and with -O. The outputs are checked
# with dsort-validate (count, checksum against dsort-gen -c). Usage: rss.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

TIME=/usr/bin/time
[ -x "$TIME" ] || die "$TIME is missing (apt-get install time)"
COUNT=1000000 # 100 MB
BUDGET_MIB=32
LIMIT_KB=$(((BUDGET_MIB * 1024 * 11 / 10) + 64 * 1024))
SPILL=$T/spill
mkdir -p "$SPILL" "$T/out"
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM

# rss_case NAME OUTPUT-ARGS...: sort with -S 32M under /usr/bin/time; check each rank's RSS.
rss_case() {
    local name=$1
    shift
    rm -rf "$T/out"/* "$T"/rss.*
    local stats=$T/stats.json
    # The rank from the launcher: Open MPI's OMPI_COMM_WORLD_RANK, else MPICH's (hydra) PMI_RANK.
    # shellcheck disable=SC2016
    run "$N" sh -c 'o=$1; shift; exec '"$TIME"' -f %M -o "$o.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" "$@"' time-wrapper "$T/rss" \
        "$DSORT" -S ${BUDGET_MIB}M -T "$SPILL" --stats "$stats" "$@" "$T/in.dat"
    ok_status || return
    local cmd=$LAST_CMD ms=$ELAPSED_MS r kb all=""
    for ((r = 0; r < N; r++)); do
        kb=$(tail -n 1 "$T/rss.$r" 2>/dev/null)
        all+=" $kb"
        LAST_CMD=$cmd
        if ! [[ "$kb" =~ ^[0-9]+$ ]]; then
            fail "$name: no peak RSS from /usr/bin/time for rank $r ($T/rss.$r: $(cat "$T/rss.$r" 2>&1))"
            continue
        fi
        cond "$name: rank $r peak RSS $kb KB <= ${BUDGET_MIB} MiB x 1.1 + 64 MiB = $LIMIT_KB KB" \
            "$kb <= $LIMIT_KB"
    done
    echo "  $name: ${ms} ms, peak RSS per rank (KB):$all (limit $LIMIT_KB); runs $(st "$stats" ranks runs)"
    eq "$name: --stats out_of_core" true "$(st "$stats" top out_of_core)"
    local b
    for b in $(st "$stats" ranks memory_budget); do
        eq "$name: --stats memory_budget" $((BUDGET_MIB << 20)) "$b"
    done
    empty_dir "$name: files left in the temp dir" "$SPILL"
}

rss_case "-o" -o "$T/out/sorted.dat" && validate "$N" "" "$T/out/sorted.dat" "$COUNT" "$SUM"
rss_case "-u -o" -u -o "$T/out/sorted.dat" && validate "$N" -u "$T/out/sorted.dat" "$COUNT" "$SUM"
rss_case "-r -s -O" -r -s -O "$T/out/d" && validate "$N" -r "$T/out/d" "$COUNT" "$SUM"
suite_finish
