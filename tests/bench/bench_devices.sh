#!/usr/bin/env bash
# Device-parallel reading against one stream per rank (issue "Topology"), on this machine's
# means: several file systems at once, each a loop-mounted ext4 image (all images live on the
# one virtual disk), or tmpfs mounts (memory). The input is spread over the mounts, one file
# per mount; dsort sorts it in memory with its default device-parallel reading (one thread per
# device, within the devices' stream limits) and with --one-stream (each rank reads its share
# in input order with one stream), and the read phase is taken from --stats (slowest rank).
# For ext4 the page cache is dropped before every run, so reads go to the disk.
#
#   tests/bench/bench_devices.sh [RECORDS] [RUNS] [ext4|tmpfs] [MOUNTS]
#   (defaults: 6000000 records = 600 MB, 3 runs, ext4, 3 mounts; needs root)
# Prints each run and the medians for 1 and 2 ranks. Cleans up its mounts and loop devices.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-6000000}
runs=${2:-3}
kind=${3:-ext4}
mounts=${4:-3}
[ "$(id -u)" -eq 0 ] || { echo "bench_devices: needs root (mounts)" >&2; exit 2; }
. "$top/scripts/env.sh"
cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build-bench" -j "$(nproc)" >/dev/null
bin=$top/build-bench/src/cli
work=$(mktemp -d /var/tmp/dsort-bench-devices.XXXXXX)
loops=()
cleanup() {
    for ((i = 0; i < mounts; i++)); do umount "$work/m$i" 2>/dev/null || true; done
    for l in "${loops[@]}"; do losetup -d "$l" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
per=$((records / mounts))
mb=$((per * 100 / 1048576 * 2 + 64))
for ((i = 0; i < mounts; i++)); do
    mkdir -p "$work/m$i"
    if [ "$kind" = ext4 ]; then
        truncate -s "${mb}M" "$work/disk$i.img"
        mkfs.ext4 -q -F "$work/disk$i.img"
        l=$(losetup -f --show "$work/disk$i.img")
        loops+=("$l")
        mount "$l" "$work/m$i"
    else
        mount -t tmpfs -o "size=${mb}m" "bench-tmpfs-$i" "$work/m$i"
    fi
    mpirun -q -n 2 "$bin/dsort-gen" -b $((i * per)) "$per" "$work/m$i/part" >/dev/null
done
inputs=()
for ((i = 0; i < mounts; i++)); do inputs+=("$work/m$i/part"); done
echo "bench_devices: $records records over $mounts $kind mounts ($(du -sh "${inputs[@]}" | awk '{print $1}' | tr '\n' ' '))"
"$bin/dsort" --plan "${inputs[@]}" -o "$work/out" 2>&1 | sed -n 's/^/   plan: /p' | head -n 20

# run N MODE: one sort; prints "read SECONDS total SECONDS"
run() {
    local n=$1 mode=$2 extra=()
    [ "$mode" = one-stream ] && extra=(--one-stream)
    if [ "$kind" = ext4 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi
    rm -f "$work/out"
    local t0 t1
    t0=$(date +%s.%N)
    mpirun -q -n "$n" "$bin/dsort" "${extra[@]}" --stats "$work/stats.json" "${inputs[@]}" -o "$work/out"
    t1=$(date +%s.%N)
    python3 - "$work/stats.json" "$t0" "$t1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("read %.3f total %.3f" % (max(r["phases"]["read"] for r in d["per_rank"]),
                                 float(sys.argv[3]) - float(sys.argv[2])))
PY
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for n in 1 2; do
    for mode in device-parallel one-stream; do
        run "$n" "$mode" >/dev/null # warm-up
        reads=() totals=()
        for ((r = 1; r <= runs; r++)); do
            out=$(run "$n" "$mode")
            echo "   n=$n $mode run $r: $out"
            reads+=("$(echo "$out" | awk '{print $2}')")
            totals+=("$(echo "$out" | awk '{print $4}')")
        done
        echo "   n=$n $mode: median read $(printf '%s\n' "${reads[@]}" | median) s, total $(printf '%s\n' "${totals[@]}" | median) s"
    done
done
