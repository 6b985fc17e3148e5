#!/bin/bash
# Ordering semantics on all-keys-equal, heavily duplicated, already sorted, reverse-sorted and
# skewed (dsort-gen -s, -a -s) inputs: ties by whole record by default (GNU sort's last
# resort; see py sort in lib.sh), reversed by -r; in input order with -s (-r -s too); -u keeps
# the first record in input order of each key, across ranks. Usage: order.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# All keys equal; every record is different (it holds its index), and the whole-record order
# is not the input order, so a swap is seen whatever the tie rule.
py mk "$T/equal.dat" 100 0 10 3000 equal "$SEED"
py reverse 100 "$T/equal.dat" "$T/equal.rev"
head -c 100 "$T/equal.dat" >"$T/equal.first"
sort_check "$N" gensort "" "$T/equal.dat"
cp "$T/sorted.out" "$T/equal.sorted"
sort_cmp "$N" gensort "-r" "$T/equal.dat"
py reverse 100 "$T/equal.sorted" "$T/want"
same_records "all keys equal, -r: the reverse of the output without -r" 100 "$T/want" "$T/sorted.out"
sort_cmp "$N" gensort "-s" "$T/equal.dat"
same_records "all keys equal, -s: output equals the input" 100 "$T/equal.dat" "$T/sorted.out"
sort_check "$N" gensort "-r -s" "$T/equal.dat"
same_records "all keys equal, -r -s: output equals the input" 100 "$T/equal.dat" "$T/sorted.out"
sort_cmp "$N" gensort "-u" "$T/equal.dat"
same_records "all keys equal, -u: only the first input record" 100 "$T/equal.first" "$T/sorted.out"
sort_cmp "$N" gensort "-u -r" "$T/equal.dat"
same_records "all keys equal, -u -r: only the first input record" 100 "$T/equal.first" "$T/sorted.out"
sort_cmp "$N" gensort "-u" "$T/equal.rev"
tail -c 100 "$T/equal.dat" >"$T/want"
same_records "all keys equal, -u on the reversed input: its first record" 100 "$T/want" "$T/sorted.out"

# Few distinct keys (00.., 80.., ff..: also checks unsigned comparison) and many duplicates.
py mk "$T/few.dat" 100 0 10 3000 few "$SEED"
py mk "$T/dup.dat" 100 0 10 3000 dup "$SEED"
for opts in "" "-r" "-r -s" "-u -r"; do
    sort_cmp "$N" gensort "$opts" "$T/few.dat"
done
sort_check "$N" gensort "" "$T/dup.dat"
sort_cmp "$N" gensort "-s" "$T/dup.dat"
sort_check "$N" gensort "-u" "$T/dup.dat"

# Already sorted and reverse-sorted input.
gen "$N" -b $((SEED % 1000000)) 10000 "$T/bin.dat"
py sort "$T/bin.sorted" 100 0 10 - "$T/bin.dat"
py reverse 100 "$T/bin.sorted" "$T/bin.reversed"
sort_cmp "$N" gensort "" "$T/bin.sorted"
same_records "sorted input stays as it is" 100 "$T/bin.sorted" "$T/sorted.out"
sort_cmp "$N" gensort "" "$T/bin.reversed"
same_records "reverse-sorted input" 100 "$T/bin.sorted" "$T/sorted.out"
sort_check "$N" gensort "-r" "$T/bin.sorted"
same_records "-r of sorted input" 100 "$T/bin.reversed" "$T/sorted.out"

# Skewed binary data (many duplicate keys), checksum against dsort-gen's.
gen "$N" -s 10000 "$T/skew.dat"
sort_check "$N" gensort "" "$T/skew.dat"
sums_equal "sorted skewed data vs dsort-gen -c" 100 "10000 $GEN_SUM" "$T/sorted.out"
sort_cmp "$N" gensort "-r -s" "$T/skew.dat"

# Skewed ASCII data against GNU sort (its keys are unique, like gensort's -s keys).
gen "$N" -a -s 10000 "$T/skew.txt"
LC_ALL=C sort "$T/skew.txt" >"$T/want"
ok "$N" "$DSORT" -o "$T/out" "$T/skew.txt" &&
    same_records "dsort vs LC_ALL=C sort (ASCII skew)" 100 "$T/want" "$T/out"
sums_equal "sorted ASCII skew vs dsort-gen -c" 100 "10000 $GEN_SUM" "$T/out"
LC_ALL=C sort -r "$T/skew.txt" >"$T/want"
ok "$N" "$DSORT" -r -o "$T/out" "$T/skew.txt" &&
    same_records "dsort -r vs LC_ALL=C sort -r (ASCII skew)" 100 "$T/want" "$T/out"

# ASCII records with 5 distinct keys (the rest of each line, with its unique record number,
# is kept), in descending record-number order so that the whole-line order of equal keys is
# not their input order. Against GNU sort: whole-line order (GNU sort's last resort) without
# -s, and the key-only stable order with -s, -r -s and -u (sort -s -k1.1,1.10 on a field that
# is the whole line).
gen "$N" -a 5000 "$T/a.txt"
awk -v s="$SEED" '{ printf "KEY%07d%s\n", (NR * 7919 + s) % 5, substr($0, 11) }' "$T/a.txt" |
    tac >"$T/dup.txt"
eq "ASCII duplicate-key file size" 500000 "$(stat -c %s "$T/dup.txt")"
one=$(printf '\001')
ksort() { LC_ALL=C sort -s -t "$one" -k1.1,1.10 "$@" "$T/dup.txt"; }
if ties_by_position; then ksort; else LC_ALL=C sort "$T/dup.txt"; fi >"$T/want"
ok "$N" "$DSORT" -o "$T/out" "$T/dup.txt" &&
    same_records "dsort vs LC_ALL=C sort (ASCII, duplicate keys)" 100 "$T/want" "$T/out"
ksort >"$T/want"
ok "$N" "$DSORT" -s -o "$T/out" "$T/dup.txt" &&
    same_records "dsort -s vs sort -s -k1.1,1.10" 100 "$T/want" "$T/out"
if ties_by_position; then ksort | tac; else LC_ALL=C sort -r "$T/dup.txt"; fi >"$T/want"
ok "$N" "$DSORT" -r -o "$T/out" "$T/dup.txt" &&
    same_records "dsort -r vs LC_ALL=C sort -r (ASCII, duplicate keys)" 100 "$T/want" "$T/out"
ksort -r >"$T/want"
ok "$N" "$DSORT" -r -s -o "$T/out" "$T/dup.txt" &&
    same_records "dsort -r -s vs sort -s -r -k1.1,1.10" 100 "$T/want" "$T/out"
ksort -u >"$T/want"
eq "sort -u keeps one line per key" 5 "$(wc -l <"$T/want")"
ok "$N" "$DSORT" -u -o "$T/out" "$T/dup.txt" &&
    same_records "dsort -u vs sort -s -u -k1.1,1.10" 100 "$T/want" "$T/out"

suite_finish
