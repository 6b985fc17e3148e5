#!/bin/bash
# GNU sort's options that the command line alone deals with, checked against this machine's
# `LC_ALL=C sort` given the same input and options (differential): the output byte for byte,
# the exit status, GNU's wording of each error (the first lines of stderr without the program
# name), and that a refused command writes nothing.
#  - repeated -o: another name is "multiple output files specified" (exit 2, nothing written,
#    an existing target untouched); the same name twice is fine;
#  - --parallel=N: accepted and ignored (said once by rank 0 under -v); GNU's errors for a bad N;
#  - --sort=WORD (and its abbreviations): the same order as GNU's; GNU's errors for a bad or
#    ambiguous WORD and for incompatible orders; random is refused (as -R is);
#  - -c, -C, --check[=quiet|silent|diagnose-first]: on fixed records that are equal-length
#    lines, the exit status, the line GNU names (dsort names the record, 0-based), silence for
#    -C, -cu; with --format lines GNU's message (FILE:LINE: disorder: TEXT), with keys, -u, and
#    a disorder on the boundary of rank 0's and rank 1's lines at -n 3;
#  - -m: sorted inputs against sort -m, with keys, -r, -u;
#  - --files0-from=F: 1200 inputs, names with a space, no final NUL, keys; GNU's errors for
#    operands with it, an empty name, an empty or missing F; "-" as F or as a name is refused.
# Exit statuses differ from GNU's in one place, on purpose: GNU exits 1 for a bad --sort or
# --check WORD (coreutils' argmatch), which sort -c scripts would read as "unsorted"; dsort
# exits 2 as for every usage error. Usage: gnuopts.sh NRANKS
. "$(dirname "$0")/lib.sh"
e2e_init "$1"
E2E_TIMEOUT=60
RUN_FLAGS=(-q)
export LC_ALL=C

D=$T/data
mkdir -p "$D" "$T/o"

# The inputs: a few thousand lines of numbers, sizes, months, versions and floats, each kind in
# its own file (so that a whole-line --sort=WORD means something), with duplicates.
python3 - "$SEED" "$D" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]))
d = sys.argv[2]
def pick(*xs):
    return rnd.choice(xs)
def num():
    return pick(str(rnd.randint(-999, 999)), "%.3f" % rnd.uniform(-50, 50), " %d" % rnd.randint(0, 99),
                "0%d" % rnd.randint(0, 9), "x%d" % rnd.randint(0, 9), "", "-0", "1,234", ".5")
def human():
    return pick("%d%s" % (rnd.randint(-20, 2000), pick("", "K", "M", "G", "T", "k")),
                "%.1f%s" % (rnd.uniform(0, 10), pick("K", "M", "E")), "junk", "", " 7M")
def month():
    return pick("JAN", "feb", " Mar", "apr ", "MAYday", "jun", "Jul", "aug", "SEP", "oct", "Nov",
                "dec", "xyz", "", "ja") + pick("", " %d" % rnd.randint(1, 31))
def version():
    return pick("%d.%d.%d" % (rnd.randint(0, 3), rnd.randint(0, 12), rnd.randint(0, 12)),
                "v%d" % rnd.randint(0, 20), "1.0~rc%d" % rnd.randint(1, 3), "foo-1.%d.tar.gz" % rnd.randint(0, 20),
                "a%02d" % rnd.randint(0, 20), "", "1.2a", "1.2.0")
def general():
    return pick("%ge%d" % (rnd.uniform(-9, 9), rnd.randint(-5, 5)), "inf", "-inf", "nan", "0x1p%d" % rnd.randint(0, 4),
                str(rnd.randint(-100, 100)), "abc", "", "+1.5")
for name, f in (("num", num), ("human", human), ("month", month), ("version", version), ("general", general)):
    lines = [f() for _ in range(500)]
    lines += [rnd.choice(lines) for _ in range(100)]
    rnd.shuffle(lines)
    with open("%s/%s" % (d, name), "w") as out:
        out.write("".join(l + "\n" for l in lines))
