#!/bin/bash
# Text lines (--format lines), differential against GNU sort: for seeded random inputs from
# tests/lines_gen.py and option sets (plain, -r, -u, -s, -n, -g, -h, -V, -M, -f, -d, -i, -b, -t,
# -k2,2n, -k2,2 -k1,1r, -t: -k3n,3 -k1.2,1.4, -u and -s with keys, -f -u, -n -r, lines of
# up to 20 KiB), each run in memory and out of core under a tiny budget (-S 64K --out-of-core;
# larger inputs make several runs per rank, and under ulimit -n 33 extra merge passes), with
# -o FILE and -O DIR (part-* concatenated in name order, _SUCCESS), dsort's output must be
# byte-identical to `LC_ALL=C sort` of the same inputs with the same options (so also the order,
# the count and the checksum). Special inputs: several files (an empty one, files whose last
# line has no terminator), CRLF lines, empty and blank lines, NUL-terminated lines (-z),
# lines of 4 MiB among short ones (in memory and out of core), a 3 MiB line in a small file (in
# memory) and under -S 1M (held past the budget, as GNU sort does; -v says so). Errors:
# incompatible options (-n -g, -h -M) exit 2 with one line, leaving no output and no temporary
# file. dsort-validate
# --format lines: exit 0 and the right figures (Records, Duplicate keys, Checksum: the sum of
# each line's CRC-32 with its terminator) on GNU sort's output (plain, -t, -k2,2n, -r -f,
# -s -k1,1, -z -u, -u, a -O directory whose _SUCCESS total checksum must match, two files),
# exit 1 and the first unordered record (counted from 0, as GNU sort -c finds it) otherwise.
# -g runs on numbers without NaN keys: GNU sort 9.1 orders NaNs with equal bits differently from
# run to run (by memcmp of long doubles, padding included), so no oracle exists for them.
# Rank counts: every case runs at -n 1 and -n 3 (and at any count but 2 and 4); the cases of
# each section that `share IDX` marks (IDX counted from 0 within the section) run at -n 2 when
# IDX is even and at -n 4 when it is odd, so that -n 2 and -n 4 each take half of them:
# option sets by their line in OPTION_SETS, larger inputs, several inputs, CRLF, blank lines,
# -z, 4 MiB lines, errors, and dsort-validate by pairs (ok and bad on one input). The 3 MiB
# line section is about the rank count (it used to fail at 3 ranks and more): it runs whole
# at every rank count, as do the final --stats checks (runs and extra merge passes), which
# cases of both halves meet.
# Usage: lines.sh NRANKS. To rerun a failure: DSORT_LINES_SEED=SEED (printed), and
# DSORT_E2E_KEEP=1 to keep the inputs ($T/data; $T/gen holds the generator's outputs, named
# SALT-PROFILE-LINES[z]: `lines_gen.py --seed $((SEED + SALT)) --profile PROFILE --lines LINES`).
# Environment, besides lib.sh's:
#   DSORT_LINES_SEED         seed (same as DSORT_E2E_SEED); every failure prints it
#   DSORT_LINES_COUNT        lines per generated input (default 3000)
#   DSORT_LINES_BIG          lines of the larger inputs (default 40000)
#   DSORT_LINES_OOC_BUDGET   the tiny out-of-core budget (default 64K)
#   DSORT_LINES_LONG_BUDGET  the out-of-core budget of the 4 MiB lines (default 32M)
#   DSORT_LINES_GEN          the generator (default tests/lines_gen.py)
#   DSORT_LINES_CMD, DSORT_LINES_VALIDATE_CMD  run these instead of dsort and dsort-validate
#                            (a stand-in while developing; the registered tests use the real ones)
[ -n "${DSORT_LINES_SEED:-}" ] && export DSORT_E2E_SEED=$DSORT_LINES_SEED
. "$(dirname "$0")/lib.sh"
suite_init "$1"
# No run here takes more than a few seconds: a hang costs 30 s, not lib.sh's 60.
E2E_TIMEOUT=${DSORT_E2E_TIMEOUT:-30}

