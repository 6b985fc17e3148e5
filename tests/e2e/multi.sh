#!/bin/bash
# Several input files of unequal sizes (empty ones included), given in order on the command
# line: binary gensort data (checksum against dsort-gen's), files whose keys collide (with -s
# or -u ties go by file order, then offset), the same file twice, and ASCII files checked
# against GNU sort of their concatenation. Usage: multi.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# Binary: sizes 777, 0, 1, 5000, 2, 0, 1234 from consecutive gensort slices, out of order.
b=$((SEED % 1000000))
files=()
total=0
sum=0
for c in 777 0 1 5000 2 0 1234; do
    f=$T/part-$((${#files[@]}))-$c.dat
    gen 1 -b $((b + total)) "$c" "$f"
    files+=("$f")
    total=$((total + c))
done
# The concatenation in generation order is one gensort file: compare its checksum with one run.
gen "$N" -b "$b" "$total" "$T/all.dat"
cat "${files[@]}" | cmp -s - "$T/all.dat"
check $? "slices made with -b do not concatenate to the whole file"
sum=$GEN_SUM
sort_check "$N" gensort "" "${files[@]}"
sums_equal "several files sorted vs dsort-gen -c of them all" 100 "$total $sum" "$T/sorted.out"
# The same files in another order give the same output (keys are unique).
cp "$T/sorted.out" "$T/sorted.first"
sort_cmp "$N" gensort "" "${files[6]}" "${files[3]}" "${files[0]}" "${files[1]}" "${files[4]}" "${files[2]}"
same_records "files in another order (unique keys)" 100 "$T/sorted.first" "$T/sorted.out"

# Colliding keys across files: with -s, -r -s and -u ties go by the file order of the command
# line, so swapping the files changes the output; without them ties go by whole record, so it
# does not.
py mk "$T/x.dat" 100 0 10 1500 few "$SEED"
py mk "$T/y.dat" 100 0 10 700 few "$((SEED + 1))"
py mk "$T/z.dat" 100 0 10 3 few "$((SEED + 2))"
: >"$T/empty.dat"
for opts in "" "-r" "-s" "-r -s" "-u"; do
    sort_cmp "$N" gensort "$opts" "$T/x.dat" "$T/empty.dat" "$T/y.dat" "$T/z.dat"
    cp "$T/sorted.out" "$T/xyz.out"
    sort_cmp "$N" gensort "$opts" "$T/z.dat" "$T/y.dat" "$T/x.dat" "$T/empty.dat"
    cmp -s "$T/xyz.out" "$T/sorted.out"
    same=$?
    if [[ "$opts" == *[su]* ]] || ties_by_position; then
        [ $same -ne 0 ]
        check $? "dsort $opts: swapping input files with equal keys did not change the output"
    else
        check $same "dsort $opts: swapping input files changed the output (ties go by whole record)"
    fi
done
# The same file twice: every record twice, first copy first.
sort_cmp "$N" gensort "" "$T/y.dat" "$T/y.dat"
sort_check "$N" gensort "-u" "$T/y.dat" "$T/y.dat"
sort_cmp "$N" gensort "-u" "$T/y.dat"
ok "$N" "$DSORT" -u -o "$T/u2.out" "$T/y.dat" "$T/y.dat" &&
    same_records "-u of a file twice equals -u of it once" 100 "$T/sorted.out" "$T/u2.out"

# ASCII: 3 files with keys from 5 values, given in an order whose record numbers do not
# increase; compare with GNU sort's stable key sort of the concatenation.
gen 1 -a 3000 "$T/a.txt"
awk -v s="$SEED" '{ printf "KEY%07d%s\n", (NR * 7919 + s) % 5, substr($0, 11) }' "$T/a.txt" >"$T/k.txt"
head -n 1000 "$T/k.txt" >"$T/k1.txt"
sed -n '1001,1100p' "$T/k.txt" >"$T/k2.txt"
tail -n +1101 "$T/k.txt" >"$T/k3.txt"
one=$(printf '\001')
cat "$T/k3.txt" "$T/k1.txt" "$T/k2.txt" | LC_ALL=C sort -s -t "$one" -k1.1,1.10 >"$T/want-s"
tac "$T/want-s" >"$T/want-s-tac"
cat "$T/k3.txt" "$T/k1.txt" "$T/k2.txt" | LC_ALL=C sort -s -r -t "$one" -k1.1,1.10 >"$T/want-rs"
LC_ALL=C sort "$T/k.txt" >"$T/want"
LC_ALL=C sort -r "$T/k.txt" >"$T/want-r"
if ties_by_position; then
    cp "$T/want-s" "$T/want"
    cp "$T/want-s-tac" "$T/want-r"
fi
ins=("$T/k3.txt" "$T/k1.txt" "$T/k2.txt")
ok "$N" "$DSORT" -o "$T/out" "${ins[@]}" &&
    same_records "ASCII files k3 k1 k2 vs LC_ALL=C sort" 100 "$T/want" "$T/out"
ok "$N" "$DSORT" -r -o "$T/out" "${ins[@]}" &&
    same_records "ASCII files k3 k1 k2, -r vs LC_ALL=C sort -r" 100 "$T/want-r" "$T/out"
ok "$N" "$DSORT" -s -o "$T/out" "${ins[@]}" &&
    same_records "ASCII files k3 k1 k2, -s vs cat | sort -s -k1.1,1.10" 100 "$T/want-s" "$T/out"
ok "$N" "$DSORT" -r -s -o "$T/out" "${ins[@]}" &&
    same_records "ASCII files k3 k1 k2, -r -s vs cat | sort -s -r -k1.1,1.10" 100 "$T/want-rs" "$T/out"

suite_finish
