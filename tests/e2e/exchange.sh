#!/bin/bash
# The exchange in many rounds: --exchange-chunk 1000 (bytes), and chunks that are smaller than
# a record or not a multiple of it (1, 150), on gensort, skewed and fixed:8:0:8 data; the
# stats' exchange_rounds must be at least what the traffic needs at that chunk, and the
# output correct; and the copying path's sort a bucket at a time, whatever it sorts first.
# Usage: exchange.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# chunked CHUNK FORMAT OPTIONS INPUT [any]: sort with the chunk; check the rounds and the
# output. Unless "any" is given, the data must need several rounds when N > 1 (records move).
chunked() {
    local chunk=$1 format=$2 opts=$3 input=$4 any=${5:-}
    rm -f "$T/stats.json"
    sort_check "$N" "$format" "$opts --exchange-chunk $chunk --stats $T/stats.json" "$input" || return
    LAST_CMD=$SORT_CMD
    local r rounds lower
    r=$(py rounds "$T/stats.json" "$chunk" 2>&1)
    check $? "--exchange-chunk $chunk: $r"
    read -r rounds lower <<<"$r"
    [ "${rounds:-0}" -ge "${lower:-1}" ]
    check $? "--exchange-chunk $chunk: exchange_rounds is $rounds; the bytes sent need at least $lower"
    if [ "$N" -gt 1 ] && [ -z "$any" ]; then
        [ "${lower:-0}" -ge 2 ]
        check $? "--exchange-chunk $chunk: the test data needs only ${lower:-?} exchange rounds; it should need several"
    fi
}

gen "$N" -b $((SEED % 1000000)) 8000 "$T/bin.dat"
sum=$GEN_SUM
chunked 1000 gensort "" "$T/bin.dat"
sums_equal "--exchange-chunk 1000 vs dsort-gen -c" 100 "8000 $sum" "$T/sorted.out"
chunked 150 gensort "-r" "$T/bin.dat"
# records (not entries) in rounds: the input copied, not mapped
chunked 1000 gensort "--no-map" "$T/bin.dat"
# the copying path's gathered sends in parts of whole records: a chunk of 1.5 records
chunked 150 gensort "--no-map -s" "$T/bin.dat"
# 200 records: at 1 byte a message that is 10000 rounds per peer (each a handful of
# microseconds alone, far more when the machine is loaded: 100000 bytes timed out once).
head -c 20000 "$T/bin.dat" >"$T/small.dat"
chunked 1 gensort "" "$T/small.dat"
gen "$N" -s 8000 "$T/skew.dat"
chunked 1000 gensort "" "$T/skew.dat"
py mk "$T/f8.dat" 8 0 8 20000 dup "$SEED"
chunked 1000 fixed:8:0:8 "" "$T/f8.dat"
chunked 1000 fixed:8:0:8 "--no-map" "$T/f8.dat" # records shorter than the sort's entries
py mk "$T/equal.dat" 100 0 10 5000 equal "$SEED"
chunked 1000 gensort "-s" "$T/equal.dat" any  # in place already: may send nothing
# The copying path's sort is finished a bucket (of the first key byte) at a time, as the sends
# and the merge want the entries: every bucket sorted before the exchange (DSORT_COPY_EAGER=0),
# the ones above the mean bucket (about half of them), none (the default at this size); skewed
# keys, -r, and keys longer than the sort's 10-byte prefix (ties settled by the whole key).
gen "$N" -s 40000 "$T/skew40.dat"
for e in 0 $((40000 / N / 256)); do
    DSORT_COPY_EAGER=$e sort_check "$N" gensort "--no-map --exchange-chunk 1000" "$T/skew40.dat"
    DSORT_COPY_EAGER=$e sort_check "$N" gensort "--no-map -r" "$T/bin.dat"
done
# Its splitters come from a sample of every share (DSORT_COPY_SAMPLES, a testing aid, caps it):
# with one sample a rank the pieces are far from balanced, and with none anywhere every record
# goes to the last rank, whose receive region cannot hold them (a buffer of their own).
for s in 1 0; do
    DSORT_COPY_SAMPLES=$s sort_check "$N" gensort "--no-map --exchange-chunk 1000 --stats $T/smp.json" \
        "$T/skew40.dat" || continue
    if [ "$s" != 0 ] || [ "$N" -le 1 ]; then continue; fi
    CHECKS=$((CHECKS + 1))
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["per_rank"]
assert [k["records_out"] for k in r] == [0] * (len(r) - 1) + [40000], [k["records_out"] for k in r]' \
        "$T/smp.json" 2>"$T/smp.err"
    check $? "DSORT_COPY_SAMPLES=0: not every record on the last rank: $(tail -n 1 "$T/smp.err")"
done
py mk "$T/p40.dat" 40 2 30 6000 prefix "$SEED"
sort_check "$N" fixed:40:2:30 "--no-map --exchange-chunk 1000" "$T/p40.dat"
DSORT_COPY_EAGER=$((6000 / N / 256)) sort_check "$N" fixed:40:2:30 "--no-map -s" "$T/p40.dat"
# DSORT_COPY_TWO_BUFFERS, the bench's comparison aid: 1 takes the old copying path (job_mem.c,
# with a merge phase of its own), 0 (as unset) the current one, which merges into the output.
if [ "$N" -gt 1 ]; then
    for v in 0 1; do
        DSORT_COPY_TWO_BUFFERS=$v ok "$N" "$DSORT" -v --no-map "$T/bin.dat" -o "$T/two.out" ||
            continue
        grep -Eq '^dsort: phase seconds.* merge [0-9]' "$T/stderr"
        merged=$?
        [ "$merged" = "$([ "$v" = 1 ] && echo 0 || echo 1)" ]
        check $? "DSORT_COPY_TWO_BUFFERS=$v: $([ "$v" = 1 ] && echo "no merge phase: not the old path" || echo "a merge phase: the old path")"
    done
fi
# -O with a small chunk.
rm -rf "$T/d"
ok "$N" "$DSORT" --exchange-chunk 1000 -O "$T/d" "$T/bin.dat" &&
    { errs=$(py manifest "$T/d" "$N" 100 8000 "$sum"); check $? "-O with --exchange-chunk 1000: $errs"; }

suite_finish
