#!/bin/bash
# Budget resolution (issue 3, -S and the default inside Slurm): --stats memory_budget and
# memory_budget_reason, and -v, for -S 10% (10% of MemTotal shared by the node's ranks),
# SLURM_MEM_PER_NODE=64 without -S (80% of 64 MiB / ranks), SLURM_MEM_PER_CPU=100 with
# SLURM_CPUS_ON_NODE=4 (80% of 400 MiB / ranks), and -S 8M beside SLURM_MEM_PER_NODE (-S
# wins). The Slurm budget is used: data that does not fit it is sorted out of core, right.
# A budget too small to sort with (-S 16K) is refused: exit 2, one line naming the rank and
# the budget, no output, nothing in the temp dir; -S 64K on 10 MB either sorts right or is
# refused the same way, never another error. Usage: budget.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=300000 # 30 MB
mkdir -p "$T/out" "$T/spill"
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
NOSLURM=(env -u SLURM_MEM_PER_NODE -u SLURM_MEM_PER_CPU -u SLURM_CPUS_ON_NODE)
MEM_BYTES=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024))
STATS=$T/stats.json

# budget_case NAME EXPECTED-BYTES REASON-REGEX ENV-AND-DSORT-ARGS...: every rank's
# memory_budget is within 0.5% of EXPECTED-BYTES (rounding) and its reason matches.
budget_case() {
    local name=$1 want=$2 why=$3
    shift 3
    rm -rf "$T/out"/* "$STATS"
    ok "$N" "${NOSLURM[@]}" "$@" -v -T "$T/spill" --stats "$STATS" -o "$T/out/sorted.dat" \
        "$T/in.dat" || return 1
    local cmd=$LAST_CMD b
    cp "$T/stderr" "$T/verbose"
    echo "  $name: budgets $(st "$STATS" ranks memory_budget) (want $want);" \
        "out_of_core $(st "$STATS" top out_of_core); reason: $(st "$STATS" reasons | tr '\n' '|')"
    for b in $(st "$STATS" ranks memory_budget); do
        cond "$name: memory_budget $b within 0.5% of $want" "abs($b - $want) <= $want * 0.005"
    done
    eq "$name: one reason shared by all ranks" 1 "$(st "$STATS" reasons | wc -l)"
    contains "$name: --stats memory_budget_reason" <(st "$STATS" reasons) "$why"
    contains "$name: -v names the budget and why" "$T/verbose" "budget.*$why"
    validate "$N" "" "$T/out/sorted.dat" "$COUNT" "$SUM"
    empty_dir "$name: left in the temp dir" "$T/spill"
    LAST_CMD=$cmd
}

budget_case "-S 10%" $((MEM_BYTES / 10 / N)) "10%" "$DSORT" -S 10%
budget_case "SLURM_MEM_PER_NODE=64" $((64 * 1048576 * 8 / 10 / N)) "SLURM_MEM_PER_NODE" \
    SLURM_MEM_PER_NODE=64 "$DSORT" &&
    if cond "SLURM_MEM_PER_NODE=64: the data ($((COUNT * 100)) bytes) does not fit" \
        "$(st "$STATS" max memory_needed) > $(st "$STATS" max memory_budget)"; then
        eq "SLURM_MEM_PER_NODE=64: the Slurm budget is used (out of core)" true \
            "$(st "$STATS" top out_of_core)"
    fi
budget_case "SLURM_MEM_PER_CPU=100 x SLURM_CPUS_ON_NODE=4" $((400 * 1048576 * 8 / 10 / N)) \
    "SLURM_MEM_PER_CPU" SLURM_MEM_PER_CPU=100 SLURM_CPUS_ON_NODE=4 "$DSORT"
budget_case "-S 8M beside SLURM_MEM_PER_NODE" $((8 << 20)) "-S 8M" SLURM_MEM_PER_NODE=64 \
    "$DSORT" -S 8M && eq "-S 8M: out of core" true "$(st "$STATS" top out_of_core)"

# refused BUDGET-REGEX: the last run was refused with a clear message.
refused() {
    eq "refusal: exit status" 2 "$RC" || show_output
    eq "refusal: lines of stderr that name a rank" 1 "$(grep -Ec "rank [0-9]+/$N" "$T/stderr")"
    contains "refusal names the rank and the budget" "$T/stderr" \
        "^dsort: rank [0-9]+/$N \(.*\): .*budget.*$1"
    empty_dir "refusal: left under the output directory" "$T/out"
    empty_dir "refusal: left in the temp dir" "$T/spill"
}

rm -rf "$T/out"/*
run "$N" "${NOSLURM[@]}" "$DSORT" -S 16K -T "$T/spill" -o "$T/out/sorted.dat" "$T/in.dat"
echo "  -S 16K: exit $RC: $(head -c 300 "$T/stderr")"
refused '16(\.0+)? ?K'

head -c $((100000 * 100)) "$T/in.dat" >"$T/in10.dat"
read -r _ sum10 <<<"$(py sum 100 "$T/in10.dat")"
rm -rf "$T/out"/*
run "$N" "${NOSLURM[@]}" "$DSORT" -S 64K -T "$T/spill" -o "$T/out/sorted.dat" "$T/in10.dat"
echo "  -S 64K on 10 MB: exit $RC after ${ELAPSED_MS} ms: $(head -c 300 "$T/stderr")"
if [ "$RC" -eq 0 ]; then
    pass
    validate "$N" "" "$T/out/sorted.dat" 100000 "$sum10"
    empty_dir "-S 64K: left in the temp dir" "$T/spill"
else
    echo "  (-S 64K must either sort correctly or refuse, naming the budget)" >&2
    refused '64(\.0+)? ?K'
fi
suite_finish