# CSV lines for keys: "name,num,month,version"
with open("%s/csv" % d, "w") as out:
    for _ in range(600):
        out.write("%s,%s,%s,%s\n" % (pick("ann", "Bob", "cy", "dee"), num(), month().strip(), version()))
EOF
KINDS=(num human month version general)

# gnu OUT ARG...: LC_ALL=C sort ARG... with stdout to OUT (unless -o is among the ARGs); the
# status in GRC, stderr in $T/gnu.err.
gnu() {
    local out=$1
    shift
    sort "$@" >"$out" 2>"$T/gnu.err" </dev/null
    GRC=$?
}

# said FILE PROG [LINES]: the first LINES (default 1) lines of FILE from the first "PROG: " on,
# that prefix removed (mpirun's own lines before it are skipped).
said() {
    sed -n "/^$2: /,\$p" "$1" | head -n "${3:-1}" | sed "1s/^$2: //"
}

# same WHAT EXPECTED ACTUAL: byte-identical files (ACTUAL must exist).
same() {
    CHECKS=$((CHECKS + 1))
    if [ ! -f "$3" ]; then
        fail "$1: $3 was not written"
        return 1
    fi
    if ! cmp -s "$2" "$3"; then
        fail "$1: dsort's output differs from GNU sort's: $(cmp "$2" "$3" 2>&1 | head -n 1)"
        diff "$2" "$3" | head -n 10 | sed 's/^/  | /' >&2
        return 1
    fi
}

# split_args DSORT_ARG... -- SORT_ARG...: into the caller's (local) arrays dargs and sargs.
split_args() {
    while [ "$1" != -- ]; do
        dargs+=("$1")
        shift
    done
    shift
    sargs=("$@")
}

# agree WHAT DSORT_ARG... -- SORT_ARG...: GNU sort prints $T/gnu.out, dsort --format lines
# writes $T/o/d.out; both exit 0 and the outputs are identical. No temp files left.
agree() {
    local what=$1 dargs=() sargs=()
    shift
    split_args "$@"
    gnu "$T/gnu.out" "${sargs[@]}"
    eq "$what: GNU sort's exit status ($(head -n 1 "$T/gnu.err"))" 0 "$GRC"
    rm -f "$T/o/d.out"
    ok "$N" "$DSORT" --format lines "${dargs[@]}" -o "$T/o/d.out" &&
        same "$what" "$T/gnu.out" "$T/o/d.out"
    eq "$what: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
}

# refuse WHAT WANT_RC LINES DSORT_ARG... -- SORT_ARG...: both fail (GNU with any non-zero
# status when WANT_RC is "any", else WANT_RC too; dsort always 2), print the same first LINES
# lines of error (without their program name), and dsort writes nothing: $T/o/r.out (named by
# the caller with -o where it wants one) does not appear, $T/o/keep keeps its contents.
refuse() {
    local what=$1 want=$2 lines=$3 dargs=() sargs=()
    shift 3
    split_args "$@"
    rm -f "$T/o/r.out" "$T/gnu.out"
    echo keep >"$T/o/keep"
    gnu "$T/gnu.out" "${sargs[@]}"
    if [ "$want" = any ]; then
        cond "$what: GNU sort fails (exit status $GRC)" "$GRC != 0"
    else
        eq "$what: GNU sort's exit status" "$want" "$GRC"
    fi
    local gmsg
    gmsg=$(said "$T/gnu.err" sort "$lines")
    rm -f "$T/o/r.out"
    expect_rc 2 "$N" "$DSORT" "${dargs[@]}"
    eq "$what: dsort's message is GNU's" "$gmsg" "$(said "$T/stderr" dsort "$lines")"
    eq "$what: no output written by dsort" "no" "$([ -e "$T/o/r.out" ] && echo yes || echo no)"
    eq "$what: an existing file left alone" "keep" "$(cat "$T/o/keep")"
    eq "$what: nothing on dsort's stdout" "" "$(cat "$T/stdout")"
    eq "$what: files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
}

