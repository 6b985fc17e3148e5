#!/bin/bash
# Stop and resume (issue 13): an out-of-core sort stopped at the end of a round keeps its runs
# and a checkpoint, exits 3 and writes no output; `--resume` with the same arguments finishes
# it. Checked against the python oracle (the sorted records of the input, byte for byte):
#  - --stop-after=2: exit 3, no output (nor a hidden output temp), a checkpoint per rank;
#    --resume: the oracle's output, fewer bytes read than a run from scratch (--stats), and
#    nothing left in the temp dir; -r -s (tagged records) the same way;
#  - repeated stops: --stop-after=1, then --resume --stop-after=3, then --resume;
#  - SIGUSR1 to mpirun under --checkpoint, once runs are spilled: exit 3, then --resume;
#  - the sweep of a later job on the same -T keeps the stopped job's directories, with one -T
#    and with two (runs spread over both);
#  - refusals (exit 2, nothing written, the checkpoint kept as it was): an input appended to
#    after the stop (named), other options (-r), another rank count, a run file cut short or
#    missing (named), a manifest cut in half, --resume with no checkpoint; usage errors: --stop-after=0, with -c;
#  - text lines (-s -k2,2) stopped twice and resumed: GNU sort's output; a 3 MB line that
#    covers a whole rank's range (-n 3), stopped and resumed.
# Usage: resume.sh NRANKS
FAST_KILL=1
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"
EXT_TIMEOUT=120

C=$T/ckpt # the -T of the stopped jobs
mkdir -p "$C"
gen 1 200000 "$T/in.dat"
py sort "$T/want" 100 0 10 - "$T/in.dat" || die "oracle failed"
py sort "$T/want.rs" 100 0 10 rs "$T/in.dat" || die "oracle failed"
ARGS=(-S 3M -T "$C")

# stopped WHAT OUT: the last run stopped with a checkpoint and wrote nothing.
stopped() {
    eq "$1: exit status (3: stopped, resumable)" 3 "$RC"
    contains "$1: rank 0 says how to resume" "$T/stderr" 'stopped after round [0-9]+ with a checkpoint.*--resume'
    CHECKS=$((CHECKS + 1))
    [ ! -e "$2" ] || fail "$1: the output $2 exists after a stop"
    eq "$1: hidden output temps" "" "$(find "$(dirname "$2")" -maxdepth 1 -name '.*dsort-*' | tr '\n' ' ')"
    eq "$1: checkpoints kept (one a rank)" "$N" "$(find "$C" -name checkpoint | wc -l)"
}

# finished WHAT OUT WANT: the last run succeeded with the oracle's output and left nothing.
finished() {
    ok_status && same_file "$1" 100 "$3" "$2"
    empty_dir "$1: the temp dir after the resumed job" "$C"
}

# A run from scratch, for the bytes it reads.
ok "$N" "$DSORT" "${ARGS[@]}" --stats "$T/full.json" -o "$T/full.out" "$T/in.dat"
same_file "from scratch" 100 "$T/want" "$T/full.out"
full_read=$(st "$T/full.json" sum bytes_read)

# --stop-after, then --resume.
for opts in "" "-r -s"; do
    want=$T/want
    [ -n "$opts" ] && want=$T/want.rs
    mkdir -p "$T/o"
    # shellcheck disable=SC2086
    run "$N" "$DSORT" "${ARGS[@]}" $opts --stop-after=2 -o "$T/o/out" "$T/in.dat"
    stopped "--stop-after=2 $opts" "$T/o/out"
    # shellcheck disable=SC2086
    run "$N" "$DSORT" "${ARGS[@]}" $opts --resume --stats "$T/res.json" -o "$T/o/out" "$T/in.dat"
    finished "--resume $opts" "$T/o/out" "$want"
    [ -z "$opts" ] && cond "resumed run read $(st "$T/res.json" sum bytes_read) of ${full_read} bytes (< 90%)" \
        "$(st "$T/res.json" sum bytes_read) < 0.9 * $full_read"
    rm -rf "$T/o"
done
mkdir -p "$T/o"

# Repeated stops.
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$T/o/out" "$T/in.dat"
stopped "first stop" "$T/o/out"
run "$N" "$DSORT" "${ARGS[@]}" --resume --stop-after=3 -o "$T/o/out" "$T/in.dat"
stopped "second stop" "$T/o/out"
contains "second stop: after round 3" "$T/stderr" 'stopped after round 3 '
run "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
finished "resume after two stops" "$T/o/out" "$T/want"
rm -f "$T/o/out"

