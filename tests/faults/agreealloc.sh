#!/bin/bash
# No rank skips a collective that the others enter (issue 26): a rank whose allocation fails
# right before a collective must not leave the others waiting in it. The shim makes calloc
# fail on rank 1 in the code that gathers the node's per-device figures for --stats (the
# functions named below, by their ranges in the executable: FAULT_CALLOC_IN). The ranks must
# agree to go without the figures: exit 0 within HANG_S, the output right, the stats file
# JSON. (Before the fix rank 1 skipped two MPI_Reduce calls and the job hung.)
# Usage: agreealloc.sh 2
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
[ "$N" -ge 2 ] || die "agreealloc.sh needs a second rank: usage $0 2"
# A hang is a job still running this many seconds after its start (the run takes about 1 s).
HANG_S=40

# ranges FUNCTION...: "OFF:SIZE,..." of the functions (and their compiler-made clones, such as
# dsort_job_topo_gather.constprop.0) found in dsort's symbol table.
ranges() {
    local re
    re="^($(echo "$@" | tr ' ' '|'))(\\.[a-z]+\\.[0-9]+)*\$"
    nm -S "$DSORT" 2>/dev/null | awk -v re="$re" '$3 ~ /^[tT]$/ && $4 ~ re {printf "0x%s:0x%s,", $1, $2}' |
        sed 's/,$//'
}

case_begin "calloc fails on rank 1 before the node's --stats reductions" mem \
    "exit 0 within $HANG_S s, output right, --stats file parses"
data mem
out_setup o-new
IN_RANGES=$(ranges dsort_job_topo_gather add_node_stats dsort_job_topo_write_stats)
if [ -z "$IN_RANGES" ]; then
    fail "none of the functions is in $DSORT's symbol table (stripped build?)"
else
    FX=("FAULT_CALLOC_IN=$IN_RANGES" "FAULT_RANK=1" "FAULT_COUNT=1" "FAULT_LOG=$C/fault.log")
    REACH_S=$HANG_S run_job "$N" -T "$C/tmp" --stats "$C/stats.json" "${OUTARGS[@]}" --no-map "$MEM"
    check_faulted
    check_exit 0
    cmp -s "$OUT_FINAL" "$MEM_REF"
    check $? "the output is not GNU sort's"
    python3 -m json.tool "$C/stats.json" >/dev/null
    check $? "the --stats file is not JSON"
fi
case_end
suite_finish
