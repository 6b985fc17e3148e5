#!/usr/bin/env bash
# check.sh N LIB SELFTEST: run SELFTEST (selftest.c) on N ranks with the PMPI counter LIB
# preloaded, and compare every rank's JSON line with the sizes selftest.c documents.
# Environment (from tests/CMakeLists.txt): DSORT_MPIEXEC, DSORT_MPIEXEC_PREFLAGS.
set -euo pipefail
n=$1 lib=$2 prog=$3
mpiexec=${DSORT_MPIEXEC:-mpiexec}
out=$(mktemp -d "${TMPDIR:-/tmp}/pmpi-check.XXXXXX")
trap 'rm -rf "$out"' EXIT
# shellcheck disable=SC2086 # the preflags are words
"$mpiexec" ${DSORT_MPIEXEC_PREFLAGS:-} -n "$n" -x LD_PRELOAD="$lib" \
    -x DSORT_PMPI_OUT="$out/count.jsonl" "$prog"
python3 - "$out/count.jsonl" "$n" <<'PY'
import json, sys
path, p = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(path)]
bad = []
if sorted(l["rank"] for l in lines) != list(range(p)):
    bad.append(f"ranks {sorted(l['rank'] for l in lines)}, expected 0..{p-1}")
for l in lines:
    r, f = l["rank"], l["funcs"]
    root = r == 0
    want = {  # function: (calls, sent, recv)
        "MPI_Allgather": (1, 1000, p * 1000),
        "MPI_Allgatherv": (1, 4 * (r + 1), 4 * p * (p + 1) // 2),
        "MPI_Allreduce": (2, 160, 160),
        "MPI_Reduce": (1, 24, 24 if root else 0),
        "MPI_Gather": (1, 8, 8 * p if root else 0),
        "MPI_Gatherv": (1, r, p * (p - 1) // 2 if root else 0),
        "MPI_Bcast": (1, 100 if root else 0, 0 if root else 100),
        "MPI_Alltoall": (1, 8 * p, 8 * p),
        "MPI_Exscan": (1, 8, 8),
        "MPI_Barrier": (1, 0, 0),
        "MPI_Isend": (1, 7, 0),
        "MPI_Irecv": (1, 0, 7),
        "MPI_Sendrecv": (1, 16, 16),
        "MPI_Waitall": (1, 0, 0),
    }
    if r == 1:
        want["MPI_Send"] = (1, 40, 0)
    if r == 0:
        want["MPI_Recv"] = (1, 0, 40)
    for name, (c, s, rv) in want.items():
        got = f.get(name)
        got = (got["calls"], got["sent"], got["recv"]) if got else None
        if got != (c, s, rv):
            bad.append(f"rank {r} {name}: (calls, sent, recv) {got}, expected {(c, s, rv)}")
    extra = set(f) - set(want)
    if extra:
        bad.append(f"rank {r}: unexpected functions {sorted(extra)}")
    p2p_recv = sum(want[k][2] for k in want if k in ("MPI_Irecv", "MPI_Recv", "MPI_Sendrecv"))
    if l["p2p"]["recv"] != p2p_recv:
        bad.append(f"rank {r}: p2p recv {l['p2p']['recv']}, expected {p2p_recv}")
    coll_recv = sum(v[2] for k, v in want.items()
                    if k not in ("MPI_Irecv", "MPI_Recv", "MPI_Sendrecv", "MPI_Isend", "MPI_Send"))
    if l["coll"]["recv"] != coll_recv:
        bad.append(f"rank {r}: coll recv {l['coll']['recv']}, expected {coll_recv}")
    if l["coll"]["peak_recv"] != p * 1000:
        bad.append(f"rank {r}: coll peak_recv {l['coll']['peak_recv']}, expected {p * 1000}")
    if not l["vmhwm_kb"] > 0:
        bad.append(f"rank {r}: vmhwm_kb {l['vmhwm_kb']}")
for b in bad:
    print("pmpi check:", b)
print(f"pmpi check: {p} ranks, {len(lines)} lines, {'FAILED' if bad else 'ok'}")
sys.exit(1 if bad else 0)
PY
