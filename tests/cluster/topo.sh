#!/usr/bin/env bash
# cluster.topo: topology discovery on three nodes, each with its own disk (a loop-mounted ext4
# image at the common path $LAB/local; tmpfs where loop devices are impossible).
#   - dsort --plan --json --local-inputs over 6 ranks (2 per node): one entry per node with the
#     node's own host name; every node finds its own disk (the loop device of its image, a
#     different disk on every node; with tmpfs: a device with no disk, keyed by st_dev); every
#     rank reads only files of its node, from that device, and spills to the node's disk;
#   - the sort itself with the same options: right output (checksum and order), and --stats
#     carries the same plan with the bytes read from each node's device.
export DSORT_TESTBED_NO_SLURM=1
. "$(dirname "$0")/lib.sh"
cl_init
L=$TB_LAB/local
COUNT=60000 # 6 MB

gen 6 --parts "$L/in" --local-output "$COUNT" || cl_finish
sum=$GEN_SUM
INPUTS=()
for k in 0 1 2 3 4 5; do INPUTS+=("$(printf '%s/in/part-%05d' "$L" "$k")"); done
for node in "${TB_NODES[@]}"; do on "$node" mkdir -p "$LT"; done

# What each node's disk is: the loop device's name (loopN) or, for tmpfs, no disk.
expect=()
for node in "${TB_NODES[@]}"; do
    if [ -f "$TB_LAB/nodes/$node.dev" ]; then
        expect+=("$node=$(basename "$(cat "$TB_LAB/nodes/$node.dev")")")
    else
        expect+=("$node=null")
    fi
done
note "disks: ${expect[*]}"

mpi_ok -n 6 "$DSORT" --plan --json --local-inputs -T "$LT" "${INPUTS[@]}" -O "$S/out"
cp "$S/.out" "$S/plan.json"
# plan_facts FILE: one line per check, "name=value", from the plan (or the stats' "plan").
plan_facts() {
    python3 - "$1" "$L" "$LT" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
plan = doc.get("plan", doc)
local, lt = sys.argv[2], sys.argv[3]
nodes = plan["nodes"]
print("nodes=" + " ".join(n["hostname"] for n in nodes))
for n in nodes:
    host = n["hostname"]
    # the device that holds the node's local disk: the one its ranks read
    devs = {d["st_dev"]: d for d in n["devices"]}
    read_devs = sorted({r["st_dev"] for rk in n["ranks"] for r in rk["reads"]})
    disks = sorted({str(devs[s].get("disk")) if s in devs else "missing" for s in read_devs})
    print("%s.disk=%s" % (host, ",".join(d if d != "None" else "null" for d in disks)))
    files = sorted({r["file"] for rk in n["ranks"] for r in rk["reads"]})
    print("%s.files=%s" % (host, " ".join(f.rsplit("/", 1)[-1] for f in files)))
    print("%s.ranks=%s" % (host, " ".join(str(rk["rank"]) for rk in n["ranks"])))
    print("%s.temps=%s" % (host, " ".join(sorted({t for rk in n["ranks"] for t in rk["temp_dirs"]}))))
    print("%s.readbytes=%s" % (host, sum(d.get("read_bytes", 0) for d in n["devices"] if d["st_dev"] in read_devs) > 0))
PY
}
plan_facts "$S/plan.json" >"$S/facts" 2>&1 || { fail "unreadable plan: $(head -c 600 "$S/plan.json")"; cl_finish; }
cat "$S/facts"
fact() { sed -n "s/^$1=//p" "$S/facts"; }
eq "plan: one entry per node, by host name" "n0 n1 n2" "$(fact nodes)"
for i in 0 1 2; do
    node=n$i
    eq "plan: $node reads from its own disk" "${expect[$i]#*=}" "$(fact "$node.disk")"
    eq "plan: $node reads its own parts" \
        "$(printf 'part-%05d part-%05d' $((2 * i)) $((2 * i + 1)))" "$(fact "$node.files")"
    eq "plan: $node's ranks" "$((2 * i)) $((2 * i + 1))" "$(fact "$node.ranks")"
    eq "plan: $node spills to its node-local temp dir" "$LT" "$(fact "$node.temps")"
done
if [ "${expect[0]#*=}" != null ]; then
    [ "$(fact n0.disk)" != "$(fact n1.disk)" ] && [ "$(fact n1.disk)" != "$(fact n2.disk)" ]
    check $? "plan: the nodes' disks are not all different: $(grep disk "$S/facts" | tr '\n' ' ')"
fi

# The sort, out of core so that the temp dirs are used, with the plan in its stats.
mpi_ok -n 6 "$DSORT" --local-inputs -S 2M --out-of-core -T "$LT" --stats "$S/stats.json" \
    "${INPUTS[@]}" -O "$S/out"
validated "sort of node-local inputs" "$sum" "$S/out"
plan_facts "$S/stats.json" >"$S/facts" 2>&1 || fail "unreadable stats: $(head -c 600 "$S/stats.json")"
for node in "${TB_NODES[@]}"; do
    eq "stats: $node read bytes from its disk" "True" "$(fact "$node.readbytes")"
done
no_temp_left "after the sort"
cl_finish
