# shellcheck shell=bash disable=SC2034
# The assertions, the mpiexec runner and the set-up that every shell test shares. Sourced by
# tests/e2e/lib.sh, by the scripts of tests/ext (directly) and of tests/faults (through
# faultlib.sh), and by the stand-alone scripts (tests/topo, tests/report, cgroup_budget) for
# skip, fail and the launcher's flags; tests/cluster/lib.sh takes the assertions and redefines
# fail, contains and gen. The oracle is tests/lib/oracle.py (python3, standard library only),
# run by py.
#
# Set before sourcing:
#   SUITE              e2e or ext: the names of the settings below (DSORT_E2E_SEED...), the
#                      temporary directory's name, and the default of FAST_KILL. Unset: no
#                      suite (the assertions, skip and the runner only).
#   FAST_KILL          1: mpirun does not wait 1 s before SIGKILL after a rank exits non-zero
#                      (Open MPI's odls_base_sigkill_timeout=0); 0: Open MPI's default, which
#                      is what users get, for scripts that check what a failed or interrupted
#                      run leaves behind. Default: 1 for e2e, 0 for ext.
#   FAIL_FAST          1: fail ends the script at once (exit 1), for the stand-alone scripts.
# Environment (set by ctest from DSORT_TEST_ENV in tests/CMakeLists.txt):
#   DSORT_BIN_DIR      where dsort, dsort-gen and dsort-validate are
#   DSORT_MPIEXEC      mpiexec to use (default: mpiexec)
#   DSORT_MPI          openmpi, mpich or other (unset: openmpi)
#   DSORT_MPIEXEC_PREFLAGS  the launcher's flags of every run (unset: Open MPI's
#                      --oversubscribe; MPICH's hydra needs none), in MPI_PREFLAGS
# Optional, per suite (E2E or EXT):
#   DSORT_<SUITE>_SEED     seed of the random data (printed by every failure, to rerun with it)
#   DSORT_<SUITE>_KEEP=1   keep the temporary directory of a failed test
#   DSORT_<SUITE>_TIMEOUT  seconds any one command may take (default 60 for e2e, 120 for ext)
# Set by suite_init: N, T (the test's temporary directory, holding $TMPDIR, so that dsort's
# default temp dir is private to the test), DSORT, GEN, VALIDATE.
# Assertions never stop the script: each counts a check in CHECKS and, when it fails, adds to
# FAILS and prints what failed with the last command and the seed; the script ends with
# suite_finish, which exits 1 if anything failed. A test that cannot run here calls skip, which
# exits 77 (SKIP_RETURN_CODE in CMake).

LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# python3 found once: a version manager's shim (pyenv) costs about 0.5 s per start here, and
# the oracle and the --stats queries start python3 many times.
PYTHON3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -x "$PYTHON3" ]; then
    python3() { "$PYTHON3" "$@"; }
fi
# share IDX: does the case of index IDX in its section run at this rank count (N)? Every case
# runs at -n 1, -n 3 and any count but 2 and 4; at -n 2 those of even IDX, at -n 4 those of odd
# (for tests that split their cases between the two, as e2e/lines.sh and ext/smallbudget.sh).
share() {
    case $N in
    2) [ $(($1 % 2)) = 0 ] ;;
    4) [ $(($1 % 2)) = 1 ] ;;
    *) return 0 ;;
    esac
}
FAILS=0
CHECKS=0
LAST_CMD="(none)"
RC=0
ELAPSED_MS=0
RUN_FLAGS=()
# shellcheck disable=SC2206 # words of the flags, on purpose
MPI_PREFLAGS=(${DSORT_MPIEXEC_PREFLAGS---oversubscribe})
TEST_NAME=$(basename "$0" .sh)

die() {
    echo "ERROR: $*" >&2
    exit 2
}

# fail MESSAGE...: record a failure with the last command and the seed (FAIL_FAST=1: exit 1).
fail() {
    FAILS=$((FAILS + 1))
    {
        echo "FAIL: $*"
        [ "$LAST_CMD" = "(none)" ] || echo "  command: $LAST_CMD"
        [ -z "${SEED:-}" ] || echo "  seed:    $SEED"
    } >&2
    [ "${FAIL_FAST:-0}" != 1 ] || exit 1
}