# dsort_refuses WHAT REGEX DSORT_ARG...: a refusal of dsort's own (GNU accepts): exit 2, a
# message matching REGEX, nothing written to $T/o/r.out.
dsort_refuses() {
    local what=$1 re=$2
    shift 2
    rm -f "$T/o/r.out"
    expect_rc 2 "$N" "$DSORT" "$@"
    contains "$what: dsort's message" "$T/stderr" "$re"
    eq "$what: no output written by dsort" "no" "$([ -e "$T/o/r.out" ] && echo yes || echo no)"
}

IN1=$D/num
L=(--format lines)

echo "== repeated -o"
refuse "-o a -o b" 2 1 "${L[@]}" -o "$T/o/r.out" -o "$T/o/keep" "$IN1" -- \
    -o "$T/o/r.out" -o "$T/o/keep" "$IN1"
# GNU compares the names as strings: the same file by another name is another name.
refuse "-o a -o ./a (another spelling)" 2 1 "${L[@]}" -o "$T/o/r.out" -o "$T/o/./r.out" "$IN1" -- \
    -o "$T/o/r.out" -o "$T/o/./r.out" "$IN1"
gnu /dev/null -o "$T/o/gnu.same" -o "$T/o/gnu.same" "$IN1"
eq "-o a -o a: GNU sort's exit status" 0 "$GRC"
rm -f "$T/o/d.out"
ok "$N" "$DSORT" "${L[@]}" -o "$T/o/d.out" -o "$T/o/d.out" "$IN1" &&
    same "-o a -o a (the same name twice)" "$T/o/gnu.same" "$T/o/d.out"

echo "== --parallel"
agree "--parallel=+4 -n" --parallel=+4 -n "$IN1" -- --parallel=+4 -n "$IN1"
eq "--parallel without -v: nothing said" "" "$(cat "$T/stderr")"
agree "--parallel=' 16' -k2,2 -t," "--parallel= 16" -t, -k2,2 "$D/csv" -- "--parallel= 16" -t, -k2,2 "$D/csv"
for bad in 0 abc 2k " -2"; do
    refuse "--parallel='$bad'" 2 1 "${L[@]}" "--parallel=$bad" -o "$T/o/r.out" "$IN1" -- \
        "--parallel=$bad" "$IN1"
done
ok "$N" "$DSORT" "${L[@]}" -v --parallel=3 -o "$T/o/d.out" "$IN1"
eq "--parallel under -v: said once, by one rank" 1 \
    "$(grep -c "^dsort: --parallel=3 ignored: dsort's parallelism is its $N rank" "$T/stderr")"

echo "== --sort=WORD"
# Each word (or an abbreviation) on all the kinds of lines at once, some with -r.
ALL=("${KINDS[@]/#/$D/}")
for w in general-numeric hu month:-r nu:-r v; do
    opts=(--sort="${w%:*}")
    [[ $w == *:* ]] && opts+=("${w#*:}")
    agree "${opts[*]}" "${opts[@]}" "${ALL[@]}" -- "${opts[@]}" "${ALL[@]}"
done
agree "-t, -k2,2 --sort=numeric -k3,3 -u" -t, -k2,2 --sort=numeric -k3,3 -u "$D/csv" -- \
    -t, -k2,2 --sort=numeric -k3,3 -u "$D/csv"
for bad in x ""; do
    refuse "--sort='$bad'" any 2 "${L[@]}" --sort="$bad" -o "$T/o/r.out" "$IN1" -- --sort="$bad" "$IN1"
done
refuse "--sort=numeric -g" 2 1 "${L[@]}" --sort=numeric -g -o "$T/o/r.out" "$IN1" -- \
    --sort=numeric -g "$IN1"
for r in ra -R; do
    case $r in -*) opt=$r ;; *) opt=--sort=$r ;; esac
    gnu /dev/null "$opt" "$IN1"
    eq "$opt: GNU sort accepts it" 0 "$GRC"
    dsort_refuses "$opt" "^dsort: random sort \(-R\) is not supported" "${L[@]}" "$opt" -o "$T/o/r.out" "$IN1"
done

