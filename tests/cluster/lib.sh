# Shared helpers of the cluster tests (tests/cluster/NAME.sh): bring up the test bed, run on
# it, check. Assertions do not stop the script: each prints what failed and the command; the
# script ends with cl_finish, which exits 1 if anything failed. Skips (exit 77) come from
# testbed.sh when this machine cannot host the test bed.
#
# Environment (set by ctest from DSORT_TEST_ENV): DSORT_BIN_DIR (dsort, dsort-gen,
# dsort-validate). Optional: DSORT_TESTBED_KEEP=1 keeps the lab directory of a failed test.

set -u -o pipefail
CL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CL_TOP=$(cd "$CL_DIR/../.." && pwd)
JOBS=$CL_TOP/jobs
# The shared assertions (check, eq, ...) first: this file and the test bed redefine fail,
# contains and gen for the cluster (no seed; the tail of long logs).
# shellcheck source=../lib/check.sh
. "$CL_DIR/../lib/check.sh"
# shellcheck source=testbed.sh
. "$CL_DIR/testbed.sh"

CL_NAME=$(basename "$0" .sh)

cl_init() {
    [ -n "${DSORT_BIN_DIR:-}" ] || { echo "ERROR: DSORT_BIN_DIR is not set (run through ctest)" >&2 && exit 2; }
    # The test bed runs Open MPI's mpirun (rsh agent, OMPI_* settings) and srun --mpi=pmix:
    # a build against another MPI (DSORT_MPI, from tests/CMakeLists.txt) is not tested here.
    if [ "${DSORT_MPI:-openmpi}" != openmpi ]; then
        echo "SKIP: cluster $CL_NAME: the test bed runs Open MPI; this build is ${DSORT_MPI}'s"
        exit 77
    fi
    DSORT_BIN_DIR=$(cd "$DSORT_BIN_DIR" && pwd)
    export DSORT_BIN_DIR
    DSORT=$DSORT_BIN_DIR/dsort
    GEN=$DSORT_BIN_DIR/dsort-gen
    VALIDATE=$DSORT_BIN_DIR/dsort-validate
    local b
    for b in "$DSORT" "$GEN" "$VALIDATE"; do
        [ -x "$b" ] || { echo "ERROR: $b is missing: build first" >&2 && exit 2; }
    done
    command -v python3 >/dev/null || { echo "ERROR: the cluster tests need python3" >&2 && exit 2; }
    CL_T0=$(date +%s)
    tb_up
    # Keep the lab of a failed test when asked (tb_down reads it at exit).
    trap 'cl_on_exit' EXIT
    S=$TB_LAB/common
    LT=$TB_LAB/local/tmp # node-local scratch: the same path on every node, its own disk
    cd "$S" || exit 2
    echo "cluster $CL_NAME: lab $TB_LAB"
}

cl_on_exit() {
    if [ "$FAILS" -gt 0 ] && [ "${DSORT_TESTBED_KEEP:-0}" != 1 ]; then
        echo "(set DSORT_TESTBED_KEEP=1 to keep the lab directory)"
    fi
    cd / && tb_down
}

cl_finish() {
    echo "cluster $CL_NAME: $(($(date +%s) - CL_T0)) s"
    if [ "$FAILS" -gt 0 ]; then
        echo "cluster $CL_NAME: $FAILS of $CHECKS checks FAILED"
        exit 1
    fi
    echo "cluster $CL_NAME: all $CHECKS checks passed"
    exit 0
}

fail() {
    FAILS=$((FAILS + 1))
    {
        echo "FAIL: $*"
        echo "  last command: $LAST_CMD"
    } >&2
}

note() {
    echo "note: $*" >&2
}

# contains WHAT FILE REGEX: FILE has a line matching the extended regex.
contains() {
    CHECKS=$((CHECKS + 1))
    if ! grep -Eq -- "$3" "$2" 2>/dev/null; then
        fail "$1: no line matches /$3/ in $2:"
        sed 's/^/  | /' "$2" 2>/dev/null | tail -n 30 >&2
        return 1
    fi
    return 0
}