LINES_GEN=${DSORT_LINES_GEN:-$(cd "$(dirname "$0")/.." && pwd)/lines_gen.py}
[ -f "$LINES_GEN" ] || die "no line generator $LINES_GEN"
DSORT=${DSORT_LINES_CMD:-$DSORT}
VALIDATE=${DSORT_LINES_VALIDATE_CMD:-$VALIDATE}
[ -z "${DSORT_LINES_CMD:-}${DSORT_LINES_VALIDATE_CMD:-}" ] ||
    echo "note: stand-ins: dsort is $DSORT, dsort-validate is $VALIDATE"
COUNT=${DSORT_LINES_COUNT:-3000}
OOC_BUDGET=${DSORT_LINES_OOC_BUDGET:-64K}
export LC_ALL=C

# Helpers in python (the standard library only).
cat >"$T/lines.py" <<'PYEOF'
import random, sys, zlib

def split(data, eol):
    """The lines of data without their terminators (a last line may lack one)."""
    if not data:
        return []
    ls = data.split(eol)
    return ls[:-1] if data.endswith(eol) else ls

def cmd_diff(eol, want, got):
    """Describe how got differs from want: the counts, the first differing line, context."""
    eol = b'\0' if eol == 'z' else b'\n'
    w, g = open(want, 'rb').read(), open(got, 'rb').read()
    wl, gl = split(w, eol), split(g, eol)
    msg = [f"expected {len(w)} bytes, {len(wl)} lines; got {len(g)} bytes, {len(gl)} lines"]
    if not g.endswith(eol) and g:
        msg.append("the output's last line has no terminator")
    cut = lambda l: repr(l[:100]) + (f"...({len(l)} bytes)" if len(l) > 100 else "")
    for i in range(max(len(wl), len(gl))):
        a = wl[i] if i < len(wl) else None
        b = gl[i] if i < len(gl) else None
        if a != b:
            msg.append(f"first difference at line {i + 1}: expected {cut(a) if a is not None else '(end)'}, "
                       f"got {cut(b) if b is not None else '(end)'}")
            for j in range(max(0, i - 2), min(max(len(wl), len(gl)), i + 3)):
                a = cut(wl[j]) if j < len(wl) else '(end)'
                b = cut(gl[j]) if j < len(gl) else '(end)'
                msg.append(f"    line {j + 1}: {'=' if a == b else '!'} expected {a} | got {b}")
            break
    print('\n'.join(msg))

def cmd_crc(eol, *paths):
    """The valsort checksum of lines: the sum of the CRC-32 of each line with its terminator
    (which a last line without one counts as having)."""
    e = b'\0' if eol == 'z' else b'\n'
    total = 0
    for p in paths:
        total += sum(zlib.crc32(l + e) for l in split(open(p, 'rb').read(), e))
    print(format(total % (1 << 128), 'x'))

def cmd_mix(out, short, seed, nlong, size):
    """Write the lines of short with nlong lines of size bytes put in at seeded places: the
    first random, the second equal to the first but its last byte, the others random."""
    rng = random.Random(int(seed))
    lines = split(open(short, 'rb').read(), b'\n')
    printable = bytes(33 + i % 94 for i in range(256))
    rand = lambda: rng.randbytes(int(size)).translate(printable)
    base = rand()
    for i in range(int(nlong)):
        if i == 0:
            l = base
        elif i == 1:
            l = base[:-1] + bytes([base[-1] ^ 1])
        else:
            l = rand()
        lines.insert(rng.randrange(len(lines) + 1), l)
    with open(out, 'wb') as f:
        f.write(b''.join(l + b'\n' for l in lines))

def cmd_blanks(src, out, seed):
    """Copy src with empty lines and lines of blanks put in at seeded places."""
    rng = random.Random(int(seed))
    res = []
    for l in split(open(src, 'rb').read(), b'\n'):
        res.append(l)
        if rng.random() < 0.1:
            res.append(rng.choice([b'', b'', b' ', b'\t', b'  x']))
    with open(out, 'wb') as f:
        f.write(b''.join(l + b'\n' for l in res))

if __name__ == '__main__':
    globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
PYEOF
lpy() {
    python3 "$T/lines.py" "$@"
}

# dsort_ok N CMD...: ok, and when the status is not 0, dsort's own lines of stderr too (they
# may come after Open MPI's messages, which show_output shows first).
dsort_ok() {
    ok "$@" && return 0
    grep -a -m 3 '^dsort' "$T/stderr" | sed 's/^/  dsort said: /' >&2
    return 1
}

