#!/usr/bin/env bash
# bench_cluster.sh - dsort across simulated nodes whose network is a real, slow resource
# (issue 27): the cluster test bed (tests/cluster/testbed.sh: a network namespace, hostname,
# /dev/shm and ext4 loop disk per node), one rank a node, Open MPI over TCP on veth links each
# shaped with `tc qdisc ... tbf rate RATE burst 1mb latency 100ms` (tests/cluster/shape.sh).
# Input and output on the shared path (this machine's disk), temp files on each node's own disk.
#
# Per run: wall time (mpirun included), dsort's time, the phases (slowest rank, --stats) and
# dsort's own roofline (the "roofline" of --stats, src/roofline.c, under the rates below passed
# in DSORT_ROOFLINE_RATES and the shared disk in DSORT_ROOFLINE_SHARED): per phase group the
# busiest resource, its floor, the time as a multiple of it; and the CPU seconds of all ranks
# (--stats; none for a base build older than them) as cores of this machine kept busy: the
# nodes share its cores, so at 2 nodes a node has one core's worth. Every output is checked
# with dsort-validate (sorted, and the input's checksum as dsort-validate reads the input).
# Runs of the modes alternate, after a warm-up of each; medians at the end.
#
# Rates, and where they come from:
#   network  GIVEN: the tbf rate (2gbit = 250 MB/s each way of each node's link);
#   cpu      MEASURED here: dsort-floor-probe over the same nodes and share (radix sort plus
#            gather of the rank's records, one core), MB of records a second;
#   disks    MEASURED by the block layer in each run (bytes over busy seconds; src/roofline.h),
#            or given: BC_DISK_RATES="*.read=40 *.write=40" (as DSORT_ROOFLINE_RATES).
#
# Usage: tests/bench/bench_cluster.sh [BUILD_DIR [DIR]]   (root; BUILD_DIR default build)
#   BC_NODES=2 (2 or 3)  BC_RECS=10000000 (1 GB)  BC_RATE=2gbit  BC_RUNS=5
#   BC_MODES="mem ext"   mem: in memory (--no-map: the copying path); ext: --out-of-core -S BC_S;
#                        mem2: --no-map through job_mem.c (DSORT_COPY_TWO_BUFFERS=1), to compare
#                        eager: --no-map with every bucket sorted before the exchange
#                        (DSORT_COPY_EAGER=0), to compare with mem's sort during it
#                        base: --no-map by another build's dsort (BC_BASE_BIN: its directory of
#                        programs), for a before/after of a change in the same run
#   BC_S=256M  BC_COLD=0 (1: sync and drop the page cache before each run)
set -u -o pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$top/build}" && pwd) || exit 2
res=${2:-}
bin=$build/src/cli
probe=$build/tests/bench/dsort-floor-probe
for b in "$bin/dsort" "$bin/dsort-gen" "$bin/dsort-validate" "$probe"; do
    [ -x "$b" ] || { echo "build $b first (cmake --build $build)" >&2 && exit 2; }
done
nodes=${BC_NODES:-2} recs=${BC_RECS:-10000000} rate=${BC_RATE:-2gbit} runs=${BC_RUNS:-5}
modes=${BC_MODES:-mem ext} budget=${BC_S:-256M} cold=${BC_COLD:-0}
case " $modes " in *" base "*)
    [ -x "${BC_BASE_BIN:-}/dsort" ] || { echo "mode base needs BC_BASE_BIN (no ${BC_BASE_BIN:-}/dsort)" >&2 && exit 2; } ;;
esac
export DSORT_TESTBED_NO_SLURM=1 DSORT_TESTBED_DISK_MB=${DSORT_TESTBED_DISK_MB:-3072}
export OMPI_MCA_odls_base_sigkill_timeout=0
. "$top/tests/cluster/testbed.sh"
. "$top/tests/cluster/shape.sh"
tb_up
[ -n "$res" ] || res=$TB_LAB/common/results
mkdir -p "$res"
res=$(cd "$res" && pwd)
tb_shape "$rate" || exit 2
mbps=$(tb_rate_mbps "$rate")
hosts=$TB_LAB/hostfile1
for ((i = 0; i < nodes; i++)); do echo "n$i slots=1"; done >"$hosts"
S=$TB_LAB/common
LT=$TB_LAB/local/tmp
cd "$S" || exit 2

# --bind-to none: each node's Open MPI binds its one rank to its core 0 by default, and the nodes
# share this machine's cores, so every rank of the bed ran on the same core (vmstat: one core
# busy, the other idle, through whole runs). Unbound, the kernel spreads the nodes' ranks over the
# machine's cores, as a cluster's nodes each have their own. BC_BIND=core restores the default.
run_mpi() { # mpirun from n0 over the chosen nodes, one rank each
    tb_exec n0 mpirun --hostfile "$hosts" --mca plm_rsh_agent "$TB_LAB/rsh" -n "$nodes" \
        --map-by node --bind-to "${BC_BIND:-none}" "$@"
}

