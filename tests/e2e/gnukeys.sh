#!/bin/bash
# GNU sort's -R/--random-sort/--sort=random/--random-source and its obsolete +POS1 [-POS2]
# keys, checked against this machine's `LC_ALL=C sort` given the same input and options
# (differential):
#  - -R with --random-source=FILE: GNU's order byte for byte (dsort hashes as GNU does, MD5 of
#    the file's first 16 bytes then the key), with -f, -d, -s, -u, -r, fields, in memory and
#    out of core; so the same order at any rank count (the test runs at 1 and 3 ranks);
#  - -R without a source: the input's lines, equal lines adjacent; -c with R keys as GNU's;
#  - --random-source errors in GNU's words; -R with --checkpoint needs a source;
#  - +POS1 [-POS2]: a table of cases (written for this test from GNU's manual: +A.x -B.y is
#    -k A+1.x+1,B when y is 0 or absent, else -k A+1.x+1,B+1.y), under _POSIX2_VERSION=199209
#    and by default (GNU 9.1 takes +POS for a key then), under _POSIX2_VERSION=200112 (a key
#    only when -POS2 follows, and from then on) and with POSIXLY_CORRECT: dsort's output and
#    exit status are GNU's, and so is its message where both refuse a key. ("-t:" is written
#    so: mpirun takes a lone ":" for its MPMD separator);
#  - --p=1 (GNU sort's --parallel=1): ambiguous in dsort, the message names the candidates.
# Usage: gnukeys.sh NRANKS
. "$(dirname "$0")/gnulib.sh"

py - "$SEED" >"$D/rand" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 5)
for _ in range(40000):
    print("".join(rnd.choice("aAbB .-c1") for _ in range(rnd.randint(0, 6))) + " " +
          "".join(rnd.choice("xyXY:2") for _ in range(rnd.randint(0, 3))))
EOF
py - "$SEED" >"$D/fields" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 6)
w = lambda: "".join(rnd.choice("ab:1-9 ") for _ in range(rnd.randint(0, 4)))
for _ in range(300):
    print(" ".join(w() for _ in range(rnd.randint(1, 4))))
EOF
head -c 40 /dev/urandom >"$D/source"
printf 'abc' >"$D/short"
SRC=--random-source=$D/source

echo "== -R with --random-source: GNU's order"
agree "-R" -R "$SRC" "$D/rand" -- -R "$SRC" "$D/rand"
agree "-fR -u" -fR -u "$SRC" "$D/rand" -- -fR -u "$SRC" "$D/rand"
agree "-t' ' -k2,2dfR -k1,1r" -t ' ' -k2,2dfR -k1,1r "$SRC" "$D/rand" -- \
    -t ' ' -k2,2dfR -k1,1r "$SRC" "$D/rand"
# out of core: runs spilled and merged by the same keyed order
agree "-R -s -r (out of core)" -R -s -r -S 64K --out-of-core "$SRC" "$D/rand" -- \
    -R -s -r "$SRC" "$D/rand"
agree "--sort=random -b -u (out of core)" --sort=random -b -u -S 64K --out-of-core "$SRC" \
    "$D/rand" -- --sort=random -b -u "$SRC" "$D/rand"

echo "== -R without a source"
ok "$N" "$DSORT" "${L[@]}" -R -o "$T/o/d.out" "$D/rand"
eq "-R: the input's lines" "$(sort "$D/rand" | cksum)" "$(sort "$T/o/d.out" | cksum)"
eq "-R: equal lines adjacent" "$(sort -u "$D/rand" | wc -l)" "$(uniq "$T/o/d.out" | wc -l)"

echo "== -c with R keys"
printf 'ABC\nABc\nAbC\nabc\n' >"$D/folded"
gnu /dev/null -c -k1,1fR "$D/folded"
run "$N" "$DSORT" "${L[@]}" -c -k1,1fR "$D/folded"
eq "-c -k1,1fR: exit status as GNU's" "$GRC" "$RC"

