#!/bin/bash
# Sorting correctness on gensort data: the reference file, generated binary and ASCII data
# (ASCII checked byte for byte against LC_ALL=C sort), and inputs of 0, 1, 2, N-1 and N+1
# records (fewer records than ranks). Usage: sort.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# The reference file: the sorted output must keep gensort's checksum (from the README).
want=$(ref_checksum bin-1000.dat)
eq "checksum of bin-1000.dat in $REF/README.md" 1ea6370b955 "$want"
sums_equal "reference input" 100 "1000 $want" "$REF/bin-1000.dat"
sort_check "$N" gensort "" "$REF/bin-1000.dat"
sums_equal "sorted reference" 100 "1000 $want" "$T/sorted.out"

# Generated binary data from a random start: output keeps dsort-gen's count and checksum.
start=$((SEED % 100000000))
gen "$N" -b "$start" 20000 "$T/bin.dat"
sums_equal "dsort-gen -c vs the generated file" 100 "20000 $GEN_SUM" "$T/bin.dat"
sort_check "$N" gensort "" "$T/bin.dat"
sums_equal "sorted binary vs dsort-gen -c" 100 "20000 $GEN_SUM" "$T/sorted.out"

# ASCII data: byte-identical to LC_ALL=C sort, and with -r to LC_ALL=C sort -r (record numbers
# are unique and increase with the input position, so whole-line order is dsort's tie order).
gen "$N" -a -b "$start" 20000 "$T/ascii.txt"
LC_ALL=C sort "$T/ascii.txt" >"$T/ascii.sort"
LC_ALL=C sort -r "$T/ascii.txt" >"$T/ascii.sort-r"
ok "$N" "$DSORT" -o "$T/ascii.out" "$T/ascii.txt" &&
    same_records "dsort vs LC_ALL=C sort" 100 "$T/ascii.sort" "$T/ascii.out"
sums_equal "sorted ASCII vs dsort-gen -c" 100 "20000 $GEN_SUM" "$T/ascii.out"
ok "$N" "$DSORT" -r -o "$T/ascii.out-r" "$T/ascii.txt" &&
    same_records "dsort -r vs LC_ALL=C sort -r" 100 "$T/ascii.sort-r" "$T/ascii.out-r"

# Tiny inputs: 0 records (a 0-byte file), 1, 2, and around the rank count.
counts=$(printf '%s\n' 0 1 2 $((N - 1)) $((N + 1)) | sort -nu)
for c in $counts; do
    head -c $((c * 100)) "$T/bin.dat" >"$T/tiny-$c.dat"
    sort_check "$N" gensort "" "$T/tiny-$c.dat"
    eq "size of the output of $c records" $((c * 100)) "$(stat -c %s "$T/sorted.out" 2>&1)"
    sort_cmp "$N" gensort "-r" "$T/tiny-$c.dat"
done

suite_finish
