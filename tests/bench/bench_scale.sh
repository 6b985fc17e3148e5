#!/usr/bin/env bash
# Scaling benchmark (issue 11, "Measured and modelled"): dsort at p = 8, 16, 32, 64 ranks on one
# machine (oversubscribed), in three modes, each run with --stats and the PMPI counter
# (tests/pmpi/counter.c, LD_PRELOAD) so that every rank's MPI calls and bytes are counted:
#   mem    gensort records (dsort-gen), in memory
#   ext    the same records, out of core: --out-of-core -S 16M -T DIR
#   lines  text lines of varying length (seeded python generator), --format lines
# Prints a markdown table: per mode and p, the per-rank maxima of the bytes received by
# collectives and by point-to-point calls, the calls, splitter rounds, balance (max records
# out / average), peak RSS (VmHWM at MPI_Finalize, read by the counter) and the part of it
# outside the data buffers, and the slowest rank's phase times; then the bytes received per MPI
# function (max over ranks), which is how the bytes map onto dsort's phases.
#   tests/bench/bench_scale.sh            (all of it: p = 8 16 32 64, modes mem ext lines)
# Environment:
#   SCALE_PS="8 16 32 64"   rank counts          SCALE_MODES="mem ext lines"
#   SCALE_MB=100            data size (MB, 10^6 bytes) at p <= 32
#   SCALE_MB_BIG=100        data size at p > 32  SCALE_MODES_BIG (default: SCALE_MODES)
#   SCALE_DIR               data and results (default ./data/scale; results in RESULTS/)
#   SCALE_SEED=1            the lines' seed
#   SCALE_SUMMARY_ONLY=1    only print the table of the results already in SCALE_DIR
#   SCALE_SRC, SCALE_BUILD  the source tree to build (default: this one) and its Release build
#                           directory (default: build-scale here); e.g. a `git archive` of a
#                           commit, to measure it while the working tree changes
# Results: SCALE_DIR/results/MODE-pP.stats.json (--stats), .pmpi.jsonl (one line per rank),
# .time (wall seconds of mpirun), and summary.json (what the table shows, for docs/scaling.md).
# Wall times on a 2-core machine running 64 ranks measure the scheduler more than dsort: the
# bytes, calls and rounds are what this benchmark is for. Not part of ctest.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
ps=${SCALE_PS:-8 16 32 64}
modes=${SCALE_MODES:-mem ext lines}
mb=${SCALE_MB:-100}
mb_big=${SCALE_MB_BIG:-100}
modes_big=${SCALE_MODES_BIG:-$modes}
dir=${SCALE_DIR:-$top/data/scale}
seed=${SCALE_SEED:-1}
res=$dir/results
src=${SCALE_SRC:-$top}
build=${SCALE_BUILD:-$top/build-scale}
bin=$build/src/cli
lib=$build/tests/pmpi/libdsort_pmpi_count.so