# clean_tmpdir: empty $TMPDIR after a check of it, so that what a failed run left there does
# not fail the next cases too.
clean_tmpdir() {
    find "$TMPDIR" -mindepth 1 -delete 2>/dev/null
}

# lgen SALT PROFILE LINES [z]: on stdout, what `lines_gen.py --seed $((SEED + SALT)) --profile
# PROFILE --lines LINES [-z]` prints (to rerun a failed case by hand). All inputs are made by
# one python process at the start (lgen_all; a python start costs 0.1-0.2 s here), from the
# list of "SALT PROFILE LINES [z]" that lgen_spec prints.
lgen() {
    local f=$T/gen/$1-$2-$3${4:-}
    [ -f "$f" ] || die "test bug: $f was not generated (add it to lgen_spec)"
    cat "$f"
}
lgen_all() {
    mkdir -p "$T/gen"
    lgen_spec | python3 -c '
import os, random, sys
gen, seed, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path.insert(0, os.path.dirname(os.path.abspath(gen)))
import lines_gen  # its generate() is what its command line prints
for spec in sys.stdin.read().splitlines():
    salt, profile, count, *z = spec.split()
    zero = z == ["z"]
    lines = lines_gen.generate(random.Random(seed + int(salt)), profile, int(count), zero)
    term = b"\0" if zero else b"\n"
    with open(os.path.join(out, f"{salt}-{profile}-{count}{z[0] if z else str()}"), "wb") as f:
        f.write(b"".join(l + term for l in lines))
' "$LINES_GEN" "$SEED" "$T/gen" || die "generating the inputs with $LINES_GEN failed"
}

# split2 FILE: FILE.1 (its first third of lines) and FILE.2 (the rest).
split2() {
    local n
    n=$(($(wc -l <"$1") / 3))
    head -n "$n" "$1" >"$1.1"
    tail -n +"$((n + 1))" "$1" >"$1.2"
}

MAX_MIN_RUNS=0
MAX_PASSES=0
OOC_CASES=0

