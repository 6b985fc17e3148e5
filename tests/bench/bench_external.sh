#!/usr/bin/env bash
# Out-of-core benchmark: gensort data sorted by `mpirun -n 2 dsort -S 512M` (spilling), against
# the same data sorted in memory by dsort, and against `LC_ALL=C sort --parallel=2 -S 1G` on
# the -a (ASCII) form. Prints times, throughputs, the ratios, the bytes read and written per
# phase (from the ranks' /proc/self/io), runs and merge passes, and peak RSS per rank.
#   tests/bench/bench_external.sh [RECORDS] [RUNS]    (default 80000000 records = 8 GB, 1 run)
# Data: ${DSORT_BENCH_DIR:-./data/bench}; needs about 5x the data size of free disk.
# DSORT_BENCH_SKIP_GNU=1 skips GNU sort (it takes minutes at 8 GB).
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-80000000}
runs=${2:-1}
dir=${DSORT_BENCH_DIR:-$top/data/bench}
budget=${DSORT_BENCH_BUDGET:-512M}
. "$top/scripts/env.sh"
"$top/scripts/deps.sh"
command -v bc >/dev/null || apt-get install -y -qq bc >/dev/null
cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build-bench" -j "$(nproc)" >/dev/null
bin=$top/build-bench/src/cli
mkdir -p "$dir/tmp"
bin_in=$dir/bin-$records.dat
asc_in=$dir/ascii-$records.txt
[ -f "$bin_in" ] || mpirun -q -n 2 "$bin/dsort-gen" "$records" "$bin_in"
now() { date +%s.%N; }

# run_dsort NAME ARGS...: time one dsort run; stats JSON to $dir/NAME.json, RSS to $dir/NAME.rss
run_dsort() {
    local name=$1
    shift
    rm -f "$dir/out.dat" "$dir/$name".rss.*
    local t0 t1
    t0=$(now)
    mpirun -q -n 2 sh -c 'exec /usr/bin/time -f "%M" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' \
        "$dir/$name.rss" "$bin/dsort" --stats "$dir/$name.json" "$@" -o "$dir/out.dat"
    t1=$(now)
    echo "$t1 - $t0" | bc -l
}
summary() {
    python3 - "$1" "$records" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); size = int(sys.argv[2]) * 100
r = [0]*len(d["per_rank"][0]["io_read_bytes"]); 
rd = sum(sum(p["io_read_bytes"].values()) for p in d["per_rank"])
wr = sum(sum(p["io_write_bytes"].values()) for p in d["per_rank"])
p0 = d["per_rank"][0]
print(f"  out_of_core={d['out_of_core']} runs/rank={[p['runs'] for p in d['per_rank']]} "
      f"extra merge passes={[p['merge_passes'] for p in d['per_rank']]} fan-in={p0['fan_in']}")
print(f"  bytes read {rd/size:.2f}x data, written {wr/size:.2f}x data")
for ph in p0["phases"]:
    t = max(p["phases"][ph] for p in d["per_rank"])
    r = sum(p["io_read_bytes"][ph] for p in d["per_rank"]) / 1e9
    w = sum(p["io_write_bytes"][ph] for p in d["per_rank"]) / 1e9
    if t > 0.0005 or r > 0.001 or w > 0.001:
        print(f"    {ph:12s} {t:8.2f} s   read {r:7.2f} GB   written {w:7.2f} GB")
PY
    # The run's roofline (issue 27), dsort's own (the "roofline" of --stats): disk rates as the
    # block layer measured them, unless given in DSORT_ROOFLINE_RATES (e.g. "vda=1000"), which
    # mpirun passes on to the ranks.
    python3 "$top/tests/bench/roofline_show.py" "$1" | sed 's/^/  /'
}
rss() { cat "$dir/$1".rss.* | sort -n | tr '\n' ' '; }

echo "== warm-up (in memory)"
run_dsort warm "$bin_in" >/dev/null
t_ext=() t_mem=()
for i in $(seq "$runs"); do
    t_ext+=("$(run_dsort ext --out-of-core -S "$budget" -T "$dir/tmp" "$bin_in")")
    mpirun -q -n 2 "$bin/dsort-validate" "$dir/out.dat" | tail -1
    t_mem+=("$(run_dsort mem "$bin_in")")
    printf 'run %d: out of core (-S %s) %.2f s, in memory %.2f s\n' "$i" "$budget" "${t_ext[-1]}" "${t_mem[-1]}"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
me=$(median "${t_ext[@]}")
mm=$(median "${t_mem[@]}")
gb=$(echo "$records * 100 / 1000000000" | bc -l)
echo "== results ($records records, $(printf %.1f "$gb") GB, 2 ranks)"
printf 'out of core: %.2f s (%.0f MB/s), peak RSS per rank (KB): %s\n' "$me" "$(echo "$gb*1000/$me" | bc -l)" "$(rss ext)"
summary "$dir/ext.json"
printf 'in memory:   %.2f s (%.0f MB/s), peak RSS per rank (KB): %s\n' "$mm" "$(echo "$gb*1000/$mm" | bc -l)" "$(rss mem)"
summary "$dir/mem.json"
printf 'out-of-core throughput / in-memory throughput: %.2f\n' "$(echo "$mm / $me" | bc -l)"
if [ "${DSORT_BENCH_SKIP_GNU:-0}" != 1 ]; then
    [ -f "$asc_in" ] || mpirun -q -n 2 "$bin/dsort-gen" -a "$records" "$asc_in"
    rm -f "$dir/gnu.txt"
    t0=$(now)
    /usr/bin/time -f "%M" -o "$dir/gnu.rss" env LC_ALL=C TMPDIR="$dir/tmp" sort --parallel=2 -S 1G "$asc_in" -o "$dir/gnu.txt"
    tg=$(echo "$(now) - $t0" | bc -l)
    printf 'GNU sort -S 1G --parallel=2 (ASCII): %.2f s, peak RSS %s KB\n' "$tg" "$(cat "$dir/gnu.rss")"
    te=$(run_dsort ext_ascii --out-of-core -S "$budget" -T "$dir/tmp" "$asc_in")
    printf 'dsort -S %s on the ASCII form: %.2f s; GNU/dsort = %.2fx\n' "$budget" "$te" "$(echo "$tg / $te" | bc -l)"
    cmp "$dir/out.dat" "$dir/gnu.txt" && echo "ASCII output byte-identical to GNU sort"
    rm -f "$dir/gnu.txt"
fi
rm -f "$dir/out.dat"