summary() {
    python3 - "$res" <<'PY'
import glob, json, os, re, sys
res = sys.argv[1]
rows = []
for st in sorted(glob.glob(os.path.join(res, "*.stats.json"))):
    m = re.match(r"(\w+)-p(\d+)-(\d+)M\.stats\.json$", os.path.basename(st))
    if not m:
        continue
    mode, p, mb = m.group(1), int(m.group(2)), int(m.group(3))
    base = st[: -len(".stats.json")]
    try:
        s = json.load(open(st))
        pm = [json.loads(l) for l in open(base + ".pmpi.jsonl")]
    except (OSError, ValueError) as e:
        print(f"bench_scale: skipping {base}: {e}", file=sys.stderr)
        continue
    wall = float(open(base + ".time").read()) if os.path.exists(base + ".time") else 0.0
    pr = s["per_rank"]
    outs = [r["records_out"] for r in pr]
    bal = max(outs) / (sum(outs) / len(outs)) if sum(outs) else 1.0
    bw = [r["bytes_written"] for r in pr]
    by_rank = {l["rank"]: l for l in pm}
    # data buffers: in memory A + B + 16-byte entries; otherwise what dsort may use (min of
    # its need and its budget)
    def data(r):
        if mode == "mem":
            return 2 * r["bytes_read"] + 16 * r["records_in"]
        return min(r["memory_needed"], r["memory_budget"])
    outside = [by_rank[r["rank"]]["vmhwm_kb"] * 1024 - data(r) for r in pr if r["rank"] in by_rank]
    funcs = {}
    for l in pm:
        for f, v in l["funcs"].items():
            a = funcs.setdefault(f, {"calls": 0, "recv": 0, "sent": 0, "peak_recv": 0})
            for k in a:
                a[k] = max(a[k], v[k])
    phases = {k: max(r["phases"][k] for r in pr) for k in pr[0]["phases"]}
    rows.append({
        "mode": mode, "p": p, "mb": mb, "ranks_reported": len(pm), "wall": wall,
        "seconds": s["seconds"], "records": s["records"], "bytes": s["bytes"],
        "coll_recv_max": max(l["coll"]["recv"] for l in pm),
        "coll_recv_max_nonroot": max([l["coll"]["recv"] for l in pm if l["rank"] != 0] or [0]),
        "coll_sent_max": max(l["coll"]["sent"] for l in pm),
        "coll_peak_max": max(l["coll"]["peak_recv"] for l in pm),
        "coll_calls_max": max(l["coll"]["calls"] for l in pm),
        "p2p_recv_max": max(l["p2p"]["recv"] for l in pm),
        "p2p_calls_max": max(l["p2p"]["calls"] for l in pm),
        "splitter_rounds": max(r["splitter_rounds"] for r in pr),
        "exchange_rounds": max(r["exchange_rounds"] for r in pr),
        "balance": bal, "balance_bytes": max(bw) / (sum(bw) / len(bw)) if sum(bw) else 1.0,
        "vmhwm_max": max(l["vmhwm_kb"] for l in pm) * 1024,
        "outside_max": max(outside), "outside_avg": sum(outside) / len(outside),
        "budget": pr[0]["memory_budget"], "needed": max(r["memory_needed"] for r in pr),
        "phases": phases, "funcs": funcs,
    })
order = {"mem": 0, "ext": 1, "lines": 2}
rows.sort(key=lambda r: (order.get(r["mode"], 9), r["p"]))
json.dump(rows, open(os.path.join(res, "summary.json"), "w"), indent=1)

def mb_(x): return f"{x / 1e6:.2f}"
print("| mode | p | data MB | coll recv MB/rank (max) | coll recv MB (max, not rank 0) | "
      "coll calls/rank | p2p recv MB/rank | p2p msgs/rank (recv+send) | splitter rounds | "
      "exchange rounds | balance | peak RSS MB/rank | outside data MB/rank (max / avg) | "
      "split s | sample s | exchange s | dsort s | mpirun s |")
print("|---" * 18 + "|")
for r in rows:
    ph = r["phases"]
    print(f"| {r['mode']} | {r['p']} | {r['mb']} | {mb_(r['coll_recv_max'])} | "
          f"{mb_(r['coll_recv_max_nonroot'])} | {r['coll_calls_max']} | {mb_(r['p2p_recv_max'])} | "
          f"{r['p2p_calls_max']} | {r['splitter_rounds']} | {r['exchange_rounds']} | "
          f"{r['balance']:.3f} | {mb_(r['vmhwm_max'])} | "
          f"{mb_(r['outside_max'])} / {mb_(r['outside_avg'])} | {ph['splitters']:.3f} | "
          f"{ph['sample']:.3f} | {ph['exchange']:.3f} | {r['seconds']:.2f} | {r['wall']:.1f} |")
print()
print("Bytes received per MPI function (max over ranks, MB; calls in brackets):")
print()
names = sorted({f for r in rows for f in r["funcs"]} - {"MPI_Waitall", "MPI_Isend", "MPI_Send"})
print("| mode | p | " + " | ".join(n[4:] for n in names) + " |")
print("|---|---" + "|---" * len(names) + "|")
for r in rows:
    cells = []
    for n in names:
        v = r["funcs"].get(n)
        cells.append(f"{v['recv'] / 1e6:.3f} ({v['calls']})" if v else "-")
    print(f"| {r['mode']} | {r['p']} | " + " | ".join(cells) + " |")
PY
}

