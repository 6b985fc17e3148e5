#!/bin/bash
# Data safety (issue 9): what dsort writes never destroys what the user owns.
#  - -o onto a device, FIFO or other non-regular file: refused before any work (never
#    replaced); /dev/null (a 1:3 character device) is written through;
#  - -o through a symbolic link: the file it points to is replaced, the link stays; -O through a
#    link to an empty directory likewise; a replaced file keeps its mode;
#  - --stats may not name an input, the output, or anything inside -O DIR; -T may not be inside
#    -O DIR; two different -o (or -O) options are GNU's "multiple output files specified";
#  - a HUP that the user ignored (nohup, trap '' HUP) stays ignored (singleton run: mpirun
#    resets the ranks' signal dispositions);
#  - dsort's helper threads (writer, read-ahead) block the signals that the main thread
#    handles (SigBlk in /proc/PID/task/TID/status).
# Usage: safety.sh NRANKS
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=60

IN=$T/in
mkdir -p "$IN" "$T/o"
gen "$N" -b $((SEED % 100000)) 20000 "$IN/a.dat"
sum=$GEN_SUM
py sort "$T/a.want" 100 0 10 - "$IN/a.dat"
before_in=$(file_state "$IN/a.dat")

# refused KIND PATH: -o PATH fails with exit 2 naming it, and PATH is as it was.
refused() {
    local what=$1 path=$2 st
    st=$(stat -c '%F %t:%T %a' "$path")
    run "$N" "$DSORT" -o "$path" "$IN/a.dat"
    eq "-o onto a $what: exit status" 2 "$RC"
    contains "-o onto a $what: the error names it" "$T/stderr" "rank 0/$N .*'$path' is a $what"
    eq "-o onto a $what: left as it was" "$st" "$(stat -c '%F %t:%T %a' "$path")"
    eq "-o onto a $what: no temp file beside it" "" "$(find "$(dirname "$path")" -name '.*dsort-*')"
}
mknod "$T/o/zero" c 1 5
refused "character device" "$T/o/zero"
mkfifo "$T/o/fifo"
refused "FIFO" "$T/o/fifo"
mknod "$T/o/loop" b 7 200
refused "block device" "$T/o/loop"
mkdir "$T/o/adir"
run "$N" "$DSORT" -o "$T/o/adir" "$IN/a.dat"
eq "-o onto a directory: exit status" 2 "$RC"

# /dev/null (here a 1:3 node of our own): written through, still the device afterwards.
mknod "$T/o/null" c 1 3
ok "$N" "$DSORT" -o "$T/o/null" "$IN/a.dat"
eq "-o onto a null device: still a character device 1:3" "character special file 1:3" \
    "$(stat -c '%F %t:%T' "$T/o/null")"

# A symbolic link: its target is replaced and keeps its mode; the link stays a link.
mkdir "$T/o/real"
echo old >"$T/o/real/file"
chmod 640 "$T/o/real/file"
ln -s real/file "$T/o/link"
(umask 022 && ok "$N" "$DSORT" -o "$T/o/link" "$IN/a.dat")
eq "-o through a link: still a link to real/file" "real/file" "$(readlink "$T/o/link")"
same_records "-o through a link: the target holds the sorted records" 100 "$T/a.want" "$T/o/real/file"
eq "-o through a link: the target kept its mode" "640" "$(stat -c '%a' "$T/o/real/file")"
eq "-o through a link: no temp file beside the link or the target" "" \
    "$(find "$T/o" -name '.*dsort-*')"
