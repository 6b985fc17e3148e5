#!/bin/bash
# dsort-validate: its figures equal the reference's (README.md) and python's; unsorted input
# exits 1 naming the first unordered record (as valsort); a directory of parts (empty parts
# allowed, order checked across parts), several files in order, disorder at the boundary
# between two files, -r, -u, a fixed format; exit 2 on a missing file. An output directory is
# checked against its _SUCCESS manifest (issue 25): none is exit 2 (--no-manifest checks the
# parts anyway); a part missing, extra, cut short, or changed in place with its order and size
# kept is exit 1 naming the part (gensort, fixed and lines outputs). dsort DIR: dsort-gen
# --parts, dsort DIR -O, dsort-validate; a damaged manifest is exit 2. Usage: validate.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# figures WHAT RECORDS CHECKSUM DUPS: the last dsort-validate output shows these figures.
figures() {
    contains "$1: Records" "$T/stdout" "^Records: $2\$"
    contains "$1: Checksum" "$T/stdout" "^Checksum: $3\$"
    [ -z "${4:-}" ] || contains "$1: Duplicate keys" "$T/stdout" "^Duplicate keys: $4\$"
}

# Sorted reference data (sorted by dsort): valsort's figures.
ok "$N" "$DSORT" -o "$T/ref.sorted" "$REF/bin-1000.dat"
ok "$N" "$VALIDATE" "$T/ref.sorted" &&
    figures "sorted bin-1000" 1000 1ea6370b955 0 &&
    contains "sorted bin-1000" "$T/stdout" '^SUCCESS - all records are in order$'
# The unsorted reference files: exit 1, the first unordered record, the README's checksums.
expect_rc 1 "$N" "$VALIDATE" "$REF/bin-1000.dat" &&
    contains "unsorted bin-1000" "$T/stdout" '^First unordered record is record 2$' &&
    figures "unsorted bin-1000" 1000 1ea6370b955 &&
    contains "unsorted bin-1000" "$T/stdout" '^ERROR'
for f in ascii-1000.txt skew-1000.dat bin-b1000000-1000.dat ascii-skew-1000.txt; do
    want=$(ref_checksum "$f")
    [ -n "$want" ] || die "no checksum of $f in $REF/README.md"
    run "$N" "$VALIDATE" "$REF/$f"
    eq "dsort-validate $f: exit status (unsorted)" 1 "$RC"
    figures "$f" 1000 "$want"
    first=$(py firstdisorder 100 0 10 - "$REF/$f" | cut -d' ' -f2)
    contains "$f" "$T/stdout" "^First unordered record is record $first\$"
done

# Generated data with duplicate keys, sorted by the oracle: figures against python's.
py mk "$T/dup.dat" 100 0 10 4000 dup "$SEED"
py sort "$T/dup.sorted" 100 0 10 s "$T/dup.dat"
read -r n sum <<<"$(py sum 100 "$T/dup.sorted")"
dups=$(py dups 100 0 10 "$T/dup.sorted")
[ "$dups" -gt 0 ] || die "test bug: no duplicate keys in dup.dat"
ok "$N" "$VALIDATE" "$T/dup.sorted" && figures "duplicate keys" "$n" "$sum" "$dups"
expect_rc 1 "$N" "$VALIDATE" -u "$T/dup.sorted"
py reverse 100 "$T/dup.sorted" "$T/dup.reversed"
ok "$N" "$VALIDATE" -r "$T/dup.reversed" && figures "-r" "$n" "$sum" "$dups"
expect_rc 1 "$N" "$VALIDATE" "$T/dup.reversed"
expect_rc 1 "$N" "$VALIDATE" -r "$T/dup.sorted"

# A directory of parts with empty parts, in name order; the order is checked across parts.
mkdir "$T/parts"
: >"$T/parts/part-00000"
py slice 100 "$T/dup.sorted" "$T/parts/part-00001" 0 1300
: >"$T/parts/part-00002"
py slice 100 "$T/dup.sorted" "$T/parts/part-00003" 1300 1301
py slice 100 "$T/dup.sorted" "$T/parts/part-00004" 1301 4000
: >"$T/parts/part-00005"
# (made by hand: no _SUCCESS manifest, so --no-manifest)
expect_rc 2 "$N" "$VALIDATE" "$T/parts" &&
    contains "a directory without _SUCCESS" "$T/stderr" "'$T/parts' has no _SUCCESS manifest"
