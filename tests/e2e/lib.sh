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

# Open MPI selects the ob1 PML here anyway (Debian's openmpi-mca-params.conf excludes ucx), but
# probing the other PMLs costs about 0.2 s per MPI_Init; naming ob1 makes the suite 2-3x faster.
# Set OMPI_MCA_pml yourself to test another one.
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}
# When a rank exits with a non-zero status, mpirun sends the others SIGTERM and then sleeps
# odls_base_sigkill_timeout (1 s) before SIGKILL, even when they have all exited: every
# expected exit 1 or 2 costs 2 s. Scripts that check what a failed run leaves behind set
# E2E_REAL_KILL=1 before sourcing this file to keep the default that users get.
if [ "${E2E_REAL_KILL:-0}" != 1 ]; then
    export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-0}
fi

E2E_NAME=$(basename "$0" .sh)
MPIEXEC=${DSORT_MPIEXEC:-}
[ -n "$MPIEXEC" ] || MPIEXEC=mpiexec
E2E_TIMEOUT=${DSORT_E2E_TIMEOUT:-60}
SEED=${DSORT_E2E_SEED:-$(((RANDOM << 15) | RANDOM))}
FAILS=0
CHECKS=0
LAST_CMD="(none)"
RC=0
T=""

die() {
    echo "ERROR: $*" >&2
    exit 2
}

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
    e2e_write_oracle
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

# check COND_STATUS MESSAGE: count a check; fail with MESSAGE unless the status is 0.
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
    local n=$1
    shift
    LAST_CMD="$MPIEXEC --oversubscribe -n $n $(printf '%q ' "$@")"
    local t0
    t0=$(date +%s%N)
    timeout -k 5 "$E2E_TIMEOUT" "$MPIEXEC" --oversubscribe -n "$n" "$@" \
        </dev/null >"$T/stdout" 2>"$T/stderr"
    RC=$?
    ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
    if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
        echo "note: timed out after ${E2E_TIMEOUT}s: $LAST_CMD" >&2
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

# ties_by_position: are equal keys expected in input order without -s (DSORT_E2E_TIES)?
ties_by_position() {
    [ "${DSORT_E2E_TIES:-record}" = position ]
}

