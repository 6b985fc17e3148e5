#!/bin/bash
# Balance: with --stats, the largest rank's output is at most 1.05 x the average + 1 record, on
# uniform, skewed (dsort-gen -s), all-keys-equal and three-keys inputs, also with -r and -s;
# the stats account for every record; the output is correct. In memory (exact splitters) and
# out of core (--out-of-core -S 256K: sampled splitters, dsort_splitters_sample; 20,000 records
# give every rank a sample of up to 4,096 of its records, so the tolerance of the selection,
# not the sampling, decides the balance). Usage: balance.sh NRANKS
. "$(dirname "$0")/lib.sh"
e2e_init "$1"

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

EXT="--out-of-core -S 256K"
balanced uniform 20000 "$EXT" "$T/uniform.dat"
balanced skewed 20000 "$EXT -r" "$T/skew.dat"
balanced all-keys-equal 20000 "$EXT" "$T/equal.dat"
balanced all-keys-equal 20000 "$EXT -s" "$T/equal.dat"
balanced three-keys 20000 "$EXT -r -s" "$T/few.dat"

e2e_finish
