#!/bin/bash
# Checkpoints that survive any stop (issue 13): under --checkpoint an out-of-core job saves a
# checkpoint at the end of every round (and rewrites it after every extra merge pass), so
# SIGTERM, SIGKILL and SIGUSR1 in the final merge all leave a job that --resume finishes.
# Checked against the python oracle (fixed records) and GNU sort (lines):
#  - SIGTERM to the ranks during the rounds: the job stops at once with exit status 3, leaving
#    one checkpoint a rank and no output (nor an output temp); --resume gives the oracle's output
#    and leaves nothing in -T;
#  - SIGKILL to the ranks during the rounds (nothing runs in the ranks after it): --resume
#    finishes, removing the runs the kill cut short, and the output temp the killed job left
#    is gone afterwards;
#  - repeated stops in the final merge: stopped after the last round (--stop-after=ROUNDS, from
#    a run's --stats), resumed and stopped with SIGUSR1 once an extra merge pass of its final
#    merge has rewritten a checkpoint (exit 3, checkpoint kept), resumed and stopped with
#    SIGTERM (exit 3 too) as soon as it has taken the checkpoint over, resumed to the end: the oracle's output, and the last run read
#    nothing (all rounds were kept);
#  - text lines: SIGTERM during the rounds, --resume: byte-identical to LC_ALL=C sort -k2,2;
#  - --keep-checkpoint: another job's sweep removes a dead job's checkpoint older than it, keeps
#    a younger one, and a bad value is a usage error (exit 2).
# Ranks are frozen (SIGSTOP) at the moment looked for, signalled, and let go (SIGCONT), so the
# signal lands where the test says it does.
# Usage: resume_signals.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"
EXT_TIMEOUT=120

C=$T/ckpt # the -T of the jobs
O=$T/o    # their outputs
mkdir -p "$C" "$O"
gen 1 300000 "$T/in.dat"
py sort "$T/want" 100 0 10 - "$T/in.dat" || die "oracle failed"
ARGS=(-S 2M -T "$C")

# gone: wait until no dsort process of the test is left (mpirun may return before its ranks
# have all exited).
gone() {
    for _ in $(seq 100); do
        [ -z "$(dsort_procs "$C")" ] && return 0
        sleep 0.1
    done
}

# start CMD...: start mpirun -n N CMD in the background (job: its pid; output in $T/std*),
# once the ranks of the jobs before are gone. The job runs at nice 15, so that on a busy
# machine (ctest -j2 beside other tests) the poller of freeze_when, at the test's own
# priority, still sees the moment it waits for before the job is past it.
start() {
    gone
    LAST_CMD="nice -n 15 $MPIEXEC ${RUN_FLAGS[*]} ${MPI_PREFLAGS[*]} -n $N $*"
    nice -n 15 "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$N" "$@" </dev/null \
        >"$T/stdout" 2>"$T/stderr" &
    job=$!
}

# ranks_up: wait until the N ranks of the job run (pids in RANKS); 1 if the job ended first.
ranks_up() {
    RANKS=()
    for _ in $(seq 1000); do
        # mpirun's children (Open MPI starts the ranks of its own node itself)
        mapfile -t RANKS < <(pgrep -P "$job" | while read -r p; do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dsort ] && echo "$p"
        done)
        [ "${#RANKS[@]}" -ge "$N" ] && return 0
        kill -0 "$job" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# freeze_when WHAT CMD...: poll CMD (shell builtins only: quick) until it succeeds, then stop
# the ranks (SIGSTOP). 1 (with a failure) if the job ended first.
freeze_when() {
    local what=$1
    shift
    for _ in $(seq 200000); do
        if "$@"; then
            kill -STOP "${RANKS[@]}" 2>/dev/null
            return 0
        fi
        kill -0 "$job" 2>/dev/null || break
    done
    fail "$what: the job ended before the moment looked for (exit: $(wait $job; echo $?))"
    return 1
}

# signal_frozen SIG: send SIG to the frozen ranks, let them go, wait for mpirun (RC).
signal_frozen() {
    kill "-$1" "${RANKS[@]}" 2>/dev/null
    kill -CONT "${RANKS[@]}" 2>/dev/null
    wait "$job"
    RC=$?
}

