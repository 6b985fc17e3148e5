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

# ob1 is what Open MPI picks here anyway; naming it skips probing the other PMLs (faster
# MPI_Init). It also keeps the MPI traffic out of /proc/self/io (shared memory, no sockets).
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
# A script whose runs all succeed may set EXT_FAST_KILL=1 before sourcing: mpirun then does
# not wait 1 s before SIGKILL after a rank exits non-zero. Scripts that check what a failed or
# interrupted run leaves behind keep Open MPI's default, which is what users get.
if [ "${EXT_FAST_KILL:-0}" = 1 ]; then
    export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
fi

EXT_NAME=$(basename "$0" .sh)
MPIEXEC=${DSORT_MPIEXEC:-}
[ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
EXT_TIMEOUT=${DSORT_EXT_TIMEOUT:-120}
SEED=${DSORT_EXT_SEED:-$(((RANDOM << 15) | RANDOM))}
FAILS=0
CHECKS=0
LAST_CMD="(none)"
RC=0
ELAPSED_MS=0
T=""
EXT_MOUNTS=()

die() {
    echo "ERROR: $*" >&2
    exit 2
}

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
    ext_write_py
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

fail() {
    FAILS=$((FAILS + 1))
    {
        echo "FAIL: $*"
        echo "  command: $LAST_CMD"
        echo "  seed:    $SEED"
    } >&2
}

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

# run N CMD...: CMD under mpiexec with N ranks and a timeout; sets RC, ELAPSED_MS, LAST_CMD;
# stdout and stderr go to $T/stdout and $T/stderr. Never fails by itself.
run() {
    local n=$1
    shift
    LAST_CMD="$MPIEXEC -q --oversubscribe -n $n $(printf '%q ' "$@")"
    local t0
    t0=$(date +%s%N)
    timeout -k 5 "$EXT_TIMEOUT" "$MPIEXEC" -q --oversubscribe -n "$n" "$@" \
        </dev/null >"$T/stdout" 2>"$T/stderr"
    RC=$?
    ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        echo "note: timed out after ${EXT_TIMEOUT}s: $LAST_CMD" >&2
    fi
    return 0
}

# run_ulimit N LIMIT CMD...: like run, with each rank under `ulimit -n LIMIT` (mpirun itself
# needs more descriptors than that, so the limit is set in the rank, not around mpirun).
run_ulimit() {
    local n=$1 lim=$2
    shift 2
    run "$n" sh -c "ulimit -n $lim && exec \"\$@\"" ulimit-n-"$lim" "$@"
}

# expect_rc WANT N CMD...: run and check the exit status; returns 0 when it was WANT.
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

# same_file WHAT RECSIZE EXPECTED ACTUAL: byte-identical files, else say where they differ.
same_file() {
    CHECKS=$((CHECKS + 1))
    if [ ! -f "$4" ]; then
        fail "$1: output $4 does not exist"
        return 1
    fi
    if ! cmp -s "$3" "$4"; then
        fail "$1: output differs from the oracle's: $(py firstdiff "$2" "$3" "$4")"
        return 1
    fi
    return 0
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

# st FILE CMD ARGS...: query a --stats JSON file (see ext.py: st_*).
st() {
    local f=$1 c=$2
    shift 2
    python3 "$T/ext.py" "st_$c" "$f" "$@"
}

py() {
    python3 "$T/ext.py" "$@"
}

# dsort_procs PATTERN: PIDs of dsort processes whose command line contains PATTERN (a path
# unique to the test), mpirun excluded.
dsort_procs() {
    pgrep -f -- "$1" | while read -r p; do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dsort ] && echo "$p"
    done
}

ext_write_py() {
    cat >"$T/ext.py" <<'PYEOF'
"""Independent oracle and figures of the dsort out-of-core tests (python3 standard library)."""
import json, random, sys, zlib

def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(2)

def load(paths, size):
    recs = []
    for p in paths:
        with open(p, 'rb') as f:
            data = f.read()
        if len(data) % size:
            die(f"{p}: {len(data)} bytes is not a whole number of {size}-byte records")
        recs.extend(data[i:i + size] for i in range(0, len(data), size))
    return recs

def crcsum(recs):
    return format(sum(zlib.crc32(r) for r in recs) % (1 << 128), 'x')

def cmd_sum(size, *paths):
    """'RECORDS CHECKSUM' (valsort's checksum: the sum of the crc32 of the records)."""
    recs = load(paths, int(size))
    print(len(recs), crcsum(recs))

def cmd_sort(out, size, keyoff, keylen, flags, *paths):
    """The records as dsort must order them: keys as unsigned bytes (descending with r); ties
    by the whole record (reversed too with r) unless s or u, which keep input order; u keeps
    the first record in input order of each key."""
    size, ko, kl = int(size), int(keyoff), int(keylen)
    recs = load(paths, size)
    key = lambda r: r[ko:ko + kl]
    rev = 'r' in flags
    if 'u' in flags:
        seen, kept = set(), []
        for r in recs:
            if key(r) not in seen:
                seen.add(key(r))
                kept.append(r)
        recs = sorted(kept, key=key, reverse=rev)
    elif 's' in flags:
        recs = sorted(recs, key=key, reverse=rev)  # stable, also with reverse=True
    else:
        recs = sorted(recs, key=lambda r: (key(r), r), reverse=rev)
    with open(out, 'wb') as f:
        f.write(b''.join(recs))

def cmd_mk(out, size, keyoff, keylen, count, nkeys, seed):
    """count random records; keys drawn from a pool of nkeys keys (0: random keys). The first
    non-key bytes hold the record's index (big-endian), so that the whole-record order of
    equal keys differs from their input order."""
    size, ko, kl, count, nkeys = int(size), int(keyoff), int(keylen), int(count), int(nkeys)
    rng = random.Random(int(seed))
    pool = [rng.randbytes(kl) for _ in range(nkeys)]
    free = [j for j in range(size) if not ko <= j < ko + kl]
    chunks = []
    for i in range(count):
        r = bytearray(rng.randbytes(size))
        idx = (i * 2654435761 % (1 << 32)).to_bytes(4, 'big')  # scrambled index
        for j, b in zip(free, idx):
            r[j] = b
        r[ko:ko + kl] = rng.choice(pool) if nkeys else rng.randbytes(kl)
        chunks.append(bytes(r))
    with open(out, 'wb') as f:
        f.write(b''.join(chunks))

def cmd_setkey(src, out, key):
    """Copy gensort records (100 bytes) with every key replaced by key (10 characters)."""
    k = key.encode()
    assert len(k) == 10
    data = bytearray(open(src, 'rb').read())
    for i in range(0, len(data), 100):
        data[i:i + 10] = k
    open(out, 'wb').write(data)

def cmd_firstdiff(size, a, b):
    size = int(size)
    x, y = open(a, 'rb').read(), open(b, 'rb').read()
    msg = f"expected {len(x)} bytes ({len(x) / size:g} records), got {len(y)} bytes ({len(y) / size:g} records)"
    for i in range(0, max(len(x), len(y)), size):
        if x[i:i + size] != y[i:i + size]:
            msg += (f"; first difference at record {i // size}: expected "
                    f"{x[i:i + size][:40]!r}..., got {y[i:i + size][:40]!r}...")
            break
    print(msg)

def stats(path):
    with open(path) as f:
        return json.load(f)

def cmd_st_top(path, field):
    """A top-level field."""
    v = stats(path)[field]
    print(json.dumps(v) if not isinstance(v, str) else v)

def cmd_st_ranks(path, field):
    """A per-rank field, one value per rank, space-separated."""
    print(' '.join(str(r[field]) for r in stats(path)['per_rank']))

def cmd_st_sum(path, field):
    print(sum(r[field] for r in stats(path)['per_rank']))

def cmd_st_max(path, field):
    print(max(r[field] for r in stats(path)['per_rank']))

def cmd_st_io(path):
    """'READ WRITE' : bytes read and written over all phases and ranks, as multiples of the
    data volume ('bytes')."""
    s = stats(path)
    d = s['bytes']
    rd = sum(sum(p['io_read_bytes'].values()) for p in s['per_rank'])
    wr = sum(sum(p['io_write_bytes'].values()) for p in s['per_rank'])
    print(f"{rd / d:.4f} {wr / d:.4f}")

def cmd_st_reasons(path):
    """The distinct memory_budget_reason values, one a line."""
    for r in sorted({r['memory_budget_reason'] for r in stats(path)['per_rank']}):
        print(r)

if __name__ == '__main__':
    globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
PYEOF
}