echo "bench_cluster: $nodes nodes, one rank each, links $rate ($mbps MB/s each way), $recs records" \
    "($((recs / 10000)) MB), modes: $modes, $runs runs each, cold=$cold; lab $TB_LAB"
for node in $(seq 0 $((nodes - 1))); do echo "  n$node: $(tb_shape_show "n$node")"; done
run_mpi "$bin/dsort-gen" -c "$recs" "$S/in" >/dev/null 2>"$res/gen.err" ||
    { echo "dsort-gen failed:" && cat "$res/gen.err" && exit 2; } >&2
# The outputs' checksum must be the input's, as dsort-validate reads it (not dsort-gen's
# standard error: once, under load, its last hex line there was not the checksum)
sum=$(run_mpi "$bin/dsort-validate" "$S/in" 2>/dev/null | sed -n 's/^Checksum: *//p')
[ -n "$sum" ] || { echo "dsort-validate of the input failed" >&2 && exit 2; }

# The CPU rate: the probe's radix sort and gather of one rank's share (the input's first
# share, alone on node n0: the probe's other operations are not used here).
mkdir -p "$S/probe" && head -c $((recs * 100 / nodes)) "$S/in" >"$S/probe/share" &&
    tb_exec n0 mpirun -n 1 "$probe" "$S/probe/share" "$S/probe" >"$res/probe.txt" 2>&1 ||
    { cat "$res/probe.txt" >&2 && exit 2; }
rm -rf "$S/probe"
cpu=$(python3 - "$res/probe.txt" "$((recs * 100 / nodes))" <<'PY'
import sys
t = dict((l.split()[0], float(l.split()[1])) for l in open(sys.argv[1]) if len(l.split()) == 2)
print("%.1f" % (int(sys.argv[2]) / (t["radix"] + t["gather"]) / 1e6))
PY
)
echo "  probe (slowest rank, seconds): $(tr '\n' ' ' <"$res/probe.txt")"
# The network as MPI sees it: two ranks sending at once (nodes n0 and n1), with Open MPI's TCP
# put protocol (its default) and with its send protocol (what dsort asks for, src/cli/cli.c).
if [ -x "$build/tests/bench/dsort-bibw" ]; then
    for flags in send,put,inplace,need-ack,need-csum,hetero-rdma send,inplace,need-ack,need-csum,hetero-rdma; do
        printf '%s\n' n0 n1 | sed 's/$/ slots=1/' >"$TB_LAB/hostfile2"
        bw=$(tb_exec n0 mpirun --hostfile "$TB_LAB/hostfile2" --mca plm_rsh_agent "$TB_LAB/rsh" \
            -n 2 --map-by node -x OMPI_MCA_btl_tcp_flags="$flags" "$build/tests/bench/dsort-bibw" \
            $((recs * 25)) 2>&1 | tail -n 1)
        echo "  MPI both ways, btl_tcp_flags $flags: ${bw#bibw: }"
    done
fi
echo "  cpu rate (measured: share / (radix + gather)): $cpu MB/s a core"
rates="net=$mbps cpu=$cpu ${BC_DISK_RATES:-}"
# The shared path's disk (this machine's): every simulated node sees it, one device.
dev=$(stat -c '%Hd:%Ld' "$S")
shared=$(basename "$(readlink -f "/sys/dev/block/$dev")")
[ -e "/sys/dev/block/$dev/partition" ] && shared=$(basename "$(readlink -f "/sys/dev/block/$dev/..")")
echo "  shared disk (input and output): $shared"

one() { # one MODE TAG: a run; its stats in $res/TAG.json, a line in $res/runs.txt
    local mode=$1 tag=$2 args t0 t1 v env=() prog=$bin/dsort
    case $mode in
    mem) args=(--no-map) ;;
    base) args=(--no-map) prog=${BC_BASE_BIN:-}/dsort ;;
    mem2) args=(--no-map) env=(-x DSORT_COPY_TWO_BUFFERS=1) ;;
    eager) args=(--no-map) env=(-x DSORT_COPY_EAGER=0) ;;
    ext) args=(--out-of-core -S "$budget") ;;
    *) echo "unknown mode $mode" >&2 && return 1 ;;
    esac
    rm -f "$S/out"
    [ "$cold" = 1 ] && sync && echo 3 >/proc/sys/vm/drop_caches
    t0=$(date +%s.%N)
    run_mpi -x DSORT_ROOFLINE_RATES="$rates" -x DSORT_ROOFLINE_SHARED="$shared" "${env[@]}" \
        "$prog" -T "$LT" "${args[@]}" --stats "$res/$tag.json" "$S/in" -o "$S/out" \
        >"$res/$tag.log" 2>&1 || { echo "$tag: dsort failed:" && cat "$res/$tag.log"; return 1; } >&2
    t1=$(date +%s.%N)
    v=$(run_mpi "$bin/dsort-validate" "$S/out" 2>&1)
    if ! echo "$v" | grep -q "^Checksum: *$sum\$"; then
        echo "$tag: the output is not valid: $v" >&2
        return 1
    fi
    python3 "$top/tests/bench/roofline_show.py" "$res/$tag.json" >"$res/$tag.roof" ||
        { echo "$tag: dsort wrote no roofline" && cat "$res/$tag.log"; return 1; } >&2
    python3 - "$res/$tag.json" "$mode" "$tag" "$t0" "$t1" "$(nproc)" >>"$res/runs.jsonl" <<'PY' || return 1
