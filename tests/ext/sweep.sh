#!/bin/bash
# The sweep of dead jobs' temp directories (issue 9, item 2), end to end: a -T directory is
# seeded with things named like dead jobs' directories, then an out-of-core sort runs with it.
#   - symlinks "dsort-HOST-99999-r0" (and one with a pid known to be dead) pointing at
#     directories with run-* files: not followed, the targets' files all survive;
#   - a real directory (mode 0700, ours) whose owner file names this host, boot and pid
#     namespace and a dead pid: removed, and the sort says "removed 1 temp directory ...";
#   - the same with an old-format owner file ("HOST PID"), another boot id, or mode 0755:
#     left alone, run files and all;
#   - the sort succeeds (dsort-validate: order, count and checksum against dsort-gen -c).
# Usage: sweep.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=20000 # 2 MB
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM

# The host part of a job name (dsort_tempdirs_job_name: '/' and ' ' become '_').
HOST=$(hostname | tr '/ ' '__')
BOOT=$(cat /proc/sys/kernel/random/boot_id)
PIDNS=$(stat -L -c %i /proc/self/ns/pid)
TD=$T/td
mkdir -m 755 "$TD"

# dead_pid: the pid of a child that has exited and been reaped.
dead_pid() {
    sh -c 'exit 0' &
    local p=$!
    wait "$p"
    echo "$p"
}

# job_dir DIR MODE [OWNER-TEXT]: DIR with run-000000, run-000001 and the owner file.
job_dir() {
    mkdir -m 700 "$1"
    echo records >"$1/run-000000"
    echo records >"$1/run-000001"
    [ $# -lt 3 ] || printf '%s\n' "$3" >"$1/owner"
    chmod "$2" "$1"
}

# runs_left WHAT DIR: both run files of DIR are still there.
runs_left() {
    eq "$1: run files left in $2" "run-000000 run-000001" \
        "$(cd "$2" 2>/dev/null && ls -d run-* 2>/dev/null | tr '\n' ' ' | sed 's/ $//')"
}

job_dir "$T/victim1" 700
job_dir "$T/victim2" 700
ln -s "$T/victim1" "$TD/dsort-$HOST-99999-r0"
ln -s "$T/victim2" "$TD/dsort-$HOST-$(dead_pid)-r1"
P=$(dead_pid)
job_dir "$TD/dsort-$HOST-$P-r0" 700 "dsort-owner/1 host=$HOST boot=$BOOT pidns=$PIDNS pid=$P start=1"
P=$(dead_pid)
OLD=$TD/dsort-$HOST-$P-r2
job_dir "$OLD" 700 "$HOST $P"
P=$(dead_pid)
OTHERBOOT=$TD/dsort-$HOST-$P-r3
job_dir "$OTHERBOOT" 700 "dsort-owner/1 host=$HOST boot=00000000-0000-0000-0000-000000000000 pidns=$PIDNS pid=$P start=1"
P=$(dead_pid)
OPEN=$TD/dsort-$HOST-$P-r4
job_dir "$OPEN" 755 "dsort-owner/1 host=$HOST boot=$BOOT pidns=$PIDNS pid=$P start=1"
echo "  seeded $TD: $(ls -A "$TD" | tr '\n' ' ')"

ok "$N" "$DSORT" --out-of-core -S 2M -T "$TD" -o "$T/out.dat" "$T/in.dat"
sed 's/^/  | /' "$T/stderr"
contains "the sort reports the sweep" "$T/stderr" \
    "removed 1 temp directory left by dead dsort jobs"
runs_left "symlink dsort-$HOST-99999-r0: its target" "$T/victim1"
runs_left "symlink to a directory: its target" "$T/victim2"
eq "the symlinks are left" "2" "$(find "$TD" -maxdepth 1 -type l | wc -l)"
runs_left "old-format owner file" "$OLD"
runs_left "owner of another boot" "$OTHERBOOT"
runs_left "mode 0755" "$OPEN"
eq "directories left in the temp dir" \
    "$(printf '%s\n' "${OLD##*/}" "${OTHERBOOT##*/}" "${OPEN##*/}" | sort | tr '\n' ' ')" \
    "$(find "$TD" -mindepth 1 -maxdepth 1 ! -type l -printf '%f\n' | sort | tr '\n' ' ')"
validate "$N" "" "$T/out.dat" "$COUNT" "$SUM"
suite_finish