# runs_spilled K: every rank's directory holds run K (a later round is under way).
runs_spilled() {
    local d n=0
    for d in "$C"/dsort-*-r*; do
        [ -e "$d/run-$1" ] && [ -e "$d/checkpoint" ] && n=$((n + 1))
    done
    [ "$n" -ge "$N" ]
}

# ckpt_rewritten: a rank's checkpoint is newer than $T/mark (a resumed job with no round left
# rewrites it only after an extra merge pass of its final merge).
ckpt_rewritten() {
    local f
    for f in "$C"/dsort-*-r*/checkpoint; do
        [ "$f" -nt "$T/mark" ] && return 0
    done
    return 1
}

# claimed: every rank's directory has an owner file newer than $T/mark (the resumed job has
# taken the checkpoint over; with no round left, what it does next is the final merge).
claimed() {
    local d n=0
    for d in "$C"/dsort-*-r*; do
        [ "$d/owner" -nt "$T/mark" ] && n=$((n + 1))
    done
    [ "$n" -ge "$N" ]
}

# kept WHAT OUT: the job stopped without output and left a checkpoint a rank.
kept() {
    CHECKS=$((CHECKS + 1))
    [ ! -e "$2" ] || fail "$1: the output $2 exists after the stop"
    eq "$1: hidden output temps" "" "$(find "$(dirname "$2")" -maxdepth 1 -name '.*dsort-*' | tr '\n' ' ')"
    eq "$1: checkpoints kept (one a rank)" "$N" "$(find "$C" -name checkpoint | wc -l)"
}

# finished WHAT WANT OUT: the last run succeeded with WANT's bytes and left nothing in -T.
finished() {
    ok_status
    CHECKS=$((CHECKS + 1))
    cmp -s "$2" "$3" || fail "$1: the output differs from the oracle's"
    empty_dir "$1: the temp dir after the resumed job" "$C"
    eq "$1: hidden output temps" "" "$(find "$(dirname "$3")" -maxdepth 1 -name '.*dsort-*' | tr '\n' ' ')"
}

# SIGTERM to the ranks (as Slurm's time limit sends it to every task) during the rounds, once
# round 3 has begun.
start "$DSORT" "${ARGS[@]}" --checkpoint -o "$O/term" "$T/in.dat"
if ranks_up && freeze_when "SIGTERM in the rounds" runs_spilled 000002; then
    signal_frozen TERM
    eq "SIGTERM in the rounds: exit status (3: stopped, resumable)" 3 "$RC"
    kept "SIGTERM in the rounds" "$O/term"
    run "$N" "$DSORT" "${ARGS[@]}" --resume -o "$O/term" "$T/in.dat"
    finished "resume after SIGTERM" "$T/want" "$O/term"
fi

# SIGKILL to the ranks during the rounds: no handler runs; the last round's checkpoint is there.
start "$DSORT" "${ARGS[@]}" --checkpoint -o "$O/kill" "$T/in.dat"
if ranks_up && freeze_when "SIGKILL in the rounds" runs_spilled 000003; then
    kill -KILL "${RANKS[@]}"
    wait "$job"
    eq "SIGKILL in the rounds: checkpoints left (one a rank)" "$N" "$(find "$C" -name checkpoint | wc -l)"
    run "$N" "$DSORT" "${ARGS[@]}" --resume -o "$O/kill" "$T/in.dat"
    finished "resume after SIGKILL" "$T/want" "$O/kill"
fi

# Repeated stops in the final merge. The rounds of this job, from a run to the end:
ok "$N" "$DSORT" "${ARGS[@]}" --stats "$T/full.json" -o "$O/full" "$T/in.dat"
same_file "from scratch" 100 "$T/want" "$O/full"
rounds=$(python3 -c 'import json,sys; print(max(r["rounds"] for r in json.load(open(sys.argv[1]))["per_rank"]))' "$T/full.json")
cond "the job takes rounds ($rounds) and extra merge passes" \
    "$rounds > 1 and $(st "$T/full.json" sum merge_passes) > 0"
