#!/bin/bash
# Inputs that are not what their size says (issue 25, items 2 and 3).
#   - Files whose stat size is 0 (/proc) or a nominal 4096 (/sys) but that hold other content:
#     dsort reads them to their end, as standard input (rank 0's copy), never as empty. Sorted
#     (-o, standard output, with a regular file and standard input beside them), the output is
#     byte-identical to GNU sort's of the same content; -c on an unsorted /proc file exits 1 with
#     GNU's message naming it; where no copy can be made (--local-inputs) the job is refused,
#     naming the file.
#   - Text lines under the default format (gensort's 100-byte records): a text file whose size is
#     a multiple of 100 is refused (exit 2, naming the file and --format lines, nothing
#     committed), by sort and by -c, as a first or a later input, and from standard input; with
#     --format gensort or fixed:... it is sorted as records all the same; a size that is not a
#     multiple names --format lines too. gensort's binary and ASCII records (the latter are
#     100-byte lines) still sort by default.
# The content oracle reads the /proc and /sys files itself just before and after the job (a
# case whose file changed meanwhile is skipped). Usage: inputkinds.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
FAULTS_SUFFIX=.n$1
faults_init "$1"
data mem
export LC_ALL=C

# snapshot FILE...: their content, concatenated, into $C/content (and $C/content.1 again after
# the job: stable_or_skip compares).
snapshot() {
    cat "$@" >"$C/content${SNAP:-}" 2>/dev/null
}
stable_or_skip() {
    SNAP=.1 snapshot "$@"
    cmp -s "$C/content" "$C/content.1" || case_skip "$* changed during the case"
}

# run_stdin FILE N ARGS...: run_job with standard input from FILE.
run_stdin() {
    local from=$1 n=$2
    shift 2
    LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $n $DSORT $* <$from"
    T_START=$(date +%s%N)
    "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$n" "$DSORT" "$@" <"$from" >"$T/stdout" 2>"$T/stderr" &
    JOB=$!
    wait_end "$T_START"
}

# same_as GNU-ARGS -- FILE: FILE is byte-identical to LC_ALL=C sort GNU-ARGS.
same_as() {
    local args=()
    while [ "$1" != -- ]; do
        args+=("$1")
        shift
    done
    sort "${args[@]}" >"$C/want" 2>/dev/null || die "GNU sort ${args[*]} failed"
    same_file "the output, against GNU sort" 1 "$C/want" "$2"
}

PROC=/proc/filesystems # stable on a running system, several lines, not in order
[ -r "$PROC" ] && [ "$(stat -c %s "$PROC")" = 0 ] && [ "$(wc -l <"$PROC")" -gt 2 ] ||
    die "$PROC is not a multi-line file of size 0 here"
# /sys files of a nominal size (4096) with a short content
SYS=()
for f in /sys/devices/system/cpu/online /sys/devices/system/cpu/possible \
    /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
    /sys/power/state; do
    [ -r "$f" ] && [ "$(stat -c %s "$f")" -gt "$(wc -c <"$f")" ] && SYS+=("$f")
done

echo "== files whose size is not their content"
case_begin "a /proc file (stat size 0) sorted to -o" "lines, /proc" \
    "exit 0; output = GNU sort of its content"
snapshot "$PROC"
out_setup o-new
run_job "$N" --format lines -T "$C/tmp" -o "$OUT_FINAL" "$PROC"
stable_or_skip "$PROC"
check_exit 0
same_as "$C/content" -- "$OUT_FINAL"
note "$(wc -l <"$C/content") lines, output $(wc -l <"$OUT_FINAL" 2>/dev/null) lines"
eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
case_end

case_begin "a /proc file, a regular file and standard input, to standard output" \
    "lines, /proc + file + stdin" "exit 0; output = GNU sort of the three"
head -n 500 "$MEM_REF" | tac >"$C/regular.txt"
printf 'zeta\nalpha\nnodev\tzzz\n' >"$C/stdin.txt"
snapshot "$PROC"
run_stdin "$C/stdin.txt" "$N" --format lines -T "$C/tmp" "$C/regular.txt" "$PROC" -
stable_or_skip "$PROC"
check_exit 0
cat "$C/regular.txt" "$C/content" "$C/stdin.txt" >"$C/all"
same_as "$C/all" -- "$T/stdout"
eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
case_end

case_begin "-c on an unsorted /proc file" "lines -c, /proc" \
    "exit 1; GNU's 'FILE:LINE: disorder' naming the /proc file"
snapshot "$PROC"
run_job "$N" --format lines -T "$C/tmp" -c "$PROC"
stable_or_skip "$PROC"
check_exit 1
sort -c "$C/content" 2>"$C/gnu.err"
want=$(sed -e 's/^sort: //' -e "s|$C/content|$PROC|" "$C/gnu.err")
eq "the disorder line, as GNU's" "dsort: $want" "$(grep -m1 disorder "$T/stderr")"
note "\"$(grep -m1 disorder "$T/stderr" | tr '\t' ' ')\""
eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
case_end

case_begin "/sys files (stat size 4096, content shorter) sorted to -O" "lines, /sys" \
    "exit 0; output = GNU sort of their content"
