#!/bin/bash
# lib.example: install libdsort into a temp prefix, build docs/examples/libdsort out of tree
# against it with pkg-config and with CMake (find_package), run both under the launcher at 1,
# 2 and 4 ranks (and 3) by typed keys (by id, by cell then id, by floats, mixed directions) and
# check the outputs with check.py (an independent oracle: Python's sort of the decoded keys);
# the same records sorted by dsort with the same -k keys must be byte-identical.
# Also: an error on one rank (-x, -y) comes back to every rank as the same code, and no rank
# hangs.
# usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun_=(timeout 60 "${DSORT_MPIEXEC:-mpirun}" -q ${DSORT_MPIEXEC_PREFLAGS:-})

cmake=${CMAKE:-cmake}
"$cmake" --install "$build" --prefix "$tmp/prefix" >/dev/null
ls "$tmp/prefix"/include/dsort.h >/dev/null
pc=$(dirname "$(find "$tmp/prefix" -name dsort.pc)")
libdir=$(dirname "$(find "$tmp/prefix" -name 'libdsort.so' | head -1)")

# pkg-config, as a Makefile would.
mkdir "$tmp/pc"
export PKG_CONFIG_PATH=$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
[ "$(pkg-config --modversion dsort)" = "$(sed -n 's/^project(dsort VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")" ]
"${CC:-cc}" -std=c11 -Wall -Werror ${EXAMPLE_CFLAGS:-} $(pkg-config --cflags dsort) "$src/docs/examples/libdsort/sort_particles.c" \
    $(pkg-config --libs dsort) -Wl,-rpath,"$libdir" -o "$tmp/pc/sort_particles"

# CMake's find_package, with the example's own CMakeLists.txt.
"$cmake" -S "$src/docs/examples/libdsort" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_C_COMPILER="${CC:-cc}" -DCMAKE_C_FLAGS="${EXAMPLE_CFLAGS:-}" >/dev/null
"$cmake" --build "$tmp/cm" >/dev/null

run() { # BINARY P FLAGS...
    local bin=$1 p=$2
    shift 2
    rm -f "$tmp"/o.*
    "${mpirun_[@]}" -n "$p" "$bin" -n 3000 -o "$tmp/o" "$@"
    python3 "$here/check.py" "$tmp/o" "$p" "$@"
}
for p in 1 2 4; do
    run "$tmp/pc/sort_particles" $p
    run "$tmp/cm/sort_particles" $p -c -s
done
run "$tmp/pc/sort_particles" 3 -r -s
run "$tmp/cm/sort_particles" 3 -k 8:f64le:r,32:i32le,0:u64le:r
run "$tmp/pc/sort_particles" 4 -k 40:f32le,36:f32le:r -r
run "$tmp/cm/sort_particles" 2 -n 0 -c # few records: 0 on rank 0

# The library and the program agree byte for byte: dsort of the same records, as one file
# (4 ranks; 2 with -r -s), with the same keys as -k options.
same_as_dsort() { # P KEYS FLAGS...
    local p=$1 keys=$2 k
    shift 2
    run "$tmp/cm/sort_particles" "$p" -k "$keys" "$@"
    cat $(for r in $(seq 0 $((p - 1))); do echo "$tmp/o.in.$r"; done) >"$tmp/all.in"
    cat $(for r in $(seq 0 $((p - 1))); do echo "$tmp/o.out.$r"; done) >"$tmp/all.out"
    local kargs=()
    IFS=, read -ra k <<<"$keys"
    for x in "${k[@]}"; do kargs+=(-k "$x"); done
    "${mpirun_[@]}" -n 2 "$DSORT_BIN_DIR/dsort" --format fixed:48:0:8 "${kargs[@]}" "$@" \
        -o "$tmp/all.dsort" "$tmp/all.in"
    cmp "$tmp/all.out" "$tmp/all.dsort"
}
same_as_dsort 4 0:u64le -r
same_as_dsort 2 32:i32le,0:u64le -r -s
same_as_dsort 3 8:f64le:r,32:i32le

# An error seen by the last rank only: every rank returns DSORT_ERR_ARG, rank 0 says so,
# naming rank 2 (-x: a key beyond the record; -y: keys other than rank 0's).
fails() { # FLAG MESSAGE
    set +e
    "${mpirun_[@]}" -n 3 "$tmp/cm/sort_particles" "$1" 2>"$tmp/err"
    local rc=$?
    set -e
    cat "$tmp/err" >&2
    [ $rc -eq 1 ] || { echo "FAIL: $1 exited $rc, want 1" >&2; exit 1; }
    grep -qF "invalid argument (code 1): rank 2: $2" "$tmp/err" || { echo "FAIL: $1: no rank-2 error" >&2; exit 1; }
}
fails -x "bad key '44:u64le': its 8 bytes at offset 44 reach past the end of the 48-byte record"
fails -y "keys differ from rank 0's: '0:u64le:r' here, '0:u64le' on rank 0"
echo "lib.example: ok"