# lines_case NAME MODE DEST "OPTS" INPUT...: sort the INPUTs with dsort --format lines OPTS,
# MODE mem (dsort's default budget) or ooc (the tiny budget, --out-of-core), DEST file (-o) or
# dir (-O); compare with GNU sort OPTS on the same INPUTs.
lines_case() {
    local name=$1 mode=$2 dest=$3 opts=() extra=() out=() eol=n
    read -ra opts <<<"$4"
    shift 4
    [[ " ${opts[*]} " == *" -z "* ]] && eol=z
    sort "${opts[@]}" "$@" >"$T/want" 2>"$T/sort.err" ||
        die "test bug: GNU sort ${opts[*]} failed: $(head -n 2 "$T/sort.err")"
    rm -rf "$T/o" "$T/stats.json"
    mkdir "$T/o"
    [ "$mode" = ooc ] && extra=(-S "$OOC_BUDGET" --out-of-core --stats "$T/stats.json")
    if [ "$dest" = file ]; then out=(-o "$T/o/sorted"); else out=(-O "$T/o/d"); fi
    local tag="$name: dsort ${opts[*]} ($mode, -${out[0]#-})"
    if ! dsort_ok "$N" "${WRAP[@]}" "$DSORT" --format lines "${opts[@]}" "${extra[@]}" "${out[@]}" "$@"; then
        echo "  $tag: FAILED, exit status $RC"
        clean_tmpdir
        return 1
    fi
    local ms=$ELAPSED_MS info=""
    if [ "$dest" = dir ]; then
        local errs i
        errs=$(manifest_errs "$T/o/d" "$eol" "$(lines_in "$eol" "$T/want")" "$(stat -c %s "$T/want")")
        eq "$tag: -O directory and _SUCCESS: problems" "" "$errs"
        : >"$T/got"
        for ((i = 0; i < N; i++)); do
            cat "$(printf '%s/part-%05d' "$T/o/d" "$i")" >>"$T/got" 2>/dev/null
        done
    else
        cp "$T/o/sorted" "$T/got" 2>/dev/null || : >"$T/got"
    fi
    CHECKS=$((CHECKS + 1))
    if ! cmp -s "$T/want" "$T/got"; then
        fail "$tag: output differs from LC_ALL=C sort ${opts[*]} $*"
        lpy diff "$eol" "$T/want" "$T/got" | sed 's/^/  /' >&2
    fi
    eq "$tag: files beside the output" "${out[1]##*/}" "$(ls -A "$T/o")"
    eq "$tag: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")" || clean_tmpdir
    if [ "$mode" = ooc ]; then
        local ooc runs passes r
        ooc=$(json_figures out_of_core "$T/stats.json")
        runs=$(json_figures runs "$T/stats.json")
        passes=$(json_figures merge_passes "$T/stats.json")
        eq "$tag: --stats out_of_core" true "$ooc"
        info=", runs $runs, extra merge passes $passes"
        OOC_CASES=$((OOC_CASES + 1))
        local min=""
        for r in ${runs//,/ }; do
            [[ "$r" =~ ^[0-9]+$ ]] || continue
            [ -z "$min" ] || [ "$r" -lt "$min" ] && min=$r
        done
        [ -n "$min" ] && [ "$min" -gt "$MAX_MIN_RUNS" ] && MAX_MIN_RUNS=$min
        for r in ${passes//,/ }; do
            [[ "$r" =~ ^[0-9]+$ ]] && [ "$r" -gt "$MAX_PASSES" ] && MAX_PASSES=$r
        done
    fi
    echo "  $tag: ${ms} ms$info"
}

# json_figures KEY FILE: the values of KEY (numbers or true/false) in the JSON FILE, in order,
# joined by commas ("?" if none): --stats and _SUCCESS are dsort's compact JSON.
json_figures() {
    local v
    v=$(grep -a -o "\"$1\": *[0-9a-z]*" "$2" 2>/dev/null | sed 's/.*: *//' | paste -sd, -)
    echo "${v:-?}"
}

# manifest_errs DIR z|n LINES BYTES: what is wrong with the -O directory DIR (nothing when all
# is right): it holds part-00000..part-(N-1) and _SUCCESS, whose total and per-part records
# and bytes are the line and byte counts of the output and of each part.
manifest_errs() {
    local d=$1 t='\n' i want got part figures=""
    [ "$2" = z ] && t='\0'
    want=$({ for ((i = 0; i < N; i++)); do printf 'part-%05d\n' "$i"; done; echo _SUCCESS; } | LC_ALL=C sort | tr '\n' ' ')
    got=$(find "$d" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | LC_ALL=C sort | tr '\n' ' ')
    [ "$got" = "$want" ] || echo "the directory holds '$got', expected '$want'."
    [ -f "$d/_SUCCESS" ] || return 0
    # The parts' figures as the files have them (whole lines: dsort terminates every line)...
    for ((i = 0; i < N; i++)); do
        part=$(printf 'part-%05d' "$i")
        [ -f "$d/$part" ] && figures+="$part $(tr -cd "$t" <"$d/$part" | wc -c) $(stat -c %s "$d/$part") "
    done
    # ... and as _SUCCESS has them: "name records bytes" of each part, then "total records bytes".
    got=$(tr -d '\n' <"$d/_SUCCESS" | grep -o '"\(name\|total\|records\|bytes\)": *\("[^"]*"\|[0-9]*\|{\)' |
        sed 's/^"total".*/total/; s/^"[a-z]*": *"*//; s/"$//' | tr '\n' ' ')
    [ "$got" = "${figures}total $3 $4 " ] ||
        echo "_SUCCESS says (part records bytes...) '$got'; expected '${figures}total $3 $4 '."
}

# lines_in z|n FILE: the number of lines (a last one without terminator counts).
lines_in() {
    local t='\n'
    [ "$1" = z ] && t='\0'
    if [ -s "$2" ] && [ "$(tail -c 1 "$2" | tr -d "$t" | wc -c)" = 1 ]; then
        echo $(($(tr -cd "$t" <"$2" | wc -c) + 1))
    else
        tr -cd "$t" <"$2" | wc -c
    fi
}

# both NAME "OPTS" INPUT...: lines_case in memory and out of core, one with -o and the other
# with -O, which one alternating from call to call.
BOTH_CALLS=0
WRAP=() # a command to run dsort with (each rank), such as sh -c 'ulimit -n 33 ...'
both() {
    local name=$1 o=$2 d1=file d2=dir
    shift 2
    [ $((BOTH_CALLS++ % 2)) = 1 ] && d1=dir d2=file
    lines_case "$name" mem $d1 "$o" "$@"
    lines_case "$name" ooc $d2 "$o" "$@"
}

D=$T/data
mkdir -p "$D"

echo "== option sets, each on its own seeded input (two files), in memory and out of core (at ${SECONDS}s)"
# NAME|PROFILE|OPTIONS. Profiles fields and colon are csv with blanks or colons for commas;
# nonan is numbers without the lines whose -g key is a NaN: GNU sort 9.1 -g does not order NaN
# keys consistently (the same input sorts differently under -S 64K), so there is no oracle.
# Note "-t:" and not "-t :": mpirun takes a lone ":" for the separator of MPMD programs.
OPTION_SETS=$(
    cat <<'EOF'
plain|mixed|
r|mixed|-r
u|dups|-u
s|dups|-s
n|numbers|-n
g|nonan|-g
h|human|-h
V|versions|-V
M|months|-M
f|mixed|-f
d|mixed|-d
i|binary|-i
b|mixed|-b
t|csv|-t, -k2
k2n|fields|-k2,2n
k2k1r|fields|-k2,2 -k1,1r
colon|colon|-t: -k3n,3 -k1.2,1.4
uk|csv|-u -t, -k2,2n
sk|dups|-s -k1,1
rsk|csv|-r -s -t, -k3,3f
fu|mixed|-f -u
nr|numbers|-n -r
long20k|long|
long20kn|long|-n
EOF
)
# gen_profile PROFILE: the generator's profile that a profile of OPTION_SETS is made from.
gen_profile() {
    case $1 in
    fields | colon) echo csv ;;
    nonan) echo numbers ;;
    *) echo "$1" ;;
    esac
}
lgen_spec() {
    local salt=0 name profile opts
    while IFS='|' read -r name profile opts; do
        salt=$((salt + 1))
        echo "$salt $(gen_profile "$profile") $COUNT"
    done <<<"$OPTION_SETS"
    echo "50 mixed $BIG"
    echo "51 csv $BIG"
    echo "100 mixed $COUNT"
    echo "200 mixed $COUNT"
    echo "300 csv $COUNT"
    echo "400 mixed $COUNT z"
    echo "401 csv $((COUNT / 4)) z"
    echo "500 mixed 300"
    echo "600 mixed 2000"
}
BIG=${DSORT_LINES_BIG:-40000}
lgen_all
salt=0
while IFS='|' read -r name profile opts; do
    salt=$((salt + 1))
    in=$D/$name
    lgen "$salt" "$(gen_profile "$profile")" "$COUNT" >"$in"
    case $profile in
    fields) tr ',' ' ' <"$in" >"$in.t" && mv "$in.t" "$in" ;;
    colon) tr ',' ':' <"$in" >"$in.t" && mv "$in.t" "$in" ;;
    nonan) grep -a -v -i -E '^[[:blank:]]*[-+]?nan' "$in" >"$in.t" && mv "$in.t" "$in" ;;
    esac
    split2 "$in"
    share $((salt - 1)) || continue
    both "$name" "$opts" "$in.1" "$in.2"
