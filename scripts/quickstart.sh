#!/usr/bin/env bash
# Quick start: install what is missing, build, then generate, sort and validate gensort data.
#   scripts/quickstart.sh [RECORDS] [RANKS]     (default: 10000000 records = 1 GB, 2 ranks)
# Data goes to ${DSORT_DATA:-./data}. The MPI is scripts/env.sh's: the default mpicc and mpirun
# (Open MPI on Debian), or DSORT_MPI=openmpi|mpich (then built in build-$DSORT_MPI-release).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
records=${1:-10000000}
ranks=${2:-2}
data=${DSORT_DATA:-$top/data}
deps=()
[ "${DSORT_MPI:-}" != mpich ] || deps=(--mpich)
"$top/scripts/deps.sh" "${deps[@]}"
. "$top/scripts/env.sh"
build=$top/build
[ -z "${DSORT_MPI:-}" ] || build=$top/build-$DSORT_MPI-release
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=Release -DDSORT_MPI="${DSORT_MPI:-}" >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
bin=$build/src/cli
# The launcher and its flags (env.sh); -q is Open MPI's (hydra has no such flag and is quiet).
launch=("$DSORT_MPIEXEC")
[ "${DSORT_MPI:-}" = mpich ] || launch+=(-q)
# shellcheck disable=SC2206 # words of the flags, on purpose
launch+=($DSORT_MPIEXEC_PREFLAGS)
mkdir -p "$data"
rm -rf "$data/sorted.dat"
echo "== generate $records records with dsort-gen ($ranks ranks)"
"${launch[@]}" -n "$ranks" "$bin/dsort-gen" -c -v "$records" "$data/input.dat"
echo "== sort with $(basename "$DSORT_MPIEXEC") -n $ranks dsort"
"${launch[@]}" -n "$ranks" "$bin/dsort" -v "$data/input.dat" -o "$data/sorted.dat"
echo "== validate with dsort-validate"
"${launch[@]}" -n "$ranks" "$bin/dsort-validate" "$data/sorted.dat"
