#!/bin/bash
# Bad input: each case exits 2 within seconds with one line naming the rank ("dsort: rank R/N
# (host): ...") and the cause, leaves no output and no temporary file beside it, and leaves the
# inputs untouched. Usage errors are printed once, by rank 0. Usage: badinput.sh NRANKS
# (registered at -n 1 and -n 3). Unreadable files: the tests run as root, which reads a mode
# 000 file, so those cases run under setpriv without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
# (skipped, with a note, where setpriv cannot drop them).
# With more than one rank, keep mpirun's default kill delay (see lib.sh): the ranks that did
# not fail get SIGTERM and 1 s to clean up, as users' jobs do.
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=30

IN=$T/in
OUT=$T/out
mkdir -p "$IN/dir" "$OUT/nonempty" "$T/ro"
gen 1 2000 "$IN/good.dat"
head -c 12345 "$IN/good.dat" >"$IN/odd.dat"
ln -s "$IN/nowhere.dat" "$IN/dangling.dat"
ln -s loop2.dat "$IN/loop1.dat"
ln -s loop1.dat "$IN/loop2.dat"
ln "$IN/good.dat" "$IN/hard.dat"
ln -s good.dat "$IN/sym.dat"
cp "$IN/good.dat" "$IN/unreadable.dat"
chmod 000 "$IN/unreadable.dat"
chmod 555 "$T/ro"
touch "$OUT/nonempty/file"

# Can we take away root's right to read a mode 000 file?
NOCAP=()
if ! cat "$IN/unreadable.dat" >/dev/null 2>&1; then
    NOCAP=(env) # not root: mode 000 already stops us
elif setpriv --bounding-set -dac_override,-dac_read_search true 2>/dev/null &&
    ! setpriv --bounding-set -dac_override,-dac_read_search cat "$IN/unreadable.dat" >/dev/null 2>&1; then
    # shellcheck disable=SC2054 # the comma-separated list is one argument
    NOCAP=(setpriv --bounding-set -dac_override,-dac_read_search)
fi