# A dangling link: the name it points to is created.
ln -s real/new "$T/o/dangling"
ok "$N" "$DSORT" -o "$T/o/dangling" "$IN/a.dat"
eq "-o through a dangling link: still a link" "real/new" "$(readlink "$T/o/dangling")"
same_records "-o through a dangling link: its target created" 100 "$T/a.want" "$T/o/real/new"
# An existing file of mode 600 stays 600 whatever the umask.
cp "$IN/a.dat" "$T/o/private"
chmod 600 "$T/o/private"
(umask 000 && ok "$N" "$DSORT" -o "$T/o/private" "$IN/a.dat")
eq "-o onto a mode 600 file: mode kept" "600" "$(stat -c '%a' "$T/o/private")"
# -O through a link to an empty directory.
mkdir "$T/o/emptydir"
ln -s emptydir "$T/o/dirlink"
ok "$N" "$DSORT" -O "$T/o/dirlink" "$IN/a.dat"
eq "-O through a link: still a link" "emptydir" "$(readlink "$T/o/dirlink")"
contains "-O through a link: the directory has _SUCCESS" <(ls "$T/o/emptydir") "^_SUCCESS$"

# Files dsort would write that collide with inputs or each other: refused, nothing touched.
collide() {
    local what=$1 want=$2
    shift 2
    run "$N" "$DSORT" "$@"
    eq "$what: exit status" 2 "$RC"
    contains "$what: the error" "$T/stderr" "$want"
    eq "$what: the input is untouched" "$before_in" "$(file_state "$IN/a.dat")"
}
collide "--stats naming the input" "rank 0/$N .*--stats file .* is also an input" \
    --stats="$IN/a.dat" "$IN/a.dat" -o "$T/o/s1"
collide "--stats naming the input through ./ and .." "is also an input" \
    --stats="$IN/../in/./a.dat" "$IN/a.dat" -o "$T/o/s1"
collide "--stats naming the output" "is also the output" \
    --stats="$T/o/s2" "$IN/a.dat" -o "$T/o/./s2"
collide "--stats inside -O DIR" "is inside the output directory" \
    --stats="$T/o/d3/stats.json" "$IN/a.dat" -O "$T/o/d3"
collide "--stats naming a FIFO (it would block the end of the job)" "is not a regular file" \
    --stats="$T/o/fifo" "$IN/a.dat" -o "$T/o/s5"
collide "-T inside -O DIR" "temp directory .* is inside the output directory" \
    -T "$T/o/d4/tmp" "$IN/a.dat" -O "$T/o/d4"
eq "no output of the refused runs" "" "$(ls -d "$T/o/s1" "$T/o/s2" "$T/o/d3" "$T/o/d4" 2>/dev/null)"

# Two outputs: GNU sort's message and exit 2, neither written.
run "$N" "$DSORT" -o "$T/o/x" -o "$T/o/y" "$IN/a.dat"
eq "two -o: exit status" 2 "$RC"
contains "two -o: GNU's message" "$T/stderr" "multiple output files specified"
eq "two -o: nothing written" "" "$(ls -d "$T/o/x" "$T/o/y" 2>/dev/null)"
run "$N" "$DSORT" -O "$T/o/x" -O "$T/o/y" "$IN/a.dat"
eq "two -O: exit status" 2 "$RC"