done <<<"$OPTION_SETS"

echo "== larger inputs: out of core, several runs per rank and (ulimit -n 33) extra merge passes (at ${SECONDS}s)"
lgen 50 mixed "$BIG" >"$D/big"
split2 "$D/big"
lgen 51 csv "$BIG" >"$D/bigcsv"
share 0 && both big "" "$D/big.1" "$D/big.2"
share 1 && both big "-f -u" "$D/big.1" "$D/big.2"
share 2 && both big "-s -t, -k2,2n" "$D/bigcsv"
# shellcheck disable=SC2016 # expanded by sh, on each rank
WRAP=(sh -c 'ulimit -n 33 && exec "$0" "$@"')
share 3 && lines_case "big, ulimit -n 33" ooc file "-r" "$D/big.1" "$D/big.2"
share 4 && lines_case "big, ulimit -n 33" ooc dir "-t, -k3,3 -k2,2n" "$D/bigcsv"
WRAP=()

echo "== several inputs: an empty file, files whose last line has no terminator (at ${SECONDS}s)"
lgen 100 mixed "$COUNT" >"$D/multi"
n3=$((COUNT / 3))
head -n "$n3" "$D/multi" | head -c -1 >"$D/multi.a"
: >"$D/multi.empty"
sed -n "$((n3 + 1)),$((2 * n3))p" "$D/multi" >"$D/multi.b"
tail -n +"$((2 * n3 + 1))" "$D/multi" | head -c -1 >"$D/multi.c"
printf 'lonely line without newline' >"$D/multi.one"
i=0
for opts in "" "-u" "-s -k1,1"; do
    share $((i++)) || continue
    both multi "$opts" "$D/multi.a" "$D/multi.empty" "$D/multi.b" "$D/multi.c" "$D/multi.one"
