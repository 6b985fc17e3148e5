# shellcheck shell=bash disable=SC2034
# The start of a test on throttled loop disks (tests/topo/throttled*.sh), sourced first thing
# with the test's arguments still in "$@" and `lib` set to tests/lib: check.sh's skip (exit 77),
# fail (counted in FAILS), kto and MPI_PREFLAGS, the tools and root it needs,
# tests/lib/throttle.sh, a mount namespace of its own (so that no mount outlives the test; loop
# devices and the cgroup are undone by the trap, or by the next run after a SIGKILL), thr_begin,
# setup, python3 found once, Open MPI as root, and mpiexec.
# shellcheck source=tests/lib/check.sh
. "${lib:?set lib to tests/lib before sourcing}/check.sh"
for tool in python3 timeout sort "${DSORT_MPIEXEC:-mpirun}"; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing"
done
[ "$(id -u)" = 0 ] || skip "not running as root"
# shellcheck source=tests/lib/throttle.sh
. "${lib:?set lib to tests/lib before sourcing}/throttle.sh"
thr_isolate "$@"
thr_begin "$(basename "$0")"
setup() { thr_setup "$@"; }
thr_python3
python3() { "$PYTHON3" "$@"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${DSORT_MPIEXEC:-mpirun}
