#!/bin/bash
# --debug (GNU sort's key annotation): for inputs of tests/lines_gen.py's profiles (numbers,
# human sizes, months, CSV, mixed text with tabs, blanks and control bytes, versions, binary)
# and option sets that cover every key kind (-n -g -h -M -V, text keys with b d f i, -t, field
# and character positions, several keys, -s, -u, -r, -z, global options and none), dsort's
# standard output must be byte-identical to `LC_ALL=C sort --debug` of the same input: each line
# (tabs shown as '>'), a mark a key (blanks, then '_' a column, or "^ no match for key"), and
# the whole line unless -s or -u (without -k it is the key: marked once, -s and -u or not).
# rank 0 prints GNU's notes on stderr. --debug with -o, -O, -c or without --format lines is a
# usage error (exit 2), with nothing on standard output.
# -g runs on numbers without NaN (GNU sort 9.1 orders NaNs differently from run to run).
# Usage: debug.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"
export LC_ALL=C
RUN_FLAGS=(-q)

D=$T/data
mkdir -p "$D"
gen_py=$(dirname "$0")/../lines_gen.py
for prof in numbers human months csv mixed versions binary; do
    python3 "$gen_py" --seed "$SEED" --profile "$prof" --lines 300 >"$D/$prof" ||
        die "lines_gen.py --profile $prof failed"
done
grep -a -v -i nan "$D/numbers" >"$D/nonan"
# -g and NaNs: GNU sort 9.1 orders NaNs that differ only in spelling ("-NAN", "-nan()") by a
# memcmp of long doubles that includes their padding bytes, so its order of such ties is not
# even the same with and without --debug (seen: seed 864323747). The -g cases use inputs
# without NaNs.
grep -a -v -i nan "$D/csv" >"$D/csvnonan"
tr '\n' '\0' <"$D/mixed" >"$D/mixed.z"

# PROFILE|OPTIONS
specs=(
    "mixed|"
    "binary|"
    "numbers|-n"
    "nonan|-g"
    "human|-h"
    "months|-M"
    "versions|-V"
    "mixed|-r"
    "mixed|-b"
    "mixed|-b -k3"
    "mixed|-k2,2 -k1,1r"
    "mixed|-f -d"
    "binary|-i -k2"
    "csv|-t, -k2,2n -k1,1"
    "csvnonan|-t, -k3,3g -s"
    "human|-k1,1h -u"
    "numbers|-k1.2n,1.4"
    "months|-k1,1M -r"
    "nonan|-k1,1g -k2"
    "mixed.z|-z -k2"
    # No key: the whole line is the key, marked once even under -s or -u (GNU's debug_line).
    "mixed|-s"
    "mixed|-u"
    "mixed|-s -r"
    "mixed.z|-z -u"
    "mixed|-s -f"
)
for spec in "${specs[@]}"; do
    prof=${spec%%|*}
    opts=${spec#*|}
    # shellcheck disable=SC2086 # the options are words
    sort --debug $opts "$D/$prof" >"$T/want" 2>/dev/null || die "sort --debug $opts failed"
    # shellcheck disable=SC2086
    run "$N" "$DSORT" --format lines --debug $opts "$D/$prof"
    ok_status || continue
    CHECKS=$((CHECKS + 1))
    cmp -s "$T/want" "$T/stdout" ||
        fail "--debug $opts on $prof: differs from LC_ALL=C sort --debug (first: $(cmp "$T/want" "$T/stdout" 2>&1 | head -n 1))"
done

# The notes GNU sort prints on stderr (rank 0's, once).
run "$N" "$DSORT" --format lines --debug -k2,2n "$D/csv"
ok_status
eq "the C-locale note, once" 1 "$(grep -c '^dsort: text ordering performed using simple byte comparison$' "$T/stderr")"
eq "the numbers note, once" 1 "$(grep -c "^dsort: note numbers use '.' as a decimal point in this locale$" "$T/stderr")"
run "$N" "$DSORT" --format lines --debug -k2,2 "$D/csv"
eq "no numbers note without a numeric key" 0 "$(grep -c 'note numbers' "$T/stderr")"

# Usage errors: the annotated lines are not data.
for bad in "-o $T/out" "-O $T/outdir" "-c" "--format gensort"; do
    # shellcheck disable=SC2086
    run "$N" "$DSORT" --format lines --debug $bad "$D/csv"
    eq "--debug $bad: exit status" 2 "$RC"
    eq "--debug $bad: nothing on standard output" 0 "$(wc -c <"$T/stdout")"
    contains "--debug $bad: said" "$T/stderr" 'debug goes with --format lines and standard output'
done
CHECKS=$((CHECKS + 1))
[ ! -e "$T/out" ] && [ ! -e "$T/outdir" ] || fail "--debug with -o/-O wrote an output"

suite_finish
