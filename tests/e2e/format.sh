#!/bin/bash
# --format fixed:SIZE:KEYOFF:KEYLEN: a key not at offset 0 in records shorter than 100 bytes
# (fixed:32:4:8), records that are all key (fixed:8:0:8), keys longer than 10 bytes that share
# long prefixes (fixed:40:0:24), a 1-byte key in the last byte (fixed:13:12:1), against the
# python oracle, with -r, -s, -u, and dsort-validate's figures. Usage: format.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

# fmt_case FORMAT MODE COUNT OPTIONS...: make data, sort it with each option set.
fmt_case() {
    local format=$1 mode=$2 count=$3 size keyoff keylen
    shift 3
    read -r size keyoff keylen <<<"$(fmt_args "$format")"
    local f=$T/$mode-$size-$keyoff-$keylen.dat
    py mk "$f" "$size" "$keyoff" "$keylen" "$count" "$mode" "$SEED"
    local first=1 opts
    for opts in "$@"; do
        sort_cmp "$N" "$format" "$opts" "$f"
        if [ $first = 1 ]; then
            # dsort-validate's figures against python's on the sorted output.
            ok "$N" "$VALIDATE" --format "$format" "$T/sorted.out"
            read -r n sum <<<"$(py sum "$size" "$T/sorted.out")"
            contains "dsort-validate --format $format: records" "$T/stdout" "^Records: $n\$"
            contains "dsort-validate --format $format: checksum" "$T/stdout" "^Checksum: $sum\$"
            contains "dsort-validate --format $format: duplicate keys" "$T/stdout" \
                "^Duplicate keys: $(py dups "$size" "$keyoff" "$keylen" "$T/sorted.out")\$"
            contains "dsort-validate --format $format: success" "$T/stdout" "^SUCCESS"
            first=0
        fi
    done
}

fmt_case fixed:32:4:8 random 5000 "" "-r"
fmt_case fixed:32:4:8 dup 5000 "" "-s" "-r" "-u -r"
fmt_case fixed:8:0:8 random 5000 ""
fmt_case fixed:8:0:8 few 2000 "" "-u"
fmt_case fixed:40:0:24 prefix 4000 "" "-r -s" "-u"
fmt_case fixed:13:12:1 random 3000 "" "-r" "-s" "-u"

# gensort data under the equivalent fixed:100:0:10 gives the same output as the default.
gen "$N" 5000 "$T/g.dat"
sort_cmp "$N" gensort "" "$T/g.dat"
cp "$T/sorted.out" "$T/g.sorted"
sort_cmp "$N" fixed:100:0:10 "" "$T/g.dat"
same_records "fixed:100:0:10 vs gensort" 100 "$T/g.sorted" "$T/sorted.out"

suite_finish
