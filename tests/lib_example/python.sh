#!/bin/bash
# lib.python: the Python module dsort (src/lib/python/dsort) over the built libdsort, at 1-4
# ranks (python_sort.py: numpy's stable lexsort as the oracle, exact shares, errors on every
# rank); then installed with cmake --install into a temp prefix and found from there with no
# DSORT_LIB (the library through the installed _installed.py), and python3 -m dsort on a .npy
# file; and a careless script whose rank 1 has an MPI call fail in the exchange must end the
# job at once (tests/pmpi/fault.c). Skipped (77) without a python3 that has numpy and mpi4py
# (Debian's python3-numpy and python3-mpi4py), when mpi4py is built for another MPI than
# libdsort, and under sanitizers (python3 would need their runtimes preloaded).
# usage: python.sh BUILD_DIR SOURCE_DIR
set -u
build=${1:?usage: python.sh BUILD_DIR SOURCE_DIR} src=${2:?usage: python.sh BUILD_DIR SOURCE_DIR}
# skip, fail (exit 1 at once: FAIL_FAST), kto and MPI_PREFLAGS are tests/lib/check.sh's.
# shellcheck disable=SC2034 # FAIL_FAST and LAST_CMD: read by check.sh
FAIL_FAST=1
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
here=$(cd "$(dirname "$0")" && pwd)
[ -z "${DSORT_SANITIZE:-}" ] || skip "built with sanitizers: python3 would need their runtimes"
# A version manager's python3 (pyenv) may lack Debian's packages: take the first that has both.
py=""
for c in "${PYTHON3:-}" "$(command -v python3)" /usr/bin/python3; do
    if [ -n "$c" ] && [ -x "$c" ] && "$c" -c 'import numpy, mpi4py' 2>/dev/null; then
        py=$c
        break
    fi
done
[ -n "$py" ] || skip "no python3 with numpy and mpi4py (Debian: python3-numpy python3-mpi4py)"
vendor=$("$py" -c 'import mpi4py; mpi4py.rc.initialize = False
from mpi4py import MPI; print(MPI.get_vendor()[0])')
case ${DSORT_MPI:-openmpi}:$vendor in
openmpi:"Open MPI" | mpich:MPICH) ;;
*) skip "mpi4py is built for $vendor, libdsort for ${DSORT_MPI:-openmpi}" ;;
esac
lib=$build/src/lib/libdsort.so
[ -e "$lib" ] || fail "no $lib"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dsort-python-XXXXXX") || fail mktemp
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cd $tmp"
mpi=("${DSORT_MPIEXEC:-mpiexec}" "${MPI_PREFLAGS[@]}")
export PYTHONDONTWRITEBYTECODE=1 # no __pycache__ left in the source tree

for p in 1 2 3 4; do
    LAST_CMD="DSORT_LIB=$lib PYTHONPATH=$src/src/lib/python mpiexec -n $p $py python_sort.py"
    DSORT_LIB=$lib PYTHONPATH=$src/src/lib/python kto 300 "${mpi[@]}" -n $p \
        "$py" "$here/python_sort.py" || fail "python_sort.py at $p ranks"
done

# One rank's MPI call fails in the middle of the exchange (tests/pmpi/fault.c: rank 1's first
# MPI_Isend calls the communicator's error handler): under mpi4py's MPI_ERRORS_RETURN the
# DsortError came back on rank 1 alone, and a script that let it go waited for ever on rank 0
# (the module now sorts on a duplicate with MPI_ERRORS_ARE_FATAL). The job must end at once,
# non-zero, with MPI's error, and rank 0 must never print a result. (The injector is passed
# with Open MPI's -x.)
fault=$build/tests/pmpi/libdsort_pmpi_fault.so
if [ "$vendor" = "Open MPI" ] && [ -e "$fault" ]; then
    cat >fault.py <<'PY'
