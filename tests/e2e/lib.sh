# shellcheck shell=bash disable=SC2034 # variables set here are read by the scripts sourcing it
# Shared helpers of the end-to-end tests. Each tests/e2e/NAME.sh sources this file and takes the
# rank count as its first argument. The oracles here are independent of the code under test:
# python3's zlib.crc32 for checksums, a python3 stable sort or GNU sort for the order.
#
# Environment (set by ctest from DSORT_TEST_ENV in tests/CMakeLists.txt):
#   DSORT_BIN_DIR        where dsort, dsort-gen and dsort-validate are
#   DSORT_MPIEXEC        mpiexec to use (default: mpiexec)
#   DSORT_REFERENCE_DIR  gensort reference files and their README.md
# Optional:
#   DSORT_E2E_SEED       seed of the random data (printed by every failure, to rerun with it)
#   DSORT_E2E_KEEP=1     keep the temporary directory of a failed test
#   DSORT_E2E_TIMEOUT    seconds any one command may take (default 60)
#   DSORT_E2E_TIES=position  expect equal keys in input order without -s too (see py sort)
#
# Assertions do not stop the script: each prints what failed, the command and the seed, and the
# script ends with e2e_finish, which exits 1 if anything failed.

set -u -o pipefail

# Open MPI's settings (DSORT_MPI, from tests/CMakeLists.txt; unset: Open MPI). MPICH's hydra
# needs none: it runs as root, allows more ranks than cores, and its mpiexec-compat (the
# launcher of an MPICH build's tests) takes Open MPI's options.
if [ "${DSORT_MPI:-openmpi}" = openmpi ]; then
    # Open MPI selects the ob1 PML here anyway (Debian's openmpi-mca-params.conf excludes ucx),
    # but probing the other PMLs costs about 0.2 s per MPI_Init; naming ob1 makes the suite 2-3x
    # faster. Set OMPI_MCA_pml yourself to test another one.
    export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
    # When a rank exits with a non-zero status, mpirun sends the others SIGTERM and then sleeps
    # odls_base_sigkill_timeout (1 s) before SIGKILL, even when they have all exited: every
    # expected exit 1 or 2 costs 2 s. Scripts that check what a failed run leaves behind set
    # E2E_REAL_KILL=1 before sourcing this file to keep the default that users get.
    if [ "${E2E_REAL_KILL:-0}" != 1 ]; then
        export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
    fi
fi

E2E_NAME=$(basename "$0" .sh)
MPIEXEC=${DSORT_MPIEXEC:-}
[ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
E2E_TIMEOUT=${DSORT_E2E_TIMEOUT:-60}
SEED=${DSORT_E2E_SEED:-$(((RANDOM << 15) | RANDOM))}
T=""
# The assertions, run, gen and py (the oracle, tests/lib/oracle.py) are tests/lib/check.sh's.
# shellcheck source=../lib/check.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
RUN_TIMEOUT_VAR=E2E_TIMEOUT

# e2e_init N: check the environment, make the temporary directory $T, print the parameters.
e2e_init() {
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
    command -v python3 >/dev/null || die "the e2e tests need python3 (apt-get install python3)"
    command -v "$MPIEXEC" >/dev/null || die "no $MPIEXEC"
    REF=${DSORT_REFERENCE_DIR:-}
    [ -f "$REF/README.md" ] || die "DSORT_REFERENCE_DIR ($REF) holds no README.md of reference files"
    T=$(mktemp -d "${TMPDIR:-/tmp}/dsort-e2e-$E2E_NAME-n$N.XXXXXX") || die "mktemp failed"
    trap e2e_cleanup EXIT
    # dsort's temporary files (-T defaults to $TMPDIR) go here, so that tests running at the
    # same time do not see each other's and a test can check that none are left behind.
    export TMPDIR=$T/tmp
    mkdir "$TMPDIR"
    trap 'exit 130' INT TERM
    echo "e2e $E2E_NAME at -n $N, seed $SEED (rerun: DSORT_E2E_SEED=$SEED), tmp $T"
}

e2e_cleanup() {
    [ -n "$T" ] && [ -d "$T" ] || return 0
    if [ "$FAILS" -gt 0 ] && [ "${DSORT_E2E_KEEP:-0}" = 1 ]; then
        echo "kept $T"
        return 0
    fi
    chmod -R u+rwx "$T" 2>/dev/null
    rm -rf "$T"
}

e2e_finish() {
    if [ "$FAILS" -gt 0 ]; then
        echo "$E2E_NAME -n $N: $FAILS of $CHECKS checks FAILED (seed $SEED)"
        [ "${DSORT_E2E_KEEP:-0}" = 1 ] || echo "(set DSORT_E2E_KEEP=1 to keep $T)"
        exit 1
    fi
    echo "$E2E_NAME -n $N: all $CHECKS checks passed"
    exit 0
}

# ties_by_position: are equal keys expected in input order without -s (DSORT_E2E_TIES)?
ties_by_position() {
    [ "${DSORT_E2E_TIES:-record}" = position ]
}

# ref_checksum FILE: the checksum of a reference file, from $DSORT_REFERENCE_DIR/README.md.
ref_checksum() {
    awk -F'|' -v f="$1" '{ g = $2; gsub(/ /, "", g); if (g == f) { c = $5; gsub(/[ `]/, "", c); print c; exit } }' \
        "$REF/README.md"
}

# sums_equal WHAT RECSIZE "RECORDS CHECKSUM" FILE...: the record count and checksum of the
# FILEs (computed by python's zlib.crc32) equal the expected figures.
sums_equal() {
    local what=$1 size=$2 want=$3
    shift 3
    eq "$what: records and checksum (python zlib.crc32 sum)" "$want" "$(py sum "$size" "$@")"
}

# fmt_args FORMAT: "size keyoff keylen" of a --format value.
fmt_args() {
    case $1 in
    gensort) echo "100 0 10" ;;
    fixed:*) echo "$1" | awk -F: '{ print $2, $3, $4 }' ;;
    *) die "fmt_args: $1" ;;
    esac
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

