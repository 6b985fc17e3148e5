#!/usr/bin/env bash
# The floor table (issue 14): each phase of an in-memory `mpirun -n RANKS dsort INPUT -o OUT`
# next to the floor of what it does, on this machine. The floors come from dsort-floor-probe
# (tests/bench/floor_probe.c): every elementary operation timed alone, between barriers, on
# memory already touched (the fresh-memory cost is its own line), the slowest rank's time, as
# --stats gives the slowest rank's phases. Medians of RUNS runs each, dsort and the probe
# alternating. Prints a markdown table: phase, dsort's median, the floor, the ratio, and what
# the floor is made of.
#   tests/bench/bench_floor.sh [RECORDS] [RUNS]      (default 10000000 records = 1 GB, 5 runs)
# Environment: DSORT_BENCH_DIR (data; default ./data/bench), DSORT_BENCH_RANKS (default 2),
# DSORT_BENCH_OPTS (more dsort options, e.g. --no-map for the copying path).
# Not part of ctest.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-10000000}
runs=${2:-5}
dir=${DSORT_BENCH_DIR:-$top/data/bench}
ranks=${DSORT_BENCH_RANKS:-2}
. "$top/scripts/env.sh"
"$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build-bench" -j "$(nproc)" --target dsort dsort-gen dsort-floor-probe >/dev/null
bin=$top/build-bench/src/cli
probe=$top/build-bench/tests/bench/dsort-floor-probe
mkdir -p "$dir"
in=$dir/ascii-$records.txt
[ -f "$in" ] || mpirun -q -n 2 "$bin/dsort-gen" -a "$records" "$in"
res=$(mktemp -d "${TMPDIR:-/tmp}/dsort-floor.XXXXXX")
trap 'rm -rf "$res"' EXIT
mpi=("$DSORT_MPIEXEC" -q $DSORT_MPIEXEC_PREFLAGS -n "$ranks")
read -r -a opts <<<"${DSORT_BENCH_OPTS:-}"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

cat "$in" >/dev/null # into the page cache, as for every run below
for ((i = 1; i <= runs; i++)); do
    rm -f "$dir/floor.out"
    t0=$(now)
    "${mpi[@]}" "$bin/dsort" "${opts[@]}" "$in" -o "$dir/floor.out" --stats "$res/stats.$i.json"
    t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$res/dsort_wall"
    "${mpi[@]}" "$probe" "$in" "$dir" >"$res/probe.$i"
    t0=$(now)
    "${mpi[@]}" "$probe" --init
    t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$res/startup"
done
rm -f "$dir/floor.out"

python3 - "$res" "$runs" "$(median <"$res/dsort_wall")" "$(median <"$res/startup")" \
    "$records" "$ranks" <<'EOF'
import json, statistics, sys
res, runs, wall, startup, records, ranks = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), \
    float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
phase = {}
mapped = False
for i in range(1, runs + 1):
    s = json.load(open(f"{res}/stats.{i}.json"))
    mapped = s.get('mapped', False)
    for p in s['per_rank'][0]['phases']:
        phase.setdefault(p, []).append(max(r['phases'][p] for r in s['per_rank']))
probe = {}
for i in range(1, runs + 1):
    for line in open(f"{res}/probe.{i}"):
        k, v = line.split()
        probe.setdefault(k, []).append(float(v))
m = {k: statistics.median(v) for k, v in probe.items()}
d = {k: statistics.median(v) for k, v in phase.items()}
share = records * 100 / ranks / 1e6
rows_common = [
    ("start-up (mpirun, MPI_Init)", None, startup, "mpirun of a program that only calls MPI_Init"),
    ("read", d.get('read'), m['read_cached'],
     f"read_cached: {share:.0f} MB a rank from the page cache into touched memory"),
    ("sort", d.get('sort'), m['radix'] + m['gather'],
     f"radix {m['radix']:.2f} + gather {m['gather']:.2f}: the same key sort and record move, "
     "on touched memory"),
    ("splitters", d.get('splitters'), None, "no floor: rounds of small collectives"),
    ("exchange", d.get('exchange'), m['alltoall'] * (ranks - 1) / ranks if ranks > 1 else 0,
     "alltoall of the share, times (p-1)/p (the part that leaves the rank)"),
]
rows = rows_common + [
    ("merge", d.get('merge'), m['memcpy'], "memcpy of the share (a streaming pass)"),
    ("write", d.get('write'), m['write_direct'], "O_DIRECT writes of the share, all ranks at once"),
] if d.get('merge') else rows_common + [
    # the mapped input, and the copying path since issue 27 (no "merge" phase): the merge copies
    # records into the writer's buffers while the writer thread writes: one phase, whose floor
    # is the slower of the two
    ("merge + write", d.get('write'), max(m['memcpy'], m['write_direct']),
     "the slower of a memcpy of the share and its O_DIRECT writes (they overlap)"),
]
rows = rows + [
    ("commit", d.get('commit'), m['fsync'], "fsync after the direct writes"),
]
print(f"{records} records ({records * 100 / 1e9:.1f} GB), {ranks} ranks, medians of {runs}; "
      f"dsort wall {wall:.2f} s; input {'mapped' if mapped else 'copied'}")
print()
print("| phase | dsort (s) | floor (s) | dsort / floor | the floor |")
print("|---|---|---|---|---|")
total_floor = 0.0
for name, mine, floor, what in rows:
    total_floor += floor or 0.0
    ratio = f"{mine / floor:.1f}x" if mine is not None and floor else ""
    print(f"| {name} | {'' if mine is None else f'{mine:.2f}'} | "
          f"{'' if floor is None else f'{floor:.2f}'} | {ratio} | {what} |")
print(f"| **sum** | **{wall:.2f}** (wall) | **{total_floor:.2f}** | "
      f"{wall / total_floor:.1f}x | phases one after another, no overlap |")
print()
print(f"fresh memory: touching {share:.0f} MB a rank for the first time took "
      f"{m['touch_fresh']:.2f} s, again {m['touch_warm']:.2f} s (medians)")
EOF
