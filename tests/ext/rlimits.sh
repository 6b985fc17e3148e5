#!/bin/bash
# Budgets that do not fit the process's limits or the node (issue 25, items 16, 17, 18, 23).
#   - ulimit -v (RLIMIT_AS, PBS/Torque's vmem): a probe run names the address space in use at
#     start-up (U, the MPI library's mappings: the budget's reason says it); then each rank's
#     ulimit -v is U + half of what the in-memory sort of its 100 MB share needs. The default
#     budget must fit (out of core): exit 0, output identical to GNU sort's, for fixed records
#     and for --format lines. -S 4G under that
#     limit: a warning naming the limit ("ulimit -v") and "using -S NM", exit 0, the same
#     output; -S NM from that warning: exit 0 and no warning.
#   - ulimit -v swept from U + 4 MiB to U + 64 MiB (out of core, fixed records and lines): each
#     limit sorts right (GNU sort's output) or fails cleanly (non-zero, a line naming the rank,
#     no output, an empty temp dir; a thread that cannot start names ulimit -v).
#   - -S beyond what the node has for each of its ranks (-S 1000G): one warning (the lowest rank
#     of the node), the budget in --stats at most MemTotal / ranks, the output right.
#   - SLURM_MEM_PER_NODE negative or past 64 bits: one warning, the budget from the node's
#     memory (at most MemTotal / ranks), not petabytes.
#   - Records of 1 and 5 bytes out of core at -S 16K and -S 2M: each either sorts right or is
#     refused with "give at least -S NK", N K above the refused budget; -S NK then sorts right.
# The ulimit -v cases are skipped under AddressSanitizer (its shadow memory needs terabytes of
# address space). Usage: rlimits.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

mkdir -p "$T/out" "$T/spill"
NOSLURM=(env -u SLURM_MEM_PER_NODE -u SLURM_MEM_PER_CPU -u SLURM_CPUS_ON_NODE)
MEM_BYTES=$(($(awk '/^MemTotal:/ { print $2 }' /proc/meminfo) * 1024))
STATS=$T/stats.json
OUT=$T/out/sorted.dat

# ulimit_v KIB CMD...: CMD under ulimit -v KIB, for run's rank commands.
ulimit_v() {
    local kib=$1
    shift
    ULIMIT_CMD=(sh -c "ulimit -v $kib && exec \"\$@\"" ulimit-v-"$kib" "$@")
}

# one_note REGEX: exactly one line of stderr matches (a warning is printed once a node).
one_note() {
    eq "$1: lines on stderr" 1 "$(grep -Ec -- "$2" "$T/stderr")"
}

# ---- ulimit -v (item 16)
if nm "$DSORT" 2>/dev/null | grep __asan_init >/dev/null; then # not grep -q: nm would die of SIGPIPE under pipefail
    echo "  ulimit -v cases skipped: AddressSanitizer build"
