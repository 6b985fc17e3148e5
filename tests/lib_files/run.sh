#!/bin/bash
# lib.files: tests/lib_files/files.c (libdsort's dsort_sort_files) at 1, 2, 3 and 4 ranks on two
# gensort files from dsort-gen; then its output against the dsort program's on the same input
# (the library sorts files as the program does: the same bytes). Nothing may reach standard
# error unasked (files.c gives a log hook to one call only). Usage: run.sh LIB_FILES
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
FAIL_FAST=0
prog=$1
bin=${DSORT_BIN_DIR:?}
mpiexec=${DSORT_MPIEXEC:-mpiexec}
[ -x "$prog" ] && [ -x "$bin/dsort" ] || skip "lib_files or dsort not built"
T=$(mktemp -d "${TMPDIR:-/tmp}/lib-files.XXXXXX")
trap 'rm -rf "$T"' EXIT
mkdir "$T/tmp"
timeout 60 "$mpiexec" "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort-gen" 20000 "$T/A" || fail "dsort-gen A"
timeout 60 "$mpiexec" "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort-gen" -b 20000 30001 "$T/B" ||
    fail "dsort-gen B"
for n in 1 2 3 4; do
    rm -rf "$T/a.parts" # -O DIR must not hold an earlier run's parts (the program's rule)
    LAST_CMD="$mpiexec -n $n $prog $T $T/A $T/B"
    timeout -k 5 240 "$mpiexec" "${MPI_PREFLAGS[@]}" -n "$n" "$prog" "$T" "$T/A" "$T/B" \
        >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    [ "$rc" = 0 ] || fail "lib_files at $n ranks: exit $rc: $(cat "$T/out" "$T/err")"
    [ ! -s "$T/err" ] || fail "lib_files at $n ranks wrote to standard error: $(head -5 "$T/err")"
    if [ "$n" = 4 ]; then
        timeout 60 "$mpiexec" "${MPI_PREFLAGS[@]}" -n 3 "$bin/dsort" -T "$T/tmp" -o "$T/prog" "$T/A" ||
            fail "dsort -o on A"
        cmp -s "$T/prog" "$T/a.mem" || fail "the library's output of A differs from dsort's"
        cmp -s "$T/prog" "$T/a.typed" || fail "the typed-key output of A differs from dsort's"
    fi
done
[ "$FAILS" = 0 ] || exit 1
echo "lib.files: passed at 1-4 ranks"
