#!/bin/bash
# --progress: rank 0 says how far the job is on stderr (issue "Users").
#  - Not a terminal (a log), --progress=0 (a line at every step): in memory, out of core, text
#    lines in memory and out of core, each gives at least three percentages, rising, the last
#    "100% done"; only rank 0 writes them (one line per step, not one per rank); the output
#    is still right (python oracle; GNU sort for lines).
#  - In memory (mapped and --no-map) the line moves inside the sort, and carries an ETA.
#  - Text lines in memory (mapped): the line moves inside the read and inside the sort.
#  - --progress with its default interval (5 s) on a job shorter than that: just the 100% line.
#  - On a terminal (script(1) gives dsort a pty): the line is redrawn in place (carriage
#    returns, no newline until the end) and ends with a newline.
#  - No --progress: no progress line. A failed job (unreadable input) prints no 100%.
#  - Bad values are usage errors (exit 2): --progress=x, --progress=-1.
# Usage: progress.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=120
RUN_FLAGS=(-q)
export LC_ALL=C

# percents FILE: the percentages of the progress lines in FILE, one a line.
percents() {
    tr '\r' '\n' <"$1" | sed -nE 's/^dsort: (\[[0-9T:-]+\] )? *([0-9]+)% .*/\2/p'
}

# rising WHAT FILE: at least three percentages, never falling, the last 100 ("done").
rising() {
    local what=$1 p
    p=$(percents "$2" | tr '\n' ' ')
    CHECKS=$((CHECKS + 1))
    if ! python3 - "$p" <<'EOF'; then
import sys
p = [int(x) for x in sys.argv[1].split()]
sys.exit(0 if len(p) >= 3 and p == sorted(p) and p[-1] == 100 and p.count(100) == 1 else 1)
EOF
        fail "$what: progress percentages '$p' (want 3 or more, rising, one 100 at the end)"
        show_output
    fi
    contains "$what: the last line says done" "$2" '^dsort: (\[[0-9T:-]+\] )?100% done '
}

# logline WHAT FILE [TOTAL]: off a terminal every line starts with the time of day (as
# mpifileutils' do, for a Slurm log) and counts the input's bytes in decimal units, the units
# of -v and dsort-report: the last line's total is the input's size (TOTAL, when given).
logline() {
    contains "$1: a timestamp, the input's bytes, MB/s" "$2" \
        '^dsort: \[20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\] 100% done +[0-9.]+ [kMGT]?B of [0-9.]+ [kMGT]?B  [0-9.]+ [kMGT]?B/s  in [0-9]+:[0-9]{2}:[0-9]{2}$'
    [ -z "${3:-}" ] || contains "$1: the total is the input's size" "$2" "100% done +$3 of $3 "
}

gen "$N" 60000 "$T/in.dat"

# Fixed records in memory, then out of core (a small budget makes several rounds).
for mode in memory external; do
    opts="--progress=0"
    [ $mode = external ] && opts="$opts -S 2M"
    sort_cmp "$N" gensort "$opts" "$T/in.dat" # (sort_check's dsort-validate would take stderr)
    cp "$T/stderr" "$T/progress.$mode"
    rising "gensort $mode" "$T/progress.$mode"
    logline "gensort $mode" "$T/progress.$mode" "6.00 MB"
done

# Movement inside the in-memory passes (issue 29 item 11): the sort moves the line between its
# start (25%) and the exchange (50%), from the radix sort's own steps, and lines before the end
# carry an ETA (from the measured rates of the passes). The read moves it too (5 samples a
# second of the bytes read), which a job this short does not show.
for map in "" --no-map; do
    sort_cmp "$N" gensort "--progress=0 $map" "$T/in.dat"
    CHECKS=$((CHECKS + 1))
    grep -Eq '^dsort: \[[0-9T:-]+\] +(2[6-9]|3[0-9]|4[0-9])% sort ' "$T/stderr" ||
        { fail "in memory ${map:-mapped}: no progress line inside the sort (26-49%)"; show_output; }
    contains "in memory ${map:-mapped}: an ETA" "$T/stderr" '^dsort: \[[0-9T:-]+\] +[0-9]+% [a-z]+ .*  ETA [0-9]+:[0-9]{2}:[0-9]{2}$'
done

