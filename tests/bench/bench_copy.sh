#!/usr/bin/env bash
# bench_copy.sh - the copying path against the mapped path in memory (issue 27, "The copying
# path at memory speed"): `mpirun -n RANKS dsort [--no-map] -v INPUT -o OUT --stats`, the
# modes alternating run by run after a warm-up of each, the input in the page cache (warm) or
# dropped before every run (BCP_COLD=1).
#
# Modes (BCP_MODES, default "map copy"):
#   map     the mapped path (records stay in the page cache; one node only)
#   copy    --no-map: records read, sent and merged (what a job across nodes takes)
#   copy2   --no-map the way it was before issue 27 (DSORT_COPY_TWO_BUFFERS=1: job_mem.c's
#           second share-sized buffer; DSORT_MEM_HUGEPAGES=1: transparent huge pages), for a
#           before/after in the same run
# Per run: wall seconds of mpirun, CPU seconds (user + system of mpirun and the ranks,
# /usr/bin/time), the phases (slowest rank) and dsort's own roofline (its -v lines), peak RSS
# of the largest rank and the balance (the most records a rank wrote over the average), from
# --stats. Every output is compared with cmp to the mapped path's output (one run before the
# warm-up).
# Then per mode: median, min, max, max/min of the wall time, median CPU, each against map's
# median, the worst balance, the median phases, and the -v roofline of the run closest to the
# median.
#
#   tests/bench/bench_copy.sh [RECORDS] [RUNS]    (default 5120000 = 512 MB, 5 runs)
# Environment: BCP_DIR (data and outputs; default /var/tmp/dsort-bench-copy), BCP_RANKS (2),
# BCP_MODES, BCP_COLD (needs root), DSORT_BIN_DIR (programs; default this tree's build/src/cli),
# BCP_BASE_BIN (mode base).
# Not part of ctest: speed is measured, not asserted. Exits 1 if an output differs.
set -u -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
records=${1:-5120000}
runs=${2:-5}
dir=${BCP_DIR:-/var/tmp/dsort-bench-copy}
ranks=${BCP_RANKS:-2}
modes=${BCP_MODES:-map copy}
cold=${BCP_COLD:-0}
bin=${DSORT_BIN_DIR:-$top/build/src/cli}
# shellcheck source=/dev/null
. "$top/scripts/env.sh"
for b in dsort dsort-gen; do
    [ -x "$bin/$b" ] || { echo "bench_copy: no $bin/$b (build first)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "bench_copy: needs /usr/bin/time" >&2; exit 2; }
mkdir -p "$dir"
in=$dir/in-$records.dat
mpi=("$DSORT_MPIEXEC" $DSORT_MPIEXEC_PREFLAGS -n "$ranks")
[ -f "$in" ] || "${mpi[@]}" "$bin/dsort-gen" "$records" "$in" >/dev/null || exit 2
res=$(mktemp -d "$dir/res.XXXXXX")
trap 'rm -rf "$res" "$dir/out.dat" "$dir/ref.dat"' EXIT
trap 'exit 1' INT TERM HUP

# one MODE RUN: a run of dsort in that mode; its files in $res/MODE.RUN.*
one() {
    local mode=$1 i=$2 env=() opt=() prog=$bin/dsort
    case $mode in
    map) ;;
    copy) opt=(--no-map) ;;
    copy2) opt=(--no-map) env=(DSORT_COPY_TWO_BUFFERS=1 DSORT_MEM_HUGEPAGES=1) ;;
    base)
        opt=(--no-map) prog=${BCP_BASE_BIN:-}/dsort
        [ -x "$prog" ] || { echo "bench_copy: mode base needs BCP_BASE_BIN (no $prog)" >&2; exit 2; }
        ;;
    *) echo "bench_copy: unknown mode $mode" >&2; exit 2 ;;
    esac
    if [ "$cold" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; else cat "$in" >/dev/null; fi
    rm -f "$dir/out.dat"
    /usr/bin/time -f "%e %U %S" -o "$res/$mode.$i.time" env "${env[@]}" "${mpi[@]}" "$prog" \
        "${opt[@]}" -v "$in" -o "$dir/out.dat" --stats "$res/$mode.$i.json" >"$res/$mode.$i.v" 2>&1 ||
        { echo "bench_copy: $mode run $i failed:" >&2; cat "$res/$mode.$i.v" >&2; exit 1; }
    cmp -s "$dir/out.dat" "$dir/ref.dat" ||
        { echo "bench_copy: $mode run $i: the output differs from the mapped path's" >&2; exit 1; }
}

