#!/usr/bin/env bash
# Would shares that follow devices pay (issue 15, "ranks own devices")? Two loop disks, each
# throttled on its own (tests/lib/throttle.sh), two gensort files on each (A1, A2; B1, B2).
# `mpirun -n 2 dsort` sorts them given interleaved (A1 B1 A2 B2: the even cut makes both ranks
# read both disks) and grouped (A1 A2 B1 B2: rank 0 reads only A, rank 1 only B). Without -s
# and -u the order of the inputs does not change the output, so this measures the reading
# alone. Prints the read phase (slowest rank, --stats) and the wall time of each run.
#   tests/bench/bench_owner_order.sh [RECORDS_PER_FILE] [MIB_PER_S] [RUNS]
#                                    (default 500000 = 50 MB, 40 MiB/s, 3 runs)
# Needs root, loop devices and a cgroup that can throttle (else exit 77). DSORT_BIN_DIR: the
# programs (default build-bench/src/cli, a Release build made here). Not part of ctest.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-500000}
mibps=${2:-40}
runs=${3:-3}
bin=${DSORT_BIN_DIR:-}
if [ -z "$bin" ]; then
    cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$top/build-bench" -j "$(nproc)" --target dsort dsort-gen >/dev/null
    bin=$top/build-bench/src/cli
fi
# shellcheck source=/dev/null
. "$top/scripts/env.sh"
. "$top/tests/lib/throttle.sh"
thr_reap_stale 2>/dev/null || true
thr_init || {
    echo "skip: $THR_REASON"
    exit 77
}
trap thr_teardown EXIT INT TERM HUP
bps=$((mibps << 20))
mb=$((records * 2 * 100 / 1000000 + 64))
thr_disk a "$mb" "$bps" "$bps"
A=$THR_MNT
thr_disk b "$mb" "$bps" "$bps"
B=$THR_MNT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
seed=1
for f in "$A/1" "$A/2" "$B/1" "$B/2"; do
    mpirun -q -n 1 "$bin/dsort-gen" -b $((seed * records)) "$records" "$f"
    seed=$((seed + 1))
done
out=$THR_WORK/out
for ((i = 1; i <= runs; i++)); do
    for order in interleaved grouped; do
        if [ "$order" = interleaved ]; then
            set -- "$A/1" "$B/1" "$A/2" "$B/2"
        else
            set -- "$A/1" "$A/2" "$B/1" "$B/2"
        fi
        rm -f "$out"
        thr_run "$DSORT_MPIEXEC" -q $DSORT_MPIEXEC_PREFLAGS -n 2 "$bin/dsort" --stats "$THR_WORK/st.json" "$@" -o "$out"
        read=$(python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(max(r['phases']['read'] for r in s['per_rank']))" "$THR_WORK/st.json")
        printf '%-11s read %.2f s  total %.2f s\n' "$order" "$read" "$THR_ELAPSED"
    done
done
