#!/bin/bash
# What a careless user does, round four (docs/reliability.md has rounds one to three): each case
# is one that broke, or could have broken, the user's data or made a failed job look complete.
#  - dsort-report -o onto a device, a FIFO or a symbolic link: the page replaced the node itself
#    (as root, `-o /dev/full` turned /dev/full into a regular file) and a link by a file; now a
#    node other than /dev/null is refused, /dev/null is written through, a link's target is
#    replaced and the link stays (as dsort -o and --stats do).
# Usage: hostile.sh NRANKS
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
REPORT=$DSORT_BIN_DIR/dsort-report

mkdir -p "$T/in" "$T/o"
gen "$N" 20000 "$T/in/a.dat"

# ---- dsort-report's -o ----------------------------------------------------------------------
ok "$N" "$DSORT" --stats "$T/st.json" -o "$T/a.out" "$T/in/a.dat"
report_onto() { # WHAT PATH WANT-RC: dsort-report -o PATH; the node is what it was
    local what=$1 path=$2 want=$3 before
    before=$(stat -c '%F %t:%T' "$path")
    "$REPORT" "$T/st.json" -o "$path" >"$T/stdout" 2>"$T/stderr"
    eq "dsort-report -o onto $what: exit status" "$want" "$?"
    eq "dsort-report -o onto $what: still a $before" "$before" "$(stat -c '%F %t:%T' "$path")"
    eq "dsort-report -o onto $what: no temp file beside it" "" \
        "$(find "$(dirname "$path")" -name '*.tmp-*')"
}
mknod "$T/o/full" c 1 7
report_onto "a character device (1:7, /dev/full)" "$T/o/full" 2
contains "dsort-report -o onto a device: the error names it" "$T/stderr" "full.*character device"
mkfifo "$T/o/fifo"
report_onto "a FIFO" "$T/o/fifo" 2
mknod "$T/o/null" c 1 3
report_onto "a null device (1:3)" "$T/o/null" 0
echo old >"$T/o/target"
ln -s target "$T/o/link"
"$REPORT" "$T/st.json" -o "$T/o/link" >"$T/stdout" 2>"$T/stderr"
eq "dsort-report -o through a link: exit status" 0 "$?"
eq "dsort-report -o through a link: still a link" target "$(readlink "$T/o/link")"
contains "dsort-report -o through a link: the target holds the page" "$T/o/target" "</html>"

suite_finish
