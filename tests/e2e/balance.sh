#!/bin/bash
# Balance: with --stats, the largest rank's output is at most 1.05 x the average + 1 record, on
# uniform, skewed (dsort-gen -s), all-keys-equal and three-keys inputs, also with -r and -s;
# the stats account for every record; the output is correct. In memory (exact splitters; the
# copying path, --no-map, sampled ones as out of core) and
# out of core (--out-of-core -S 256K: sampled splitters, dsort_splitters_sample; of 20,000
# records a share of at most 4,096 is sampled whole, so that at 7 ranks the tolerance of the
# selection decides the balance, and at 2 and 3 the sample's error, about 1% of a share). Text lines too: lines whose keys are all equal under
# -s, and lines all the same, are cut by (line, input position) and spread over the ranks (as
# before, -u keeps equal keys on one rank). Usage: balance.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# balanced NAME RECORDS OPTIONS INPUT: sort with --stats, check the balance and the output.
balanced() {
    local name=$1 records=$2 opts=$3 input=$4
    rm -f "$T/stats.json"
    sort_cmp "$N" gensort "$opts --stats $T/stats.json" "$input" || return
    LAST_CMD=$SORT_CMD
    local fig max avg
    fig=$(py stats "$T/stats.json" "$N" "$records" 2>&1)
    check $? "$name ($opts): --stats figures are wrong: $fig"
    read -r max avg _ <<<"$fig"
    awk -v m="$max" -v a="$avg" 'BEGIN { exit !(m <= 1.05 * a + 1) }'
    check $? "$name ($opts): unbalanced: largest rank writes $max records, average $avg (limit 1.05 x average + 1); records_out per rank: $(echo "$fig" | cut -d' ' -f3-)"
}

gen "$N" -b $((SEED % 1000000)) 20000 "$T/uniform.dat"
balanced uniform 20000 "" "$T/uniform.dat"
gen "$N" -s 20000 "$T/skew.dat"
balanced skewed 20000 "" "$T/skew.dat"
balanced skewed 20000 "-r" "$T/skew.dat"
py mk "$T/equal.dat" 100 0 10 20000 equal "$SEED"
balanced all-keys-equal 20000 "" "$T/equal.dat"
balanced all-keys-equal 20000 "-s" "$T/equal.dat"
balanced all-keys-equal 20000 "-r" "$T/equal.dat"
py mk "$T/few.dat" 100 0 10 20000 few "$SEED"
balanced three-keys 20000 "" "$T/few.dat"
balanced three-keys 20000 "-r -s" "$T/few.dat"
# The copying path (--no-map: what ranks on several nodes take): splitters from a sample of each
# share, taken before the share is read.
balanced uniform 20000 "--no-map" "$T/uniform.dat"
balanced skewed 20000 "--no-map -r" "$T/skew.dat"
balanced all-keys-equal 20000 "--no-map" "$T/equal.dat"
balanced all-keys-equal 20000 "--no-map -s" "$T/equal.dat"
balanced three-keys 20000 "--no-map -r -s" "$T/few.dat"
# Keys periodic with a period of 8 records: samples evenly spaced over each share (at 2 ranks
# 8 records apart) all held one key, or weighed the keys unevenly (a rank got 1.12x the
# average at 2 ranks, 1.5x at 3, 1.1x at 7), and so did samples drawn one from each stretch of
# 2 or 3 whole records (1.1x at 7); both sampled paths draw them from stretches of n/4096
# records (dsort_job_sample_positions).
python3 -c 'import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(65536):
        f.write(bytes([65 + i % 8]) * 10 + os.urandom(90))' "$T/period8.dat"
balanced periodic 65536 "--no-map" "$T/period8.dat"
balanced periodic 65536 "--out-of-core -S 1M" "$T/period8.dat"