echo "== --random-source errors"
refuse "--random-source=missing" 2 1 "${L[@]}" -R --random-source="$D/missing" \
    -o "$T/o/r.out" "$D/rand" -- -R --random-source="$D/missing" "$D/rand"
refuse "--random-source=short" 2 1 "${L[@]}" -R --random-source="$D/short" -o "$T/o/r.out" \
    "$D/rand" -- -R --random-source="$D/short" "$D/rand"
refuse "-nR" 2 1 "${L[@]}" -nR -o "$T/o/r.out" "$D/rand" -- -nR "$D/rand"
# read only for -R, as in GNU
agree "--random-source=missing without -R" --random-source="$D/missing" "$D/rand" -- \
    --random-source="$D/missing" "$D/rand"
dsort_refuses "-R --checkpoint without a source" "needs --random-source" "${L[@]}" -R \
    --checkpoint -o "$T/o/r.out" "$D/rand"

echo "== +POS1 [-POS2]"
# obs ENV OPTS: GNU sort and dsort, with the environment ENV ("-": none), OPTS split at
# blanks, on $D/fields: the same exit status and output; where both fail on a key, the same
# first line of error.
obs() {
    local envs=() opts
    [ "$1" = - ] || read -ra envs <<<"$1"
    read -ra opts <<<"$2"
    local what="${1/#-/(default)} sort $2"
    env "${envs[@]}" sort "${opts[@]}" "$D/fields" >"$T/gnu.out" 2>"$T/gnu.err" </dev/null
    GRC=$?
    run "$N" env "${envs[@]}" "$DSORT" "${L[@]}" "${opts[@]}" "$D/fields"
    eq "$what: exit status as GNU's ($(head -n 1 "$T/gnu.err"))" "$GRC" "$RC"
    eq "$what: output as GNU's" "$(cksum <"$T/gnu.out")" "$(cksum <"$T/stdout")"
    if [ "$GRC" = 2 ] && grep -q "field spec" "$T/gnu.err"; then
        eq "$what: message as GNU's" "$(said "$T/gnu.err" sort)" "$(said "$T/stderr" dsort)"
    fi
}
P=_POSIX2_VERSION=199209
if [ "$N" = 1 ]; then # the command line is read alike at any rank count
    for o in "+1 -3" "-s +0 -1" "-s +0 -1.0" "-s +0 -1.1" "-s +0 -1.2" "-s +0 -1.1b" \
        "-t: +1.1 -1.2" "-n -t: +1" "+0.1n" "+0 +1nr" "-k3,3 +0 -1" "-s +1 -0" "+1x" \
        "+1 -2x" "+1 -2.y" "-r +2.1b -3.2f"; do
        obs "$P" "$o"
    done
    for o in "+1 -3" "-s +0 -1.2" "+0 -1 +1nr" "-n -t: +1" "+1"; do
        obs - "$o"
    done
    obs "POSIXLY_CORRECT=1" "+1 -3"
    obs "_POSIX2_VERSION=200112" "+1 -3 +0"
    obs "_POSIX2_VERSION=200112" "-n -t: +1"
    obs "POSIXLY_CORRECT=1 _POSIX2_VERSION=200112" "+1 -3"
    obs "POSIXLY_CORRECT=1 $P" "-s +1 -2"
fi
# one at every rank count, with a separator and a reversed key
obs "$P" "-t: +1 -2 +0r"

echo "== --p=1"
gnu /dev/null --p=1 "$D/fields"
eq "--p=1: GNU sort takes it for --parallel" 0 "$GRC"
dsort_refuses "--p=1" "^dsort: option '--p=1' is ambiguous; possibilities: '--parallel' '--plan' '--progress'" \
    "${L[@]}" --p=1 -o "$T/o/r.out" "$D/fields"
contains "--p=1: says what GNU's --p is" "$T/stderr" "GNU sort's --p is --parallel"

suite_finish