echo "bench_copy: $records records ($((records / 10000)) MB), $ranks ranks, modes: $modes," \
    "$runs runs, page cache $([ "$cold" = 1 ] && echo dropped || echo warm)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
rm -f "$dir/ref.dat"
"${mpi[@]}" "$bin/dsort" "$in" -o "$dir/ref.dat" || exit 1 # the reference: the mapped path
for m in $modes; do one "$m" 0; done                        # warm-up, not counted
for ((i = 1; i <= runs; i++)); do
    for m in $modes; do
        one "$m" "$i"
        read -r w u s <"$res/$m.$i.time"
        printf '%-5s run %d: wall %5.2f s  cpu %5.2f s  %s\n' "$m" "$i" "$w" "$(echo "$u + $s" | bc -l)" \
            "$(sed -n 's/^dsort: phase seconds (slowest rank): //p' "$res/$m.$i.v")"
    done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$res" "$runs" "$modes" <<'EOF'
import json, statistics, sys
res, runs, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
med = statistics.median
d = {}
for m in modes:
    rows = []
    for i in range(1, runs + 1):
        w, u, s = (float(v) for v in open(f"{res}/{m}.{i}.time").read().split()[-3:])
        st = json.load(open(f"{res}/{m}.{i}.json"))
        ph = {}
        for r in st['per_rank']:
            for p, t in r['phases'].items():
                ph[p] = max(ph.get(p, 0), t)
        rss = max(r['rss_peak_kb'] for r in st['per_rank'])
        out = [r['records_out'] for r in st['per_rank']]
        rows.append((w, u + s, ph, rss, i, max(out) * len(out) / max(sum(out), 1)))
    d[m] = rows
base = med([r[0] for r in d['map']]) if 'map' in d else None
cbase = med([r[1] for r in d['map']]) if 'map' in d else None
print()
print("| mode | wall median (s) | min-max (s) | max/min | x map | CPU median (s) | CPU x map | peak RSS a rank (MB) | balance |")
print("|---|---|---|---|---|---|---|---|---|")
for m, rows in d.items():
    ws = [r[0] for r in rows]
    cs = [r[1] for r in rows]
    xm = f"{med(ws) / base:.2f}x" if base else ""
    xc = f"{med(cs) / cbase:.2f}x" if cbase else ""
    print(f"| {m} | {med(ws):.2f} | {min(ws):.2f}-{max(ws):.2f} | {max(ws) / min(ws):.2f} | {xm} "
          f"| {med(cs):.2f} | {xc} | {med([r[3] for r in rows]) / 1024:.0f} "
          f"| {max(r[5] for r in rows):.3f} |")
names = []
for rows in d.values():
    for r in rows:
        names += [p for p, t in r[2].items() if t > 0 and p not in names]
print()
print("| mode | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for m, rows in d.items():
    print(f"| {m} | " + " | ".join(f"{med([r[2].get(p, 0) for r in rows]):.3f}" for p in names) + " |")
for m, rows in d.items():
    mid = sorted(rows, key=lambda r: (r[0], r[4]))[(len(rows) - 1) // 2]
    print(f"\n{m}, run {mid[4]} (the median's), dsort -v's roofline:")
    for line in open(f"{res}/{m}.{mid[4]}.v"):
        if line.startswith("dsort: roofline") or line.startswith("dsort:   "):
            print("  " + line.rstrip())
EOF
