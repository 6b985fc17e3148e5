#!/bin/bash
# Formats other than gensort out of core (issue 3, "Every format"): --format fixed:32:4:8
# (key inside the record) and fixed:8:0:8 (records shorter than 16 bytes, the whole record
# is the key), in every order, with a small budget so that every rank spills several runs,
# every other case under `ulimit -n 33` (a small merge fan-in: extra merge passes). Oracle: the python stable sort (byte identity), dsort-validate --format, nothing left in the
# temp dir, --stats out of core. Usage: fixedfmt.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

SPILL=$T/spill
mkdir -p "$SPILL" "$T/out"
orders=("" "-r" "-s" "-u" "-r -s" "-u -r")

# fmt_case FORMAT SIZE KEYOFF KEYLEN COUNT NKEYS: records with keys from a pool of NKEYS keys
# (duplicates on purpose), sorted out of core in every order.
fmt_case() {
    local fmt=$1 size=$2 ko=$3 kl=$4 count=$5 nkeys=$6
    local in=$T/in-$size.bin out=$T/out/sorted.bin stats=$T/out/stats.json opts o lim k=0
    py mkkeys "$in" "$size" "$ko" "$kl" "$count" "$nkeys" "$SEED" || die "mk failed"
    for opts in "${orders[@]}"; do
        read -ra o <<<"$opts"
        py sort "$T/want.bin" "$size" "$ko" "$kl" "$(oracle_flags "${o[@]}")" "$in" || die "oracle failed"
        rm -f "$out" "$stats"
        # shellcheck disable=SC2086
        # Every other case under a low descriptor limit: a small fan-in, extra merge passes.
        lim=64
        [ $((++k % 2)) = 0 ] && lim=33
        run_ulimit "$N" "$lim" "$DSORT" --format "$fmt" --out-of-core -S 2M --block-size 16K \
            -T "$SPILL" --stats "$stats" "${o[@]}" -o "$out" "$in"
        echo "  --format $fmt $opts: ulimit -n $lim: exit $RC, ${ELAPSED_MS} ms"
        ok_status || continue
        empty_dir "$fmt $opts: files left in the temp dir" "$SPILL"
        same_file "--format $fmt $opts: output vs python oracle" "$size" "$T/want.bin" "$out"
        read -r recs sum <<<"$(py sum "$size" "$T/want.bin")"
        validate "$N" "--format $fmt $(validate_flags "${o[@]}")" "$out" "$recs" "$sum"
        eq "--format $fmt $opts: --stats out_of_core" true "$(st "$stats" top out_of_core)"
        echo "    runs per rank: $(st "$stats" ranks runs); extra merge passes: $(st "$stats" ranks merge_passes)"
        cond "--format $fmt $opts: several runs (total $(st "$stats" sum runs))" \
            "$(st "$stats" sum runs) >= 4"
    done
}

fmt_case fixed:32:4:8 32 4 8 200000 20000
fmt_case fixed:8:0:8 8 0 8 400000 50000
suite_finish
