#!/usr/bin/env bash
# Install what is missing, build with -Werror, run the whole test suite (ctest), then build
# with AddressSanitizer + UndefinedBehaviorSanitizer and run the suite again.
#   scripts/test.sh [ctest args...]     e.g. scripts/test.sh -LE slow   (skip slow tests)
# coreutils' sort tests are fetched first (scripts/coreutils_tests.sh; DSORT_NO_COREUTILS=1: not).
# DSORT_NO_ASAN=1 skips the sanitizer pass. Then the libFuzzer targets run for a bounded time
# (scripts/fuzz.sh, DSORT_FUZZ_SECONDS each, default 10); DSORT_NO_FUZZ=1 skips them.
# DSORT_MPICH=1 adds, at the end, the MPICH subset below (what CI runs under MPICH).
#
# Under MPICH (Debian's mpich, installed beside Open MPI; the build in build-mpich with
# -DDSORT_MPI=mpich, that is mpicc.mpich and mpiexec.mpich):
#   scripts/test.sh --mpi mpich [ctest args...]   the unit, mpi and e2e tests, none labelled
#                                                 slow (nor cluster: the test bed is Open MPI's)
#   scripts/test.sh --mpi mpich --subset          the CI subset: the mpi tests of comm,
#                                                 splitters, exchange and engine, e2e sort and
#                                                 output, at 3 ranks (builds only what they run)
# --mpi openmpi runs the default passes with mpicc.openmpi and mpiexec.openmpi by name.
# run_mpich changes DSORT_MPI and ctest_args in a subshell of its own, on purpose.
# shellcheck disable=SC2030,SC2031
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mpi=""
subset=0
while [ $# -gt 0 ]; do
    case $1 in
    --mpi)
        mpi=${2:-}
        shift 2 || { echo "usage: $0 [--mpi openmpi|mpich [--subset]] [ctest args...]" >&2 && exit 2; }
        ;;
    --mpi=*)
        mpi=${1#--mpi=}
        shift
        ;;
    --subset)
        subset=1
        shift
        ;;
    *) break ;;
    esac
done
case $mpi in
"" | openmpi | mpich) ;;
*) echo "$0: --mpi takes openmpi or mpich, not '$mpi'" >&2 && exit 2 ;;
esac
if [ "$subset" = 1 ] && [ "$mpi" != mpich ]; then
    echo "$0: --subset goes with --mpi mpich" >&2
    exit 2
fi
jobs=$(nproc)
ctest_args=("$@")
build_targets=() # empty: all
run_suite() {
    local dir=$1
    shift
    cmake -S "$top" -B "$dir" -DDSORT_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs" ${build_targets[@]+--target "${build_targets[@]}"} >/dev/null
    (cd "$dir" && ctest --output-on-failure -j "$jobs" --timeout 600 "${ctest_args[@]}")
}
# The MPICH subset CI runs: the mpi tests at 3 ranks (the comm errors' wording, splitters,
# exchange, engine) and two end-to-end tests at 3 ranks (a sort, the output files). Not the
# faults tests: under MPICH one aborting rank takes the others down before they clean up, and
# conserve forces Open MPI's TCP transport.
mpich_subset='^(mpi[.](comm|splitters|exchange|exchange_node|engine)[.]n3|e2e[.](sort|output)[.]n3)$'
mpich_subset_targets=(dsort dsort-gen dsort-validate test_comm test_splitters test_exchange test_engine)
# run_mpich [subset]: build in build-mpich against MPICH and run its tests (see the top).
run_mpich() {
    local t0=$SECONDS
    (
        export DSORT_MPI=mpich
        . "$top/scripts/env.sh"
        if [ "${1:-}" = subset ]; then
            ctest_args=(-R "$mpich_subset")
            build_targets=("${mpich_subset_targets[@]}")
        else
            ctest_args=(-L "unit|mpi|e2e" -LE "slow|cluster" "${ctest_args[@]}")
        fi
        run_suite "$top/build-mpich" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSORT_MPI=mpich \
            -DMPI_C_COMPILER="$DSORT_MPICC" -DMPIEXEC_EXECUTABLE="$DSORT_MPIEXEC"
    )
    echo "== MPICH: $((SECONDS - t0)) s"
}

if [ "$mpi" = mpich ]; then
    "$top/scripts/deps.sh" --mpich
    if [ "$subset" = 1 ]; then
        echo "== build and test under MPICH (-Werror; the CI subset)"
        run_mpich subset
    else
        echo "== build and test under MPICH (-Werror; unit, mpi and e2e tests, none slow)"
        run_mpich
    fi
    exit 0
fi

deps=(--test)
[ "${DSORT_MPICH:-0}" = 1 ] && deps+=(--mpich)
"$top/scripts/deps.sh" "${deps[@]}"
[ -z "$mpi" ] || export DSORT_MPI=$mpi
. "$top/scripts/env.sh"
mpi_args=()
[ -z "$mpi" ] || mpi_args=(-DDSORT_MPI="$mpi" -DMPI_C_COMPILER="$DSORT_MPICC"
    -DMPIEXEC_EXECUTABLE="$DSORT_MPIEXEC")
# coreutils' own sort tests (e2e.gnusortpl): fetched from Debian's sources, best effort (the
# test is skipped without them); DSORT_NO_COREUTILS=1 leaves them out.
if [ "${DSORT_NO_COREUTILS:-0}" != 1 ] && [ -z "${DSORT_COREUTILS_SORT_PL:-}" ]; then
    "$top/scripts/coreutils_tests.sh" sid >/dev/null 2>&1 ||
        echo "test: could not fetch coreutils' sort tests (e2e.gnusortpl will be skipped)"
fi
echo "== build and test (-Werror)"
run_suite "$top/build-ci" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${mpi_args[@]}"
if [ "${DSORT_NO_ASAN:-0}" != 1 ]; then
    echo "== build and test with AddressSanitizer + UBSan"
    # The sanitizers slow every rank several times over: the tests at 3 ranks here (the first
    # pass ran them at 1, 2, 4 and 7 too); at 1 rank only the tests that have no 3-rank form
    # and e2e.lines (whose 3-rank form is labelled slow); at 2 ranks the few that exist only
    # there. None labelled slow or cluster.
    ctest_args+=(-LE "slow|cluster" -E "[.]n[47]\$|^(e2e[.][a-z_]+|ext[.](io2|corrupt|rss|tempdirs|sweep))[.]n2\$|^(e2e[.](sort|order|multi|format|output|balance|exchange|check|validate|memory|badinput|fifo|gnuopts|gnucheck|gnukeys|debug|inplace|stdio|progress|lines_golden|safety)|ext[.](io2|resume|budget|diskfull|corrupt_lines|smallbudget|fixedfmt|signals))[.]n1\$")
    run_suite "$top/build-asan" -DCMAKE_BUILD_TYPE=Debug -DDSORT_SANITIZE=ON "${mpi_args[@]}"
fi
if [ "${DSORT_NO_FUZZ:-0}" != 1 ]; then
    echo "== fuzz (libFuzzer, ${DSORT_FUZZ_SECONDS:-10} s a target)"
    "$top/scripts/fuzz.sh" "${DSORT_FUZZ_SECONDS:-10}"
fi
if [ "${DSORT_MPICH:-0}" = 1 ]; then
    echo "== build and test under MPICH (-Werror; the CI subset)"
    run_mpich subset
fi