# Text lines (-s -k2,2: positions travel with the lines), stopped twice, against GNU sort.
python3 - "$SEED" "$T/in.txt" <<'EOF2'
import random, sys
r = random.Random(int(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for _ in range(150000):
        f.write("".join(r.choice("abcdef ") for _ in range(r.randint(0, 60))) + "\n")
EOF2
LC_ALL=C sort -s -k2,2 "$T/in.txt" >"$T/want.txt"
L=(--format lines -s -k2,2 -S 2M -T "$C")
run "$N" "$DSORT" "${L[@]}" --stop-after=1 -o "$T/o/out.txt" "$T/in.txt"
stopped "lines: first stop" "$T/o/out.txt"
run "$N" "$DSORT" "${L[@]}" --resume --stop-after=2 -o "$T/o/out.txt" "$T/in.txt"
stopped "lines: second stop" "$T/o/out.txt"
run "$N" "$DSORT" "${L[@]}" --resume -o "$T/o/out.txt" "$T/in.txt"
ok_status
CHECKS=$((CHECKS + 1))
cmp -s "$T/want.txt" "$T/o/out.txt" || fail "lines: the resumed output differs from LC_ALL=C sort -s -k2,2"
empty_dir "lines: the temp dir after the resumed job" "$C"

# A 3 MB line in the middle: at -n 3 it covers all of rank 1's range (rank 1 reads nothing and
# its position is past its range's end), stopped after round 1 and resumed.
python3 - "$T/long.txt" <<'EOF2'
import random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    for i in range(100000):
        f.write("".join(r.choice("abcd") for _ in range(r.randint(0, 30))) + "\n")
        if i == 50000:
            f.write("m" * 3000000 + "\n")
EOF2
LC_ALL=C sort "$T/long.txt" >"$T/want.long"
run "$N" "$DSORT" --format lines -S 4M -T "$C" --stop-after=1 -o "$T/o/long.txt" "$T/long.txt"
stopped "a 3 MB line: stop" "$T/o/long.txt"
run "$N" "$DSORT" --format lines -S 4M -T "$C" --resume -o "$T/o/long.txt" "$T/long.txt"
ok_status
CHECKS=$((CHECKS + 1))
cmp -s "$T/want.long" "$T/o/long.txt" || fail "a 3 MB line: the resumed output differs from LC_ALL=C sort"
empty_dir "a 3 MB line: the temp dir after the resumed job" "$C"

# SIGUSR1 under --checkpoint, once a run is spilled, to mpirun (which passes it to the ranks).
gen 1 600000 "$T/big.dat"
py sort "$T/want.big" 100 0 10 - "$T/big.dat" || die "oracle failed"
LAST_CMD="$MPIEXEC ${RUN_FLAGS[*]} ${MPI_PREFLAGS[*]} -n $N $DSORT -S 2M -T $C --checkpoint -o $T/o/big $T/big.dat"
"$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 2M -T "$C" --checkpoint \
    -o "$T/o/big" "$T/big.dat" >"$T/stdout" 2>"$T/stderr" &
job=$!
for _ in $(seq 600); do
    [ -n "$(find "$C" -name run-000002 2>/dev/null)" ] && break
    kill -0 $job 2>/dev/null || break
    sleep 0.05
done
kill -USR1 $job 2>/dev/null
wait $job
RC=$?
if [ "$RC" = 0 ]; then
    echo "note: the job finished before SIGUSR1 reached it; the signal case is not checked"
    rm -f "$T/o/big"
else
    stopped "SIGUSR1 under --checkpoint" "$T/o/big"
    run "$N" "$DSORT" -S 2M -T "$C" --resume -o "$T/o/big" "$T/big.dat"
    finished "resume after SIGUSR1" "$T/o/big" "$T/want.big"
fi

# A stopped job's directories survive another job's sweep of the same -T.
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$T/o/out" "$T/in.dat"
stopped "stop before a sweep" "$T/o/out"
ok "$N" "$DSORT" -S 3M -T "$C" -v -o "$T/other.out" "$T/in.dat"
eq "another job's sweep: checkpoints still there" "$N" "$(find "$C" -name checkpoint | wc -l)"

# Two -T dirs (runs spread over both): another job's sweep keeps both, and the resume works.
C2=$T/ckpt2
mkdir -p "$C2"
rm -rf "${C:?}"/*
run "$N" "$DSORT" -S 3M -T "$C" -T "$C2" --stop-after=2 -o "$T/o/out" "$T/in.dat"
eq "two -T: exit status" 3 "$RC"
eq "two -T: checkpoints (one a rank and dir)" $((2 * N)) "$(find "$C" "$C2" -name checkpoint | wc -l)"
ok "$N" "$DSORT" -S 3M -T "$C2" -T "$C" -o "$T/other.out" "$T/in.dat"
run "$N" "$DSORT" -S 3M -T "$C" -T "$C2" --resume -o "$T/o/out" "$T/in.dat"
finished "two -T: resumed after another job's sweep" "$T/o/out" "$T/want"
empty_dir "two -T: the second temp dir after the resumed job" "$C2"
rm -f "$T/o/out"
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$T/o/out" "$T/in.dat"
stopped "stop before the refusals" "$T/o/out"

# Refusals: exit 2, no output, the checkpoint as it was.
state=$(cd "$C" && find . -printf '%p %s\n' | sort | md5sum)
refused() {
    expect_rc 2 "$@"
    CHECKS=$((CHECKS + 1))
    [ ! -e "$T/o/out" ] || fail "a refused resume wrote $T/o/out"
    eq "refused: the checkpoint is kept as it was" "$state" "$(cd "$C" && find . -printf '%p %s\n' | sort | md5sum)"
}
refused "$N" "$DSORT" "${ARGS[@]}" -r --resume -o "$T/o/out" "$T/in.dat"
contains "other options: no checkpoint of this job" "$T/stderr" 'no checkpoint of this job'
refused $((N + 1)) "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "another rank count: said" "$T/stderr" "made by $N ranks, not $((N + 1))"
cp "$T/in.dat" "$T/in.keep"
touch -d '2001-01-01' "$T/in.dat"
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "input modified: named" "$T/stderr" "input '$T/in.dat' changed since the checkpoint"
head -c 100 "$T/in.dat" >>"$T/in.dat"
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "input appended to: named" "$T/stderr" "input '$T/in.dat' changed.*size"
mv "$T/in.keep" "$T/in.dat"
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "input replaced (another inode): refused" "$T/stderr" "changed since the checkpoint"
rm -rf "$C"/* && mkdir -p "$C"
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$T/o/out" "$T/in.dat"
stopped "stop before a lost run" "$T/o/out"
cut=$(find "$C" -name 'run-000000' | sort | head -n 1)
truncate -s 4096 "$cut"
state=$(cd "$C" && find . -printf '%p %s\n' | sort | md5sum)
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "a run file cut short: named" "$T/stderr" "run '$cut' of the checkpoint.*is not the file that was kept"
lost=$cut
rm -f "$lost"
state=$(cd "$C" && find . -printf '%p %s\n' | sort | md5sum)
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "a run file missing: named" "$T/stderr" "run '$lost' of the checkpoint.*is missing"
rm -rf "${C:?}"/* && mkdir -p "$C"
run "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$T/o/out" "$T/in.dat"
stopped "stop before a damaged checkpoint" "$T/o/out"
m=$(find "$C" -path "*-r$((N - 1))/checkpoint")
head -c "$(($(stat -c %s "$m") / 2))" "$m" >"$m.half" && mv "$m.half" "$m"
state=$(cd "$C" && find . -printf '%p %s\n' | sort | md5sum)
refused "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "a damaged checkpoint: refused" "$T/stderr" "is damaged|no checkpoint of this job"
rm -rf "${C:?}"/*
expect_rc 2 "$N" "$DSORT" "${ARGS[@]}" --resume -o "$T/o/out" "$T/in.dat"
contains "no checkpoint at all: said" "$T/stderr" 'no checkpoint of this job'
expect_rc 2 "$N" "$DSORT" "${ARGS[@]}" --stop-after=0 -o "$T/o/out" "$T/in.dat"
contains "--stop-after=0: usage error" "$T/stderr" 'invalid --stop-after'
expect_rc 2 "$N" "$DSORT" -c --resume "$T/in.dat"
contains "--resume with -c: refused" "$T/stderr" 'for sorting, not -c'

suite_finish