show() {
    {
        echo "  exit status: $RC"
        echo "  --- output (last 30 lines):"
        tail -n 30 "$S/.out" | sed 's/^/  | /'
    } >&2
}

# on NODE CMD...: run a command inside a node; output to $S/.out; sets RC. Never fails.
on() {
    local node=$1
    shift
    LAST_CMD="on $node: $(printf '%q ' "$@")"
    timeout -k 5 120 nsenter -t "$(cat "$TB_LAB/nodes/$node.pid")" --net --uts --mount --wd="$PWD" \
        -- "$@" </dev/null >"$S/.out" 2>&1
    RC=$?
}

# mpi ARGS...: mpirun on the test bed (from n0, over all nodes, by $MPI_HOSTFILE if set);
# output in $S/.out.
mpi() {
    LAST_CMD="mpirun $(printf '%q ' "$@")"
    timeout -k 5 180 nsenter -t "$(cat "$TB_LAB/nodes/n0.pid")" --net --uts --mount --wd="$PWD" \
        -- mpirun --hostfile "${MPI_HOSTFILE:-$TB_LAB/hostfile}" --mca plm_rsh_agent "$TB_LAB/rsh" "$@" \
        </dev/null >"$S/.out" 2>&1
    RC=$?
    [ "$RC" -ne 124 ] || note "timed out: $LAST_CMD"
}

# mpi_ok ARGS...: mpi, and expect exit status 0.
mpi_ok() {
    mpi "$@"
    CHECKS=$((CHECKS + 1))
    if [ "$RC" -ne 0 ]; then
        fail "exit status $RC, expected 0"
        show
        return 1
    fi
}

# gen N ARGS...: dsort-gen -c over N ranks; GEN_SUM = the checksum it printed.
gen() {
    local n=$1
    shift
    GEN_SUM=""
    mpi_ok -n "$n" "$GEN" -c "$@" || return 1
    GEN_SUM=$(grep -Eo '^[0-9a-f]+$' "$S/.out" | tail -n 1)
    [ -n "$GEN_SUM" ] || fail "dsort-gen -c printed no checksum"
}

# validated WHAT SUM ARGS...: dsort-validate ARGS over 3 ranks (one per node) says sorted, and
# its checksum is SUM.
validated() {
    local what=$1 sum=$2
    shift 2
    mpi -n 3 --map-by node "$VALIDATE" "$@"
    CHECKS=$((CHECKS + 1))
    if [ "$RC" -ne 0 ]; then
        fail "$what: dsort-validate exit status $RC"
        show
        return 1
    fi
    eq "$what: checksum of the output (dsort-validate) vs the generator's" "$sum" \
        "$(sed -n 's/^Checksum: *//p' "$S/.out")"
}

# temp_left NODE: dsort's temp directories (and the job scripts' temp files) left on NODE's
# local scratch, one per line.
temp_left() {
    nsenter -t "$(cat "$TB_LAB/nodes/$1.pid")" --mount -- \
        find "$LT" -mindepth 1 -maxdepth 1 -name 'dsort-*' 2>/dev/null
}

# no_temp_left WHAT: no node has dsort temp directories left.
no_temp_left() {
    local node left
    for node in "${TB_NODES[@]}"; do
        left=$(temp_left "$node")
        CHECKS=$((CHECKS + 1))
        [ -z "$left" ] || fail "$1: temp directories left on $node: $(echo $left)"
    done
}

# ---- Slurm ----

# submit ARGS...: sbatch on n0 (the login node); JOB = the job id. Jobs get this environment
# with TMPDIR on the node's own disk, and write their output to $S/job-ID.out.
submit() {
    LAST_CMD="sbatch $(printf '%q ' "$@")"
    JOB=$(timeout 30 nsenter -t "$(cat "$TB_LAB/nodes/n0.pid")" --net --uts --mount --wd="$PWD" \
        -- sbatch --parsable --export="ALL,TMPDIR=$LT" -o "$S/job-%j.out" "$@" 2>"$S/.out" |
        cut -d';' -f1)
    if ! [[ $JOB =~ ^[0-9]+$ ]]; then
        fail "sbatch failed: $(cat "$S/.out")"
        JOB=0
        return 1
    fi
    echo "submitted job $JOB: $LAST_CMD"
}