# py CMD ARGS...: the python3 oracle (see e2e_write_oracle).
py() {
    python3 "$T/oracle.py" "$@"
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

# same_records WHAT RECSIZE EXPECTED ACTUAL: byte-identical files; else say where they differ.
same_records() {
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

# gen N OPTS... COUNT FILE: dsort-gen -c at N ranks; sets GEN_SUM to the checksum it printed.
gen() {
    local n=$1
    shift
    GEN_SUM=""
    ok "$n" "$GEN" -c "$@" || return 1
    GEN_SUM=$(grep -Eo '^[0-9a-f]+$' "$T/stderr" | tail -n 1)
    [ -n "$GEN_SUM" ] || fail "dsort-gen -c printed no checksum"
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

# Write the python oracle used by py().
e2e_write_oracle() {
    cat >"$T/oracle.py" <<'PYEOF'
"""Independent oracle of the dsort end-to-end tests (python3 standard library only)."""
import json, os, random, sys, zlib

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
    """Print 'RECORDS CHECKSUM' (valsort's checksum: the sum of the crc32 of each record)."""
    recs = load(paths, int(size))
    print(len(recs), crcsum(recs))

def cmd_sort(out, size, keyoff, keylen, flags, *paths):
    """Write the records of paths (in order) as dsort must order them.

    Keys compare as unsigned bytes, descending with r. Ties: with s or u, input order (files
    in the order given, then offset); u keeps the first record in input order of each key.
    Without s and u, ties go by the whole record (GNU sort's last-resort comparison), reversed
    too by r; with DSORT_E2E_TIES=position they go by input position instead (descending
    with r), the order of dsort before commit d6ef490."""
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
        recs = sorted(recs, key=key, reverse=rev)  # python's sort is stable, reverse too
    elif os.environ.get('DSORT_E2E_TIES', 'record') == 'position':
        recs = sorted(recs, key=key)
        if rev:
            recs.reverse()
    else:
        recs = sorted(recs, key=lambda r: (key(r), r), reverse=rev)
    with open(out, 'wb') as f:
        f.write(b''.join(recs))

def cmd_mk(out, size, keyoff, keylen, count, mode, seed):
    """Write count records. The non-key bytes hold a random byte, then the record's index
    (so that records differ, and the whole-record order of equal keys is not their input
    order), then random bytes. Modes (keys): random; equal (all one key);
    few (3 keys: 00.., 80.., ff..); dup (about count/4 distinct keys); prefix (keys share a
    long prefix and differ in their last bytes; bytes >= 0x80 included)."""
    size, ko, kl, count = int(size), int(keyoff), int(keylen), int(count)
    rng = random.Random(int(seed) * 7919 + count)
    one = bytes([0x00, 0xff, 0x80, 0x7f] + [rng.randrange(256) for _ in range(kl)])[:kl]
    few = [b'\x00' * kl, b'\x80' + b'\x00' * (kl - 1), b'\xff' * kl]
    pool = [rng.randbytes(kl) for _ in range(max(1, count // 4))]
    pfx = [rng.randbytes(kl), bytes(x ^ 0x80 for x in rng.randbytes(kl))]
    tail = min(kl, 2)
    free = [j for j in range(size) if not ko <= j < ko + kl]
    with open(out, 'wb') as f:
        for i in range(count):
            r = bytearray(rng.randbytes(size))
            for j, b in zip(free, bytes([rng.randrange(256)]) + i.to_bytes(4, 'big')):
                r[j] = b
            if mode == 'random':
                k = rng.randbytes(kl)
            elif mode == 'equal':
                k = one
            elif mode == 'few':
                k = rng.choice(few)
            elif mode == 'dup':
                k = rng.choice(pool)
            elif mode == 'prefix':
                k = rng.choice(pfx)[:kl - tail] + bytes(rng.choice([0, 1, 0x7f, 0x80, 0xff])
                                                      for _ in range(tail))
            else:
                die(f"mk: unknown mode {mode}")
            r[ko:ko + kl] = k
            f.write(r)

def cmd_reverse(size, src, out):
    recs = load([src], int(size))
    with open(out, 'wb') as f:
        f.write(b''.join(recs[::-1]))

def cmd_slice(size, src, out, start, end):
    """Write records [start, end) of src to out."""
    recs = load([src], int(size))
    with open(out, 'wb') as f:
        f.write(b''.join(recs[int(start):int(end)]))

def cmd_swap(size, src, out, i, j):
    """Copy src to out with records i and j swapped."""
    recs = load([src], int(size))
    i, j = int(i), int(j)
    recs[i], recs[j] = recs[j], recs[i]
    with open(out, 'wb') as f:
        f.write(b''.join(recs))

def cmd_dups(size, keyoff, keylen, *paths):
    """Number of records whose key equals the previous record's key."""
    ko, kl = int(keyoff), int(keylen)
    recs = load(paths, int(size))
    print(sum(1 for a, b in zip(recs, recs[1:]) if a[ko:ko + kl] == b[ko:ko + kl]))

def cmd_firstdisorder(size, keyoff, keylen, flags, *paths):
    """'PATH INDEX GLOBAL' of the first record out of order (index within its file, and
    counting over all files), or 'none'."""
    size, ko, kl = int(size), int(keyoff), int(keylen)
    prev, g = None, 0
    for p in paths:
        for i, r in enumerate(load([p], size)):
            k = r[ko:ko + kl]
            if prev is not None:
                bad = k > prev if 'r' in flags else k < prev
                if 'u' in flags and k == prev:
                    bad = True
                if bad:
                    print(p, i, g)
                    return
            prev, g = k, g + 1
    print('none')

def cmd_firstdiff(size, a, b):
    """Describe where two files of records first differ."""
    size = int(size)
    x, y = open(a, 'rb').read(), open(b, 'rb').read()
    msg = f"expected {len(x)} bytes ({len(x) / size:g} records), got {len(y)} bytes ({len(y) / size:g} records)"
    for i in range(0, max(len(x), len(y)), size):
        if x[i:i + size] != y[i:i + size]:
            msg += (f"; first difference at record {i // size}: expected "
                    f"{x[i:i + size][:40]!r}..., got {y[i:i + size][:40]!r}...")
            break
    print(msg)

def cmd_manifest(d, nparts, size, want_records, want_sum):
    """Check DIR/_SUCCESS against the part files."""
    nparts, size = int(nparts), int(size)
    errs = []
    with open(os.path.join(d, '_SUCCESS')) as f:
        m = json.load(f)
    names = sorted(os.listdir(d))
    want_names = sorted([f'part-{i:05d}' for i in range(nparts)] + ['_SUCCESS'])
    if names != want_names:
        errs.append(f"directory holds {names}, expected {want_names}")
    parts = m.get('parts', [])
    if [p.get('name') for p in parts] != [f'part-{i:05d}' for i in range(nparts)]:
        errs.append(f"manifest parts {[p.get('name') for p in parts]}")
    tot_r = tot_b = tot_s = 0
    for i, p in enumerate(parts):
        path = os.path.join(d, p.get('name', '?'))
        if not os.path.isfile(path):
            errs.append(f"{path} is missing")
            continue
        recs = load([path], size)
        fsize = os.path.getsize(path)
        if p.get('rank') != i:
            errs.append(f"{p.get('name')}: rank {p.get('rank')}, expected {i}")
        if p.get('records') != len(recs):
            errs.append(f"{p.get('name')}: manifest records {p.get('records')}, file has {len(recs)}")
        if p.get('bytes') != fsize:
            errs.append(f"{p.get('name')}: manifest bytes {p.get('bytes')}, file has {fsize}")
        if p.get('checksum') != crcsum(recs):
            errs.append(f"{p.get('name')}: manifest checksum {p.get('checksum')}, file's is {crcsum(recs)}")
        tot_r += len(recs)
        tot_b += fsize
        tot_s += sum(zlib.crc32(r) for r in recs)
    t = m.get('total', {})
    want = {'parts': nparts, 'records': int(want_records), 'bytes': int(want_records) * size,
            'checksum': want_sum}
    got = {k: t.get(k) for k in want}
    if got != want:
        errs.append(f"manifest total {got}, expected {want}")
    if (tot_r, tot_b, format(tot_s % (1 << 128), 'x')) != (int(want_records), int(want_records) * size, want_sum):
        errs.append(f"part files hold {tot_r} records, {tot_b} bytes, checksum {format(tot_s % (1 << 128), 'x')}; "
                    f"expected {want_records}, {int(want_records) * size}, {want_sum}")
    for e in errs:
        print(e)
    sys.exit(1 if errs else 0)

def cmd_stats(path, nranks, total):
    """Check the --stats JSON: one entry per rank, records in and out add up to total; print
    'MAX AVG' of records_out."""
    with open(path) as f:
        s = json.load(f)
    pr = s['per_rank']
    errs = []
    if len(pr) != int(nranks) or [r['rank'] for r in pr] != list(range(int(nranks))):
        errs.append(f"per_rank has ranks {[r.get('rank') for r in pr]}, expected 0..{int(nranks) - 1}")
    out = [r['records_out'] for r in pr]
    if sum(out) != int(total):
        errs.append(f"records_out {out} add up to {sum(out)}, expected {total}")
    if sum(r['records_in'] for r in pr) != int(total):
        errs.append(f"records_in add up to {sum(r['records_in'] for r in pr)}, expected {total}")
    for e in errs:
        print(e, file=sys.stderr)
    print(max(out), sum(out) / len(out), ' '.join(map(str, out)))
    sys.exit(1 if errs else 0)

def cmd_rounds(path, chunk):
    """Print 'ROUNDS LOWER' : the exchange rounds every rank reports (all must agree) and the
    fewest rounds the traffic allows: a rank that sends B bytes to P-1 peers sends at least
    B/(P-1) bytes to one of them, which takes ceil(that/chunk) rounds."""
    with open(path) as f:
        pr = json.load(f)['per_rank']
    rounds = {r['exchange_rounds'] for r in pr}
    if len(rounds) != 1:
        die(f"ranks report different exchange_rounds: {rounds}")
    p, c = len(pr), int(chunk)
    lower = 0
    if p > 1:
        per_peer = [-(-r['bytes_sent'] // (p - 1)) for r in pr]
        lower = max(-(-b // c) for b in per_peer)
    print(rounds.pop(), lower)

if __name__ == '__main__':
    globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
PYEOF
}
