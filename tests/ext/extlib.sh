# shellcheck shell=bash disable=SC2034
# (SC2034: the variables set here are used by the scripts that source this file.)
# Shared helpers of the out-of-core tests (issue 3, "Data larger than memory"). Each
# tests/ext/NAME.sh sources this file and takes the rank count as its first argument. The
# oracles are independent of the code under test: GNU sort on ASCII data, python3 (zlib.crc32
# sums, a stable sort) elsewhere, /proc and /usr/bin/time for resources.
#
# Environment (set by ctest from DSORT_TEST_ENV in tests/CMakeLists.txt):
#   DSORT_BIN_DIR   where dsort, dsort-gen and dsort-validate are
#   DSORT_MPIEXEC   mpiexec to use (default: mpiexec)
# Optional:
#   DSORT_EXT_SEED     seed of the random data (printed by every failure, to rerun with it)
#   DSORT_EXT_KEEP=1   keep the temporary directory of a failed test
#   DSORT_EXT_TIMEOUT  seconds any one command may take (default 120)
#
# Assertions do not stop the script: each prints what failed, the command and the seed; the
# script ends with ext_finish, which exits 1 if anything failed. A test that cannot run here
# (no mount permission, say) calls ext_skip, which exits 77 (SKIP_RETURN_CODE in CMake).

set -u -o pipefail

# Open MPI's settings (DSORT_MPI, from tests/CMakeLists.txt; unset: Open MPI); MPICH's hydra
# needs none (see tests/e2e/lib.sh).
if [ "${DSORT_MPI:-openmpi}" = openmpi ]; then
    # ob1 is what Open MPI picks here anyway; naming it skips probing the other PMLs (faster
    # MPI_Init). It also keeps the MPI traffic out of /proc/self/io (shared memory, no sockets).
    export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
    # A script whose runs all succeed may set EXT_FAST_KILL=1 before sourcing: mpirun then does
    # not wait 1 s before SIGKILL after a rank exits non-zero. Scripts that check what a failed
    # or interrupted run leaves behind keep Open MPI's default, which is what users get.
    if [ "${EXT_FAST_KILL:-0}" = 1 ]; then
        export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
    fi
fi

EXT_NAME=$(basename "$0" .sh)
MPIEXEC=${DSORT_MPIEXEC:-}
[ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
EXT_TIMEOUT=${DSORT_EXT_TIMEOUT:-120}
SEED=${DSORT_EXT_SEED:-$(((RANDOM << 15) | RANDOM))}
T=""
# The assertions, run, gen and py (the oracle, tests/lib/oracle.py) are tests/lib/check.sh's.
# shellcheck source=../lib/check.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
RUN_TIMEOUT_VAR=EXT_TIMEOUT
# Open MPI's -q (no banner of its own on a failed rank); hydra has no such option.
RUN_FLAGS=()
if [ "${DSORT_MPI:-openmpi}" = openmpi ]; then
    RUN_FLAGS=(-q)
fi
EXT_MOUNTS=()

# ext_init N: check the environment, make the temporary directory $T (with $TMPDIR inside
# it, so that dsort's default temp dir is private to the test), print the parameters.
ext_init() {
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
    command -v python3 >/dev/null || die "the ext tests need python3 (apt-get install python3)"
    command -v "$MPIEXEC" >/dev/null || die "no $MPIEXEC"
    T=$(mktemp -d "${TMPDIR:-/tmp}/dsort-ext-$EXT_NAME-n$N.XXXXXX") || die "mktemp failed"
    trap ext_cleanup EXIT
    trap 'exit 130' INT TERM
    export TMPDIR=$T/tmp
    mkdir "$TMPDIR"
    echo "ext $EXT_NAME at -n $N, seed $SEED (rerun: DSORT_EXT_SEED=$SEED), tmp $T"
}

ext_cleanup() {
    local p m left
    # Background jobs of this script still running (a failed test may leave one), then any
    # dsort process working in $T: all started by this test, found by their own ids.
    for p in $(jobs -pr); do
        kill -TERM "$p" 2>/dev/null
    done
    if [ -n "$T" ]; then
        left=$(dsort_procs "$T")
        if [ -n "$left" ]; then
            sleep 2
            left=$(dsort_procs "$T")
            # shellcheck disable=SC2086
            [ -n "$left" ] && kill -KILL $left 2>/dev/null
        fi
    fi
    for m in "${EXT_MOUNTS[@]}"; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    [ -n "$T" ] && [ -d "$T" ] || return 0
    if [ "$FAILS" -gt 0 ] && [ "${DSORT_EXT_KEEP:-0}" = 1 ]; then
        echo "kept $T"
        return 0
    fi
    chmod -R u+rwx "$T" 2>/dev/null
    rm -rf "$T"
}

ext_finish() {
    if [ "$FAILS" -gt 0 ]; then
        echo "$EXT_NAME -n $N: $FAILS of $CHECKS checks FAILED (seed $SEED)"
        [ "${DSORT_EXT_KEEP:-0}" = 1 ] || echo "(set DSORT_EXT_KEEP=1 to keep $T)"
        exit 1
    fi
    echo "$EXT_NAME -n $N: all $CHECKS checks passed"
    exit 0
}

# ext_skip REASON: this test cannot run here; exit 77 (registered as SKIP_RETURN_CODE).
ext_skip() {
    echo "SKIP: $EXT_NAME: $*"
    exit 77
}

# ext_mount_tmpfs DIR SIZE: mount a tmpfs of SIZE on DIR (made if needed), unmounted on exit.
# Returns non-zero, with the reason in EXT_WHY, when it cannot.
ext_mount_tmpfs() {
    EXT_WHY=""
    mkdir -p "$1" || {
        EXT_WHY="cannot make $1"
        return 1
    }
    if [ "$(id -u)" != 0 ]; then
        EXT_WHY="cannot mount a tmpfs: not root (uid $(id -u))"
        return 1
    fi
    local err
    if ! err=$(mount -t tmpfs -o "size=$2,mode=1777" tmpfs "$1" 2>&1); then
        EXT_WHY="cannot mount a tmpfs on $1: $err"
        return 1
    fi
    EXT_MOUNTS+=("$1")
    return 0
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

# oracle_flags DSORT_OPTIONS...: the python oracle's flags (r, s, u).
oracle_flags() {
    local f="" o
    for o in "$@"; do
        case $o in
        -r) f+=r ;;
        -s) f+=s ;;
        -u) f+=u ;;
        esac
    done
    echo "${f:--}"
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

# dsort_procs PATTERN: PIDs of dsort processes whose command line contains PATTERN (a path
# unique to the test), mpirun excluded.
dsort_procs() {
    pgrep -f -- "$1" | while read -r p; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dsort ] && echo "$p"
    done
}
