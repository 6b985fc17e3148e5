#!/usr/bin/env bash
# Text-line benchmark: `mpirun -n 2 dsort --format lines` against `LC_ALL=C sort --parallel=2
# -S 4G` on the same file, the outputs compared with cmp (they must be byte-identical).
#   A: gensort -a records (`dsort-gen -a`: 100-byte CRLF-terminated lines), whole-line order.
#   B: a CSV of about the same size (`word,number,text` lines, seeded), `-t, -k2,2n`.
#   tests/bench/bench_lines.sh [RECORDS] [RUNS]   (default 10000000 records = 1 GB, 3 timed runs)
# RECORDS sets both inputs' size (RECORDS x 100 bytes). Each benchmark has a warm-up run of
# each program, then RUNS timed runs; it prints every time, the medians, the ratio (GNU sort
# time / dsort time: above 1 means dsort is faster), peak RSS (/usr/bin/time; dsort's per
# rank) and what dsort's --stats says (budget, in memory or out of core, runs).
# Environment: DSORT_BENCH_DIR (data, default ./data/bench; shares ascii-RECORDS.txt with
# bench_core.sh), DSORT_BENCH_RANKS (2), DSORT_BENCH_LINES_BUDGET (dsort's -S per rank,
# default 2G: two ranks get GNU sort's 4G between them), DSORT_BENCH_SEED (the CSV's seed, 1).
# Not part of ctest: speed is measured, not asserted; a difference of outputs exits 1.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-10000000}
runs=${2:-3}
dir=${DSORT_BENCH_DIR:-$top/data/bench}
ranks=${DSORT_BENCH_RANKS:-2}
budget=${DSORT_BENCH_LINES_BUDGET:-2G}
seed=${DSORT_BENCH_SEED:-1}
. "$top/scripts/env.sh"
"$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build-bench" -j "$(nproc)" >/dev/null
bin=$top/build-bench/src/cli
"$bin/dsort" --help 2>&1 | grep -q lines ||
    { echo "bench_lines: $bin/dsort has no --format lines" >&2; exit 2; }
mkdir -p "$dir"
asc=$dir/ascii-$records.txt
csv=$dir/csv-$records-s$seed.txt
[ -f "$asc" ] || mpirun -q -n 2 "$bin/dsort-gen" -a "$records" "$asc"
if [ ! -f "$csv" ]; then
    # About RECORDS x 100 bytes of `word,number,text` lines: numbers of 1 to 7 digits, some
    # negative, some with decimals, some repeated; text of 3 to 10 words.
    python3 - "$csv.tmp" $((records * 100)) "$seed" <<'PY'
import random, sys
out, size, rng = sys.argv[1], int(sys.argv[2]), random.Random(int(sys.argv[3]))
letters = 'abcdefghijklmnopqrstuvwxyz'
words = [''.join(rng.choice(letters) for _ in range(rng.randrange(2, 10))) for _ in range(5000)]
nums = ([str(rng.randrange(-10**6, 10**7)) for _ in range(20000)] +
        [f"{rng.uniform(-1e4, 1e6):.2f}" for _ in range(5000)] + ['0', '-0', '42', ''])
texts = [' '.join(rng.choices(words, k=rng.randrange(3, 11))) for _ in range(20000)]
done = 0
with open(out, 'w') as f:
    while done < size:
        w, n, t = rng.choices(words, k=4096), rng.choices(nums, k=4096), rng.choices(texts, k=4096)
        chunk = ''.join(f"{a},{b},{c}\n" for a, b, c in zip(w, n, t))
        f.write(chunk)
        done += len(chunk)
