#!/usr/bin/env bash
# The seed's measurement (issue 15) on devices that are really independent: loop disks, each
# throttled on its own by a cgroup to RATE MiB/s for reads and for O_DIRECT writes
# (tests/lib/throttle.sh). Every run is in the throttled cgroup with the page cache dropped.
#
#   A  MB megabytes of gensort records on each of three throttled disks, sorted in memory at
#      -n 1 and -n 2, device-parallel (the default) against --one-stream; output to the
#      unthrottled work dir (/var/tmp).
#   B  MB megabytes on two partitions (MB/2 each) of one throttled disk (one limit for both):
#      device-parallel against --one-stream, -n 1.
#   C  out of core: 2*MB megabytes (on the unthrottled work dir) at -n 1 -S 32M, spilled to the
#      three throttled disks (-T three times) against one of them (-T once).
#
# The phase that the devices serve, of the slowest rank from --stats (read for A and B; merge,
# spill and final merge for C, where the input is on the unthrottled disk), and the wall time
# of mpirun; medians of RUNS runs after a warm-up. Prints each run and a markdown table. Needs root, loop devices and cgroup
# blkio (v1) or io (v2); exits 77 with the reason otherwise. Cleans up on exit and signals.
#
#   D  out of core alone (CASES=D): 2*MB megabytes at -n 1 -S 32M spilled to 1, 2 and 3 of
#      the throttled disks, each measured on its own (the scaling with the temp disks).
#
#   tests/bench/bench_throttled.sh [RUNS] [MB] [RATE]
#   (defaults: 3 runs, 100 MB per disk, 40 MiB/s per disk)
# CASES=ABC (the default) or D chooses the cases.
# DSORT_BIN_DIR=DIR uses the binaries in DIR instead of building build-bench.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
cases=${CASES:-ABC}
mb=${2:-100}
rate=${3:-40}
. "$top/scripts/env.sh"
# shellcheck source=tests/lib/throttle.sh
. "$top/tests/lib/throttle.sh"
thr_bench_start "$top" bench_throttled # sets bin
setup() { thr_setup "$@"; }
bps=$((rate * 1048576))
per=$((mb * 10000)) # 100-byte records
img=$((mb * 4 + 256)) # room for the input and a third of C's spills (sparse)
work=$THR_WORK
gen() { # gen FILE FIRST COUNT
    mpirun -q -n 2 "$bin/dsort-gen" -b "$2" "$3" "$1" >/dev/null
}
disks=()
for i in 0 1 2; do
    setup thr_disk "d$i" "$img" "$bps" "$bps"
    disks+=("$THR_MNT")
    [ "$cases" = D ] || gen "$THR_MNT/in" $((i * per)) "$per"
done
if [ "$cases" != D ]; then
    setup thr_split_disk s $((img * 2)) "$bps" "$bps"
    gen "$THR_MNT1/in" 0 $((per / 2))
    gen "$THR_MNT2/in" $((per / 2)) $((per / 2))
fi
gen "$work/ooc.in" 0 $((2 * per))
mkdir -p "${disks[0]}/tmp" "${disks[1]}/tmp" "${disks[2]}/tmp"
echo "bench_throttled: $runs runs, $mb MB per disk, $rate MiB/s read and write per disk," \
    "cgroup $THR_CG_KIND; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# one PHASES N OPTS...: one sort in the cgroup; prints "SECONDS TOTAL": SECONDS is the sum of
# the phases PHASES (comma-separated) of the slowest rank.
one() {
    local phases=$1 n=$2
    shift 2
    rm -f "$work/out" "$work/stats.json"
    thr_run mpirun -q -n "$n" -x DSORT_ROOFLINE_RATES="$roof_rates" "$bin/dsort" \
        --stats "$work/stats.json" "$@" -o "$work/out"
    "$PYTHON3" - "$work/stats.json" "$phases" "$THR_ELAPSED" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ph = sys.argv[2].split(",")
print("%.3f %s" % (max(sum(r["phases"][p] for p in ph) for r in d["per_rank"]), sys.argv[3]))
PY
    # The run's roofline (issue 27), dsort's own (the "roofline" of --stats): the throttled
    # loop disks at their given limits (MiB/s in MB/s, DSORT_ROOFLINE_RATES), the machine's own
    # disk at its rate measured by the block layer.
    "$PYTHON3" "$top/tests/bench/roofline_show.py" "$work/stats.json" --job \
        >"$work/roof.txt" 2>&1 || true
}
roof_rates="" # "LOOP.read=MB/s LOOP.write=MB/s ..." for dsort's roofline
roof_mbps=$(awk -v b="$bps" 'BEGIN { printf "%.3f", b / 1e6 }')
for l in "${THR_LOOPS[@]}"; do
    roof_rates+=" $(basename "$l").read=$roof_mbps $(basename "$l").write=$roof_mbps"