import numpy as np
from mpi4py import MPI
import dsort
c = MPI.COMM_WORLD
a = np.random.default_rng(c.Get_rank()).integers(0, 1 << 60, 200000, dtype=np.uint64)
out = dsort.sort(a, comm=c)  # (no try: a careless script)
print(f"rank {c.Get_rank()} sorted {len(out)}", flush=True)
PY
    LAST_CMD="mpiexec -n 2 -x LD_PRELOAD=$fault -x DSORT_PMPI_FAIL_ISEND=1:1 $py fault.py"
    t0=$(date +%s)
    out=$(DSORT_LIB=$lib PYTHONPATH=$src/src/lib/python kto 60 "${mpi[@]}" -n 2 \
        -x LD_PRELOAD="$fault" -x DSORT_PMPI_FAIL_ISEND=1:1 "$py" fault.py 2>&1)
    rc=$? secs=$(($(date +%s) - t0))
    case $rc in 0) fail "a failed MPI call: exit 0: $out" ;; 124 | 137)
        fail "a failed MPI call on rank 1: still running after 60 s (rank 0 waits for it)" ;;
    esac
    # (MPI_ERRORS_ARE_FATAL's lines name MPI_ERR_OTHER; Open MPI's launcher sometimes loses
    # them at the abort and prints only "ORTE_ERROR_LOG: ...": some error line)
    grep -qiE "MPI_ERR_OTHER|error" <<<"$out" || fail "a failed MPI call: no error reported: $out"
    ! grep -q "sorted" <<<"$out" || fail "a failed MPI call: a rank printed a result: $out"
    echo "lib.python: rank 1's MPI_Isend failing: exit $rc after $secs s"
fi

# Installed: the module finds the installed library by itself.
"${CMAKE:-cmake}" --install "$build" --prefix "$tmp/prefix" >/dev/null || fail "cmake --install"
pydir=$tmp/prefix/lib/python3/dist-packages
[ -f "$pydir/dsort/__init__.py" ] || fail "cmake --install put no dsort/__init__.py in $pydir"
LAST_CMD="PYTHONPATH=$pydir mpiexec -n 2 $py python_sort.py"
unset DSORT_LIB
out=$(PYTHONPATH="$pydir" kto 300 "${mpi[@]}" -n 2 "$py" "$here/python_sort.py" 2>&1) ||
    fail "python_sort.py at 2 ranks, installed: $out"
grep -q "library $tmp/prefix/" <<<"$out" || fail "the installed module did not load the installed library: $out"

# python3 -m dsort: a .npy file sorted by a bytes field, against Python's own sort.
# shellcheck disable=SC2034 # read by check.sh's fail
LAST_CMD="python3 -m dsort in.npy -o out.npy --order tag -s (3 ranks)"
"$py" -c 'import numpy as np
a = np.zeros(2001, [("tag", "S3"), ("n", "<u4")])
a["tag"] = [bytes([i * 7 % 5, i % 3, 200]) for i in range(len(a))]
a["n"] = np.arange(len(a))
np.save("in.npy", a)' || fail "writing in.npy"
PYTHONPATH="$pydir" kto 120 "${mpi[@]}" -n 3 "$py" -m dsort in.npy -o out.npy \
    --order tag -s || fail "python3 -m dsort"
"$py" -c 'import numpy as np
a, b = np.load("in.npy"), np.load("out.npy")
want = sorted(a.tolist(), key=lambda r: r[0])  # stable, by the bytes
assert b.tolist() == want, "python3 -m dsort: out.npy is not in.npy sorted by tag"' ||
    fail "python3 -m dsort's output"
# A library that is not there: a clear error naming DSORT_LIB, not a crash.
err=$(DSORT_LIB=$tmp/nope.so PYTHONPATH="$pydir" kto 60 "$py" -c 'import dsort; dsort.library_version()' 2>&1) &&
    fail "DSORT_LIB pointing nowhere was not an error"
grep -q "cannot load libdsort (set DSORT_LIB" <<<"$err" || fail "no clear message for a missing library: $err"
echo "lib.python: ok"
