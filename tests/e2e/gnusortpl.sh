#!/bin/bash
# coreutils' own sort tests (their sort.pl, unchanged) run against dsort (issue 29 item 14):
# every case of its @Tests once, its inputs as operands, checked by CuDsort.pm (which says what
# counts as a pass, a refusal and a case of this machine's GNU sort). The test fails when a case
# fails, and passes otherwise, printing the counts.
# sort.pl is coreutils', not this repository's: DSORT_COREUTILS_SORT_PL names it, or
# scripts/coreutils_tests.sh fetches coreutils' source (apt-get source) into
# ${XDG_CACHE_HOME:-~/.cache}/dsort/coreutils, where the newest one is taken; without one the
# test is skipped (77).
# Figures (dsort at this commit): coreutils 9.1 (Debian 12), 164 cases: 159 pass, 5 refused;
# 9.10 (Debian sid), 166 cases: 160 pass, 5 refused, 1 as GNU sort 9.1 (h1: R and Q of -h).
# Usage: gnusortpl.sh NRANKS (dsort runs as a singleton: NRANKS must be 1)
. "$(dirname "$0")/lib.sh"
suite_init "$1"
[ "$N" = 1 ] || die "gnusortpl.sh runs dsort as a singleton: NRANKS must be 1"
command -v perl >/dev/null || skip "no perl"
pl=${DSORT_COREUTILS_SORT_PL:-}
if [ -z "$pl" ]; then
    cache=${XDG_CACHE_HOME:-$HOME/.cache}/dsort/coreutils
    pl=$(ls -d "$cache"/coreutils-*/tests/sort/sort.pl "$cache"/coreutils-*/tests/misc/sort.pl \
        2>/dev/null | sort -V | tail -n 1)
fi
if [ -z "$pl" ] || [ ! -f "$pl" ]; then
    skip "no coreutils sort.pl (set DSORT_COREUTILS_SORT_PL, or run scripts/coreutils_tests.sh)"
fi
echo "sort.pl: $pl"
mkdir "$T/run"
here=$(cd "$(dirname "$0")" && pwd)
LAST_CMD="cd $T/run && DSORT=$DSORT perl -I$here -MCuDsort $pl"
(cd "$T/run" && DSORT=$DSORT kto 900 perl -I"$here" -MCuDsort "$pl") >"$T/sortpl.txt" 2>&1
rc=$?
grep -v '^PASS' "$T/sortpl.txt" | cut -c1-300
summary=$(grep '^sort.pl: ' "$T/sortpl.txt")
CHECKS=$((CHECKS + 1))
[ -n "$summary" ] || { fail "sort.pl printed no summary (exit $rc)"; tail -n 20 "$T/sortpl.txt"; }
echo "$summary"
eq "sort.pl's exit status (the failed cases)" 0 "$rc"
# Every case has a verdict, and the counts add up.
total=$(grep -Ec '^(PASS|FAIL|REFUSED|LOCAL) ' "$T/sortpl.txt")
[[ $summary =~ ^sort.pl:\ ([0-9]+)\ of\ ([0-9]+)\ pass,\ ([0-9]+)\ fail,\ ([0-9]+)\ refused,\ ([0-9]+) ]] &&
    eq "the verdicts add up to the cases" "${BASH_REMATCH[2]} ${BASH_REMATCH[2]}" \
        "$total $((BASH_REMATCH[1] + BASH_REMATCH[3] + BASH_REMATCH[4] + BASH_REMATCH[5]))"
suite_finish
