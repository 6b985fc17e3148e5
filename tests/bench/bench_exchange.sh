#!/bin/bash
# bench_exchange.sh - the node-aware exchange against the direct one on one machine, with
# virtual nodes (DSORT_EXCHANGE_RANKS_PER_NODE), under the PMPI counter (tests/pmpi): per run,
# point-to-point messages and bytes per rank (max over ranks), the exchange phase's seconds
# (slowest rank, --stats; best of REPS runs) and the output's checksum (direct and node must
# give the same bytes). In-memory gensort data: one exchange per run.
# Usage: tests/bench/bench_exchange.sh [BUILD_DIR] [DIR]
#   EXB_P="8 16 32" EXB_PER="4 8" EXB_RECS="10000 1000000" EXB_REPS=3
set -u -o pipefail
. "$(cd "$(dirname "$0")/../.." && pwd)/scripts/env.sh"
build=${1:-build}
dir=${2:-data/bench_exchange}
mkdir -p "$dir"
lib=$build/tests/pmpi/libdsort_pmpi_count.so
[ -f "$lib" ] || { echo "build $lib first (cmake --build $build)" >&2; exit 2; }
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1} OMPI_MCA_mpi_yield_when_idle=1
out=$dir/results.jsonl
: >"$out"
for recs in ${EXB_RECS:-10000 1000000}; do
    in=$dir/in-$recs.dat
    [ -f "$in" ] || "$DSORT_MPIEXEC" $DSORT_MPIEXEC_PREFLAGS -n 2 "$build/src/cli/dsort-gen" "$recs" "$in" >/dev/null
    for p in ${EXB_P:-8 16 32}; do
        for per in ${EXB_PER:-4 8}; do
            [ "$per" -lt "$p" ] || continue
            for way in direct node auto; do
                for rep in $(seq "${EXB_REPS:-3}"); do
                    base=$dir/r-$recs-p$p-per$per-$way-$rep
                    rm -f "$base".*
                    "$DSORT_MPIEXEC" $DSORT_MPIEXEC_PREFLAGS -q -n "$p" -x LD_PRELOAD="$lib" \
                        -x DSORT_PMPI_OUT="$base.pmpi.jsonl" -x DSORT_EXCHANGE_RANKS_PER_NODE="$per" \
                        "$build/src/cli/dsort" --exchange="$way" --stats "$base.stats.json" \
                        -o "$base.out" "$in" || { echo "failed: $base" >&2; continue; }
                    sum=$(cksum <"$base.out" | cut -d' ' -f1)
                    rm -f "$base.out"
                    python3 - "$base" "$recs" "$p" "$per" "$way" "$rep" "$sum" >>"$out" <<'PY'
import json, sys
base, recs, p, per, way, rep, cks = sys.argv[1:]
s = json.load(open(base + ".stats.json"))
pm = [json.loads(l) for l in open(base + ".pmpi.jsonl")]
pr = s["per_rank"]
print(json.dumps({"recs": int(recs), "p": int(p), "per": int(per), "way": way, "rep": int(rep),
    "cksum": cks, "by_node": sum(r["exchanges_by_node"] for r in pr) > 0,
    "exchange_s": max(r["phases"]["exchange"] for r in pr),
    "p2p_calls": max(l["p2p"]["calls"] for l in pm),
    "p2p_recv": max(l["p2p"]["recv"] for l in pm),
    "p2p_sent": max(l["p2p"]["sent"] for l in pm),
    "rounds": max(r["exchange_rounds"] for r in pr)}))
PY
                done
            done
        done
    done
done
python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
best = {}
for r in rows:
    k = (r["recs"], r["p"], r["per"], r["way"])
    b = best.setdefault(k, dict(r, times=[]))
    b["times"].append(r["exchange_s"])
    if r["cksum"] != b["cksum"]:
        b["cksum"] = "DIFFERS"
print("| records | p | ranks/node | nodes | way | took node | p2p msgs/rank (max) | p2p recv MB/rank (max) | p2p sent MB/rank (max) | rounds | exchange s (best of runs) | all runs | output cksum |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for k in sorted(best):
    b = best[k]
    print(f"| {k[0]} | {k[1]} | {k[2]} | {(k[1] + k[2] - 1) // k[2]} | {k[3]} | {'yes' if b['by_node'] else 'no'} | {b['p2p_calls']} | {b['p2p_recv'] / 1e6:.3f} | {b['p2p_sent'] / 1e6:.3f} | {b['rounds']} | {min(b['times']):.4f} | {' '.join(f'{t:.4f}' for t in b['times'])} | {b['cksum']} |")
PY