# lines_balanced NAME GNUOPTS DSORTOPTS INPUT: --format lines against LC_ALL=C sort GNUOPTS,
# and the balance of the lines each rank writes.
lines_balanced() {
    local name=$1 gopts=$2 dopts=$3 input=$4 lines fig max avg
    lines=$(wc -l <"$input")
    rm -f "$T/stats.json" "$T/sorted.out"
    # shellcheck disable=SC2086
    LC_ALL=C sort $gopts "$input" >"$T/oracle.out" || die "sort $gopts failed"
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" --format lines $gopts $dopts --stats "$T/stats.json" -o "$T/sorted.out" \
        "$input" || return
    cmp -s "$T/oracle.out" "$T/sorted.out"
    check $? "$name (lines $gopts $dopts): the output differs from LC_ALL=C sort $gopts"
    fig=$(py stats "$T/stats.json" "$N" "$lines" 2>&1)
    check $? "$name (lines $gopts $dopts): --stats figures are wrong: $fig"
    read -r max avg _ <<<"$fig"
    awk -v m="$max" -v a="$avg" 'BEGIN { exit !(m <= 1.05 * a + 1) }'
    check $? "$name (lines $gopts $dopts): unbalanced: largest rank writes $max lines, average $avg (limit 1.05 x average + 1); per rank: $(echo "$fig" | cut -d' ' -f3-)"
}

awk 'BEGIN { for (i = 0; i < 20000; i++) printf "k %d\n", (i * 7919) % 20000 }' >"$T/eqkey.txt"
awk 'BEGIN { for (i = 0; i < 20000; i++) print "the same line" }' >"$T/same.txt"
for dopts in "" "--out-of-core -S 64K"; do
    lines_balanced all-keys-equal "-s -k1,1" "$dopts" "$T/eqkey.txt"
    lines_balanced all-keys-equal "-s -k1,1 -r" "$dopts" "$T/eqkey.txt"
    lines_balanced all-lines-equal "" "$dopts" "$T/same.txt"
done

# -u: equal keys meet on one rank (to be made unique), but each rank sends only the first line
# of each run of equal keys in its chunk: all keys equal, the ranks receive a few lines, not
# the 20,000 (about 320 kB with their positions, as before).
rm -f "$T/stats.json" "$T/sorted.out"
LC_ALL=C sort -u -k1,1 "$T/eqkey.txt" >"$T/oracle.out"
for dopts in "" "--out-of-core -S 64K"; do
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" --format lines -u -k1,1 $dopts --stats "$T/stats.json" -o "$T/sorted.out" \
        "$T/eqkey.txt" || continue
    cmp -s "$T/oracle.out" "$T/sorted.out"
    check $? "all keys equal (lines -u -k1,1 $dopts): the output differs from LC_ALL=C sort -u -k1,1"
    recv=$(py st_sum "$T/stats.json" bytes_received)
    cond "all keys equal (lines -u -k1,1 $dopts): $recv bytes received by the ranks, at most 20 a rank and round" \
        "$recv <= 20 * $N * max(1, $(py st_max "$T/stats.json" rounds))"
done

# Shares over 2 MiB are sampled in windows, not whole: lines of 3 bytes in the first half and
# 43 in the second, all keys equal (-s -k1,1): each line must weigh the same in the sample.
if [ "$N" -le 3 ]; then
    awk 'BEGIN { for (i = 0; i < 400000; i++) print (i < 200000 ? "k " : "k xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx") }' >"$T/lens.txt"
    lines_balanced short-then-long "-s -k1,1" "" "$T/lens.txt"
fi

EXT="--out-of-core -S 256K"
balanced uniform 20000 "$EXT" "$T/uniform.dat"
balanced skewed 20000 "$EXT -r" "$T/skew.dat"
balanced all-keys-equal 20000 "$EXT" "$T/equal.dat"
balanced all-keys-equal 20000 "$EXT -s" "$T/equal.dat"
balanced three-keys 20000 "$EXT -r -s" "$T/few.dat"

suite_finish
