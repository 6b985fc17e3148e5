#!/usr/bin/env bash
# cluster.local: node-local data, on each node's own disk at the same path $LAB/local.
#   - dsort-gen --parts DIR --local-output: each rank's part on its own node, every node's
#     manifest naming the node of each part; the parts hold the records of one dsort-gen file;
#   - dsort --local-inputs PATH...: each node reads the paths it has; -O DIR --local-output:
#     each node gets the parts of its ranks, the manifests name the nodes; the output equals
#     the sort of the same records from the shared file system, byte for byte;
#   - the global input order (checked with a stable sort on a 2-byte key, many equal keys):
#     nodes by their lowest rank, then the order of the paths, then the offset;
#   - a directory given to --local-inputs means its part-* files; a path on no node is an
#     error; dsort-validate --local-inputs validates the layout (and finds disorder in one).
export DSORT_TESTBED_NO_SLURM=1
# mpirun waits odls_base_sigkill_timeout (1 s) twice after a rank fails, even when all have
# exited: runs expected to fail cost 2 s each. Nothing here checks what a killed run leaves.
export OMPI_MCA_odls_base_sigkill_timeout=0
. "$(dirname "$0")/lib.sh"
cl_init
L=$TB_LAB/local
COUNT=120000 # 12 MB
part() { printf 'part-%05d' "$1"; }

# gather DIR K...: the parts K... of the node-local DIR, from whichever node has each, in order.
gather() {
    local dir=$1 k node
    shift
    for k in "$@"; do
        for node in "${TB_NODES[@]}"; do
            nsenter -t "$(cat "$TB_LAB/nodes/$node.pid")" --mount -- cat "$dir/$(part "$k")" 2>/dev/null &&
                break
        done
    done
}