done
share 3 && lines_case "only an empty file" mem file "" "$D/multi.empty"
share 4 && lines_case "only an empty file" ooc dir "" "$D/multi.empty"
share 5 && lines_case "one line, no newline" mem dir "" "$D/multi.one"

echo "== CRLF lines (and empty lines, CRLF and not) (at ${SECONDS}s)"
lgen 200 mixed "$COUNT" >"$D/crlf.lf"
lpy blanks "$D/crlf.lf" "$D/crlf.tmp" $((SEED + 201))
sed 's/$/\r/' "$D/crlf.tmp" | awk 'NR % 97 == 0 { print "" } { print }' >"$D/crlf"
i=0
for opts in "" "-b -k2,2" "-u -n"; do
    share $((i++)) || continue
    both crlf "$opts" "$D/crlf"
done

echo "== empty lines and lines of blanks (at ${SECONDS}s)"
lgen 300 csv "$COUNT" | tr ',' ' ' >"$D/blank.src"
lpy blanks "$D/blank.src" "$D/blank" $((SEED + 301))
i=0
for opts in "" "-u" "-k2,2n" "-b -k3"; do
    share $((i++)) || continue
    both blank "$opts" "$D/blank"
done

echo "== NUL-terminated lines (-z), some holding newlines; the last file without a final NUL (at ${SECONDS}s)"
lgen 400 mixed "$COUNT" z >"$D/z"
lgen 401 csv $((COUNT / 4)) z | tr ',' ' ' | head -c -1 >"$D/z.2"
i=0
for opts in "-z" "-z -u -f" "-z -k2,2n"; do
    share $((i++)) || continue
    both z "$opts" "$D/z" "$D/z.2"
done

echo "== lines of 4 MiB among short lines (at ${SECONDS}s)"
lgen 500 mixed 300 >"$D/short"
lpy mix "$D/long" "$D/short" $((SEED + 501)) 3 $((4 << 20))
split2 "$D/long"
share 0 && lines_case long mem file "" "$D/long.1" "$D/long.2"
saved=$OOC_BUDGET
OOC_BUDGET=${DSORT_LINES_LONG_BUDGET:-32M}
share 1 && lines_case long ooc dir "" "$D/long.1" "$D/long.2"
share 2 && lines_case long ooc file "-r -k1,1" "$D/long.1" "$D/long.2"
OOC_BUDGET=$saved

echo "== errors (at ${SECONDS}s)"
# error_case WHAT REGEX KIND ARGS...: exit 2 with one line of stderr matching REGEX (KIND rank:
# "dsort: rank R/N (host): ...", once; usage: "dsort: ...", once), nothing on stdout, no output,
# no temporary file.
error_case() {
    local what=$1 regex=$2 kind=$3
    shift 3
    rm -rf "$T/o"
    mkdir "$T/o"
    run "$N" "$DSORT" --format lines "$@"
    eq "$what: exit status" 2 "$RC" || show_output
    if [ "$kind" = rank ]; then
        eq "$what: lines of stderr naming a rank" 1 "$(grep -c 'rank [0-9]*/' "$T/stderr")" ||
            sed 's/^/  | /' "$T/stderr" >&2
        contains "$what: the error names the rank and the cause" "$T/stderr" \
            "^dsort: rank [0-9]+/$N \([^)]+\): .*$regex"
    else
        eq "$what: error lines (printed once)" 1 "$(grep -c '^dsort:' "$T/stderr")" ||
            sed 's/^/  | /' "$T/stderr" >&2
        contains "$what: the error names the cause" "$T/stderr" "^dsort: .*$regex"
    fi
    eq "$what: nothing on stdout" "" "$(head -c 300 "$T/stdout")"
    eq "$what: no output" "" "$(ls -A "$T/o")"
    eq "$what: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")" || clean_tmpdir
    echo "  $what: exit $RC, ${ELAPSED_MS} ms: $(grep -m 1 '^dsort' "$T/stderr")"
}
share 0 && error_case "-n -g" "incompatible" usage -n -g -o "$T/o/sorted" "$D/plain.1"
share 1 && error_case "-h -M" "incompatible" usage -h -M -O "$T/o/d" "$D/plain.1"