if [ "${SCALE_SUMMARY_ONLY:-0}" = 1 ]; then
    summary
    exit 0
fi

. "$top/scripts/env.sh"
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
# Oversubscribed ranks must not spin while they wait: the others need the 2 cores.
export OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1}
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j 2 --target dsort dsort-gen dsort_pmpi_count >/dev/null
[ -f "$lib" ] || { echo "bench_scale: $lib was not built" >&2; exit 2; }
mkdir -p "$dir" "$res" "$dir/tmp"
echo "bench_scale: source $src ($(git -C "$src" describe --always --dirty 2>/dev/null || echo 'not a git tree')), build $build" >&2

# gen_data MB: the gensort file and the lines file of MB megabytes (made once, kept).
gen_data() {
    local m=$1
    local bin_in=$dir/gensort-${m}M.bin txt_in=$dir/lines-${m}M-s$seed.txt
    if [ ! -f "$bin_in" ]; then
        # shellcheck disable=SC2086 # the preflags are words
        "$DSORT_MPIEXEC" $DSORT_MPIEXEC_PREFLAGS -n 2 "$bin/dsort-gen" $((m * 10000)) "$bin_in.tmp"
        mv "$bin_in.tmp" "$bin_in"
    fi
    if [ ! -f "$txt_in" ]; then
        # Lines of 10 to 190 bytes (about 100 on average): a word, a number and random text;
        # about 1% of the lines repeat an earlier one.
        python3 - "$txt_in.tmp" $((m * 1000000)) "$seed" <<'PY'
import random, sys
out, size, rng = sys.argv[1], int(sys.argv[2]), random.Random(int(sys.argv[3]))
alpha = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.:-"
pool = ["".join(rng.choice(alpha) for _ in range(200)) for _ in range(512)]
done, prev = 0, []
with open(out, "w") as f:
    while done < size:
        lines = []
        for _ in range(4096):
            if prev and rng.random() < 0.01:
                lines.append(rng.choice(prev))
                continue
            t = rng.choice(pool)
            k = rng.randrange(0, 150)
            s = f"{rng.choice(pool)[:rng.randrange(2, 12)]} {rng.randrange(10**7)} {t[k:k + rng.randrange(1, 170)]}"
            lines.append(s)
        prev = lines[-64:]
        chunk = "\n".join(lines) + "\n"
        f.write(chunk)
        done += len(chunk)
PY
        mv "$txt_in.tmp" "$txt_in"
    fi
}

# run MODE P MB: one dsort run with --stats and the counter; results in $res.
run() {
    local mode=$1 p=$2 m=$3
    local base=$res/$mode-p$p-${m}M opts=() in=$dir/gensort-${m}M.bin
    case $mode in
    mem) ;;
    ext) opts=(--out-of-core -S 16M -T "$dir/tmp") ;;
    lines) opts=(--format lines) in=$dir/lines-${m}M-s$seed.txt ;;
    *) echo "bench_scale: unknown mode $mode" >&2; exit 2 ;;
    esac
    rm -f "$base".* "$dir/out"
    local t0 t1
    t0=$(date +%s.%N)
    local env=(-q -x LD_PRELOAD="$lib" -x DSORT_PMPI_OUT="$base.pmpi.jsonl")
    if [ "${DSORT_MPI:-}" = mpich ]; then # hydra: -genv, and no -q
        env=(-genv LD_PRELOAD "$lib" -genv DSORT_PMPI_OUT "$base.pmpi.jsonl")
    fi
    # shellcheck disable=SC2086 # the preflags are words
    "$DSORT_MPIEXEC" $DSORT_MPIEXEC_PREFLAGS "${env[@]}" -n "$p" "$bin/dsort" "${opts[@]}" \
        --stats "$base.stats.json" -o "$dir/out" "$in"
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }' >"$base.time"
    rm -f "$dir/out"
    echo "bench_scale: $mode p=$p ${m} MB: $(cat "$base.time") s" >&2
}

for p in $ps; do
    m=$mb ms=$modes
    if [ "$p" -gt 32 ]; then
        m=$mb_big ms=$modes_big
    fi
    gen_data "$m"
    for mode in $ms; do
        run "$mode" "$p" "$m"
    done
done
rm -rf "$dir/tmp"
summary
