#!/usr/bin/env bash
# Quick start: install what is missing, build, then generate, sort and validate gensort data.
#   scripts/quickstart.sh [RECORDS] [RANKS]     (default: 10000000 records = 1 GB, 2 ranks)
# Data goes to ${DSORT_DATA:-./data}.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
records=${1:-10000000}
ranks=${2:-2}
data=${DSORT_DATA:-$top/data}
"$top/scripts/deps.sh"
. "$top/scripts/env.sh"
cmake -S "$top" -B "$top/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$top/build" -j "$(nproc)" >/dev/null
bin=$top/build/src/cli
mkdir -p "$data"
rm -rf "$data/sorted.dat"
echo "== generate $records records with dsort-gen ($ranks ranks)"
mpirun -q -n "$ranks" "$bin/dsort-gen" -c -v "$records" "$data/input.dat"
echo "== sort with mpirun -n $ranks dsort"
mpirun -q -n "$ranks" "$bin/dsort" -v "$data/input.dat" -o "$data/sorted.dat"
echo "== validate with dsort-validate"
mpirun -q -n "$ranks" "$bin/dsort-validate" "$data/sorted.dat"