# Text lines in memory and out of core, against GNU sort.
python3 - "$SEED" "$T/in.txt" <<'EOF'
import random, sys
rnd = random.Random(int(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for _ in range(40000):
        f.write("".join(rnd.choice("abcdefgh ") for _ in range(rnd.randint(0, 40))) + "\n")
EOF
sort "$T/in.txt" >"$T/gnu.txt"
for budget in "" "-S 1M --out-of-core"; do
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" --format lines --progress=0 $budget -o "$T/out.txt" "$T/in.txt"
    check $? "lines $budget: exit 0"
    cp "$T/stderr" "$T/progress.lines"
    cmp -s "$T/gnu.txt" "$T/out.txt"
    check $? "lines $budget: output differs from LC_ALL=C sort"
    rising "lines ${budget:-in memory}" "$T/progress.lines"
    logline "lines ${budget:-in memory}" "$T/progress.lines"
done

# Movement inside the read and the sort of text lines in memory (issue 29 item 11; mapped: one
# input file): 400,000 lines of 100 bytes (gensort's ASCII records, each a line), about 133,000
# a rank at -n 3, so that rank 0's sort ticks (65,536 lines or more) and its read indexes in
# blocks. With --progress=0 (an interval of 0 s: a line whenever the percentage moves), lines
# must be printed inside the read and inside the sort, their done-bytes rising (the read's
# below the sort's), and the last line says 100% of the input's bytes. The output is GNU sort's.
gen "$N" -a 400000 "$T/asc.txt"
sort "$T/asc.txt" >"$T/asc.gnu"
ok "$N" "$DSORT" --format lines --progress=0 -v -o "$T/asc.out" "$T/asc.txt"
check $? "lines in memory (movement): exit 0"
cp "$T/stderr" "$T/progress.linesmem"
cmp -s "$T/asc.gnu" "$T/asc.out"
check $? "lines in memory (movement): output differs from LC_ALL=C sort"
contains "lines in memory (movement): the mapped path" "$T/progress.linesmem" 'in memory, input mapped'
CHECKS=$((CHECKS + 1))
if ! python3 - "$T/progress.linesmem" <<'EOF2'; then
import re, sys
units = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
got = {"read": [], "sort": []}
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    m = re.match(r"^dsort: \[[0-9T:-]+\] +[0-9]+% (read|sort) +([0-9.]+) ([kMG]?)B of", line)
    if m:
        got[m.group(1)].append(float(m.group(2)) * units[m.group(3)])
r, s = got["read"], got["sort"]
ok = len(r) >= 2 and len(s) >= 2 and r == sorted(set(r)) and s == sorted(set(s)) and r[-1] < s[0]
print("read done-bytes:", r, "sort done-bytes:", s)
sys.exit(0 if ok else 1)
EOF2
    fail "lines in memory: want 2 or more lines inside the read and inside the sort, done-bytes rising"
    show_output
fi
rising "lines in memory (movement)" "$T/progress.linesmem"
logline "lines in memory (movement)" "$T/progress.linesmem" "40.00 MB"

# Only rank 0 prints: as many lines as steps, whatever the rank count (the 100% line once).
eq "one '100% done' line at -n $N" 1 "$(grep -Ec '^dsort: (\[[0-9T:-]+\] )?100% done' "$T/progress.external")"

# The default interval (5 s): a short job shows only the final line.
ok "$N" "$DSORT" --progress -o "$T/o.dat" "$T/in.dat"
eq "default interval: the lines of a short job" "100" "$(percents "$T/stderr" | tr '\n' ' ' | sed 's/ $//')"

# No --progress: nothing.
ok "$N" "$DSORT" -o "$T/o.dat" "$T/in.dat"
eq "without --progress: progress lines" "" "$(percents "$T/stderr")"

# A failed job: no 100%.
printf 'short' >"$T/bad.dat"
expect_rc 2 "$N" "$DSORT" --progress=0 -o "$T/o2.dat" "$T/bad.dat"
eq "failed job: a 100% line" "" "$(grep '100% done' "$T/stderr")"

# On a terminal: redrawn with carriage returns, one newline at the end of the progress line.
if command -v script >/dev/null; then
    cmd="$MPIEXEC ${RUN_FLAGS[*]} ${MPI_PREFLAGS[*]} -n $N $(printf '%q ' "$DSORT" --progress=0 -S 2M -o "$T/tty.dat" "$T/in.dat")"
    LAST_CMD="script -qec '$cmd' /dev/null"
    kto 120 script -qec "$cmd" /dev/null </dev/null >"$T/tty.out" 2>&1
    check $? "on a terminal: exit 0"
    eq "on a terminal: the final line" 1 "$(grep -c 'dsort: 100% done' "$T/tty.out")"
    eq "on a terminal: newlines (one, at the end)" 1 "$(tr -cd '\n' <"$T/tty.out" | wc -c)"
    CHECKS=$((CHECKS + 1))
    [ "$(tr -cd '\r' <"$T/tty.out" | wc -c)" -ge 4 ] ||
        fail "on a terminal: the progress line is not redrawn with carriage returns"
    tr '\r' '\n' <"$T/tty.out" >"$T/tty.lines"
    rising "on a terminal" "$T/tty.lines"
    sums_equal "on a terminal: the output" 100 "$(py sum 100 "$T/in.dat")" "$T/tty.dat"
else
    echo "note: no script(1): the terminal case is not run"
fi

# Usage errors.
for bad in --progress=x --progress=-1 --progress=1e9; do
    expect_rc 2 "$N" "$DSORT" "$bad" -o "$T/o3.dat" "$T/in.dat"
    contains "$bad: the error names it" "$T/stderr" "invalid --progress"
done

suite_finish