else
    COUNT=$((N * 1000000)) # 100 MB a rank
    gen "$N" -a "$COUNT" "$T/big.txt" || suite_finish
    LC_ALL=C sort -S 256M "$T/big.txt" >"$T/big.ref" || die "GNU sort failed"
    # The probe: an address-space limit far above the need, so that the reason names the use.
    ulimit_v 8000000 "${NOSLURM[@]}" "$DSORT" -v --no-map -T "$T/spill" --stats "$STATS" \
        -o "$OUT" "$T/big.txt"
    if ok "$N" "${ULIMIT_CMD[@]}"; then
        used=$(st "$STATS" reasons | sed -n 's/.*ulimit -v [0-9]*), \([0-9.]*\) MiB of it in use.*/\1/p' |
            sort -n | tail -n 1)
        contains "the budget's reason names the address space in use" <(st "$STATS" reasons) \
            "ulimit -v 8000000\), [0-9.]+ MiB of it in use"
        # Without it, what Open MPI's ranks hold here (about 180-210 MiB), so that the
        # cases still run.
        used=${used:-210}
        if true; then
            # KiB: the use plus half the in-memory need of a rank's share.
            need=$(st "$STATS" max memory_needed)
            lim=$(python3 -c "print(int($used * 1024 + $need / 2 / 1024))")
            echo "  address space in use at start-up: $used MiB; ulimit -v $lim"
            ulimit_v "$lim" "${NOSLURM[@]}" "$DSORT" -v --no-map -T "$T/spill" --stats "$STATS" \
                -o "$OUT" "$T/big.txt"
            if ok "$N" "${ULIMIT_CMD[@]}"; then
                same_file "ulimit -v $lim, default budget" 100 "$T/big.ref" "$OUT"
                eq "ulimit -v: out of core" true "$(st "$STATS" top out_of_core)"
                contains "ulimit -v: the budget's reason" <(st "$STATS" reasons) "ulimit -v $lim"
            fi
            empty_dir "ulimit -v: left in the temp dir" "$T/spill"
            rm -f "$OUT"
            ulimit_v "$lim" "${NOSLURM[@]}" "$DSORT" --format lines -T "$T/spill" -o "$OUT" \
                "$T/big.txt"
            ok "$N" "${ULIMIT_CMD[@]}" &&
                same_file "ulimit -v $lim, --format lines, default budget" 100 "$T/big.ref" "$OUT"
            empty_dir "ulimit -v, lines: left in the temp dir" "$T/spill"
            rm -f "$OUT"
            ulimit_v "$lim" "${NOSLURM[@]}" "$DSORT" -S 4G --no-map -T "$T/spill" -o "$OUT" "$T/big.txt"
            if ok "$N" "${ULIMIT_CMD[@]}"; then
                one_note "ulimit -v, -S 4G: the warning" \
                    "^dsort: rank 0/$N \([^)]+\): -S 4G does not fit: the address-space limit of this process is .* \(ulimit -v $lim\), .* in use; using -S [0-9]+M$"
                same_file "ulimit -v $lim, -S 4G" 100 "$T/big.ref" "$OUT"
                advised=$(grep -o 'using -S [0-9]*M$' "$T/stderr" | head -n 1 | sed 's/using -S //')
                if [ -n "$advised" ]; then
                    rm -f "$OUT"
                    ulimit_v "$lim" "${NOSLURM[@]}" "$DSORT" -S "$advised" --no-map -T "$T/spill" \
                        -o "$OUT" "$T/big.txt"
                    if ok "$N" "${ULIMIT_CMD[@]}"; then
                        eq "ulimit -v, -S $advised (the advised): warnings" 0 "$(grep -c 'does not fit' "$T/stderr")"
                        same_file "ulimit -v $lim, -S $advised" 100 "$T/big.ref" "$OUT"
                    fi
                fi
            fi
            empty_dir "ulimit -v, -S: left in the temp dir" "$T/spill"
        fi
    fi
    rm -f "$T/big.txt" "$T/big.ref" "$OUT"
fi

# ---- a tight ulimit -v, swept: every limit either sorts right or fails cleanly
# Just above what the ranks hold at start-up (the probe's U) the helper threads (writer,
# read-ahead) and the buffers compete for the few MiB left. A thread takes 1 MiB of stack
# (glibc's default, 8 MiB, was refused where the sort fitted). Each limit: exit 0 and the
# output identical to GNU sort's, or a non-zero exit, a line naming the rank, no output file
# and an empty temp dir; a thread that could not start names ulimit -v. Out of core, both
# formats, so that the writer and read-ahead threads run.
# sweep_case FMT-ARGS...: one limit ($lim) with these format arguments.
sweep_case() {
    rm -f "$OUT"
    ulimit_v "$lim" "${NOSLURM[@]}" "$DSORT" "$@" --out-of-core -T "$T/spill" -o "$OUT" "$T/sweep.txt"
    run "$N" "${ULIMIT_CMD[@]}"
    local what="ulimit -v $lim (U + $extra MiB) $*"
    echo "  $what: exit $RC $(grep -m1 '^dsort: ' "$T/stderr")"
    if [ "$RC" -eq 0 ]; then
        same_file "$what" 100 "$T/sweep.ref" "$OUT"
    else
        contains "$what: a line naming the rank" "$T/stderr" "^dsort: rank [0-9]+/$N \([^)]+\): "
        eq "$what: the output file" "" "$(ls "$OUT" 2>/dev/null)"
        if grep -q 'cannot start .* thread' "$T/stderr"; then
            contains "$what: the thread's failure names the limit" "$T/stderr" \
                "cannot start .* thread: .*ulimit -v, now $lim KiB"
        fi
    fi
    empty_dir "$what: left in the temp dir" "$T/spill"
}
if ! nm "$DSORT" 2>/dev/null | grep __asan_init >/dev/null; then
    gen "$N" -a $((N * 50000)) "$T/sweep.txt" || suite_finish
    LC_ALL=C sort "$T/sweep.txt" >"$T/sweep.ref"
    ulimit_v 8000000 "${NOSLURM[@]}" "$DSORT" --stats "$STATS" -T "$T/spill" -o "$OUT" "$T/sweep.txt"
    if ok "$N" "${ULIMIT_CMD[@]}"; then
        used=$(st "$STATS" reasons | sed -n 's/.*ulimit -v [0-9]*), \([0-9.]*\) MiB of it in use.*/\1/p' |
            sort -n | tail -n 1)
        used=${used:-210}
        passed=0
        for extra in 4 8 12 16 24 32 64; do
            lim=$(python3 -c "print(int($used * 1024) + $extra * 1024)")
            sweep_case
            [ "$RC" -ne 0 ] || passed=$((passed + 1))
            sweep_case --format lines
        done
        # The headroom that the larger limits leave must be enough: not every case may fail.
        cond "ulimit -v sweep: limits that sorted ($passed of 7)" "$passed >= 1"
    fi
    rm -f "$T/sweep.txt" "$T/sweep.ref" "$OUT"