ok "$N" "$VALIDATE" --no-manifest "$T/parts" && figures "directory of parts" "$n" "$sum" "$dups"
mkdir "$T/empty-parts"
: >"$T/empty-parts/part-00000"
: >"$T/empty-parts/part-00001"
ok "$N" "$VALIDATE" --no-manifest "$T/empty-parts" && figures "directory of empty parts" 0 0 0
# Swap two parts' contents: disorder at the first record of the part that comes too early.
mv "$T/parts/part-00001" "$T/parts/tmp"
mv "$T/parts/part-00004" "$T/parts/part-00001"
mv "$T/parts/tmp" "$T/parts/part-00004"
expect_rc 1 "$N" "$VALIDATE" --no-manifest "$T/parts" &&
    contains "parts out of order" "$T/stdout" "^First unordered record is record 2699\$"

# Several files in order (one empty); disorder at the boundary between two files.
py slice 100 "$T/dup.sorted" "$T/f1" 0 1000
py slice 100 "$T/dup.sorted" "$T/f2" 1000 4000
ok "$N" "$VALIDATE" "$T/f1" "$T/parts/part-00000" "$T/f2" && figures "several files" "$n" "$sum" "$dups"
py swap 100 "$T/f2" "$T/f2.bad" 0 2999
expect_rc 1 "$N" "$VALIDATE" "$T/f1" "$T/f2.bad" &&
    contains "disorder inside the second file" "$T/stdout" "^First unordered record is record 1001\$" &&
    contains "disorder inside the second file: the file, numbered as -c" "$T/stdout" \
        "^First unordered record is $T/f2.bad:record 1 \(as -c says\)\$"
# dsort -c -s (keys only, as dsort-validate checks them) names the same record the same way.
expect_rc 1 "$N" "$DSORT" -c -s "$T/f1" "$T/f2.bad" &&
    contains "-c names the record as dsort-validate does" "$T/stderr" "^dsort: $T/f2.bad:record 1: disorder\$"
# f2's first key is not below f1's last one: make a boundary disorder by putting f2 first.
expect_rc 1 "$N" "$VALIDATE" "$T/f2" "$T/f1" &&
    contains "disorder at the boundary of two files" "$T/stdout" "^First unordered record is record 3000\$" &&
    contains "disorder at the boundary: the second file's first record" "$T/stdout" \
        "^First unordered record is $T/f1:record 0 \(as -c says\)\$"

# A fixed format.
py mk "$T/f32.dat" 32 4 8 3000 dup "$SEED"
py sort "$T/f32.sorted" 32 4 8 s "$T/f32.dat"
read -r n sum <<<"$(py sum 32 "$T/f32.sorted")"
ok "$N" "$VALIDATE" --format fixed:32:4:8 "$T/f32.sorted" &&
    figures "fixed:32:4:8" "$n" "$sum" "$(py dups 32 4 8 "$T/f32.sorted")"
expect_rc 1 "$N" "$VALIDATE" --format fixed:32:4:8 "$T/f32.dat"

