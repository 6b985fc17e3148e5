#!/bin/bash
# dsort -c/--check: exit 0 on sorted input (also empty, one record, equal keys, several files
# in order), 1 on disorder with one message naming the file and the first unordered record
# (within a rank's range, at a boundary between ranks' ranges, at the last record, between two
# files), -u finds duplicate keys, -r accepts reverse-sorted input, 2 on errors; -c writes
# nothing. Usage: check.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

re_escape() {
    printf '%s' "$1" | sed 's/[][\.*^$/+?(){}|]/\\&/g'
}

# sorted_ok OPTIONS FILE...: dsort -c OPTIONS FILE... exits 0 and prints nothing.
sorted_ok() {
    local opts=$1
    shift
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" -c $opts "$@" || return
    eq "dsort -c $opts on sorted input prints nothing" "" "$(cat "$T/stdout" "$T/stderr")"
}

# disorder OPTIONS FILE...: dsort -c exits 1, naming the file and record the oracle finds.
disorder() {
    local opts=$1 format=gensort
    shift
    local where
    # shellcheck disable=SC2086 # options are split on purpose
    where=$(py firstdisorder 100 0 10 "$(oracle_flags $opts)" "$@")
    [ "$where" != none ] || die "test bug: the oracle finds no disorder in $*"
    local path=${where% * *} rest=${where#"${where% * *} "}
    local idx=${rest%% *}
    # shellcheck disable=SC2086
    expect_rc 1 "$N" "$DSORT" -c $opts "$@" || return
    contains "dsort -c $opts names $path and record $idx" "$T/stderr" \
        "$(re_escape "$path").*record $idx([^0-9]|\$)"
    eq "dsort -c $opts prints one line" 1 "$(grep -c '^dsort:' "$T/stderr")"
    eq "dsort -c $opts prints nothing on stdout" "" "$(cat "$T/stdout")"
}

gen "$N" -b $((SEED % 1000000)) 5000 "$T/bin.dat"
py sort "$T/sorted.dat" 100 0 10 - "$T/bin.dat"
py reverse 100 "$T/sorted.dat" "$T/reversed.dat"
sorted_ok "" "$T/sorted.dat"
sorted_ok "-u" "$T/sorted.dat"
sorted_ok "-r" "$T/reversed.dat"
disorder "" "$T/reversed.dat"
disorder "-r" "$T/sorted.dat"
disorder "" "$T/bin.dat"
disorder "" "$REF/bin-1000.dat"
contains "dsort -c on the reference names record 2 (as valsort)" "$T/stderr" "record 2([^0-9]|\$)"

# One swapped pair: at the start, at each boundary between the ranks' ranges, at the end.
positions="0 4998"
for ((r = 1; r < N; r++)); do positions+=" $((5000 * r / N - 1))"; done
for p in $positions; do
    py swap 100 "$T/sorted.dat" "$T/swapped-$p.dat" "$p" $((p + 1))
    disorder "" "$T/swapped-$p.dat"
done

# Several files: in order, with an empty one between; out of order at the boundary.
head -c 200000 "$T/sorted.dat" >"$T/s1.dat"
tail -c +200001 "$T/sorted.dat" >"$T/s2.dat"
: >"$T/empty.dat"
sorted_ok "" "$T/s1.dat" "$T/empty.dat" "$T/s2.dat"
disorder "" "$T/s2.dat" "$T/s1.dat"
disorder "" "$T/s1.dat" "$T/s1.dat"
sorted_ok "" "$T/empty.dat"
head -c 100 "$T/bin.dat" >"$T/one.dat"
sorted_ok "" "$T/one.dat"
sorted_ok "-u" "$T/one.dat" "$T/empty.dat"

# Equal keys: in order for -c and -c -s; -u finds the duplicates. Records whose whole-record
# order is not their input order are unsorted without -s (GNU sort -c's last resort).
py mk "$T/equal.dat" 100 0 10 3000 equal "$SEED"
sorted_ok "-s" "$T/equal.dat"
sorted_ok "-r -s" "$T/equal.dat"
disorder "-u" "$T/equal.dat"
contains "dsort -c -u on equal keys names record 1" "$T/stderr" "record 1([^0-9]|\$)"
py sort "$T/equal.sorted" 100 0 10 - "$T/equal.dat"
sorted_ok "" "$T/equal.sorted"
if ties_by_position; then
    sorted_ok "" "$T/equal.dat"
else
    py reverse 100 "$T/equal.sorted" "$T/equal.rsorted"
    sorted_ok "-r" "$T/equal.rsorted"
    why="  (all keys equal, records not in whole-record order: dsort without -s would reorder them
  (GNU sort's last resort), so dsort -c must report disorder, as GNU sort -c does)"
    expect_rc 1 "$N" "$DSORT" -c "$T/equal.dat" || echo "$why" >&2
    expect_rc 1 "$N" "$DSORT" -c "$T/equal.rsorted" || echo "$why" >&2
fi
py mk "$T/dup.dat" 100 0 10 3000 dup "$SEED"
py sort "$T/dup.sorted" 100 0 10 s "$T/dup.dat"
sorted_ok "-s" "$T/dup.sorted"
disorder "-u" "$T/dup.sorted"

# A fixed format.
py mk "$T/f.dat" 32 4 8 3000 dup "$SEED"
py sort "$T/f.sorted" 32 4 8 s "$T/f.dat"
ok "$N" "$DSORT" -c -s --format fixed:32:4:8 "$T/f.sorted"
expect_rc 1 "$N" "$DSORT" -c -s --format fixed:32:4:8 "$T/f.dat"

# Errors: exit 2.
expect_rc 2 "$N" "$DSORT" -c "$T/missing.dat" &&
    contains "dsort -c on a missing file names a rank" "$T/stderr" "^dsort: rank [0-9]+/$N "
head -c 150 "$T/bin.dat" >"$T/odd.dat"
expect_rc 2 "$N" "$DSORT" -c "$T/odd.dat"
expect_rc 2 "$N" "$DSORT" -c "$T"

suite_finish