# layout_ok WHAT DIR: node nI holds the parts 2I and 2I+1 and _SUCCESS, and every node's manifest
# lists the six parts with the node that holds each.
layout_ok() {
    local what=$1 dir=$2 node i
    for node in "${TB_NODES[@]}"; do
        i=${node#n}
        on "$node" sh -c "cd '$dir' && ls"
        eq "$what: files on $node" "_SUCCESS $(part $((2 * i))) $(part $((2 * i + 1)))" \
            "$(LC_ALL=C sort "$S/.out" | tr '\n' ' ' | sed 's/ $//')"
        on "$node" cat "$dir/_SUCCESS"
        eq "$what: parts and nodes in $node's manifest" \
            "part-00000:n0 part-00001:n0 part-00002:n1 part-00003:n1 part-00004:n2 part-00005:n2" \
            "$(python3 -c '
import json, sys
try:
    m = json.load(open(sys.argv[1]))
    print(" ".join("%s:%s" % (p.get("name"), p.get("node")) for p in m["parts"]))
except Exception as e:
    print("unreadable manifest: %s" % e)' "$S/.out")"
    done
}

# The same records from the shared file system, and their sort: the reference.
gen 6 "$COUNT" "$S/ref.in"
sum=$GEN_SUM
mpi_ok -n 6 "$DSORT" -T "$LT" "$S/ref.in" -o "$S/ref.out"

# dsort-gen --local-output.
gen 6 --parts "$L/gen" --local-output "$COUNT"
if [ -n "$GEN_SUM" ]; then
    eq "checksum of dsort-gen --parts --local-output vs one file" "$sum" "$GEN_SUM"
    layout_ok "dsort-gen --local-output" "$L/gen"
    gather "$L/gen" 0 1 2 3 4 5 | cmp -s - "$S/ref.in"
    check $? "dsort-gen --local-output: the parts in order differ from dsort-gen's one file"
else
    # Build the same layout by hand, so that the checks of dsort below still run.
    note "dsort-gen --local-output failed: the node-local input is copied from shared parts"
    mpi_ok -n 6 "$GEN" --parts "$S/genparts" "$COUNT"
    for node in "${TB_NODES[@]}"; do on "$node" rm -rf "$L/gen"; done
    for k in 0 1 2 3 4 5; do
        on "n$((k / 2))" sh -c "mkdir -p '$L/gen' && cp '$S/genparts/$(part "$k")' '$L/gen/'"
    done
fi
INPUTS=()
for k in 0 1 2 3 4 5; do INPUTS+=("$L/gen/$(part "$k")"); done

# Node-local in, node-local out.
if mpi_ok -n 6 "$DSORT" -T "$LT" --local-inputs "${INPUTS[@]}" -O "$L/out" --local-output; then
    layout_ok "dsort -O --local-output" "$L/out"
    gather "$L/out" 0 1 2 3 4 5 | cmp -s - "$S/ref.out"
    check $? "dsort --local-inputs -O --local-output: the parts in order differ from the reference sort"
else
    # The same layout by hand, so that dsort-validate --local-inputs is still checked.
    note "dsort -O --local-output failed: the node-local output is copied from a shared sort"
    mpi_ok -n 6 "$DSORT" -T "$LT" "$S/ref.in" -O "$S/outparts"
    for node in "${TB_NODES[@]}"; do on "$node" rm -rf "$L/out"; done
    for k in 0 1 2 3 4 5; do
        on "n$((k / 2))" sh -c "mkdir -p '$L/out' && cp '$S/outparts/$(part "$k")' '$L/out/'"
    done
fi
validated "dsort-validate --local-inputs" "$sum" --local-inputs "$L/out"

# The two-phase commit of --local-output (issue 9): node n1's _SUCCESS cannot be written (the
# fault shim fails its rename on rank 2, n1's first rank). No node may keep a _SUCCESS, or any
# part, of a job that exits 2: before, n0 and n2 had already renamed theirs.
SHIM=$DSORT_BIN_DIR/../../tests/faults/fault_shim.so
if [ -f "$SHIM" ]; then
    mpi -n 6 -x LD_PRELOAD="$SHIM" -x FAULT_RENAME=_SUCCESS -x FAULT_RANK=2 "$DSORT" -T "$LT" \
        --local-inputs "${INPUTS[@]}" -O "$L/failed" --local-output
    eq "a _SUCCESS that cannot be written on n1: exit status" 2 "$RC"
    contains "a _SUCCESS that cannot be written on n1: the error names rank 2" "$S/.out" \
        "rank 2/6 .*_SUCCESS"
    for node in "${TB_NODES[@]}"; do
        on "$node" sh -c "ls -A '$L' | grep -c failed"
        eq "a _SUCCESS that cannot be written on n1: nothing of the output left on $node" 0 \
            "$(head -n 1 "$S/.out")"
    done
else
    note "no fault shim at $SHIM: the two-phase commit case is not run"
fi
mpi -n 6 "$VALIDATE" --local-inputs "$L/out"
eq "dsort-validate --local-inputs at 6 ranks: exit status and checksum" "0 $sum" \
    "$RC $(sed -n 's/^Checksum: *//p' "$S/.out")"

# Node-local in (a directory: its part-* files), out of core, one rank per node, shared out.
mpi_ok -n 3 --map-by node "$DSORT" -T "$LT" -S 2M --out-of-core --local-inputs "$L/gen" -o "$S/dir.out"
cmp -s "$S/dir.out" "$S/ref.out"
check $? "dsort --local-inputs DIR -n 3: the output differs from the reference sort"

# The global input order: nodes by their lowest rank, then the paths in the order given, then
# offsets. The hostfile is reversed, so that the node order is not n0 n1 n2 (where the ranks
# ran comes from --stats), and the paths are given out of order (1 0 2 3 5 4). A stable sort
# on a 2-byte key (many equal keys) keeps equal keys in the input order: the output must equal
# the stable sort of the parts concatenated in that order.
printf 'n2 slots=2\nn1 slots=2\nn0 slots=2\n' >"$S/hostfile.rev"
FMT=(--format fixed:100:0:2 -s)
LIST=(1 0 2 3 5 4)
paths=()
for k in "${LIST[@]}"; do paths+=("$L/gen/$(part "$k")"); done
MPI_HOSTFILE=$S/hostfile.rev mpi_ok -n 6 "$DSORT" -T "$LT" "${FMT[@]}" --stats "$S/order.json" \
    --local-inputs "${paths[@]}" -o "$S/order.out"
# Part k lives on node n(k/2).
order=$(python3 -c '
import json, sys
hosts = [r["host"] for r in json.load(open(sys.argv[1]))["per_rank"]]
nodes = sorted(set(hosts), key=hosts.index)
print(" ".join(k for n in nodes for k in sys.argv[2:] if "n%d" % (int(k) // 2) == n))' \
    "$S/order.json" "${LIST[@]}")
echo "ranks on $(python3 -c 'import json,sys; print(" ".join(r["host"] for r in json.load(open(sys.argv[1]))["per_rank"]))' "$S/order.json"): expected input order: parts $order"
# shellcheck disable=SC2086
gather "$L/gen" $order >"$S/order.in"
mpi_ok -n 6 "$DSORT" -T "$LT" "${FMT[@]}" "$S/order.in" -o "$S/order.ref"
cmp -s "$S/order.out" "$S/order.ref"
check $? "stable sort of node-local inputs: equal keys are not in the order nodes (by lowest rank), paths, offsets (parts $order)"

# A path that exists on no node is an error; nothing is written.
mpi -n 6 "$DSORT" -T "$LT" --local-inputs "${INPUTS[@]}" "$L/gen/no-such-part" -o "$S/missing.out"
eq "dsort --local-inputs with a path on no node: exit status" 2 "$RC"
contains "dsort --local-inputs with a path on no node: the message" "$S/.out" "no-such-part"
CHECKS=$((CHECKS + 1))
[ ! -e "$S/missing.out" ] || fail "dsort --local-inputs with a path on no node wrote $S/missing.out"

# dsort-validate --local-inputs finds the disorder of the unsorted generated parts.
mpi -n 3 --map-by node "$VALIDATE" --local-inputs "$L/gen"
eq "dsort-validate --local-inputs on unsorted parts: exit status" 1 "$RC"

# Shares of unequal size: n0 holds the lowest 80% of the keys, n1 the highest 20%, n2 nothing
# (one rank a node). Each rank's sample of a few thousand records weighs as its share: counted
# as equals, the samples put the splitters at the 53rd and 87th percentiles and rank 0 wrote
# 1.6x the average. Both sampled paths: the copying path (ranks on several nodes) and out of
# core. The records arrive in the input order, so the output is the reference, byte for byte.
# skewed WHAT DIR REF [DSORT OPTIONS...]: dsort --local-inputs DIR/part -n 3, in memory and out
# of core: the output is REF, and no rank writes more than 1.1x the average + 1.
skewed() {
    local what=$1 dir=$2 ref=$3 opts fig max avg
    shift 3
    for opts in "" "--out-of-core -S 2M"; do
        rm -f "$S/skew.json" "$S/skew.out"
        # shellcheck disable=SC2086
        mpi_ok -n 3 --map-by node "$DSORT" -T "$LT" "$@" $opts --stats "$S/skew.json" \
            --local-inputs "$dir/part" -o "$S/skew.out" || continue
        cmp -s "$S/skew.out" "$ref"
        check $? "$what, shares of 80%, 20% and 0% (${opts:-in memory}): the output differs from the reference sort"
        fig=$(python3 -c '
import json, sys
out = [r["records_out"] for r in json.load(open(sys.argv[1]))["per_rank"]]
print(max(out), sum(out) / len(out), *out)' "$S/skew.json" 2>&1)
        read -r max avg _ <<<"$fig"
        awk -v m="$max" -v a="$avg" 'BEGIN { exit !(m <= 1.1 * a + 1) }'
        check $? "$what, shares of 80%, 20% and 0% (${opts:-in memory}): unbalanced: out per rank $(echo "$fig" | cut -d' ' -f3-) (limit 1.1 x the average + 1)"
    done
}
BIG=$((COUNT * 8 / 10))
on n0 sh -c "mkdir -p '$L/skew' && head -c $((BIG * 100)) '$S/ref.out' >'$L/skew/part'"
on n1 sh -c "mkdir -p '$L/skew' && tail -c +$((BIG * 100 + 1)) '$S/ref.out' >'$L/skew/part'"
skewed records "$L/skew" "$S/ref.out"
# Text lines: 4.7 MB on n0, sampled in windows of its share (each sampled line stands for
# about four), and 1.2 MB on n1, sampled whole.
awk 'BEGIN { for (i = 0; i < 650000; i++) printf "%08d\n", i }' >"$S/lines.ref"
on n0 sh -c "mkdir -p '$L/skewl' && head -n 520000 '$S/lines.ref' >'$L/skewl/part'"
on n1 sh -c "mkdir -p '$L/skewl' && tail -n +520001 '$S/lines.ref' >'$L/skewl/part'"
skewed lines "$L/skewl" "$S/lines.ref" --format lines

no_temp_left "after the node-local sorts"
cl_finish
