#!/bin/bash
# dsort-validate: its figures equal the reference's (README.md) and python's; unsorted input
# exits 1 naming the first unordered record (as valsort); a directory of parts (empty parts
# allowed, order checked across parts), several files in order, disorder at the boundary
# between two files, -r, -u, a fixed format; exit 2 on a missing file. Usage: validate.sh NRANKS
. "$(dirname "$0")/lib.sh"
e2e_init "$1"

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
ok "$N" "$VALIDATE" "$T/parts" && figures "directory of parts" "$n" "$sum" "$dups"
mkdir "$T/empty-parts"
: >"$T/empty-parts/part-00000"
: >"$T/empty-parts/part-00001"
ok "$N" "$VALIDATE" "$T/empty-parts" && figures "directory of empty parts" 0 0 0
# Swap two parts' contents: disorder at the first record of the part that comes too early.
mv "$T/parts/part-00001" "$T/parts/tmp"
mv "$T/parts/part-00004" "$T/parts/part-00001"
mv "$T/parts/tmp" "$T/parts/part-00004"
expect_rc 1 "$N" "$VALIDATE" "$T/parts" &&
    contains "parts out of order" "$T/stdout" "^First unordered record is record 2699\$"

# Several files in order (one empty); disorder at the boundary between two files.
py slice 100 "$T/dup.sorted" "$T/f1" 0 1000
py slice 100 "$T/dup.sorted" "$T/f2" 1000 4000
ok "$N" "$VALIDATE" "$T/f1" "$T/parts/part-00000" "$T/f2" && figures "several files" "$n" "$sum" "$dups"
py swap 100 "$T/f2" "$T/f2.bad" 0 2999
expect_rc 1 "$N" "$VALIDATE" "$T/f1" "$T/f2.bad" &&
    contains "disorder inside the second file" "$T/stdout" "^First unordered record is record 1001\$"
# f2's first key is not below f1's last one: make a boundary disorder by putting f2 first.
expect_rc 1 "$N" "$VALIDATE" "$T/f2" "$T/f1" &&
    contains "disorder at the boundary of two files" "$T/stdout" "^First unordered record is record 3000\$"

# A fixed format.
py mk "$T/f32.dat" 32 4 8 3000 dup "$SEED"
py sort "$T/f32.sorted" 32 4 8 s "$T/f32.dat"
read -r n sum <<<"$(py sum 32 "$T/f32.sorted")"
ok "$N" "$VALIDATE" --format fixed:32:4:8 "$T/f32.sorted" &&
    figures "fixed:32:4:8" "$n" "$sum" "$(py dups 32 4 8 "$T/f32.sorted")"
expect_rc 1 "$N" "$VALIDATE" --format fixed:32:4:8 "$T/f32.dat"

# Errors: exit 2.
expect_rc 2 "$N" "$VALIDATE" "$T/missing"
expect_rc 2 "$N" "$VALIDATE" "$T/f1" "$T/missing"
head -c 150 "$T/f1" >"$T/odd"
expect_rc 2 "$N" "$VALIDATE" "$T/odd"

e2e_finish