expect_rc 3 "$N" "$DSORT" "${ARGS[@]}" --checkpoint --stop-after="$rounds" -o "$O/fm" "$T/in.dat"
kept "stop after the last round" "$O/fm"
for sig in USR1 TERM; do
    touch "$T/mark"
    sleep 0.05 # file times are coarser than this (a tick)
    start "$DSORT" "${ARGS[@]}" --resume -o "$O/fm" "$T/in.dat"
    # the first stop once a pass has rewritten a checkpoint (the passes may all be done
    # then); the second as soon as the job has taken the checkpoint over
    when=ckpt_rewritten
    [ "$sig" = TERM ] && when=claimed
    if ranks_up && freeze_when "SIG$sig in the final merge" "$when"; then
        CHECKS=$((CHECKS + 1))
        [ ! -e "$O/fm" ] || fail "SIG$sig in the final merge: frozen too late (the output is committed)"
        signal_frozen "$sig"
        eq "SIG$sig in the final merge: exit status (3: stopped, resumable)" 3 "$RC"
        # (what a rank killed by SIGTERM writes may be lost as mpirun goes down)
        [ "$sig" = USR1 ] && contains "SIGUSR1 in the final merge: said" "$T/stderr" \
            "stopped by SIGUSR1 in the [a-z_]+ phase; the checkpoint is kept"
        kept "SIG$sig in the final merge" "$O/fm"
    fi
done
run "$N" "$DSORT" "${ARGS[@]}" --resume --stats "$T/fm.json" -o "$O/fm" "$T/in.dat"
finished "resume after stops in the final merge" "$T/want" "$O/fm"
eq "the last resume read nothing (all rounds were kept)" 0 "$(st "$T/fm.json" sum bytes_read)"

# Text lines: SIGTERM during the rounds, then --resume.
python3 "$(dirname "$0")/../lines_gen.py" --seed "$SEED" --lines 300000 >"$T/in.txt"
LC_ALL=C sort -k2,2 "$T/in.txt" >"$T/want.txt"
# shellcheck disable=SC2054 # -k2,2 is one word
L=(--format lines -k2,2 -S 2M -T "$C")
start "$DSORT" "${L[@]}" --checkpoint -o "$O/lines" "$T/in.txt"
if ranks_up && freeze_when "lines: SIGTERM in the rounds" runs_spilled 000001; then
    signal_frozen TERM
    eq "lines: SIGTERM: exit status (3: stopped, resumable)" 3 "$RC"
    kept "lines: SIGTERM in the rounds" "$O/lines"
    run "$N" "$DSORT" "${L[@]}" --resume -o "$O/lines" "$T/in.txt"
    finished "lines: resume after SIGTERM" "$T/want.txt" "$O/lines"
fi

# --keep-checkpoint: the sweep of another job on the same -T judges a dead job's checkpoint by
# its age.
for age in "3 days" "1 day"; do
    expect_rc 3 "$N" "$DSORT" "${ARGS[@]}" --stop-after=1 -o "$O/k" "$T/in.dat"
    gone # a live owner's directory is never swept
    find "$C" -name checkpoint -exec touch -d "$age ago" {} +
    ok "$N" "$DSORT" "${ARGS[@]}" --keep-checkpoint=2d -o "$O/other" "$T/in.dat"
    if [ "$age" = "3 days" ]; then
        eq "a checkpoint 3 days old under --keep-checkpoint=2d: swept" 0 "$(find "$C" -name checkpoint | wc -l)"
        contains "the sweep says so" "$T/stderr" 'removed [0-9]+ temp director'
    else
        eq "a checkpoint 1 day old under --keep-checkpoint=2d: kept" "$N" "$(find "$C" -name checkpoint | wc -l)"
        run "$N" "$DSORT" "${ARGS[@]}" --resume -o "$O/k" "$T/in.dat"
        finished "resume of the checkpoint kept" "$T/want" "$O/k"
    fi
done
for bad in soon 5y -1d ""; do
    expect_rc 2 "$N" "$DSORT" "${ARGS[@]}" --keep-checkpoint="$bad" -o "$O/bad" "$T/in.dat"
    contains "--keep-checkpoint=$bad: said" "$T/stderr" "invalid --keep-checkpoint"
done

suite_finish