echo "== a line longer than the budget allows (at ${SECONDS}s)"
# GNU sort holds a line of any length; so does dsort: in memory the arena grows past the share
# (a 3 MiB line in a small file, whose share is far smaller, used to fail at 3 and more ranks),
# and out of core a line longer than a third of the budget is held whole, past the budget,
# which -v says once per rank that does it.
lgen 600 mixed 2000 >"$D/toolong.1"
lpy mix "$D/toolong.2" "$D/short" $((SEED + 601)) 1 $((3 << 20))
lines_case "a 3 MiB line in a small file" mem file "" "$D/toolong.2"
lines_case "a 3 MiB line in a small file" mem dir "-s -k1,1" "$D/toolong.1" "$D/toolong.2"
saved=$OOC_BUDGET
OOC_BUDGET=1M
lines_case "a 3 MiB line, -S 1M" ooc file "" "$D/toolong.1" "$D/toolong.2"
lines_case "a 3 MiB line, -S 1M" ooc dir "-u -r" "$D/toolong.2" "$D/toolong.1"
lines_case "control: -S 1M without the long line" ooc file "" "$D/toolong.1" "$D/short"
OOC_BUDGET=$saved
rm -rf "$T/o" && mkdir "$T/o"
run "$N" "$DSORT" --format lines -v -S 1M --out-of-core -o "$T/o/sorted" "$D/toolong.1" "$D/toolong.2"
eq "a 3 MiB line, -S 1M -v: exit status" 0 "$RC"
contains "a 3 MiB line, -S 1M -v: a rank says it held the line past the budget" "$T/stderr" \
    "^dsort: rank [0-9]+/$N \\([^)]+\\): '[^']*toolong\\.2': the line at byte [0-9]+ is longer than the [0-9]+-byte arena .*held whole, past the budget"

echo "== dsort-validate --format lines (at ${SECONDS}s)"
# figures WHAT RECORDS DUPS: the last dsort-validate output shows these figures.
figures() {
    contains "$1: Records" "$T/stdout" "^Records: $2\$"
    contains "$1: Duplicate keys" "$T/stdout" "^Duplicate keys: $3\$"
}
# validate_ok WHAT "OPTS" FILE...: FILEs sorted by GNU sort with OPTS pass, with the line count,
# the duplicates (lines minus those sort -u keeps) and the checksum (the sum of the CRC-32 of
# each line with its terminator, by python's zlib) as figures. Sets VSUM to the checksum.
validate_ok() {
    local what=$1 opts=() eol=n
    read -ra opts <<<"$2"
    shift 2
    [[ " ${opts[*]} " == *" -z "* ]] && eol=z
    local nl uniq files=() f
    for f in "$@"; do
        if [ -d "$f" ]; then files+=("$f"/part-*); else files+=("$f"); fi
    done
    cat "${files[@]}" >"$T/v.cat"
    nl=$(lines_in "$eol" "$T/v.cat")
    sort -u "${opts[@]}" "${files[@]}" >"$T/v.uniq"
    uniq=$(lines_in "$eol" "$T/v.uniq")
    VSUM=$(lpy crc "$eol" "${files[@]}")
    dsort_ok "$N" "$VALIDATE" --format lines "${opts[@]}" "$@" || return 1
    figures "$what" "$nl" $((nl - uniq))
    contains "$what: Checksum (python's)" "$T/stdout" "^Checksum: $VSUM\$"
    echo "  $what: exit 0, $(tr '\n' ' ' <"$T/stdout" | head -c 200)"
}
# validate_bad WHAT "OPTS" FILE...: exit 1, naming the first unordered record (counted from 0)
# where GNU sort -c OPTS finds the first disorder of the FILEs' concatenation.
validate_bad() {
    local what=$1 opts=() first
    read -ra opts <<<"$2"
    shift 2
    first=$(cat "$@" | sort -c "${opts[@]}" 2>&1 | sed -n 's/^sort: -:\([0-9]*\): disorder.*/\1/p')
    [ -n "$first" ] || die "test bug: $what: GNU sort -c ${opts[*]} finds no disorder in $*"
    expect_rc 1 "$N" "$VALIDATE" --format lines "${opts[@]}" "$@" || return 1
    contains "$what: the first unordered record (from 0)" "$T/stdout" \
        "^First unordered record is record $((first - 1))\$"
}
sort "$D/plain.1" "$D/plain.2" >"$D/v.plain"
# The checksum (python's) of the sorted lines, which "unsorted input" and "a -O directory" expect.
sorted_sum=$(lpy crc n "$D/v.plain")
# The cases by pairs (share 0-7): an input in order, then (mostly) the same checked out of order.
if share 0; then
    validate_ok "plain, sorted" "" "$D/v.plain"
    # The input, not sorted: exit 1, the first unordered record, the same checksum.
    validate_bad "unsorted input" "" "$D/plain.1" "$D/plain.2" &&
        contains "unsorted input: Records" "$T/stdout" "^Records: $(($(wc -l <"$D/plain.1") + $(wc -l <"$D/plain.2")))\$" &&
        eq "unsorted input: the checksum is the sorted output's" "$sorted_sum" \
            "$(sed -n 's/^Checksum: //p' "$T/stdout")"