# job_ends JOB SECONDS: wait for the job's jobcomp record; sets STATE and EXIT (ExitCode).
job_ends() {
    STATE="" EXIT=""
    if ! tb_wait_job "$1" "$2"; then
        fail "job $1 did not end within $2 s (squeue: $(tb_exec n0 squeue -h -j "$1" -o '%T %M' 2>&1))"
        tb_exec n0 scancel "$1" 2>/dev/null
        tb_wait_job "$1" 20
        return 1
    fi
    STATE=$(tb_job_field "$1" JobState)
    EXIT=$(tb_job_field "$1" ExitCode)
    echo "job $1: JobState=$STATE ExitCode=$EXIT"
}

# job_gone JOB SECONDS: after job_ends, wait until Slurm has ended all of the job's processes
# (a cancelled job's record is written when the cancel starts, before its processes are gone)
# and no dsort process runs on any node; 1 on timeout.
job_gone() {
    local job=$1 i node busy
    for ((i = 0; i < $2 * 10; i++)); do
        busy=$(tb_exec n0 squeue -h -j "$job" -o %T 2>/dev/null)
        for node in "${TB_NODES[@]}"; do
            [ -n "$(tb_pids "$node" dsort)" ] && busy="$busy dsort-on-$node"
        done
        [ -z "$busy" ] && return 0
        sleep 0.1
    done
    fail "job $job: still there $2 s after its end: $busy"
    return 1
}

# ompi_startup_crash JOB SECONDS: wait for the job's end; true if it failed with a segfault
# that Open MPI's signal handler reported (exit 139 and its "Process received signal" banner),
# the start-up crash of Open MPI 4.1 under srun that sbatch.sh submits again. Counts no check.
ompi_startup_crash() {
    tb_wait_job "$1" "$2" || return 1
    [ "${DSORT_MPI:-openmpi}" = openmpi ] || return 1 # Open MPI's crash and banner only
    [ "$(tb_job_field "$1" ExitCode)" = 139:0 ] || return 1
    grep -q '\*\*\* Process received signal \*\*\*' "$S/job-$1.out" || return 1
    note "job $1 hit Open MPI's start-up crash under srun (exit 139); submitting it again:"
    tail -n 12 "$S/job-$1.out" | sed 's/^/  | /' >&2
}

# job_ok JOB SECONDS: the job ends COMPLETED with ExitCode 0:0.
job_ok() {
    job_ends "$1" "$2" || return 1
    CHECKS=$((CHECKS + 1))
    if [ "$STATE" != COMPLETED ] || [ "$EXIT" != 0:0 ]; then
        fail "job $1: JobState=$STATE ExitCode=$EXIT, expected COMPLETED 0:0; its output:"
        tail -n 40 "$S/job-$1.out" | sed 's/^/  | /' >&2
        return 1
    fi
}

# wait_for SECONDS CMD...: poll CMD (every 0.1 s) until it succeeds; 1 on timeout.
wait_for() {
    local i n=$(($1 * 10))
    shift
    for ((i = 0; i < n; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

# spilling NODE...: every NODE has a dsort temp directory holding a spilled run (with SPILL_NEWER
# set: a run newer than that file).
spilling() {
    local node
    for node in "$@"; do
        nsenter -t "$(cat "$TB_LAB/nodes/$node.pid")" --mount -- \
            find "$LT" -path '*/dsort-*/run-*' ${SPILL_NEWER:+-newer "$SPILL_NEWER"} -print \
            -quit 2>/dev/null | grep -q . || return 1
    done
}

# stop_re SIG [RANK]: the line a rank prints when signal SIG stops it (naming the phase).
stop_re() {
    echo "^dsort: rank ${2:-[0-9]+}/[0-9]+ \(n[0-2]\): stopped by SIG$1( \([^)]*\))? in the [a-z_]+ phase; temp files removed, no output written$"
}
