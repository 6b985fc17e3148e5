# shellcheck shell=bash disable=SC2034
# The assertions and the mpiexec runner that every shell test library shares (tests/e2e/lib.sh,
# tests/ext/extlib.sh, and through it tests/faults/faultlib.sh; tests/cluster/lib.sh takes the
# assertions and redefines fail, contains and gen). Sourced by those libraries, not by tests. The oracle is tests/lib/oracle.py (python3, standard library only), run by py.
#
# The sourcing library sets, before the tests run:
#   MPIEXEC            the mpiexec to use
#   T                  the test's temporary directory (stdout and stderr of run go there)
#   SEED               the seed that every failure prints
#   RUN_TIMEOUT_VAR    the name of the variable that holds the seconds one run may take (its
#                      value is read at each run, so that a script may change it)
#   RUN_FLAGS          extra mpiexec flags (an array; for example (-q))
#   GEN                dsort-gen (for gen)
# From the environment (tests/CMakeLists.txt): DSORT_MPI (openmpi, mpich or other) and
# DSORT_MPIEXEC_PREFLAGS, the launcher's flags of every run (unset: Open MPI's --oversubscribe;
# MPICH's hydra needs none).
# Assertions never stop the script: each counts a check in CHECKS and, when it fails, adds to
# FAILS and prints what failed with the last command and the seed.

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

die() {
    echo "ERROR: $*" >&2
    exit 2
}

# fail MESSAGE...: record a failure with the last command and the seed.
fail() {
    FAILS=$((FAILS + 1))
    {
        echo "FAIL: $*"
        echo "  command: $LAST_CMD"
        echo "  seed:    $SEED"
    } >&2
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
    timeout -k 5 "$secs" "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$n" "$@" \
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