PY
    mv "$csv.tmp" "$csv"
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# run_dsort NAME IN OUT OPTS...: one dsort run; prints seconds. Peak RSS (KB) of each rank goes
# to $dir/NAME.rss (one line per rank and run), --stats to $dir/NAME.json.
run_dsort() {
    local name=$1 in=$2 out=$3
    shift 3
    rm -f "$out" "$dir/$name".rss.rank.*
    local t0 t1
    t0=$(now)
    # shellcheck disable=SC2016 # expanded by sh, on each rank
    mpirun -q -n "$ranks" sh -c 'exec /usr/bin/time -f "%M" -o "$0.rss.rank.$OMPI_COMM_WORLD_RANK" "$@"' \
        "$dir/$name" "$bin/dsort" --format lines -S "$budget" --stats "$dir/$name.json" "$@" \
        -o "$out" "$in"
    t1=$(now)
    cat "$dir/$name".rss.rank.* >>"$dir/$name.rss"
    rm -f "$dir/$name".rss.rank.*
    secs "$t0" "$t1"
}
# run_gnu NAME IN OUT OPTS...: one GNU sort run; prints seconds, peak RSS to $dir/NAME.rss.
run_gnu() {
    local name=$1 in=$2 out=$3
    shift 3
    rm -f "$out"
    local t0 t1
    t0=$(now)
    /usr/bin/time -f "%M" -o "$dir/$name.rss.1" env LC_ALL=C sort --parallel=2 -S 4G "$@" -o "$out" "$in"
    t1=$(now)
    cat "$dir/$name.rss.1" >>"$dir/$name.rss"
    rm -f "$dir/$name.rss.1"
    secs "$t0" "$t1"
}
# same A B WHAT: the outputs are byte-identical, or the benchmark fails.
same() {
    if ! cmp "$1" "$2"; then
        echo "bench_lines: $3: dsort's output DIFFERS from GNU sort's ($1, $2)" >&2
        exit 1
    fi
}
stats() {
    python3 - "$1" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print(f"(no --stats: {e})")
    sys.exit(0)
pr = s.get('per_rank', [{}]) or [{}]
r0, out = pr[0], []
if 'memory_budget' in r0:
    out.append(f"budget {r0['memory_budget'] / 2**20:.0f} MiB per rank ({r0.get('memory_budget_reason', '?')})")
if 'out_of_core' in s:
    out.append('out of core' if s['out_of_core'] else 'in memory')
if 'runs' in r0:
    out.append(f"runs per rank {[r.get('runs') for r in pr]}, extra merge passes "
               f"{[r.get('merge_passes') for r in pr]}")
if 'seconds' in s:
    out.append(f"{s['seconds']:.3f} s inside dsort")
print('; '.join(out) or '(no figures)')
PY
}

# bench NAME IN OPTS...: warm-up, RUNS timed runs of each, medians, ratio, RSS, cmp.
bench() {
    local name=$1 in=$2
    shift 2
    local d_out=$dir/$name.dsort.out g_out=$dir/$name.gnu.out t_d=() t_g=() i
    echo "== $name: $(du -h "$in" | cut -f1) $(basename "$in"), options: ${*:-(none)}"
    echo "   dsort: mpirun -n $ranks dsort --format lines -S $budget $*"
    echo "   GNU:   LC_ALL=C sort --parallel=2 -S 4G $*"
    run_dsort "$name.dsort" "$in" "$d_out" "$@" >/dev/null
    run_gnu "$name.gnu" "$in" "$g_out" "$@" >/dev/null
    same "$d_out" "$g_out" "$name (warm-up)"
    : >"$dir/$name.dsort.rss"
    : >"$dir/$name.gnu.rss"
    for i in $(seq "$runs"); do
        t_d+=("$(run_dsort "$name.dsort" "$in" "$d_out" "$@")")
        t_g+=("$(run_gnu "$name.gnu" "$in" "$g_out" "$@")")
        printf '   run %d: dsort %.3f s, GNU sort %.3f s\n' "$i" "${t_d[-1]}" "${t_g[-1]}"
    done
    same "$d_out" "$g_out" "$name"
    local md mg
    md=$(printf '%s\n' "${t_d[@]}" | median)
    mg=$(printf '%s\n' "${t_g[@]}" | median)
    printf '   medians of %d: dsort %.3f s, GNU sort %.3f s, ratio GNU/dsort %.2fx\n' "$runs" "$md" "$mg" \
        "$(awk -v a="$mg" -v b="$md" 'BEGIN { print (b > 0) ? a / b : 0 }')"
    printf '   peak RSS: dsort %s KB per rank (max), GNU sort %s KB\n' \
        "$(sort -n "$dir/$name.dsort.rss" | tail -n 1)" "$(sort -n "$dir/$name.gnu.rss" | tail -n 1)"
    echo "   dsort --stats: $(stats "$dir/$name.dsort.json")"
    echo "   outputs: byte-identical (cmp)"
    rm -f "$d_out" "$g_out"
}

echo "bench_lines: $records records ($((records * 100 / 1000000)) MB per input), $ranks ranks, $runs runs"
bench A-gensort-lines "$asc"
bench B-csv-k2n "$csv" -t, -k2,2n