# skip REASON...: this test cannot run here; exit 77 (registered as SKIP_RETURN_CODE).
skip() {
    echo "SKIP: $TEST_NAME: $*"
    exit 77
}

# kto SECS CMD...: the one way a test runs a command under a timeout: SIGTERM after SECS s,
# SIGKILL 5 s later, the status of CMD or 124 (137 after the SIGKILL). GNU timeout signals its
# own process group, which holds mpiexec but not the ranks: both Open MPI (a group per rank)
# and MPICH's hydra (a session per proxy and per rank) move them out, and each launcher ends
# its ranks when it gets SIGTERM. What a SIGKILLed launcher leaves is found by suite_cleanup.
kto() {
    local secs=$1
    shift
    timeout -k 5 "$secs" "$@"
}

# tree_pids PID...: PID and all its descendants, parents first, from one listing of processes.
tree_pids() {
    ps -e -o pid=,ppid= | awk -v roots="$*" '
        { kids[$2] = kids[$2] " " $1 }
        END {
            n = split(roots, q, " ")
            for (i = 1; i <= n; i++) {
                printf "%s ", q[i]
                m = split(kids[q[i]], k, " ")
                for (j = 1; j <= m; j++)
                    q[++n] = k[j]
            }
        }'
}

# kill_ranks SIG PID...: send SIG to every dsort process below PID (the job's ranks) at once.
# A test that kills a job's ranks finds them this way, never as the launcher's children
# (pkill -P): under MPICH those are hydra's proxies, and a proxy killed by SIGKILL leaves its
# ranks running (orphans, in sessions of their own). The launcher lives, sees its ranks die and
# cleans up after itself (Open MPI's session directory in $TMPDIR).
kill_ranks() {
    local sig=$1 p ranks=()
    shift
    for p in $(tree_pids "$@"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" != dsort ] || ranks+=("$p")
    done
    [ ${#ranks[@]} -eq 0 ] || kill -"$sig" "${ranks[@]}" 2>/dev/null
}

# kill_tree SIG PID...: send SIG to PID and to all its descendants at once (listed before the
# first is signalled): what suite_cleanup does to the jobs a test left running.
kill_tree() {
    local sig=$1
    shift
    # shellcheck disable=SC2046 # the pids, one word each
    kill -"$sig" $(tree_pids "$@") 2>/dev/null
}

# pass: count a check that succeeded.
pass() {
    CHECKS=$((CHECKS + 1))
}

# check STATUS MESSAGE: count a check; fail with MESSAGE unless STATUS is 0.
check() {
    CHECKS=$((CHECKS + 1))
    [ "$1" -eq 0 ] || fail "$2"
}

show_output() {
    {
        echo "  exit status: $RC"
        echo "  --- stdout (first 20 lines):"
        head -n 20 "$T/stdout" | sed 's/^/  | /'
        echo "  --- stderr (first 20 lines):"
        head -n 20 "$T/stderr" | sed 's/^/  | /'
    } >&2
}

# run N CMD...: run CMD under mpiexec with N ranks and a timeout. Sets RC, ELAPSED_MS and
# LAST_CMD; stdout and stderr go to $T/stdout and $T/stderr. Never fails by itself.
run() {
    local n=$1 secs=${!RUN_TIMEOUT_VAR}
    shift
    LAST_CMD="$MPIEXEC ${RUN_FLAGS[*]} ${MPI_PREFLAGS[*]} -n $n $(printf '%q ' "$@")"
    local t0
    t0=$(date +%s%N)
    kto "$secs" "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$n" "$@" \
        </dev/null >"$T/stdout" 2>"$T/stderr"
    RC=$?
    ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        echo "note: timed out after ${secs}s: $LAST_CMD" >&2
    fi
    return 0
}

# expect_rc WANT N CMD...: run and check the exit status; show the output if it differs.
# Returns 0 when the status was as expected.
expect_rc() {
    local want=$1
    shift
    run "$@"
    CHECKS=$((CHECKS + 1))
    if [ "$RC" -ne "$want" ]; then
        fail "exit status $RC, expected $want"
        show_output
        return 1
    fi
    return 0
}

# ok N CMD...: run and expect exit status 0.
ok() {
    expect_rc 0 "$@"
}

# ok_status: check that the last run exited 0.
ok_status() {
    CHECKS=$((CHECKS + 1))
    if [ "$RC" -ne 0 ]; then
        fail "exit status $RC, expected 0"
        show_output
        return 1
    fi
    return 0
}

# eq WHAT EXPECTED ACTUAL
eq() {
    CHECKS=$((CHECKS + 1))
    if [ "$2" != "$3" ]; then
        fail "$1: expected '$2', got '$3'"
        return 1
    fi
    return 0
}

# contains WHAT FILE REGEX: FILE has a line matching the extended regex.
contains() {
    CHECKS=$((CHECKS + 1))
    if ! grep -Eq -- "$3" "$2"; then
        fail "$1: no line matches /$3/ in:"
        sed 's/^/  | /' "$2" | head -n 20 >&2
        return 1
    fi
    return 0
}

# cond WHAT PYTHON-EXPRESSION: a numeric condition, evaluated by python3 (floats allowed).
cond() {
    CHECKS=$((CHECKS + 1))
    if ! python3 -c "import sys; sys.exit(0 if ($2) else 1)" 2>/dev/null; then
        fail "$1: ($2) does not hold"
        return 1
    fi
    return 0
}

# same_file WHAT RECSIZE EXPECTED ACTUAL: byte-identical files; else say where they differ.
same_file() {
    CHECKS=$((CHECKS + 1))
    if [ ! -f "$4" ]; then
        fail "$1: output $4 does not exist"
        return 1
    fi
    if ! cmp -s "$3" "$4"; then
        fail "$1: output differs from the oracle's $(basename "$3"): $(py firstdiff "$2" "$3" "$4")"
        return 1
    fi
    return 0
}
same_records() {
    same_file "$@"
}

# empty_dir WHAT DIR: DIR holds nothing, hidden files included.
empty_dir() {
    eq "$1 ($2)" "" "$(ls -A "$2" 2>&1 | tr '\n' ' ')"
}

# gen N OPTS... COUNT FILE: dsort-gen -c at N ranks; sets GEN_SUM to the checksum it printed.
gen() {
    local n=$1
    shift
    GEN_SUM=""
    ok "$n" "$GEN" -c "$@" || return 1
    GEN_SUM=$(grep -Eo '^[0-9a-f]+$' "$T/stderr" | tail -n 1)
    [ -n "$GEN_SUM" ] || fail "dsort-gen -c printed no checksum"
}

# py CMD ARGS...: the oracle (tests/lib/oracle.py).
py() {
    python3 "$LIB_DIR/oracle.py" "$@"
}

# ---- The suites (SUITE set): settings, set-up, clean-up, end ----

if [ -n "${SUITE:-}" ]; then
    set -u -o pipefail
    SUITE_UP=$(echo "$SUITE" | tr '[:lower:]' '[:upper:]')
    # Open MPI's settings (MPICH's hydra needs none: it runs as root, allows more ranks than
    # cores, and its mpiexec-compat, the launcher of an MPICH build's tests, takes Open MPI's
    # options).
    if [ "${DSORT_MPI:-openmpi}" = openmpi ]; then
        # Open MPI selects the ob1 PML here anyway (Debian's openmpi-mca-params.conf excludes
        # ucx), but probing the other PMLs costs about 0.2 s per MPI_Init; naming ob1 makes the
        # suite 2-3x faster, and keeps the MPI traffic out of /proc/self/io (shared memory, no
        # sockets). Set OMPI_MCA_pml yourself to test another one.
        export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
        # When a rank exits non-zero, mpirun sends the others SIGTERM and then sleeps
        # odls_base_sigkill_timeout (1 s) before SIGKILL, even when they have all exited: every
        # expected exit 1 or 2 costs 2 s. FAST_KILL (see the top) drops the wait.
        [ "$SUITE" = e2e ] && FAST_KILL=${FAST_KILL:-1}
        if [ "${FAST_KILL:-0}" = 1 ]; then
            export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
        fi
        # -q: no banner of Open MPI's own on a failed rank (hydra has no such option); the ext
        # tests check stderr line by line.
        [ "$SUITE" != ext ] || RUN_FLAGS=(-q)
    fi
    MPIEXEC=${DSORT_MPIEXEC:-}
    [ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
    v=DSORT_${SUITE_UP}_TIMEOUT
    t=60
    [ "$SUITE" != ext ] || t=120
    printf -v "${SUITE_UP}_TIMEOUT" '%s' "${!v:-$t}"
    RUN_TIMEOUT_VAR=${SUITE_UP}_TIMEOUT
    v=DSORT_${SUITE_UP}_SEED
    SEED=${!v:-$(((RANDOM << 15) | RANDOM))}
    SUITE_KEEP=DSORT_${SUITE_UP}_KEEP
    unset v t
    T=""
    MOUNTS=()
fi

# suite_init N: check the environment, make the temporary directory $T (with $TMPDIR inside
# it: dsort's temp files, -T's default, go there, so that tests running at the same time do not
# see each other's and a test can check that none are left behind), print the parameters.
# The e2e tests also need DSORT_REFERENCE_DIR (gensort reference files and their README.md), REF.
suite_init() {
    N=${1:-}
    [[ "$N" =~ ^[1-9][0-9]*$ ]] || die "usage: $0 NRANKS"
    [ -n "${DSORT_BIN_DIR:-}" ] || die "DSORT_BIN_DIR is not set (run through ctest)"
    DSORT=$DSORT_BIN_DIR/dsort
    GEN=$DSORT_BIN_DIR/dsort-gen
    VALIDATE=$DSORT_BIN_DIR/dsort-validate
    local b
    for b in "$DSORT" "$GEN" "$VALIDATE"; do
        [ -x "$b" ] || die "$b is missing: build first"
    done
    command -v python3 >/dev/null || die "the $SUITE tests need python3 (apt-get install python3)"
    command -v "$MPIEXEC" >/dev/null || die "no $MPIEXEC"
    if [ "$SUITE" = e2e ]; then
        REF=${DSORT_REFERENCE_DIR:-}
        [ -f "$REF/README.md" ] || die "DSORT_REFERENCE_DIR ($REF) holds no README.md of reference files"
    fi
    T=$(mktemp -d "${TMPDIR:-/tmp}/dsort-$SUITE-$TEST_NAME-n$N.XXXXXX") || die "mktemp failed"
    trap suite_cleanup EXIT
    trap 'exit 130' INT TERM
    export TMPDIR=$T/tmp
    mkdir "$TMPDIR"
    echo "$SUITE $TEST_NAME at -n $N, seed $SEED (rerun: DSORT_${SUITE_UP}_SEED=$SEED), tmp $T"
}

# suite_cleanup: on exit, end what the test left running (its background jobs with all their
# processes, then any dsort process working in $T: all started by this test, found by their own
# ids), unmount its tmpfs mounts and remove $T (kept after a failure with DSORT_<SUITE>_KEEP=1).
suite_cleanup() {
    local m left jobs_left
    jobs_left=$(jobs -pr)
    # shellcheck disable=SC2086 # the pids, one word each
    [ -z "$jobs_left" ] || kill_tree TERM $jobs_left
    if [ -n "$T" ]; then
        left=$(dsort_procs "$T")
        if [ -n "$left" ]; then
            sleep 2
            left=$(dsort_procs "$T")
            # shellcheck disable=SC2086
            [ -n "$left" ] && kill -KILL $left 2>/dev/null
        fi
    fi
    for m in "${MOUNTS[@]}"; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    [ -n "$T" ] && [ -d "$T" ] || return 0
    if [ "$FAILS" -gt 0 ] && [ "${!SUITE_KEEP:-0}" = 1 ]; then
        echo "kept $T"
        return 0
    fi
    chmod -R u+rwx "$T" 2>/dev/null
    rm -rf "$T"
}

# suite_finish: the verdict; exit 1 if a check failed, else 0.
suite_finish() {
    if [ "$FAILS" -gt 0 ]; then
        echo "$TEST_NAME -n $N: $FAILS of $CHECKS checks FAILED (seed $SEED)"
        [ "${!SUITE_KEEP:-0}" = 1 ] || echo "(set $SUITE_KEEP=1 to keep $T)"
        exit 1
    fi
    echo "$TEST_NAME -n $N: all $CHECKS checks passed"
    exit 0
}

# mount_tmpfs DIR SIZE: mount a tmpfs of SIZE on DIR (made if needed), unmounted on exit.
# Returns non-zero, with the reason in MOUNT_WHY, when it cannot.
mount_tmpfs() {
    MOUNT_WHY=""
    mkdir -p "$1" || {
        MOUNT_WHY="cannot make $1"
        return 1
    }
    if [ "$(id -u)" != 0 ]; then
        MOUNT_WHY="cannot mount a tmpfs: not root (uid $(id -u))"
        return 1
    fi
    local err
    if ! err=$(mount -t tmpfs -o "size=$2,mode=1777" tmpfs "$1" 2>&1); then
        MOUNT_WHY="cannot mount a tmpfs on $1: $err"
        return 1
    fi
    MOUNTS+=("$1")
    return 0
}

# dsort_procs PATTERN: PIDs of dsort processes whose command line contains PATTERN (a path
# unique to the test), mpirun excluded.
dsort_procs() {
    pgrep -f -- "$1" | while read -r p; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dsort ] && echo "$p"
    done
}

# oracle_flags DSORT_OPTIONS...: the python oracle's flags (r, s, u) for dsort's options.
oracle_flags() {
    local f="" o
    for o in "$@"; do
        case $o in
        -r | --reverse) f+=r ;;
        -s | --stable) f+=s ;;
        -u | --unique) f+=u ;;
        esac
    done
    echo "${f:--}"
}