# sort_check N FORMAT "OPTIONS" INPUT...: run dsort with OPTIONS and -o, compare the output
# byte for byte with the python oracle's (a permutation of the input records, so this also
# checks the count and the checksum), and run dsort-validate with the matching options. The
# output is left in $T/sorted.out, the dsort command in $SORT_CMD. sort_cmp: the same without
# dsort-validate.
sort_check() {
    SORT_VALIDATE=1 sort_run "$@"
}

sort_cmp() {
    SORT_VALIDATE=0 sort_run "$@"
}

sort_run() {
    local n=$1 format=$2 opts=$3
    shift 3
    local size keyoff keylen flags vopts=()
    read -r size keyoff keylen <<<"$(fmt_args "$format")"
    # shellcheck disable=SC2086
    flags=$(oracle_flags $opts)
    rm -f "$T/sorted.out" "$T/oracle.out"
    py sort "$T/oracle.out" "$size" "$keyoff" "$keylen" "$flags" "$@" ||
        die "python oracle failed on $*"
    # shellcheck disable=SC2086
    ok "$n" "$DSORT" --format "$format" $opts -o "$T/sorted.out" "$@" || return 1
    SORT_CMD=$LAST_CMD
    eq "files left in \$TMPDIR ($TMPDIR) after dsort" "" "$(ls -A "$TMPDIR")"
    same_records "dsort $opts --format $format" "$size" "$T/oracle.out" "$T/sorted.out" || return 1
    [ "$SORT_VALIDATE" = 1 ] || return 0
    [[ "$flags" == *r* ]] && vopts+=(-r)
    [[ "$flags" == *u* ]] && vopts+=(-u)
    ok "$n" "$VALIDATE" --format "$format" "${vopts[@]}" "$T/sorted.out" || return 1
    contains "dsort-validate says SUCCESS" "$T/stdout" '^SUCCESS' || return 1
}

# dir_state DIR: a listing of DIR (names, sizes, modes), to check that a failed run left
# nothing behind, hidden files included.
dir_state() {
    (cd "$1" && find . -mindepth 1 -maxdepth 2 -printf '%p %s %m %y\n' | LC_ALL=C sort)
}

# file_state FILE...: content hash, size, mode and mtime of each FILE.
file_state() {
    local f
    for f in "$@"; do
        if [ -f "$f" ]; then
            printf '%s %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$(stat -c '%s %a %Y.%y' "$f")"
        else
            stat -c '%n %F %a' "$f" 2>&1
        fi
    done
}

