#!/usr/bin/env bash
# Core benchmark: 1 GB of gensort data (10M records) sorted by `mpirun -n 2 dsort`, side by
# side with `LC_ALL=C sort --parallel=2 -S 4G` on the -a (ASCII) form of the same records.
#   tests/bench/bench_core.sh [RECORDS] [RUNS]    (default 10000000 records, 3 timed runs)
# Prints each time, the medians, the ratio, and peak RSS per rank (/usr/bin/time).
# Data: ${DSORT_BENCH_DIR:-./data/bench}. Not part of ctest: speed is measured, not asserted.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-10000000}
runs=${2:-3}
dir=${DSORT_BENCH_DIR:-$top/data/bench}
ranks=${DSORT_BENCH_RANKS:-2}
. "$top/scripts/env.sh"
"$top/scripts/deps.sh"
cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build-bench" -j "$(nproc)" >/dev/null
bin=$top/build-bench/src/cli
mkdir -p "$dir"
[ -f "$dir/bin-$records.dat" ] || mpirun -q -n 2 "$bin/dsort-gen" "$records" "$dir/bin-$records.dat"
[ -f "$dir/ascii-$records.txt" ] || mpirun -q -n 2 "$bin/dsort-gen" -a "$records" "$dir/ascii-$records.txt"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# One dsort run; prints seconds; per-rank peak RSS (KB) is appended to $dir/rss.
run_dsort() {
    local in=$1 out=$2
    rm -rf "$out" "$dir"/rss.rank.*
    local t0 t1
    t0=$(now)
    mpirun -q -n "$ranks" sh -c 'exec /usr/bin/time -f "%M" -o "$0.rss.rank.$OMPI_COMM_WORLD_RANK" "$@"' \
        "$dir/x" "$bin/dsort" "$in" -o "$out"
    t1=$(now)
    cat "$dir"/x.rss.rank.* >>"$dir/rss"
    rm -f "$dir"/x.rss.rank.*
    echo "$t1 - $t0" | bc -l
}
run_gnu() {
    local in=$1 out=$2
    rm -f "$out"
    local t0 t1
    t0=$(now)
    /usr/bin/time -f "%M" -o "$dir/gnu.rss" env LC_ALL=C sort --parallel=2 -S 4G "$in" -o "$out"
    t1=$(now)
    cat "$dir/gnu.rss" >>"$dir/rss.gnu"
    echo "$t1 - $t0" | bc -l
}

command -v bc >/dev/null || { apt-get install -y -qq bc >/dev/null 2>&1 || true; }
: >"$dir/rss"
: >"$dir/rss.gnu"
echo "== warm-up"
run_dsort "$dir/bin-$records.dat" "$dir/sorted.dat" >/dev/null
run_gnu "$dir/ascii-$records.txt" "$dir/gnu.txt" >/dev/null
: >"$dir/rss"
: >"$dir/rss.gnu"
t_bin=() t_asc=() t_gnu=()
for i in $(seq "$runs"); do
    t_bin+=("$(run_dsort "$dir/bin-$records.dat" "$dir/sorted.dat")")
    t_asc+=("$(run_dsort "$dir/ascii-$records.txt" "$dir/sorted.txt")")
    t_gnu+=("$(run_gnu "$dir/ascii-$records.txt" "$dir/gnu.txt")")
    printf 'run %d: dsort binary %.3f s, dsort ascii %.3f s, GNU sort ascii %.3f s\n' \
        "$i" "${t_bin[-1]}" "${t_asc[-1]}" "${t_gnu[-1]}"
done
mb=$(printf '%s\n' "${t_bin[@]}" | median)
ma=$(printf '%s\n' "${t_asc[@]}" | median)
mg=$(printf '%s\n' "${t_gnu[@]}" | median)
share_kb=$((records * 100 / ranks / 1024))
rss_max=$(sort -n "$dir/rss" | tail -1)
echo "== results ($records records, $ranks ranks, medians of $runs)"
printf 'dsort binary:        %.3f s\n' "$mb"
printf 'dsort ascii:         %.3f s\n' "$ma"
printf 'GNU sort ascii:      %.3f s (peak RSS %s KB)\n' "$mg" "$(sort -n "$dir/rss.gnu" | tail -1)"
printf 'ratio GNU/dsort:     %.2fx (binary), %.2fx (ascii)\n' "$(echo "$mg / $mb" | bc -l)" \
    "$(echo "$mg / $ma" | bc -l)"
printf 'peak RSS per rank:   %s KB max = %.2fx its share of the data (%s KB)\n' "$rss_max" \
    "$(echo "$rss_max / $share_kb" | bc -l)" "$share_kb"
if cmp -s "$dir/sorted.txt" "$dir/gnu.txt"; then
    echo "ascii output: byte-identical to GNU sort"
else
    echo "ascii output: DIFFERS from GNU sort" >&2
    exit 1
fi
mpirun -q -n "$ranks" "$bin/dsort-validate" "$dir/sorted.dat"