fi

# ---- -S beyond the node (item 18), Slurm's figure that is no size (item 23)
gen "$N" -a 100000 "$T/small.txt" || suite_finish
LC_ALL=C sort "$T/small.txt" >"$T/small.ref"
# node_case NAME NOTE-REGEX ENV-AND-DSORT-ARGS...
node_case() {
    local name=$1 re=$2 b
    shift 2
    rm -f "$OUT" "$STATS"
    if ok "$N" "$@" -T "$T/spill" --stats "$STATS" -o "$OUT" "$T/small.txt"; then
        one_note "$name: the warning" "^dsort: rank 0/$N \([^)]+\): $re"
        same_file "$name" 100 "$T/small.ref" "$OUT"
        for b in $(st "$STATS" ranks memory_budget); do
            cond "$name: memory_budget $b at most MemTotal / $N ranks" "0 < $b <= $MEM_BYTES / $N"
        done
        echo "  $name: budgets $(st "$STATS" ranks memory_budget); $(grep -m1 -o 'rank 0/.*' "$T/stderr")"
    fi
}
node_case "-S 1000G" "-S 1000G \(per rank\) is more than this node can give each of its $N ranks \(.*\): using .* instead" \
    "${NOSLURM[@]}" "$DSORT" -S 1000G
node_case "SLURM_MEM_PER_NODE=-1" "SLURM_MEM_PER_NODE='-1' is not a memory size: the node's memory is used instead" \
    env -u SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE=-1 "$DSORT"
node_case "SLURM_MEM_PER_NODE past 64 bits" "SLURM_MEM_PER_NODE='99999999999999999999' is not a memory size" \
    env -u SLURM_MEM_PER_CPU SLURM_MEM_PER_NODE=99999999999999999999 "$DSORT"

# ---- small records' advice (item 17)
# small_case SIZE BUDGET: SIZE-byte records (3 MB) out of core at -S BUDGET.
small_case() {
    local size=$1 budget=$2 in=$T/rec$1.bin ref=$T/rec$1.ref
    [ -f "$in" ] || python3 -c "
import random, sys
random.seed($SEED + $size)
sys.stdout.buffer.write(random.randbytes(3000000 // $size * $size))" >"$in"
    [ -f "$ref" ] || py sort "$ref" "$size" 0 "$size" - "$in"
    local fmt=(--format "fixed:$size:0:$size")
    rm -f "$OUT"
    run "$N" "${NOSLURM[@]}" "$DSORT" "${fmt[@]}" -S "$budget" --out-of-core -T "$T/spill" -o "$OUT" "$in"
    echo "  $size-byte records at -S $budget: exit $RC $(head -n 1 "$T/stderr")"
    if [ "$RC" -eq 0 ]; then
        same_file "$size-byte records, -S $budget" "$size" "$ref" "$OUT"
        return
    fi
    eq "$size-byte records, -S $budget: a refusal's status" 2 "$RC"
    contains "$size-byte records, -S $budget: the refusal advises a budget" "$T/stderr" \
        "too small to sort $size-byte records out of core; give at least -S [0-9]+K$"
    local advised
    advised=$(grep -Eo 'give at least -S [0-9]+K$' "$T/stderr" | head -n 1 | sed 's/.*-S //')
    [ -n "$advised" ] || return
    cond "$size-byte records: the advice $advised is more than -S $budget" \
        "${advised%K} * 1024 > $(numfmt --from=iec "$budget")"
    empty_dir "$size-byte records, -S $budget: left in the temp dir" "$T/spill"
    ok "$N" "${NOSLURM[@]}" "$DSORT" "${fmt[@]}" -S "$advised" --out-of-core -T "$T/spill" -o "$OUT" "$in" &&
        same_file "$size-byte records, the advised -S $advised" "$size" "$ref" "$OUT"
}
for size in 1 5; do
    for budget in 16K 2M; do
        small_case "$size" "$budget"
    done
done
empty_dir "left in the temp dir" "$T/spill"
suite_finish
