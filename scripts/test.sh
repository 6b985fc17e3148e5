#!/usr/bin/env bash
# Install what is missing, build with -Werror, run the whole test suite (ctest), then build
# with AddressSanitizer + UndefinedBehaviorSanitizer and run the suite again.
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -LE slow   (skip slow tests)
# DSORT_NO_ASAN=1 skips the sanitizer pass. Then the libFuzzer targets run for a bounded time
# (scripts/fuzz.sh, DSORT_FUZZ_SECONDS each, default 20); DSORT_NO_FUZZ=1 skips them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" --test
. "$top/scripts/env.sh"
jobs=$(nproc)
run_suite() {
    local dir=$1
    shift
    cmake -S "$top" -B "$dir" -DDSORT_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" >/dev/null
    (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 600 "${ctest_args[@]}")
}
ctest_args=("$@")
echo "== build and test (-Werror)"
run_suite "$top/build-ci" -DCMAKE_BUILD_TYPE=RelWithDebInfo
if [ "${DSORT_NO_ASAN:-0}" != 1 ]; then
    echo "== build and test with AddressSanitizer + UBSan"
    # The sanitizers slow every rank several times over: tests at 1, 2 and 3 ranks here (the
    # first pass ran 4 and 7), none labelled slow or cluster.
    ctest_args+=(-LE "slow|cluster" -E "[.]n[47]\$")
    run_suite "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DDSORT_SANITIZE=ON
fi
if [ "${DSORT_NO_FUZZ:-0}" != 1 ]; then
    echo "== fuzz (libFuzzer, ${DSORT_FUZZ_SECONDS:-20} s a target)"
    "$top/scripts/fuzz.sh" "${DSORT_FUZZ_SECONDS:-20}"
fi
