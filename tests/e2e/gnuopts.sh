#!/bin/bash
# GNU sort's options that the command line alone deals with, checked against this machine's
# `LC_ALL=C sort` given the same input and options (differential): the output byte for byte,
# the exit status, GNU's wording of each error (the first lines of stderr without the program
# name), and that a refused command writes nothing.
#  - repeated -o: another name is "multiple output files specified" (exit 2, nothing written,
#    an existing target untouched); the same name twice is fine;
#  - --parallel=N: accepted and ignored (said once by rank 0 under -v); GNU's errors for a bad N;
#  - --sort=WORD (and its abbreviations): the same order as GNU's; GNU's errors for a bad or
#    ambiguous WORD and for incompatible orders; random as -R (gnukeys.sh);
#  - -c, -C, --check[=quiet|silent|diagnose-first]: on fixed records that are equal-length
#    lines, the exit status, the line GNU names (dsort names the record, 0-based), silence for
#    -C, -cu (with --format lines: gnucheck.sh; -m too);
#  - --files0-from=F: 1200 inputs, names with a space, no final NUL, keys; GNU's errors for
#    operands with it, an empty name, an empty or missing F; --files0-from=- reads the list
#    from standard input; "-" as a name is refused in GNU's words;
#  - /dev/null is an empty input; another device is refused;
#  - --batch-size=N, --compress-program=PROG: accepted and ignored (said under -v); GNU's
#    errors for a bad N and for two different programs.
# Exit statuses differ from GNU's in one place, on purpose: GNU exits 1 for a bad --sort or
# --check WORD (coreutils' argmatch), which sort -c scripts would read as "unsorted"; dsort
# exits 2 as for every usage error. The inputs and helpers are gnulib.sh's.
# Usage: gnuopts.sh NRANKS
. "$(dirname "$0")/gnulib.sh"

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

echo "== /dev/null as an input (empty, as GNU takes it; coreutils' create-empty)"
agree "/dev/null alone" /dev/null -- /dev/null
agree "/dev/null among inputs, out of core" --out-of-core /dev/null "$IN1" /dev/null -- /dev/null "$IN1" /dev/null
rm -f "$T/o/r.out"
expect_rc 2 "$N" "$DSORT" "${L[@]}" -o "$T/o/r.out" "$IN1" /dev/zero
cond "/dev/zero: refused by name" "$(grep -c "^dsort: rank .*'/dev/zero' is not a regular file" "$T/stderr") >= 1"
eq "/dev/zero: nothing written" no "$([ -e "$T/o/r.out" ] && echo yes || echo no)"

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

echo "== --batch-size, --compress-program (accepted, ignored)"
agree "--batch-size=2 -k2,2 -t," --batch-size=2 -t, -k2,2 "$D/csv" -- --batch-size=2 -t, -k2,2 "$D/csv"
for bad in 1 0 abc 3k " -2"; do
    refuse "--batch-size='$bad'" 2 1 "${L[@]}" "--batch-size=$bad" -o "$T/o/r.out" "$IN1" -- \
        "--batch-size=$bad" "$IN1"
done
gnu /dev/null --batch-size=1 "$IN1"
expect_rc 2 "$N" "$DSORT" "${L[@]}" --batch-size=1 -o "$T/o/r.out" "$IN1"
eq "--batch-size=1: GNU's two lines" "$(sed 's/^sort:/dsort:/' "$T/gnu.err")" "$(head -n 2 "$T/stderr")"
# Out of core, so that GNU sort runs the program (-S 64K: it spills) and dsort spills too.
agree "--compress-program=gzip -S 64K --out-of-core -n" --compress-program=gzip -S 64K \
    --out-of-core -n "$IN1" -- --compress-program=gzip -S 64K -n "$IN1"
agree "--compress-program twice, the same" --compress-program=zstd --compress-program=zstd -r \
    "$IN1" -- --compress-program=zstd --compress-program=zstd -r "$IN1"
refuse "--compress-program=a --compress-program=b" 2 1 "${L[@]}" --compress-program=a \
    --compress-program=b -o "$T/o/r.out" "$IN1" -- --compress-program=a --compress-program=b "$IN1"
ok "$N" "$DSORT" "${L[@]}" -v --compress-program=zstd --batch-size=8 -o "$T/o/d.out" "$IN1"
eq "--compress-program under -v: said once" 1 \
    "$(grep -c "^dsort: --compress-program=zstd ignored: dsort does not compress" "$T/stderr")"
eq "--batch-size under -v: said once" 1 "$(grep -c "^dsort: --batch-size=8 ignored" "$T/stderr")"

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
# --sort=ra (random): -R's order (gnukeys.sh), with a source so that GNU's is known
agree "--sort=ra" --sort=ra --random-source="$IN1" "$IN1" -- --sort=ra --random-source="$IN1" "$IN1"

echo "== -c, -C, --check"
# Equal-length lines as fixed records whose key is the whole record: GNU's line order.
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
dsort_refuses "--files0-from naming '-'" \
    "^dsort: when reading file names from stdin, no file name of '-' allowed" \
    "${L[@]}" --files0-from="$D/list.dash" -o "$T/o/r.out"
# The list on standard input (rank 0 reads it and gives the names to every rank).
LC_ALL=C sort -t, -k2,2n --files0-from=- <"$D/list" >"$T/o/gnu.f0"
rm -f "$T/o/d.out"
kto 120 "$MPIEXEC" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" "${L[@]}" -t, -k2,2n \
    --files0-from=- -o "$T/o/d.out" <"$D/list" 2>"$T/stderr"
eq "--files0-from=- <list: exit status" 0 "$?"
same "--files0-from=- <list against sort --files0-from=-" "$T/o/gnu.f0" "$T/o/d.out"
kto 120 "$MPIEXEC" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" "${L[@]}" \
    --files0-from=- -o "$T/o/r.out" <"$D/list.dash" 2>"$T/stderr"
eq "--files0-from=- naming '-': exit status" 2 "$?"
contains "--files0-from=- naming '-': GNU's words" "$T/stderr" \
    "^dsort: when reading file names from stdin, no file name of '-' allowed"
# With -c: the listed file is checked (GNU takes one file with -c).
printf '%s\0' "$D/c.unsorted" >"$D/list.c"
gnu /dev/null -C --files0-from="$D/list.c"
run "$N" "$DSORT" "${F[@]}" -C --files0-from="$D/list.c"
eq "-C --files0-from: exit status as GNU's" "$GRC" "$RC"
cond "-C --files0-from: the unsorted file is found unsorted" "$RC == 1"
suite_finish