echo "== -m, --merge"
# Sorted inputs (each sorted by GNU with the same options) merged: GNU's sort -m output.
for t in "-r" "-t, -k2,2n -k1,1r" "-t, -k3,3M -k4,4V -u" "-s -t, -k1,1f"; do
    read -ra mo <<<"$t"
    for i in 0 1 2; do
        sort "${mo[@]}" "$D/${KINDS[$i]}" "$D/csv" >"$D/m$i"
    done
    agree "-m $t" -m "${mo[@]}" "$D/m0" "$D/m1" "$D/m2" -- -m "${mo[@]}" "$D/m0" "$D/m1" "$D/m2"
done
sort "$D/csv" >"$D/m3"
agree "--merge (one input)" --merge "$D/m3" -- --merge "$D/m3"
# Fixed records: -m accepted with every format; sorted inputs of equal-length lines.
python3 - "$SEED" "$D" <<'EOF2'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 3)
for i in range(3):
    open("%s/mf%d" % (sys.argv[2], i), "w").write("".join(sorted("%07d\n" % rnd.randint(0, 999) for _ in range(700))))
EOF2
gnu "$T/gnu.out" -m "$D/mf0" "$D/mf1" "$D/mf2"
rm -f "$T/o/d.out"
ok "$N" "$DSORT" --format fixed:8:0:8 -m "$D/mf0" "$D/mf1" "$D/mf2" -o "$T/o/d.out" &&
    same "-m --format fixed:8:0:8" "$T/gnu.out" "$T/o/d.out"