# The rest runs one process without mpirun (an MPI singleton), once (at -n 1).
if [ "$N" -eq 1 ]; then
    # A HUP that the user ignored stays ignored. The run is out of core so that it lasts a
    # while; HUP is sent every 20 ms for as long as it runs.
    gen 1 400000 "$IN/big.dat"
    py sort "$T/big.want" 100 0 10 - "$IN/big.dat"
    (trap '' HUP && exec "$DSORT" -S 8M -T "$T/tmp" "$IN/big.dat" -o "$T/o/hup") \
        >"$T/stdout" 2>"$T/stderr" &
    pid=$!
    deadline=$((SECONDS + 60))
    # Not before the subshell has ignored HUP and become dsort.
    while kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" != dsort ]; do
        sleep 0.005
    done
    while kill -0 "$pid" 2>/dev/null; do
        kill -HUP "$pid" 2>/dev/null
        [ "$SECONDS" -lt "$deadline" ] || kill -KILL "$pid"
        sleep 0.02
    done
    wait "$pid"
    RC=$?
    LAST_CMD="trap '' HUP; dsort -S 8M big.dat -o hup (singleton), HUP every 20 ms"
    eq "ignored HUP: exit status (129: killed by HUP)" 0 "$RC"
    same_records "ignored HUP: the output" 100 "$T/big.want" "$T/o/hup"

    # Helper threads block HUP, INT, USR1 and TERM (bits 0, 1, 9 and 14 of SigBlk). python3
    # starts dsort itself and polls /proc fast enough to catch the short-lived writer threads
    # (its own start-up can take seconds on a loaded machine). It prints what it saw, then the
    # exit status.
    out=$(python3 - "$DSORT" -S 8M -T "$T/tmp" "$IN/big.dat" -o "$T/o/thr" <<'PYEOF'
import subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seen, end = {}, time.time() + 60
while p.poll() is None and time.time() < end:
    try:
        import os
        tasks = os.listdir(f"/proc/{p.pid}/task")
    except OSError:
        tasks = []
    for t in tasks:
        try:
            comm = open(f"/proc/{p.pid}/task/{t}/comm").read().strip()
            if comm.startswith("dsort-") and comm not in seen:
                for line in open(f"/proc/{p.pid}/task/{t}/status"):
                    if line.startswith("SigBlk:"):
                        seen[comm] = line.split()[1]
        except OSError:
            pass
if p.poll() is None:
    p.kill()
print(" ".join(f"{k}:{v}" for k, v in seen.items()))
print(p.wait())
PYEOF
    )
    seen=$(echo "$out" | head -n 1)
    RC=$(echo "$out" | tail -n 1)
    LAST_CMD="dsort -S 8M big.dat -o thr (singleton), SigBlk of its dsort-* threads"
    eq "thread masks: exit status" 0 "$RC"
    CHECKS=$((CHECKS + 1))
    if [ -z "$seen" ]; then
        fail "no thread named dsort-* was seen"
    else
        for s in $seen; do
            m=$((16#${s#*:}))
            [ $((m & 0x4203)) -eq $((0x4203)) ] || fail "thread ${s%%:*} does not block HUP INT USR1 TERM: SigBlk ${s#*:}"
        done
    fi
fi

# A SIGKILLed -o job leaves its full-size temp beside the output; the next run that writes in
# that directory sweeps it (its owner is provably dead; unit.test_tempdir covers live owners).
if [ "$N" -eq 1 ]; then
    mkdir "$T/k"
    "$DSORT" -S 8M -T "$T/tmp" "$IN/big.dat" -o "$T/k/out" >/dev/null 2>&1 &
    pid=$!
    deadline=$((SECONDS + 30))
    until compgen -G "$T/k/.out.dsort-*" >/dev/null || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.01; done
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null
    LAST_CMD="dsort -o k/out killed by SIGKILL, then dsort -o k/other"
    eq "SIGKILL: a temp is left beside the output" 1 "$(compgen -G "$T/k/.out.dsort-*" | wc -l)"
    ok 1 "$DSORT" "$IN/a.dat" -o "$T/k/other"
    eq "SIGKILL: the dead job's temp was swept by the next run" 0 "$(compgen -G "$T/k/.out.dsort-*" | wc -l)"
fi

# --stats is JSON whatever the names in it: a disk whose name holds a quote, a backslash and a
# control character (a fake sysfs tree, DSORT_SYSFS_ROOT, where the test directory's st_dev is
# that disk) is escaped, and reads back as itself.
S=$T/sys
odd=$'we"ird\\x\001'
mkdir -p "$S/devices/virtual/block/$odd" "$S/dev/block" "$S/class/block/$odd"
ln -s "$S/devices/virtual/block/$odd" "$S/dev/block/$(stat -c '%Hd:%Ld' "$IN/a.dat")"
DSORT_SYSFS_ROOT=$S ok "$N" "$DSORT" --stats "$T/odd.json" "$IN/a.dat" -o "$T/o/odd"
CHECKS=$((CHECKS + 1))
python3 -m json.tool "$T/odd.json" >/dev/null || fail "--stats with an odd disk name is not JSON"
py_ok=$(ODD=$odd python3 -c 'import json, os, sys
d = json.load(open(sys.argv[1]))
print(int(any(x["disk"] == os.environ["ODD"] for r in d["per_rank"] for x in r["devices"])))' "$T/odd.json" 2>&1)
eq "--stats names the odd disk as it is" 1 "$py_ok"

# dsort-gen with an empty OUTPUT or --parts= is a usage error before any work (it was a failed
# rename to '' at the commit, after generating everything).
run "$N" "$GEN" 1000 ""
eq "dsort-gen OUTPUT '': exit status" 2 "$RC"
contains "dsort-gen OUTPUT '': named as a usage error" "$T/stderr" "OUTPUT: the name is empty"
run "$N" "$GEN" --parts= 1000
eq "dsort-gen --parts='': exit status" 2 "$RC"
contains "dsort-gen --parts='': named as a usage error" "$T/stderr" "directory's name is empty"

# Two jobs on one -o: a job that finds, at its commit, that another committed the same -o
# while it ran (a new file there) refuses, exit 2, and leaves the other's output whole. Before,
# both exited 0 and the last to finish silently replaced the other's output. The other job's
# commit is played by a rename while this job's ranks are stopped.
mkdir -p "$T/two"
# stop_at_stage GLOB: wait (up to 30 s) until the job's output stage GLOB exists, or the job
# ended; then stop its ranks (SIGSTOP).
stop_at_stage() {
    local i
    for ((i = 0; i < 3000; i++)); do
        compgen -G "$1" >/dev/null && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.01
    done
    kill_ranks STOP "$job"
}
gen 1 -b 11 300000 "$T/two/in.dat" || suite_finish
gen 1 -b 12 1000 "$T/two/theirs" || suite_finish
cp "$T/two/theirs" "$T/two/theirs.copy"
LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $N $DSORT -S 1M --out-of-core $T/two/in.dat -o $T/two/same"
"$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --out-of-core "$T/two/in.dat" \
    -o "$T/two/same" </dev/null >"$T/stdout" 2>"$T/stderr" &
job=$!
stop_at_stage "$T/two/.same.dsort-*"
if compgen -G "$T/two/.same.dsort-*" >/dev/null; then
    mv "$T/two/theirs" "$T/two/same" # the other job's commit
    kill_ranks CONT "$job"
    kto 120 tail --pid="$job" -f /dev/null
    wait "$job"
    RC=$?
    eq "two jobs on one -o: the one overtaken exits 2" 2 "$RC"
    contains "two jobs on one -o: it says why" "$T/stderr" \
        "output '.*/two/same' was created by another program while this job ran"
    CHECKS=$((CHECKS + 1))
    cmp -s "$T/two/same" "$T/two/theirs.copy" || fail "two jobs on one -o: the other job's output was replaced"
    eq "two jobs on one -o: no temp file left" "" "$(compgen -G "$T/two/.same.dsort-*")"
else
    kill_ranks CONT "$job"
    wait "$job"
    fail "two jobs on one -o: the job ended before its output's temp file was seen"
fi
# The same with -O: the other job's committed directory stays, and the message says why.
"$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --out-of-core "$T/two/in.dat" \
    -O "$T/two/samedir" </dev/null >"$T/stdout" 2>"$T/stderr" &
job=$!
stop_at_stage "$T/two/.samedir.dsort-*"
mkdir -p "$T/two/samedir" && cp "$T/two/theirs.copy" "$T/two/samedir/part-00000"
kill_ranks CONT "$job"
kto 120 tail --pid="$job" -f /dev/null
wait "$job"
eq "two jobs on one -O: the one overtaken exits 2" 2 "$?"
contains "two jobs on one -O: it says why" "$T/stderr" \
    "output directory '.*/two/samedir' was filled by another program while this job ran"
eq "two jobs on one -O: the other's directory stays" "part-00000" "$(ls -A "$T/two/samedir")"
eq "two jobs on one -O: no stage left" "" "$(compgen -G "$T/two/.samedir.dsort-*")"

eq "the input is untouched at the end" "$before_in" "$(file_state "$IN/a.dat")"
suite_finish