before_in=$(file_state "$IN"/*.dat; dir_state "$IN")
before_out=$(dir_state "$OUT")
before_ro=$(dir_state "$T/ro")

# bad KIND REGEX ARGS...: dsort ARGS exits 2 with one line matching REGEX; KIND "rank" wants
# the line to name the rank, "usage" a line printed once (by rank 0).
bad() {
    local kind=$1 regex=$2
    shift 2
    run "$N" "$DSORT" "$@"
    CHECKS=$((CHECKS + 1))
    if [ "$RC" -ne 2 ]; then
        fail "exit status $RC, expected 2$([ "$RC" -eq 124 ] && echo " (timed out after ${E2E_TIMEOUT}s)")"
        show_output
    fi
    [ "$ELAPSED_MS" -lt 20000 ]
    check $? "took ${ELAPSED_MS} ms; an error must come within seconds"
    local lines
    if [ "$kind" = rank ]; then
        lines=$(grep -c rank "$T/stderr")
        eq "lines of stderr that name a rank" 1 "$lines" || sed 's/^/  | /' "$T/stderr" >&2
        contains "the error names the rank and the cause" "$T/stderr" \
            "^dsort: rank [0-9]+/$N \([^)]+\): .*$regex"
    else
        lines=$(grep -c '^dsort:' "$T/stderr")
        eq "usage error lines (printed once, by rank 0)" 1 "$lines" || sed 's/^/  | /' "$T/stderr" >&2
        contains "the usage error names the cause" "$T/stderr" "^dsort: .*$regex"
    fi
    eq "nothing on stdout" "" "$(head -c 300 "$T/stdout")"
    eq "the inputs and their directory are unchanged" "$before_in" "$(file_state "$IN"/*.dat; dir_state "$IN")"
    eq "the output directory is unchanged (no output, no temporary files)" "$before_out" "$(dir_state "$OUT")"
    eq "the read-only directory is unchanged" "$before_ro" "$(dir_state "$T/ro")"
    eq "files left in \$TMPDIR" "" "$(ls -A "$TMPDIR")"
}

# bad_nocap: bad, with the whole job under $NOCAP (through a wrapper of mpiexec).
bad_nocap() {
    local saved=$MPIEXEC
    MPIEXEC=$T/mpiexec-nocap
    printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$(printf '%q ' "${NOCAP[@]}")" "$saved" >"$MPIEXEC"
    chmod +x "$MPIEXEC"
    bad "$@"
    MPIEXEC=$saved
}

o=$OUT/sorted.dat
# Inputs.
bad rank "nowhere|missing.dat.*No such file" "$IN/missing.dat" -o "$o"
bad rank "dangling.dat.*No such file" "$IN/dangling.dat" -o "$o"
bad rank "loop1.dat.*Too many levels of symbolic links" "$IN/loop1.dat" -o "$o"
bad rank "missing.dat.*No such file" "$IN/good.dat" "$IN/missing.dat" -o "$o"
if [ ${#NOCAP[@]} -gt 0 ]; then
    bad_nocap rank "unreadable.dat.*Permission denied" "$IN/unreadable.dat" -o "$o"
    bad_nocap rank "Permission denied" "$IN/good.dat" -o "$T/ro/sorted.dat"
    bad_nocap rank "Permission denied" "$IN/good.dat" -O "$T/ro/d"
else
    echo "note: skipped the unreadable-input and read-only-directory cases: running as root and setpriv cannot drop CAP_DAC_OVERRIDE"
fi
bad rank "dir.*is a directory" "$IN/dir" -o "$o"
bad rank "odd.dat.*12345 bytes is not a whole number of 100-byte records" "$IN/odd.dat" -o "$o"
bad rank "odd.dat.*12345 bytes is not a whole number of 100-byte records" "$IN/good.dat" "$IN/odd.dat" -O "$OUT/d"
bad rank "good.dat.*200000 bytes is not a whole number of 30-byte records" --format fixed:30:0:8 "$IN/good.dat" -o "$o"
# Outputs.
bad rank "nonexistent-dir" "$IN/good.dat" -o /nonexistent-dir/out
bad rank "Not a directory" "$IN/good.dat" -o "$IN/good.dat/out"
bad rank "Not a directory" "$IN/good.dat" -O "$IN/good.dat/d"
bad rank "nonempty.*not empty" "$IN/good.dat" -O "$OUT/nonempty"
bad rank "good.dat" "$IN/good.dat" -O "$IN/good.dat"
bad rank "No such file" "$IN/good.dat" -O "$OUT/no/such/dir"
# Output equal to an input, spelled the same or not: sorting in place (tests/e2e/inplace.sh),
# refused where the checkpoint names the inputs, and with --local-inputs.
IP="also an input: sorting in place does not go with"
bad rank "$IP --checkpoint, --stop-after or --resume" --checkpoint "$IN/good.dat" -o "$IN/good.dat"
bad rank "$IP --checkpoint, --stop-after or --resume" --stop-after 1 "$IN/good.dat" -o "$IN/../in/./good.dat"
bad rank "$IP --checkpoint, --stop-after or --resume" --resume "$IN/good.dat" -o "$IN/hard.dat"
bad rank "$IP --local-inputs" --local-inputs "$IN/good.dat" -o "$IN/sym.dat"
fails_before=$FAILS
(
    cd "$IN" || exit 1
    bad rank "$IP --checkpoint" --checkpoint good.dat -o ./good.dat
    bad rank "$IP --checkpoint" --resume ./good.dat -o good.dat
    exit $((FAILS > fails_before))
) || FAILS=$((FAILS + 1))
# Option values and usage: printed once (by rank 0), exit 2.
OMPI_MCA_odls_base_sigkill_timeout=0 # nothing to clean up: skip mpirun's 2 s kill delay
export OMPI_MCA_odls_base_sigkill_timeout
bad usage "fixed:0:0:0" --format fixed:0:0:0 "$IN/good.dat" -o "$o"
bad usage "fixed:10:5:6" --format fixed:10:5:6 "$IN/good.dat" -o "$o"
bad usage "nonsense" --format nonsense "$IN/good.dat" -o "$o"
bad usage "'0'" -S 0 "$IN/good.dat" -o "$o"
bad usage "'abc'" -S abc "$IN/good.dat" -o "$o"
bad usage "exchange-chunk" --exchange-chunk 0 "$IN/good.dat" -o "$o"
bad usage "exchange-chunk" --exchange-chunk -5 "$IN/good.dat" -o "$o"
bad usage "bogus" --bogus "$IN/good.dat" -o "$o"
bad usage "-o|-O" "$IN/good.dat" -o "$o" -O "$OUT/d"
bad usage "--local-inputs does not go with standard input" --local-inputs - "$IN/good.dat" -o "$o"
bad usage "-c|output" -c "$IN/good.dat" -o "$o"
# Empty names: refused before any work (GNU's words for -o ''), not at the commit.
bad usage "open failed: '': No such file or directory" "$IN/good.dat" -o ""
bad usage "output directory's name is empty" "$IN/good.dat" -O ""
bad usage "--stats: the file's name is empty" "$IN/good.dat" -o "$o" --stats ""

suite_finish