# run_ulimit N LIMIT CMD...: like run, with each rank under `ulimit -n LIMIT` (mpirun itself
# needs more descriptors than that, so the limit is set in the rank, not around mpirun).
run_ulimit() {
    local n=$1 lim=$2
    shift 2
    run "$n" sh -c "ulimit -n $lim && exec \"\$@\"" ulimit-n-"$lim" "$@"
}

# validate N "OPTS" FILE RECORDS CHECKSUM: dsort-validate OPTS FILE accepts the order and
# reports RECORDS and CHECKSUM (either may be - to skip it).
validate() {
    local n=$1 opts=$2 f=$3 recs=$4 sum=$5
    # shellcheck disable=SC2086
    ok "$n" "$VALIDATE" $opts "$f" || return 1
    contains "dsort-validate $opts: SUCCESS" "$T/stdout" '^SUCCESS' || return 1
    [ "$recs" = - ] || eq "dsort-validate: record count" "$recs" \
        "$(sed -n 's/^Records: //p' "$T/stdout")"
    [ "$sum" = - ] || eq "dsort-validate: checksum" "$sum" "$(sed -n 's/^Checksum: //p' "$T/stdout")"
}

# gnu_sort "DSORT_OPTS" IN OUT: what dsort with DSORT_OPTS must write for gensort ASCII
# records (the issue's oracle). Default order: whole lines (GNU sort's last resort compares
# whole lines, which is dsort's default tie order); -s or -u: the 10-byte key only, stable.
gnu_sort() {
    local opts=" $1 " a=()
    [[ "$opts" == *" -r "* ]] && a+=(-r)
    if [[ "$opts" == *" -s "* || "$opts" == *" -u "* ]]; then
        # shellcheck disable=SC2054
        a+=(-s -t "$(printf '\001')" -k1.1,1.10)
        [[ "$opts" == *" -u "* ]] && a+=(-u)
    fi
    LC_ALL=C sort -S 64M "${a[@]}" "$2" >"$3"
}

# validate_flags DSORT_OPTIONS...: the dsort-validate options matching the sort options.
validate_flags() {
    local f="" o
    for o in "$@"; do
        case $o in
        -r | -u) f+=" $o" ;;
        esac
    done
    echo "$f"
}

# st FILE CMD ARGS...: query a --stats JSON file (see tests/lib/oracle.py: st_*).
st() {
    local f=$1 c=$2
    shift 2
    py "st_$c" "$f" "$@"
}