fi
if share 1; then
    # Two files in order, then the same two in the wrong order (disorder at their boundary).
    nh=$(($(wc -l <"$D/v.plain") / 2))
    head -n "$nh" "$D/v.plain" >"$D/v.h1"
    tail -n +"$((nh + 1))" "$D/v.plain" >"$D/v.h2"
    validate_ok "sorted, in two files" "" "$D/v.h1" "$D/v.h2"
    validate_bad "two files in the wrong order" "" "$D/v.h2" "$D/v.h1"
fi
# With keys, -r, -z, -u.
if share 2; then
    sort -t, -k2,2n "$D/uk.1" "$D/uk.2" >"$D/v.csv"
    validate_ok "-t, -k2,2n" "-t, -k2,2n" "$D/v.csv"
    validate_bad "-t, -k2,2n output checked with -r" "-r -t, -k2,2n" "$D/v.csv"
fi
if share 3; then
    sort -r -f "$D/f.1" "$D/f.2" >"$D/v.rf"
    validate_ok "-r -f" "-r -f" "$D/v.rf"
    validate_bad "-r -f output checked without them" "" "$D/v.rf"
fi
if share 4; then
    sort -z -u "$D/z" >"$D/v.z"
    validate_ok "-z -u" "-z -u" "$D/v.z"
fi
if share 5; then
    sort -s -k1,1 "$D/sk.1" "$D/sk.2" >"$D/v.sk"
    validate_ok "-s -k1,1" "-s -k1,1" "$D/v.sk"
fi
if share 6; then
    sort -u "$D/u.1" "$D/u.2" >"$D/v.u"
    validate_ok "-u on unique lines" "-u" "$D/v.u"
    sort "$D/u.1" "$D/u.2" >"$D/v.dups"
    validate_bad "-u on duplicates" "-u" "$D/v.dups"
fi
if share 7; then
    # A -O directory from dsort.
    rm -rf "$T/vdir"
    dsort_ok "$N" "$DSORT" --format lines -O "$T/vdir" "$D/plain.1" "$D/plain.2" &&
        validate_ok "a -O directory" "" "$T/vdir" &&
        eq "a -O directory: _SUCCESS total checksum" "$sorted_sum" \
            "$(tr -d '\n' <"$T/vdir/_SUCCESS" | grep -o '"total": *{[^}]*}' | grep -o '"checksum": *"[0-9a-f]*"' | cut -d'"' -f4)"
fi

CHECKS=$((CHECKS + 2))
if [ "$MAX_MIN_RUNS" -lt 2 ]; then
    fail "no out-of-core case spilled 2 or more runs on every rank (-S $OOC_BUDGET; see --stats)"
fi
if [ "$MAX_PASSES" -lt 1 ]; then
    fail "no out-of-core case made an extra merge pass (-S $OOC_BUDGET; see --stats)"
fi
echo "out of core: $OOC_CASES cases; most runs on every rank of one case: $MAX_MIN_RUNS; most extra merge passes: $MAX_PASSES"
suite_finish