echo "== -c, -C, --check"
# Equal-length lines as fixed records whose key is the whole record: GNU's line order.
python3 - "$SEED" "$D" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 1)
d = sys.argv[2]
recs = sorted("%07d\n" % rnd.randint(0, 2000) for _ in range(3000))  # duplicates included
open(d + "/c.sorted", "w").write("".join(recs))
open(d + "/c.uniq", "w").write("".join(sorted(set(recs))))
bad = list(recs)
i = rnd.randint(len(bad) // 3, len(bad) - 2)
while bad[i] == bad[i + 1]:
    i += 1
bad[i], bad[i + 1] = bad[i + 1], bad[i]
open(d + "/c.unsorted", "w").write("".join(bad))
EOF
F=(--format fixed:8:0:8)
for t in -c:unsorted -C:unsorted --check:unsorted --check=q:unsorted --check=silent:unsorted \
    --check=diagnose-first:unsorted -C:sorted --check=quiet:sorted -cu:sorted -Cu:uniq; do
    opt=${t%:*} f=c.${t#*:}
    {
        gnu /dev/null "$opt" "$D/$f"
        run "$N" "$DSORT" "${F[@]}" "$opt" "$D/$f"
        eq "$opt $f: exit status as GNU's" "$GRC" "$RC"
        if [ -s "$T/gnu.err" ]; then
            # GNU: "sort: FILE:LINE: disorder: TEXT"; dsort: "dsort: FILE:record LINE-1: disorder"
            gl=$(sed -n 's/^sort: .*:\([0-9]*\): disorder: .*$/\1/p' "$T/gnu.err")
            eq "$opt $f: dsort names the record GNU names" "$D/$f:record $((gl - 1)): disorder" \
                "$(said "$T/stderr" dsort)"
        else
            eq "$opt $f: silent, as GNU" "" "$(cat "$T/stderr")"
        fi
    }
done
refuse "--check=silent -c" 2 1 "${F[@]}" --check=silent -c "$D/c.sorted" -- \
    --check=silent -c "$D/c.sorted"
refuse "-c -o" 2 1 "${F[@]}" -c -o "$T/o/r.out" "$D/c.sorted" -- -c -o "$T/o/r.out" "$D/c.sorted"
refuse "-C -o" 2 1 "${F[@]}" -C -o "$T/o/r.out" "$D/c.sorted" -- -C -o "$T/o/r.out" "$D/c.sorted"
for bad in quietly; do
    refuse "--check='$bad'" any 4 "${F[@]}" --check="$bad" "$D/c.sorted" -- --check="$bad" "$D/c.sorted"
done
# --format lines: GNU's message "FILE:LINE: disorder: TEXT" (compared after the program name),
# exit 1; -C silent. Fixed-width lines (8 bytes), so that the line that starts rank 1's range
# at -n 3 (the first at or after byte total/3) can be changed in place: made the smallest line
# (a disorder on the rank boundary) or a copy of the line before it (disorder only with -u).
python3 - "$D" <<'EOF2'
import sys
d = sys.argv[1]
recs = open(d + "/c.sorted").read().splitlines(True)
i = (len(recs) * 8 // 3 + 7) // 8  # the first line starting at or after total / 3
while recs[i - 1] == recs[0] or recs[i - 1] == recs[i] or recs[i] == recs[i + 1]:
    i += 1
edge = list(recs)
edge[i] = recs[0]
open(d + "/c.edge", "w").write("".join(edge))
uniq = sorted(set(recs))
j = (len(uniq) * 8 // 3 + 7) // 8
dup = list(uniq)
dup[j] = uniq[j - 1]
open(d + "/c.edgedup", "w").write("".join(dup))
EOF2
sort -t, -k2,2n "$D/csv" >"$D/csv.k2n"
sort -s -t, -k3,3M "$D/csv" >"$D/csv.k3Ms"
sort -u -t, -k1,1 "$D/csv" >"$D/csv.k1u"
# lcheck WHAT ARG...: dsort --format lines ARG... and LC_ALL=C sort ARG... agree: exit status,
# the disorder message (without the program name), or silence.
lcheck() {
    local what=$1
    shift
    gnu /dev/null "$@"
    run "$N" "$DSORT" "${L[@]}" "$@"
    eq "$what: exit status as GNU's ($GRC)" "$GRC" "$RC"
    if [ -s "$T/gnu.err" ]; then
        eq "$what: dsort's message is GNU's" "$(said "$T/gnu.err" sort 2)" "$(said "$T/stderr" dsort 2)"
    else
        eq "$what: silent, as GNU" "" "$(cat "$T/stderr")"
    fi
    eq "$what: nothing on stdout" "" "$(cat "$T/stdout")"
}
for t in -c:unsorted --check=diagnose-first:unsorted --check=quiet:unsorted -c:sorted -c:edge -C:edge -c:edgedup -cu:edgedup -Cu:edgedup -cu:uniq; do
    lcheck "--format lines ${t%:*} c.${t#*:}" "${t%:*}" "$D/c.${t#*:}"
done
lcheck "--format lines -c csv (unsorted)" -c "$D/csv"
lcheck "--format lines -c -t, -k2,2n" -c -t, -k2,2n "$D/csv.k2n"
lcheck "--format lines -c -t, -k2,2n -r" -c -t, -k2,2n -r "$D/csv.k2n"
lcheck "--format lines -c -s -t, -k3,3M" -c -s -t, -k3,3M "$D/csv.k3Ms"
lcheck "--format lines -c -t, -k3,3M (not -s)" -c -t, -k3,3M "$D/csv.k3Ms"
lcheck "--format lines -C -u -t, -k1,1" -C -u -t, -k1,1 "$D/csv.k1u"
lcheck "--format lines -c -u -t, -k1,1f" -c -u -t, -k1,1f "$D/csv.k1u"

echo "== --files0-from"
# 1200 inputs (the data's lines spread over them, some empty, one name with a space), listed
# in shuffled order; GNU sort reads the same list.
python3 - "$SEED" "$D" "${KINDS[@]/#/$D/}" <<'EOF'
import os, random, sys
rnd = random.Random(int(sys.argv[1]) + 2)
d = sys.argv[2]
lines = [l for f in sys.argv[3:] for l in open(f, "rb")]
os.mkdir(d + "/many")
names = ["%s/many/p%04d" % (d, i) for i in range(1199)] + [d + "/many/with space"]
parts = {n: [] for n in names}
for l in lines:
    parts[rnd.choice(names)].append(l)
for n in names:
    with open(n, "wb") as out:
        out.write(b"".join(parts[n]))
rnd.shuffle(names)
open(d + "/list", "wb").write(b"".join(n.encode() + b"\0" for n in names))
open(d + "/list.nofinal", "wb").write(b"\0".join(n.encode() for n in names[:50]))
open(d + "/list.empty2", "wb").write(names[0].encode() + b"\0\0" + names[1].encode() + b"\0")
open(d + "/list.none", "wb").write(b"")
open(d + "/list.dash", "wb").write(names[0].encode() + b"\0-\0")
open(d + "/list.missing", "wb").write(names[0].encode() + b"\0" + d.encode() + b"/nope\0")
EOF
eq "--files0-from: 1200 inputs listed" 1200 "$(tr -cd '\0' <"$D/list" | wc -c)"
agree "--files0-from (1200 inputs)" --files0-from="$D/list" -- --files0-from="$D/list"
agree "--files0-from -t, -k2,2n -k1,1r" --files0-from="$D/list" -t, -k2,2n -k1,1r -- \
    --files0-from="$D/list" -t, -k2,2n -k1,1r
agree "--files0-from twice (the last counts; no final NUL) -u" --files0-from="$D/list.none" \
    --files0-from="$D/list.nofinal" -u -- --files0-from="$D/list.none" --files0-from="$D/list.nofinal" -u
refuse "--files0-from with an operand" 2 2 "${L[@]}" --files0-from="$D/list" -o "$T/o/r.out" "$IN1" -- \
    --files0-from="$D/list" "$IN1"
refuse "--files0-from: an empty second name" 2 1 "${L[@]}" --files0-from="$D/list.empty2" \
    -o "$T/o/r.out" -- --files0-from="$D/list.empty2"
refuse "--files0-from: no names" 2 1 "${L[@]}" --files0-from="$D/list.none" -o "$T/o/r.out" -- \
    --files0-from="$D/list.none"
refuse "--files0-from: no such list" 2 1 "${L[@]}" --files0-from="$D/nolist" -o "$T/o/r.out" -- \
    --files0-from="$D/nolist"
# GNU would overwrite the list with -o LIST; dsort keeps every file it reads (a symlink too).
cp "$D/list" "$T/o/list.copy"
ln -sf "$T/o/list.copy" "$T/o/list.link"
for out in "-o $T/o/list.copy" "-o $T/o/list.link" "-o $T/o/r.out --stats $T/o/list.copy"; do
    read -ra oa <<<"$out"
    dsort_refuses "--files0-from=L $out" "is the --files0-from list; write elsewhere" \
        "${L[@]}" --files0-from="$T/o/list.copy" "${oa[@]}"
    same "--files0-from=L $out: the list is kept" "$D/list" "$T/o/list.copy"
done
rm -f "$T/o/list.copy" "$T/o/list.link"
gnu /dev/null --files0-from="$D/list.missing"
eq "--files0-from naming a missing input: GNU sort's exit status" 2 "$GRC"
dsort_refuses "--files0-from naming a missing input" "^dsort: .*cannot open '$D/nope'" \
    "${L[@]}" --files0-from="$D/list.missing" -o "$T/o/r.out"
gnu /dev/null --files0-from="$D/list.dash"
eq "--files0-from naming '-': GNU sort's exit status" 2 "$GRC"
dsort_refuses "--files0-from naming '-'" "^dsort: $D/list.dash:2: no file name of '-' allowed" \
    "${L[@]}" --files0-from="$D/list.dash" -o "$T/o/r.out"
dsort_refuses "--files0-from=-" "^dsort: --files0-from=-: dsort does not read the names from standard input" \
    "${L[@]}" --files0-from=- -o "$T/o/r.out"
# With -c: the listed file is checked (GNU takes one file with -c).
printf '%s\0' "$D/c.unsorted" >"$D/list.c"
gnu /dev/null -C --files0-from="$D/list.c"
run "$N" "$DSORT" "${F[@]}" -C --files0-from="$D/list.c"
eq "-C --files0-from: exit status as GNU's" "$GRC" "$RC"
cond "-C --files0-from: the unsorted file is found unsorted" "$RC == 1"
e2e_finish