done
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
# measure NAME PHASES N OPTS...: a warm-up and RUNS runs; sets MREAD (the phases) and MTOTAL
# (medians).
measure() {
    local name=$1 phases=$2 n=$3 out reads=() totals=() r
    shift 3
    one "$phases" "$n" "$@" >/dev/null
    for ((r = 1; r <= runs; r++)); do
        out=$(one "$phases" "$n" "$@")
        echo "   $name -n $n run $r: $phases ${out% *} s, total ${out#* } s"
        sed -n 's/^roofline: job/     roofline: job/p' "$work/roof.txt"
        reads+=("${out% *}") totals+=("${out#* }")
    done
    MREAD=$(printf '%s\n' "${reads[@]}" | median)
    MTOTAL=$(printf '%s\n' "${totals[@]}" | median)
    echo "   $name -n $n: median $phases $MREAD s, total $MTOTAL s"
}
gain() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * (1 - a / b) }'; }
rows=()
# row CASE PHASES RANKS OPTS-1... -- OPTS-2...: measure both and add a table row.
row() {
    local what=$1 phases=$2 n=$3 a=() b=() ar at
    shift 3
    while [ "$1" != -- ]; do a+=("$1"); shift; done
    shift
    b=("$@")
    measure "$what (1)" "$phases" "$n" "${a[@]}"
    ar=$MREAD at=$MTOTAL
    measure "$what (2)" "$phases" "$n" "${b[@]}"
    rows+=("| $what | $n | ${phases//,/+} | $ar s | $MREAD s | $(gain "$ar" "$MREAD") | $at s | $MTOTAL s | $(gain "$at" "$MTOTAL") |")
}
if [ "$cases" = D ]; then
    echo
    echo "| temp disks | merge+spill+write | total | load (1 min) |"
    echo "|---|---|---|---|"
    t=()
    for k in 1 2 3; do
        t+=(-T "${disks[$((k - 1))]}/tmp")
        measure "D: out of core, $((2 * mb)) MB, -S 32M, $k temp disks" merge,spill,write 1 \
            -S 32M "${t[@]}" "$work/ooc.in" >&2
        echo "| $k | $MREAD s | $MTOTAL s | $(cut -d' ' -f1 /proc/loadavg) |"
    done
    exit 0
fi
in3=("${disks[0]}/in" "${disks[1]}/in" "${disks[2]}/in")
for n in 1 2; do
    row "A: 3 disks, $((3 * mb)) MB in memory; device-parallel (1) vs --one-stream (2)" read "$n" \
        "${in3[@]}" -- --one-stream "${in3[@]}"
done
row "B: 2 partitions of 1 disk, $mb MB; device-parallel (1) vs --one-stream (2)" read 1 \
    "$THR_MNT1/in" "$THR_MNT2/in" -- --one-stream "$THR_MNT1/in" "$THR_MNT2/in"
row "C: out of core, $((2 * mb)) MB, -S 32M; 3 temp disks (1) vs 1 (2)" merge,spill,write 1 \
    -S 32M -T "${disks[0]}/tmp" -T "${disks[1]}/tmp" -T "${disks[2]}/tmp" "$work/ooc.in" -- \
    -S 32M -T "${disks[0]}/tmp" "$work/ooc.in"
echo
echo "| case | ranks | phase | (1) phase | (2) phase | saved | (1) total | (2) total | saved |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "phase: of the slowest rank (--stats); total: wall time of mpirun; saved: 1 - (1)/(2)."
