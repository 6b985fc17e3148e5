#!/usr/bin/env bash
# Text lines (--format lines) read device-parallel on devices that are really independent
# (issue 15): loop disks, each throttled on its own by a cgroup to RATE MiB/s for reads and for
# O_DIRECT writes (tests/lib/throttle.sh). Every run is in the throttled cgroup with the page
# cache dropped.
#
#   A  MB megabytes of lines (gensort ASCII records from dsort-gen -a: 100-byte lines ending
#      in \r\n) on each of three throttled disks, sorted in memory at -n 1 and -n 2,
#      device-parallel (the default) against --one-stream; output to the unthrottled work dir
#      (/var/tmp).
#   B  the same out of core (-S 64M --out-of-core, spills to the work dir) at -n 2.
#
# The read phase of the slowest rank from --stats, and the wall time of mpirun; medians of RUNS
# runs after a warm-up, the two modes alternating. Prints each run with dsort's own roofline
# (issue 27: the job's line of the "roofline" of --stats, the throttled disks at their given
# limits in DSORT_ROOFLINE_RATES), the load average and a markdown table. Needs root, loop devices and cgroup blkio (v1) or io (v2); exits 77 with the
# reason otherwise. Cleans up on exit and signals.
#
#   tests/bench/bench_throttled_lines.sh [RUNS] [MB] [RATE]
#   (defaults: 3 runs, 100 MB per disk, 40 MiB/s per disk)
# DSORT_BIN_DIR=DIR uses the binaries in DIR instead of building build-bench.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-3}
mb=${2:-100}
rate=${3:-40}
. "$top/scripts/env.sh"
# shellcheck source=tests/lib/throttle.sh
. "$top/tests/lib/throttle.sh"
thr_bench_start "$top" bench_throttled_lines # sets bin
setup() { thr_setup "$@"; }
bps=$((rate * 1048576))
per=$((mb * 10000)) # 100-byte lines
img=$((mb * 2 + 128))
work=$THR_WORK
disks=()
for i in 0 1 2; do
    setup thr_disk "d$i" "$img" "$bps" "$bps"
    disks+=("$THR_MNT")
    mpirun -q -n 2 "$bin/dsort-gen" -a -b $((i * per)) "$per" "$THR_MNT/in" >/dev/null
done
in3=("${disks[0]}/in" "${disks[1]}/in" "${disks[2]}/in")
echo "bench_throttled_lines: $runs runs, $mb MB of lines per disk, $rate MiB/s read and write" \
    "per disk, cgroup $THR_CG_KIND; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# one N OPTS...: one sort in the cgroup; prints "READ TOTAL SAMPLE" (the slowest rank's read
# phase, the wall time, the slowest rank's sample phase: the sample reads the inputs too, with
# one stream, 256 windows of 16 KiB a rank and the kernel's readahead around each).
one() {
    local n=$1
    shift
    rm -f "$work/out" "$work/stats.json"
    thr_run mpirun -q -n "$n" -x DSORT_ROOFLINE_RATES="$roof_rates" "$bin/dsort" --format lines -T "$work" --stats "$work/stats.json" \
        "$@" "${in3[@]}" -o "$work/out"
    "$PYTHON3" - "$work/stats.json" "$THR_ELAPSED" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ph = [r["phases"] for r in d["per_rank"]]
print("%.3f %s %.3f" % (max(p["read"] for p in ph), sys.argv[2], max(p["sample"] for p in ph)))
PY
    "$PYTHON3" "$top/tests/bench/roofline_show.py" "$work/stats.json" --job >"$work/roof.txt" 2>&1 ||
        true
}
# The throttled loop disks at their given limits (MiB/s in MB/s) for dsort's roofline; the
# machine's own disk at its rate measured by the block layer.
roof_rates=""
roof_mbps=$(awk -v b="$bps" 'BEGIN { printf "%.3f", b / 1e6 }')
for l in "${THR_LOOPS[@]}"; do
    roof_rates+=" $(basename "$l").read=$roof_mbps $(basename "$l").write=$roof_mbps"
done
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
gain() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * (1 - a / b) }'; }
rows=()
# row CASE N OPTS...: a warm-up of each, then RUNS runs of device-parallel (1) and
# --one-stream (2) alternating; a table row of the medians.
row() {
    local what=$1 n=$2 rd tt sm r ar=() at=() as=() br=() bt=() bs=()
    shift 2
    one "$n" "$@" >/dev/null
    one "$n" --one-stream "$@" >/dev/null
    for ((r = 1; r <= runs; r++)); do
        read -r rd tt sm <<<"$(one "$n" "$@")"
        ar+=("$rd") at+=("$tt") as+=("$sm")
        echo "   $what -n $n run $r device-parallel: read $rd s, total $tt s (sample $sm s)"
        sed -n 's/^roofline: job/     roofline: job/p' "$work/roof.txt"
        read -r rd tt sm <<<"$(one "$n" --one-stream "$@")"
        br+=("$rd") bt+=("$tt") bs+=("$sm")
        echo "   $what -n $n run $r --one-stream:    read $rd s, total $tt s (sample $sm s)"
        sed -n 's/^roofline: job/     roofline: job/p' "$work/roof.txt"
    done
    local a1 a2 a3 b1 b2 b3
    a1=$(printf '%s\n' "${ar[@]}" | median) a2=$(printf '%s\n' "${at[@]}" | median)
    b1=$(printf '%s\n' "${br[@]}" | median) b2=$(printf '%s\n' "${bt[@]}" | median)
    a3=$(printf '%s\n' "${as[@]}" | median) b3=$(printf '%s\n' "${bs[@]}" | median)
    rows+=("| $what | $n | $a1 s | $b1 s | $(gain "$a1" "$b1") | $a2 s | $b2 s | $(gain "$a2" "$b2") | $a3 s | $b3 s |")
}
for n in 1 2; do
    row "A: lines, 3 disks, $((3 * mb)) MB in memory" "$n"
done
row "B: lines, 3 disks, $((3 * mb)) MB out of core -S 64M" 2 --out-of-core -S 64M
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| case | ranks | (1) read | (2) read | saved | (1) total | (2) total | saved | (1) sample | (2) sample |"
echo "|---|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "(1) device-parallel, (2) --one-stream; read: the slowest rank's read phase (--stats);"
echo "total: wall time of mpirun; saved: 1 - (1)/(2); medians of $runs runs."
