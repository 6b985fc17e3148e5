# shellcheck shell=bash disable=SC2034 # variables set here are read by the scripts sourcing it
# Shared helpers of the end-to-end tests. Each tests/e2e/NAME.sh sources this file and takes the
# rank count as its first argument. The oracles here are independent of the code under test:
# python3's zlib.crc32 for checksums, a python3 stable sort or GNU sort for the order.
#
# The environment and the settings are tests/lib/check.sh's (DSORT_E2E_SEED, DSORT_E2E_KEEP,
# DSORT_E2E_TIMEOUT, default 60 s); the e2e tests also need DSORT_REFERENCE_DIR (gensort
# reference files and their README.md), and take
#   DSORT_E2E_TIES=position  expect equal keys in input order without -s too (see py sort)
#
# Assertions do not stop the script: each prints what failed, the command and the seed, and the
# script ends with suite_finish, which exits 1 if anything failed.

SUITE=e2e
# The settings, the set-up (suite_init), the assertions, run, gen and py (the oracle,
# tests/lib/oracle.py) are tests/lib/check.sh's.
# shellcheck source=../lib/check.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"

# ties_by_position: are equal keys expected in input order without -s (DSORT_E2E_TIES)?
ties_by_position() {
    [ "${DSORT_E2E_TIES:-record}" = position ]
}

# ref_checksum FILE: the checksum of a reference file, from $DSORT_REFERENCE_DIR/README.md.
ref_checksum() {
    awk -F'|' -v f="$1" '{ g = $2; gsub(/ /, "", g); if (g == f) { c = $5; gsub(/[ `]/, "", c); print c; exit } }' \
        "$REF/README.md"
}

# sums_equal WHAT RECSIZE "RECORDS CHECKSUM" FILE...: the record count and checksum of the
# FILEs (computed by python's zlib.crc32) equal the expected figures.
sums_equal() {
    local what=$1 size=$2 want=$3
    shift 3
    eq "$what: records and checksum (python zlib.crc32 sum)" "$want" "$(py sum "$size" "$@")"
}

# fmt_args FORMAT: "size keyoff keylen" of a --format value.
fmt_args() {
    case $1 in
    gensort) echo "100 0 10" ;;
    fixed:*) echo "$1" | awk -F: '{ print $2, $3, $4 }' ;;
    *) die "fmt_args: $1" ;;
    esac
}

# sort_check N FORMAT "OPTIONS" INPUT...: run dsort with OPTIONS and -o, compare the output
# byte for byte with the python oracle's (a permutation of the input records, so this also
# checks the count and the checksum), and run dsort-validate with the matching options. The
# output is left in $T/sorted.out, the dsort command in $SORT_CMD. sort_cmp: the same without
# dsort-validate.
sort_check() {
    SORT_VALIDATE=1 sort_run "$@"
}

sort_cmp() {
    SORT_VALIDATE=0 sort_run "$@"
}

sort_run() {
    local n=$1 format=$2 opts=$3
    shift 3
    local size keyoff keylen flags vopts=()
    read -r size keyoff keylen <<<"$(fmt_args "$format")"
    # shellcheck disable=SC2086
    flags=$(oracle_flags $opts)
    rm -f "$T/sorted.out" "$T/oracle.out"
    py sort "$T/oracle.out" "$size" "$keyoff" "$keylen" "$flags" "$@" ||
        die "python oracle failed on $*"
    # shellcheck disable=SC2086
    ok "$n" "$DSORT" --format "$format" $opts -o "$T/sorted.out" "$@" || return 1
    SORT_CMD=$LAST_CMD
    eq "files left in \$TMPDIR ($TMPDIR) after dsort" "" "$(ls -A "$TMPDIR")"
    same_records "dsort $opts --format $format" "$size" "$T/oracle.out" "$T/sorted.out" || return 1
    [ "$SORT_VALIDATE" = 1 ] || return 0
    [[ "$flags" == *r* ]] && vopts+=(-r)
    [[ "$flags" == *u* ]] && vopts+=(-u)
    ok "$n" "$VALIDATE" --format "$format" "${vopts[@]}" "$T/sorted.out" || return 1
    contains "dsort-validate says SUCCESS" "$T/stdout" '^SUCCESS' || return 1
}

# dir_state DIR: a listing of DIR (names, sizes, modes), to check that a failed run left
# nothing behind, hidden files included.
dir_state() {
    (cd "$1" && find . -mindepth 1 -maxdepth 2 -printf '%p %s %m %y\n' | LC_ALL=C sort)
}

# file_state FILE...: content hash, size, mode and mtime of each FILE.
file_state() {
    local f
    for f in "$@"; do
        if [ -f "$f" ]; then
            printf '%s %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$(stat -c '%s %a %Y.%y' "$f")"
        else
            stat -c '%n %F %a' "$f" 2>&1
        fi
    done
}