if [ ${#SYS[@]} -lt 2 ]; then
    case_skip "fewer than two /sys files of a nominal size here"
else
    snapshot "${SYS[@]}"
    out_setup O
    run_job "$N" --format lines -T "$C/tmp" -O "$OUT_FINAL" "${SYS[@]}"
    stable_or_skip "${SYS[@]}"
    check_exit 0
    cat "$OUT_FINAL"/part-* >"$C/joined" 2>/dev/null
    same_as "$C/content" -- "$C/joined"
    note "${#SYS[@]} files"
fi
case_end

case_begin "a /proc file with --local-inputs (no copy possible)" "lines --local-inputs, /proc" \
    "exit 2; error naming rank and file; nothing committed"
out_setup O
run_job "$N" --format lines -T "$C/tmp" --local-inputs -O "$OUT_FINAL" "$PROC"
check_exit 2
check_rank_line "'$PROC': its size .* is not what it holds"
check_final
check_no_temps
case_end

case_begin "a /proc file of text under the default format" "gensort, /proc" \
    "exit 2; error naming the file and --format lines; nothing committed"
out_setup o-old
run_job "$N" -T "$C/tmp" -o "$OUT_FINAL" "$PROC"
check_exit 2
check_rank_line "'$PROC'.*--format lines"
check_final
check_no_temps
case_end

echo "== text lines under the default format (gensort records)"
# Text of about 100 KB whose size is a multiple of 100.
python3 - "$SEED" "$T/text.txt" <<'EOF'
import random, sys
r = random.Random(int(sys.argv[1]))
lines = []
while True:
    lines.append("".join(r.choice("abcdefghij klmnop") for _ in range(r.randint(1, 40))))
    s = "\n".join(lines) + "\n"
    if len(s) >= 100000 and len(s) % 100 == 0:
        break
open(sys.argv[2], "w").write(s)
EOF
# The same text sorted as 100-byte records (key, then the whole record: the order of whole
# records).
python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(b"".join(sorted(d[i:i + 100] for i in range(0, len(d), 100))))
' "$T/text.txt" >"$T/text.records"
head -c 12345 "$T/text.txt" >"$T/odd.txt"
gen 1 2000 "$T/bin.dat" || suite_finish
python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(b"".join(sorted(d[i:i + 100] for i in range(0, len(d), 100))))
' "$T/bin.dat" >"$T/bin.ref"

for kind in o-new O; do
    case_begin "a text file (size a multiple of 100) sorted with no --format ($kind)" "gensort" \
        "exit 2; error naming the file and --format lines; nothing committed"
    out_setup "$kind"
    run_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "$T/text.txt"
    check_exit 2
    check_rank_line "'$T/text.txt' looks like text lines.*--format lines"
    check_final
    check_no_temps
    case_end
done

case_begin "a text file as a later input (looked at by another rank)" "gensort, 3 inputs" \
    "exit 2; error naming the text file and --format lines; nothing committed"
out_setup o-old
run_job "$N" -T "$C/tmp" -o "$OUT_FINAL" "$SMALL" "$T/text.txt" "$T/bin.dat"
check_exit 2
check_rank_line "'$T/text.txt' looks like text lines.*--format lines"
check_final
check_no_temps
case_end

case_begin "-c on a text file with no --format" "gensort -c" \
    "exit 2 (not 0 or 1); error naming the file and --format lines"
run_job "$N" -T "$C/tmp" -c "$T/text.txt"
check_exit 2
check_rank_line "'$T/text.txt' looks like text lines.*--format lines"
case_end

case_begin "text on standard input with no --format" "gensort, stdin" \
    "exit 2; error naming '-' and --format lines; nothing on standard output"
run_stdin "$T/text.txt" "$N" -T "$C/tmp"
check_exit 2
check_rank_line "'-' looks like text lines.*--format lines"
eq "bytes on standard output" 0 "$(wc -c <"$T/stdout")"
eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
case_end

case_begin "a text file whose size is no multiple of 100, no --format" "gensort" \
    "exit 2; the size error names --format lines"
out_setup o-new
run_job "$N" -T "$C/tmp" -o "$OUT_FINAL" "$T/odd.txt"
check_exit 2
check_rank_line "odd.txt.*12345 bytes is not a whole number of 100-byte records.*--format lines"
check_final
case_end

for fmt in gensort fixed:100:0:10; do
    case_begin "a text file with an explicit --format $fmt" "$fmt" \
        "exit 0; sorted as 100-byte records (python's order of the records)"
    out_setup o-new
    run_job "$N" --format "$fmt" -T "$C/tmp" -o "$OUT_FINAL" "$T/text.txt"
    check_exit 0
    same_file "the records, sorted" 100 "$T/text.records" "$OUT_FINAL"
    case_end
done

case_begin "-c on a text file with an explicit --format gensort" "gensort -c" \
    "exit 1 (a disorder), not refused"
run_job "$N" --format gensort -T "$C/tmp" -c "$T/text.txt"
check_exit 1
contains "the disorder line" "$T/stderr" "text.txt:record [0-9]+: disorder"
case_end

case_begin "gensort binary and ASCII records (ASCII: 100-byte lines) with no --format" \
    "gensort" "exit 0; output = the records sorted"
out_setup o-new
run_job "$N" -T "$C/tmp" -o "$OUT_FINAL" "$SMALL"
check_exit 0
same_file "ASCII records, against GNU sort" 100 "$SMALL_REF" "$OUT_FINAL"
rm -f "$OUT_FINAL"
run_job "$N" -T "$C/tmp" -o "$OUT_FINAL" "$T/bin.dat"
check_exit 0
same_file "binary records, against python" 100 "$T/bin.ref" "$OUT_FINAL"
run_job "$N" -T "$C/tmp" -c "$SMALL_REF"
check_exit 0
case_end

suite_finish