# Output directories and their _SUCCESS manifest. A dsort -O output validates; each damage
# is found (exit 1 naming the part, no SUCCESS line), whatever the rest of the output says.
# mo NAME DAMAGE...: a fresh copy of the -O output $T/mo as $T/NAME, damaged by the command.
read -r n sum <<<"$(py sum 100 "$T/dup.sorted")"
ok "$N" "$DSORT" -O "$T/mo" "$T/dup.dat"
ok "$N" "$VALIDATE" "$T/mo" && figures "a dsort -O output" "$n" "$sum" "$dups"
last=$(printf 'part-%05d' $((N - 1)))
# (MO_FROM=DIR: a copy of $T/DIR instead)
mo() {
    rm -rf "${T:?}/$1"
    cp -a "$T/${MO_FROM:-mo}" "$T/$1"
    (cd "$T/$1" && eval "$2")
}
# damaged WHAT DIR REGEX [OPTS...]: exit 1, an ERROR line and no SUCCESS, stderr matches REGEX.
damaged() {
    local what=$1 dir=$2 re=$3
    shift 3
    expect_rc 1 "$N" "$VALIDATE" "$@" "$dir" &&
        contains "$what: the verdict" "$T/stdout" '^ERROR - the parts differ from the manifest' &&
        contains "$what: the part named" "$T/stderr" "$re"
    CHECKS=$((CHECKS + 1))
    ! grep -q '^SUCCESS' "$T/stdout" || fail "$what: dsort-validate still says SUCCESS"
}
# The issue's case: a part deleted, another cut short, _SUCCESS removed: not an output.
mo issue 'rm -f part-00000 _SUCCESS; [ -s '"$last"' ] && truncate -s -100 '"$last"'; :'
expect_rc 2 "$N" "$VALIDATE" "$T/issue" &&
    contains "no _SUCCESS" "$T/stderr" "has no _SUCCESS manifest: it is not a complete output"
mo gone 'rm part-00000'
damaged "a part deleted" "$T/gone" "part-00000' is missing; the manifest _SUCCESS lists it"
mo short 'truncate -s -100 part-00000'
damaged "a part cut by one record" "$T/short" "part-00000' is [0-9]+ bytes; the manifest _SUCCESS says"
mo torn 'truncate -s -37 part-00000'
damaged "a part cut mid-record" "$T/torn" "part-00000' is [0-9]+ bytes; the manifest _SUCCESS says"
mo extra 'cp part-00000 part-99999'
damaged "a part the manifest does not list" "$T/extra" "part-99999' is not in the manifest"
# A record's payload (past its 10-byte key) changed in place: order and size kept.
mo changed 'printf Z | dd of=part-00000 bs=1 seek=50 conv=notrunc status=none'
damaged "a part changed in place" "$T/changed" "part-00000' has [0-9]+ records, checksum [0-9a-f]+; the manifest _SUCCESS says [0-9]+ records, checksum [0-9a-f]+ \(its content changed"
# The same for a fixed format and for lines (the manifest's checksum is of lines there).
ok "$N" "$DSORT" --format fixed:32:4:8 -O "$T/mf" "$T/f32.dat"
ok "$N" "$VALIDATE" --format fixed:32:4:8 "$T/mf"
printf Z | dd of="$T/mf/part-00000" bs=1 seek=20 conv=notrunc status=none
damaged "fixed:32:4:8, changed in place" "$T/mf" "part-00000' has" --format fixed:32:4:8
python3 -c '
import random, sys
r = random.Random(int(sys.argv[2]))
open(sys.argv[1], "w").write("".join("%d %s\n" % (r.randint(0, 99), "x" * r.randint(0, 30)) for _ in range(3000)))' "$T/l.txt" "$SEED"
ok "$N" "$DSORT" --format lines -k1,1n -O "$T/ml" "$T/l.txt"
ok "$N" "$VALIDATE" --format lines -k1,1n "$T/ml" &&
    contains "a lines -O output" "$T/stdout" '^SUCCESS'
python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); i = b.rindex(b"x"); b[i] = ord("y"); open(p, "wb").write(b)' "$T/ml/part-00000"
damaged "lines, changed in place" "$T/ml" "part-00000' has" --format lines -k1,1n

# dsort DIR (issue 29, item 8), the TeraGen-TeraSort chain: dsort-gen --parts writes a part
# per rank and _SUCCESS; dsort takes the directory as its part-* files in name order (_SUCCESS
# and hidden files left out; any other file refused, not silently skipped), checked against the
# manifest first: a part missing or extra, a size or record count not the manifest's, a
# manifest that cannot be read, or no parts at all is exit 2 naming the cause, before anything
# is read and with nothing written.
gen "$N" --parts "$T/gen" 3000
printf 'not records\n' >"$T/gen/.hidden"
cat "$T/gen"/part-* >"$T/gen.cat"
py sort "$T/gen.want" 100 0 10 - "$T/gen.cat"
ok "$N" "$DSORT" "$T/gen" -O "$T/gs" && ok "$N" "$VALIDATE" "$T/gs" &&
    figures "dsort-gen --parts DIR; dsort DIR -O" 3000 "$GEN_SUM" &&
    cat "$T/gs"/part-* >"$T/gs.cat" && same_file "dsort DIR vs sorting the parts" 100 "$T/gen.want" "$T/gs.cat"
