#!/bin/bash
# GNU sort's -m and, with --format lines, -c/-C/--check, against this machine's `LC_ALL=C sort`
# (differential; the inputs and helpers are gnulib.sh's):
#  - -m, --merge: sorted inputs (each sorted by GNU with the same options) give sort -m's
#    output byte for byte, with keys, -r, -u, -s; with fixed records too;
#  - -c, -C, --check[=quiet|silent|diagnose-first] with --format lines: the exit status and GNU's
#    message (FILE:LINE: disorder: TEXT, compared after the program name), or silence; with
#    keys, -r, -s, -u (equal lines are disorder under -c -u), and a disorder on the boundary
#    between rank 0's and rank 1's lines at -n 3; several inputs (the line within its file).
# Usage: gnucheck.sh NRANKS
. "$(dirname "$0")/gnulib.sh"
echo "== -m, --merge"
# Sorted inputs (each sorted by GNU with the same options) merged: GNU's sort -m output.
for t in "-r" "-t, -k2,2n -k1,1r" "-t, -k3,3M -k4,4V -u" "-s -t, -k1,1f"; do
    read -ra mo <<<"$t"
    for i in 0 1 2; do
        sort "${mo[@]}" "$D/${KINDS[$i]}" "$D/csv" >"$D/m$i"
    done
    agree "-m $t" -m "${mo[@]}" "$D/m0" "$D/m1" "$D/m2" -- -m "${mo[@]}" "$D/m0" "$D/m1" "$D/m2"
done
sort "$D/csv" >"$D/m3"
agree "--merge (one input)" --merge "$D/m3" -- --merge "$D/m3"
# Fixed records: -m accepted with every format; sorted inputs of equal-length lines.
python3 - "$SEED" "$D" <<'EOF2'
import random, sys
rnd = random.Random(int(sys.argv[1]) + 3)
for i in range(3):
    open("%s/mf%d" % (sys.argv[2], i), "w").write("".join(sorted("%07d\n" % rnd.randint(0, 999) for _ in range(700))))
EOF2
gnu "$T/gnu.out" -m "$D/mf0" "$D/mf1" "$D/mf2"
rm -f "$T/o/d.out"
ok "$N" "$DSORT" --format fixed:8:0:8 -m "$D/mf0" "$D/mf1" "$D/mf2" -o "$T/o/d.out" &&
    same "-m --format fixed:8:0:8" "$T/gnu.out" "$T/o/d.out"

echo "== -c, -C, --check with --format lines"
# --format lines: GNU's message "FILE:LINE: disorder: TEXT" (compared after the program name),
# exit 1; -C silent. Fixed-width lines (8 bytes), so that the line that starts rank 1's range
# at -n 3 (the first at or after byte total/3) can be changed in place: made the smallest line
# (a disorder on the rank boundary) or a copy of the line before it (disorder only with -u).
python3 - "$D" <<'EOF2'
import sys
d = sys.argv[1]
recs = open(d + "/c.sorted").read().splitlines(True)
i = (len(recs) * 8 // 3 + 7) // 8  # the first line starting at or after total / 3
while recs[i - 1] == recs[0] or recs[i - 1] == recs[i] or recs[i] == recs[i + 1]:
    i += 1
edge = list(recs)
edge[i] = recs[0]
open(d + "/c.edge", "w").write("".join(edge))
uniq = sorted(set(recs))
j = (len(uniq) * 8 // 3 + 7) // 8
dup = list(uniq)
dup[j] = uniq[j - 1]
open(d + "/c.edgedup", "w").write("".join(dup))
EOF2
sort -t, -k2,2n "$D/csv" >"$D/csv.k2n"
sort -s -t, -k3,3M "$D/csv" >"$D/csv.k3Ms"
sort -u -t, -k1,1 "$D/csv" >"$D/csv.k1u"
# lcheck WHAT ARG...: dsort --format lines ARG... and LC_ALL=C sort ARG... agree: exit status,
# the disorder message (without the program name), or silence.
lcheck() {
    local what=$1
    shift
    gnu /dev/null "$@"
    run "$N" "$DSORT" "${L[@]}" "$@"
    eq "$what: exit status as GNU's ($GRC)" "$GRC" "$RC"
    if [ -s "$T/gnu.err" ]; then
        eq "$what: dsort's message is GNU's" "$(said "$T/gnu.err" sort 2)" "$(said "$T/stderr" dsort 2)"
    else
        eq "$what: silent, as GNU" "" "$(cat "$T/stderr")"
    fi
    eq "$what: nothing on stdout" "" "$(cat "$T/stdout")"
}
for t in -c:unsorted --check=diagnose-first:unsorted --check=quiet:unsorted -c:sorted -c:edge -C:edge -c:edgedup -cu:edgedup -Cu:edgedup -cu:uniq; do
    lcheck "--format lines ${t%:*} c.${t#*:}" "${t%:*}" "$D/c.${t#*:}"
done
lcheck "--format lines -c csv (unsorted)" -c "$D/csv"
lcheck "--format lines -c -t, -k2,2n" -c -t, -k2,2n "$D/csv.k2n"
lcheck "--format lines -c -t, -k2,2n -r" -c -t, -k2,2n -r "$D/csv.k2n"
lcheck "--format lines -c -s -t, -k3,3M" -c -s -t, -k3,3M "$D/csv.k3Ms"
lcheck "--format lines -c -t, -k3,3M (not -s)" -c -t, -k3,3M "$D/csv.k3Ms"
lcheck "--format lines -C -u -t, -k1,1" -C -u -t, -k1,1 "$D/csv.k1u"
lcheck "--format lines -c -u -t, -k1,1f" -c -u -t, -k1,1f "$D/csv.k1u"
# Several inputs (GNU takes one with -c): the line is counted in its own file, empty files
# between them count for nothing; GNU names the same line of the inputs concatenated.
seq 10 99 >"$D/ca"
: >"$D/cempty"
printf '05\n50\n' >"$D/cb"
cat "$D/ca" "$D/cempty" "$D/cb" >"$D/cab"
gnu /dev/null -c "$D/cab"
eq "-c of the inputs concatenated: GNU names line 91" "$D/cab:91: disorder: 05" "$(said "$T/gnu.err" sort)"
run "$N" "$DSORT" "${L[@]}" -c "$D/ca" "$D/cempty" "$D/cb"
eq "--format lines -c, three inputs: exit status" 1 "$RC"
eq "--format lines -c, three inputs: the line within its file" "$D/cb:1: disorder: 05" \
    "$(said "$T/stderr" dsort 2)"
suite_finish