import json, sys
path, mode, tag, t0, t1, ncpu = sys.argv[1:]
s = json.load(open(path))
r = s["roofline"]  # dsort's own
# CPU (--stats: user + system seconds of every rank's threads, per phase), by the roofline's
# groups, summed over the ranks: the simulated nodes share this machine's cores, so the cores
# the job kept busy are a share of nproc, not of each node's.
groups = {"read": ("sample", "read"), "sort": ("sort", "splitters"), "exchange": ("exchange",),
          "spill": ("spill",), "output": ("merge", "final_merge", "write", "commit")}
cpu = None  # (a base build older than these figures)
if "cpu_user_seconds" in s["per_rank"][0]:
    cpu = {g: sum(rk["cpu_user_seconds"][ph] + rk["cpu_sys_seconds"][ph]
                  for rk in s["per_rank"] for ph in phs) for g, phs in groups.items()}
print(json.dumps({"mode": mode, "tag": tag, "wall": float(t1) - float(t0), "seconds": s["seconds"],
                  "groups": {g["group"]: g for g in r["groups"]}, "busiest": r["busiest"],
                  "floor": r["floor_seconds"], "ratio": r["ratio"],
                  "serial_floor": r["serial_floor_seconds"], "serial_ratio": r["serial_ratio"],
                  "cpu": cpu, "cpu_all": sum(cpu.values()) if cpu else None, "ncpu": int(ncpu)}))
PY
    python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).readlines()[-1])
g = " ".join("%s %.2f" % (k, v["seconds"]) for k, v in d["groups"].items())
x = d["groups"].get("exchange")
xc = " (exchange %.2f)" % (d["cpu"]["exchange"] / x["seconds"]) if d["cpu"] and x and x["seconds"] > 0 else ""
print("  %-8s wall %.2f s, dsort %.2f s: %s | floor %.2f s (%s), %.2fx; serial floor %.2f s, %.2fx"
      % (d["tag"], d["wall"], d["seconds"], g, d["floor"], d["busiest"], d["ratio"],
         d["serial_floor"], d["serial_ratio"]))
if d["cpu"]:
    print("           CPU %.2f s: %.2f of the %d cores busy%s"
          % (d["cpu_all"], d["cpu_all"] / d["seconds"], d["ncpu"], xc))' "$res/runs.jsonl"
}

: >"$res/runs.jsonl"
for mode in $modes; do one "$mode" "warmup-$mode" || exit 1; done
: >"$res/runs.jsonl"
for ((i = 1; i <= runs; i++)); do
    for mode in $modes; do one "$mode" "$mode-$i" || exit 1; done
done
echo "roofline of the last run of each mode:"
for mode in $modes; do
    echo "  $mode:"
    sed 's/^/    /' "$res/$mode-$runs.roof"
done
python3 - "$res/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print("medians (%d runs a mode; the busiest resource: the one most runs name):" % (len(runs) // len({r["mode"] for r in runs})))
for mode in dict.fromkeys(r["mode"] for r in runs):
    rs = [r for r in runs if r["mode"] == mode]
    med = lambda f: statistics.median(f(r) for r in rs)
    groups = [g for g in rs[0]["groups"]]
    gs = " ".join("%s %.2f (%s)" % (g, med(lambda r: r["groups"][g]["seconds"]),
                  "-" if rs[0]["groups"][g]["ratio"] is None else
                  "%.2fx" % med(lambda r: r["groups"][g]["ratio"] or 0)) for g in groups)
    print("  %s: wall %.2f s (min %.2f max %.2f), dsort %.2f s; floor %.2f s (%s): %.2fx; "
          "serial floor %.2f s: %.2fx" % (mode, med(lambda r: r["wall"]), min(r["wall"] for r in rs),
          max(r["wall"] for r in rs), med(lambda r: r["seconds"]), med(lambda r: r["floor"]),
          statistics.mode(r["busiest"] for r in rs), med(lambda r: r["ratio"]), med(lambda r: r["serial_floor"]),
          med(lambda r: r["serial_ratio"])))
    print("    groups, seconds (x their floor): " + gs)
    if not rs[0]["cpu"]:
        continue
    print("    CPU (all ranks): %.2f s, %.2f of the machine's %d cores busy over dsort's time; by group "
          "(cores busy): %s" % (med(lambda r: r["cpu_all"]), med(lambda r: r["cpu_all"] / r["seconds"]),
          rs[0]["ncpu"], " ".join("%s %.2f" % (g, med(lambda r: r["cpu"][g] / r["groups"][g]["seconds"]
          if r["groups"].get(g, {}).get("seconds") else 0)) for g in groups)))
PY
rm -f "$S/out" "$S/in"
