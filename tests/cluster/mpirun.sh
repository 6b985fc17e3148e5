#!/usr/bin/env bash
# cluster.mpirun: mpirun -n 6 across the three nodes directly (rsh agent, no Slurm): input and
# output on the shared path, temp dirs on each node's own disk; in memory and out of core, to
# one file and to part files. Checked: the ranks ran on n0 n0 n1 n1 n2 n2 (--stats), the
# outputs are sorted with the generator's checksum (dsort-validate over the nodes), both
# pipelines give the same bytes, so does the node-aware exchange (--exchange=node), and no temp
# directory is left on any node.
export DSORT_TESTBED_NO_SLURM=1
# mpirun waits odls_base_sigkill_timeout (1 s) twice after a rank fails, even when all have
# exited: runs expected to fail cost 2 s each. Nothing here checks what a killed run leaves.
export OMPI_MCA_odls_base_sigkill_timeout=0
. "$(dirname "$0")/lib.sh"
cl_init

COUNT=300000 # 30 MB
gen 6 "$COUNT" "$S/in"
sum=$GEN_SUM

# In memory (the budget is ample), to one file on the shared path.
mpi_ok -n 6 "$DSORT" -T "$LT" --stats "$S/mem.json" "$S/in" -o "$S/out.mem"
validated "in memory, -o" "$sum" "$S/out.mem"
eq "ranks' hosts (--stats)" "n0 n0 n1 n1 n2 n2" \
    "$(python3 -c 'import json,sys; print(" ".join(r["host"] for r in json.load(open(sys.argv[1]))["per_rank"]))' "$S/mem.json")"

# Out of core, spilling to every node's local disk, to one file.
mpi_ok -n 6 "$DSORT" -T "$LT" -S 4M --out-of-core --stats "$S/ext.json" "$S/in" -o "$S/out.ext"
validated "out of core, -o" "$sum" "$S/out.ext"
eq "out of core (--stats)" "True" \
    "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["out_of_core"] and all(r["runs"] > 0 for r in d["per_rank"]))' "$S/ext.json")"
cmp -s "$S/out.mem" "$S/out.ext"
check $? "the in-memory and out-of-core outputs differ"

# Part files on the shared path: one per rank and the manifest.
mpi_ok -n 6 "$DSORT" -T "$LT" -S 4M --out-of-core "$S/in" -O "$S/parts"
validated "out of core, -O" "$sum" "$S/parts"
eq "part files" "_SUCCESS part-00000 part-00001 part-00002 part-00003 part-00004 part-00005" \
    "$(cd "$S/parts" && echo *)"
cat "$S"/parts/part-* | cmp -s - "$S/out.mem"
check $? "the concatenated parts differ from the -o output"

# The node-aware exchange (three nodes of two ranks: one message per pair of nodes crosses the
# network): the same bytes as the direct exchange, and every rank says it took the node path.
mpi_ok -n 6 "$DSORT" -T "$LT" --exchange=node --stats "$S/node.json" "$S/in" -o "$S/out.node"
cmp -s "$S/out.mem" "$S/out.node"
check $? "--exchange=node: the output differs from the direct exchange's"
eq "--exchange=node took the node path on every rank (--stats)" "True" \
    "$(python3 -c 'import json,sys; print(all(r["exchanges_by_node"] > 0 for r in json.load(open(sys.argv[1]))["per_rank"]))' "$S/node.json")"

no_temp_left "after four sorts"
cl_finish
