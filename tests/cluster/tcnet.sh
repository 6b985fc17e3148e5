#!/usr/bin/env bash
# cluster.tcnet: three nodes, one rank each, exchanging over TCP on links shaped with tc (tbf,
# 200 Mbit/s: the network is the slow resource, as on a cluster; issue 27). Checked: in memory
# and out of core, the output is what an independent oracle (tests/lib/oracle.py, python's
# sort) writes, byte for byte, and dsort-validate finds it sorted with the generator's checksum;
# the roofline of the run (tests/bench/roofline.py on --stats) names the network as the
# exchange's busiest resource, with the bytes that crossed, and the exchange took at least
# about its floor (a floor that the run beat would mean the shaping or the roofline is wrong);
# dsort's own roofline in --stats (src/roofline.c) is roofline.py's (tests/e2e/roofline_cmp.py).
# The floor allows for tbf's bucket: after an idle link one bucket passes at line rate, so each
# exchange round may carry one bucket free (out of core, -S 4M, there are about 7 rounds; with
# the benchmark's 1 MB bucket they carried nearly all 6.7 MB and beat the plain floor, 0.67x).
# The longer benchmark on the same set-up is tests/bench/bench_cluster.sh.
export DSORT_TESTBED_NO_SLURM=1
export OMPI_MCA_odls_base_sigkill_timeout=0
. "$(dirname "$0")/lib.sh"
. "$CL_DIR/shape.sh"
ROOF=$CL_TOP/tests/bench/roofline.py
ORACLE=$CL_TOP/tests/lib/oracle.py
cl_init

RATE=200mbit
export TB_BURST=128kb # 131072 bytes; BUCKET below must match
BUCKET=131072
tb_shape "$RATE" || tb_skip "cannot shape the test bed's links with tc"
MBPS=$(tb_rate_mbps "$RATE")
for node in "${TB_NODES[@]}"; do
    CHECKS=$((CHECKS + 1))
    tb_shape_show "$node" | grep -q '^qdisc tbf .* rate 200Mbit' ||
        fail "$node's eth0 is not shaped: $(tb_shape_show "$node")"
done

COUNT=300000 # 30 MB: each rank sends 2/3 of its 10 MB, 0.27 s at 25 MB/s
gen 3 "$COUNT" "$S/in"
sum=$GEN_SUM
python3 "$ORACLE" sort "$S/expect" 100 0 10 "" "$S/in"

# roof_ok WHAT STATS: the roofline's exchange row names the network, its bytes are the bytes
# the ranks sent (one rank a node: all of them crossed), and the exchange took >= 0.9 x floor,
# the floor of the bytes beyond one bucket a round.
roof_ok() {
    local what=$1 stats=$2 got
    LAST_CMD="python3 $ROOF $stats --rate net=$MBPS"
    local rc=0
    python3 "$ROOF" "$stats" --rate "net=$MBPS" >"$S/.roof" 2>&1 || rc=$?
    CHECKS=$((CHECKS + 1))
    [ $rc -eq 0 ] && grep -q '^roofline: job ' "$S/.roof" || { fail "$what: roofline.py failed" && cat "$S/.roof" >&2; }
    got=$(python3 - "$ROOF" "$stats" "$MBPS" "$BUCKET" <<'PY'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("roofline", sys.argv[1])
rl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rl)
stats = json.load(open(sys.argv[2]))
out = rl.roofline(stats, rl.parse_rates([f"net={sys.argv[3]}"]))
ex = [g for g in out["groups"] if g["group"] == "exchange"]
sent = max(r["bytes_sent"] for r in stats["per_rank"])
recv = max(r["bytes_received"] for r in stats["per_rank"])
net = out["resources"].get("network", {})
probs = []
if stats["mapped"]:
    probs.append("the job took the mapped path across nodes")
if not ex or ex[0]["busiest"] != "network":
    probs.append(f"exchange's busiest resource is not the network: {ex}")
else:
    rounds = max(r["exchange_rounds"] for r in stats["per_rank"])
    free = rounds * int(sys.argv[4])
    floor = max(0, net.get("bytes", 0) - free) / (float(sys.argv[3]) * 1e6)
    if free > 0.5 * net.get("bytes", 0):
        probs.append(f"{rounds} rounds: the buckets ({free} bytes) leave too little to check")
    elif ex[0]["seconds"] < 0.9 * floor:
        probs.append(f"exchange took {ex[0]['seconds']:.3f} s, under its floor {floor:.3f} s "
                     f"(the bytes beyond {rounds} buckets)")
if net.get("bytes") != max(sent, recv) or sent < 0.5 * stats["bytes"] / 3:
    probs.append(f"network bytes {net.get('bytes')}, ranks sent up to {sent} received {recv}")
print("ok" if not probs else "; ".join(probs))
PY
)
    eq "$what: roofline (exchange against the shaped network)" ok "$got"
    sed -n 's/^roofline: job/  job/p' "$S/.roof"
    # dsort's own roofline (--stats "roofline", src/roofline.c; the rate from rank 0's
    # DSORT_ROOFLINE_RATES) is roofline.py's, on a real run of several nodes.
    LAST_CMD="python3 $CL_TOP/tests/e2e/roofline_cmp.py $stats net=$MBPS ''"
    python3 "$CL_TOP/tests/e2e/roofline_cmp.py" "$stats" "net=$MBPS" "" >"$S/.cmp" 2>&1
    check $? "$what: dsort's roofline differs from roofline.py's: $(cat "$S/.cmp")"
    sed 's/^.*: roofline agrees/  dsort: roofline agrees/' "$S/.cmp"
}

# In memory: the copying path (the ranks are on three nodes).
export DSORT_ROOFLINE_RATES="net=$MBPS" # for dsort's own roofline, passed to rank 0 by -x
mpi_ok -n 3 --map-by node -x DSORT_ROOFLINE_RATES "$DSORT" -T "$LT" --stats "$S/mem.json" "$S/in" -o "$S/out.mem"
cmp -s "$S/expect" "$S/out.mem"
check $? "in memory: the output differs from the oracle's sort"
validated "in memory" "$sum" "$S/out.mem"
roof_ok "in memory" "$S/mem.json"

# Out of core, spilling to each node's own disk, several rounds of exchange.
mpi_ok -n 3 --map-by node -x DSORT_ROOFLINE_RATES "$DSORT" -T "$LT" -S 4M --out-of-core --stats "$S/ext.json" "$S/in" -o "$S/out.ext"
cmp -s "$S/expect" "$S/out.ext"
check $? "out of core: the output differs from the oracle's sort"
validated "out of core" "$sum" "$S/out.ext"
roof_ok "out of core" "$S/ext.json"

no_temp_left "after the sorts"
cl_finish