# Name order: the hand-made parts (swapped above, no manifest) with -s, ties in input order.
printf 'x' >"$T/parts/.hidden"
cat "$T/parts"/part-* >"$T/parts.cat"
py sort "$T/parts.want" 100 0 10 s "$T/parts.cat"
ok "$N" "$DSORT" -s "$T/parts" -o "$T/parts.out" &&
    same_file "dsort -s DIR: the parts in name order" 100 "$T/parts.want" "$T/parts.out"
# refused WHAT DIR REGEX: exit 2, stderr matches REGEX, no output (nor a stage) left.
refused() {
    expect_rc 2 "$N" "$DSORT" "$2" -O "$T/never" && contains "$1: the cause" "$T/stderr" "$3"
    eq "$1: nothing written" "" "$(find "$T" -maxdepth 1 -name '*never*')"
}
MO_FROM=gen mo ggone 'rm part-00000'
refused "dsort DIR, a part deleted" "$T/ggone" "ggone/part-00000' is missing; the manifest _SUCCESS lists it"
MO_FROM=gen mo gextra 'cp part-00000 part-99999'
refused "dsort DIR, an extra part" "$T/gextra" "gextra/part-99999' is not in the manifest"
MO_FROM=gen mo gshort 'truncate -s -100 part-00000'
refused "dsort DIR, a part cut short" "$T/gshort" "gshort/part-00000' is [0-9]+ bytes; the manifest _SUCCESS says"
MO_FROM=gen mo gcount 'python3 -c "import json; m = json.load(open(\"_SUCCESS\")); m[\"parts\"][0][\"records\"] += 1; json.dump(m, open(\"_SUCCESS\", \"w\"))"'
refused "dsort DIR, a record count not the manifest's" "$T/gcount" \
    "gcount/part-00000' holds [0-9]+ records of 100 bytes; the manifest _SUCCESS says"
MO_FROM=gen mo gbad 'echo "{" >_SUCCESS'
refused "dsort DIR, a damaged manifest" "$T/gbad" "cannot read the manifest '.*gbad/_SUCCESS'"
MO_FROM=gen mo gstray 'cp part-00000 data.bin'
refused "dsort DIR, a file that is not a part" "$T/gstray" "gstray/data.bin' is not a part [(]part-[*][)] of the input directory"
# -o inside an input directory would become one of its parts, or replace one, and its manifest
# would no longer hold: refused before any work (it used to sort into gen/part-00000).
before=$(cd "$T/gen" && ls -A && cksum ./*)
for o in "$T/gen/part-00000" "$T/gen/sorted"; do
    expect_rc 2 "$N" "$DSORT" "$T/gen" -o "$o" &&
        contains "-o ${o##*/} inside the input directory" "$T/stderr" "^dsort: output '.*' is inside input directory '.*/gen'\$"
done
ln -s "$T/gen/part-00000" "$T/genlink"
expect_rc 2 "$N" "$DSORT" "$T/gen" -o "$T/genlink" &&
    contains "-o, a link to a part of the input directory" "$T/stderr" "^dsort: output '.*genlink' is inside input directory '.*/gen'\$"
eq "-o inside the input directory: the directory as it was" "$before" "$(cd "$T/gen" && ls -A && cksum ./*)"
mkdir "$T/nothing"
printf 'x' >"$T/nothing/.hidden"
refused "dsort DIR, no parts" "$T/nothing" "nothing' is a directory without parts"

# Errors: exit 2.
expect_rc 2 "$N" "$VALIDATE" "$T/missing"
expect_rc 2 "$N" "$VALIDATE" "$T/f1" "$T/missing"
head -c 150 "$T/f1" >"$T/odd"
expect_rc 2 "$N" "$VALIDATE" "$T/odd"

suite_finish
