#!/bin/bash
# Stop and resume under faults (issue 25): every case stops an out-of-core job with
# --stop-after=1 (exit 3, a checkpoint a rank), then does to its --resume what a user or a batch
# system may do, and checks against GNU sort that no output is ever wrong and that no work is
# thrown away:
#  - the input rewritten in place (same inode and size) with its mtime put back (touch -r, as
#    cp -p and rsync -t --inplace do): refused (exit 2) naming the input, the checkpoint kept as
#    it was; with a manifest that has no ctime (as version 1 wrote), the sampled bytes of the
#    input already read catch it (naming the offset); the old content put back, the resume
#    finishes with GNU sort's output;
#  - the output's file system full (ENOSPC on every write to the output, by the shim) during the
#    resume: exit 2, the checkpoint and its runs kept (rank 0 says where); a second resume
#    finishes; nothing is left;
#  - two --resume of one job at once: the first, held by the shim (rank 1 stopped at its first
#    read, after rank 0 has taken the checkpoint's lock), then the second: refused at once
#    (exit 2, "being resumed by another dsort") without touching the checkpoint; the first,
#    let go, finishes; and two started together without a hook: exactly one finishes;
#  - a resume with a smaller -S than the runs' blocks need: refused before anything is touched,
#    naming the -S that works, which then finishes it (fixed records); text lines allocate
#    their merge buffers and finish at the smaller -S;
#  - a save torn by SIGTERM between the ranks' manifests of round 3 (rank 1 held by the shim
#    before it renames its manifest in place): the resume goes back to round 2 on rank 0 (its
#    checkpoint.prev), says so, and finishes with GNU sort's output; without that file it is
#    refused naming the tear, the checkpoint as it was;
#  - the same at the first save: nothing is left (checkpoint.tmp included);
#  - a refused resume names the nearest checkpoint and what differs: an input path or the
#    output's (which does not exist yet) spelled differently (the same file), an option added.
# Usage: resume.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data ext lines
# shellcheck disable=SC2034 # (LIMIT_S and FX are faultlib's)
LIMIT_S=20 # a refusal comes before any work; a loaded machine starts mpirun slowly

# ckpt_state: the temp dir's files with their sizes and the manifests' content (a refused resume
# must leave it as it was).
ckpt_state() {
    (cd "$TMP_DIR" && find . -type f -printf '%p %s\n' | LC_ALL=C sort && find . -name checkpoint -exec cat {} +) | md5sum
}

# stop PIPE [BUDGET [ARGS...]]: case set-up: a copy of the pipeline's input in $C/in.dat, the
# job stopped after round 1 (BUDGET replaces the pipeline's -S, ARGS are added); ARGS_RUN are
# the job's arguments, ARGS_NOS the same without -S.
stop() {
    local pipe=$1 a=() i s=()
    shift
    pipeline_args "$pipe"
    cp "${PARGS[-1]}" "$C/in.dat"
    PARGS[-1]=$C/in.dat
    for ((i = 0; i < ${#PARGS[@]}; i++)); do
        if [ "${PARGS[i]}" = -S ]; then
            s=(-S "${PARGS[i + 1]}")
            i=$((i + 1))
        else
            a+=("${PARGS[i]}")
        fi
    done
    [ $# -eq 0 ] || s=(-S "$1")
    [ $# -le 1 ] || a=("${@:2}" "${a[@]}")
    out_setup o-new
    ARGS_NOS=(-T "$TMP_DIR" "${OUTARGS[@]}" "${a[@]}")
    ARGS_RUN=("${s[@]}" "${ARGS_NOS[@]}")
    run_job "$N" --stop-after=1 "${ARGS_RUN[@]}"
    eq "stopped with a checkpoint (exit 3)" 3 "$RC"
    eq "checkpoints (one a rank)" "$N" "$(find "$TMP_DIR" -name checkpoint | wc -l)"
}

# refused REGEX: the last job was refused (exit 2) promptly, saying REGEX, wrote nothing and
# left the checkpoint as it was ($STATE).
refused() {
    check_exit 2
    check_prompt
    check_rank_line "$1"
    check_final
    eq "the checkpoint as it was" "$STATE" "$(ckpt_state)"
}

# finished: the last job gave GNU sort's output and left nothing else.
finished() {
    eq "exit status" 0 "$RC"
    same_output
    eq "files in the output directory" "sorted.dat" "$(listing "$OUT_DIR")"
    eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
}

# rewrite FILE: other content of the same size in place (the lines reversed), mtime put back.
rewrite() {
    touch -r "$1" "$C/stamp"
    tac "$1" >"$C/other"
    dd if="$C/other" of="$1" conv=notrunc status=none
    touch -r "$C/stamp" "$1"
    rm -f "$C/other"
}

for pipe in ext lines; do
    case_begin "resume after the input was rewritten in place, mtime kept (touch -r)" "$pipe" \
        "refused, exit 2, naming the input; the checkpoint kept; old content back: finishes"
    stop "$pipe"
    cp "$C/in.dat" "$C/in.orig"
    rewrite "$C/in.dat"
    STATE=$(ckpt_state)
    run_job "$N" --resume "${ARGS_RUN[@]}"
    refused "'$C/in.dat' changed since the checkpoint: its ctime changed"
    # Without the ctime (a manifest of version 1): the sampled bytes of what was read.
    find "$TMP_DIR" -name checkpoint -exec sed -i -E 's/^(input( [^ ]+){6}) [0-9]+ [0-9]+$/\1/' {} +
    STATE=$(ckpt_state)
    run_job "$N" --resume "${ARGS_RUN[@]}"
    refused "'$C/in.dat' changed since the checkpoint: the bytes at offset [0-9]+, read before the stop"
    dd if="$C/in.orig" of="$C/in.dat" conv=notrunc status=none
    touch -r "$C/stamp" "$C/in.dat"
    run_job "$N" --resume "${ARGS_RUN[@]}"
    finished
    rm -f "$C/in.orig"
    case_end

    case_begin "resume whose output fills its file system (ENOSPC)" "$pipe" \
        "exit 2; the checkpoint and its runs kept; the next resume finishes"
    stop "$pipe"
    FX=(FAULT_MODE=enospc "FAULT_PATH=$OUT_DIR/" FAULT_OP=write "FAULT_LOG=$C/fault.log")
    run_job "$N" --resume "${ARGS_RUN[@]}"
    check_faulted
    check_exit 2
    check_rank_line "No space left on device"
    contains "rank 0 says the checkpoint is kept" "$T/stderr" "checkpoint of round [0-9]+ is kept in"
    eq "checkpoints kept (one a rank)" "$N" "$(find "$TMP_DIR" -name checkpoint | wc -l)"
    check_final
    FX=()
    run_job "$N" --resume "${ARGS_RUN[@]}"
    finished
    case_end
done

# A save torn by a real signal: rank 1 held (the shim) right before it puts its manifest of
# round 3 in place (the rename of checkpoint.tmp), rank 0's already there; then SIGTERM to
# every rank, as Slurm's time limit sends it. Rank 0 keeps round 3, rank 1 round 2: --resume
# goes back to round 2 (rank 0's checkpoint.prev), says so and finishes with GNU sort's output.
# First, rank 0's save before taken away: refused naming the tear, the checkpoint as it was.
for pipe in ext lines; do
    case_begin "a save torn by SIGTERM between the ranks' manifests of round 3" "$pipe" \
        "resume goes back to round 2 (every rank's) and finishes; without rank 0's save before: refused, kept"
    pipeline_args "$pipe"
    cp "${PARGS[-1]}" "$C/in.dat"
    PARGS[-1]=$C/in.dat
    out_setup o-new
    ARGS_RUN=(-T "$TMP_DIR" "${OUTARGS[@]}" "${PARGS[@]}")
    FX=(FAULT_RENAME=/checkpoint FAULT_RENAME_STOP=3 FAULT_RANK=1 "FAULT_READY=$C/ready"
        "FAULT_LOG=$C/fault.log")
    start_job "$N" --checkpoint "${ARGS_RUN[@]}"
    if wait_ready 1; then
        r0=$(echo "$TMP_DIR"/dsort-*-r0/checkpoint)
        for _ in $(seq 1 1000); do # rank 0 saves round 3 and waits for rank 1
            [ "$(grep '^rounds ' "$r0" 2>/dev/null)" = "rounds 3" ] && break
            sleep 0.01
        done
        for p in $(dsort_procs "$C"); do kill -TERM "$p"; done
        resume 1
        wait_end
        FX=()
        cond "the torn job stopped non-zero (exit $RC)" "$RC != 0"
        check_final
        eq "the tear: rank 0's round, rank 1's" "rounds 3 rounds 2" \
            "$(cat "$r0" "$TMP_DIR"/dsort-*-r1/checkpoint | grep '^rounds ' | tr '\n' ' ' | sed 's/ $//')"
        mv "$TMP_DIR"/dsort-*-r0/checkpoint.prev "$C/r0.prev"
        STATE=$(ckpt_state)
        run_job "$N" --resume --checkpoint "${ARGS_RUN[@]}"
        refused "torn \(this rank kept round 3, another rank round 2.* has not kept round 2"
        mv "$C/r0.prev" "$(dirname "$r0")/checkpoint.prev"
        run_job "$N" --resume --checkpoint "${ARGS_RUN[@]}"
        contains "rank 0 says it went back" "$T/stderr" \
            "^dsort: rank 0/$N \([^)]+\): note: the checkpoint was torn .*resuming from round 2"
        finished
    fi
    case_end
done

# The same at the first save (no checkpoint yet to keep): everything removed, the manifest
# written but not yet renamed in place (checkpoint.tmp) too, so that no directory is left.
case_begin "SIGTERM while rank 1 puts its first manifest in place" ext \
    "stopped non-zero, nothing left (no checkpoint.tmp, no directory); no output"
pipeline_args ext
out_setup o-new
ARGS_RUN=(-T "$TMP_DIR" "${OUTARGS[@]}" "${PARGS[@]}")
FX=(FAULT_RENAME=/checkpoint FAULT_RENAME_STOP=1 FAULT_RANK=1 "FAULT_READY=$C/ready"
    "FAULT_LOG=$C/fault.log")
start_job "$N" --checkpoint "${ARGS_RUN[@]}"
if wait_ready 1; then
    for p in $(dsort_procs "$C"); do kill -TERM "$p"; done
    resume 1
    wait_end
    cond "stopped non-zero (exit $RC)" "$RC != 0"
    check_final
    eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
fi
case_end

case_begin "two --resume of one job at once, the first held after its claim" lines \
    "the second refused at once (exit 2), the checkpoint untouched; the first finishes"
if need_phase_hook; then
    stop lines
    STATE=$(ckpt_state)
    # rank 1 stopped at its second read of the sample phase (its owner check, after rank 0 has
    # found the checkpoint and taken its lock; before this resume owns the directories)
    phase_hook sample 1 2 1
    start_job "$N" --resume "${ARGS_RUN[@]}"
    if wait_ready 1; then
        first=$JOB
        JOB=""
        t0=$(date +%s%N)
        LAST_CMD="(second) $MPIEXEC -n $N $DSORT --resume ${ARGS_RUN[*]}"
        "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" --resume "${ARGS_RUN[@]}" \
            </dev/null >"$C/second.out" 2>"$C/second.err"
        RC=$?
        GONE_MS=$((($(date +%s%N) - t0) / 1000000))
        cp "$C/second.err" "$T/stderr"
        sed 's/^/  | /' "$T/stderr" | head -n 5
        refused "is being resumed by another dsort at this moment"
        JOB=$first
        resume 1
        wait_end
        finished
    fi
fi
case_end

case_begin "two --resume of one job started together" ext \
    "exactly one finishes (exit 0), the other exit 2; the output GNU sort's"
stop ext
rcs=()
pids=()
for i in 1 2; do
    "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" --resume "${ARGS_RUN[@]}" \
        </dev/null >"$C/r$i.out" 2>"$C/r$i.err" &
    pids+=($!)
done
for i in 0 1; do
    wait "${pids[i]}"
    rcs+=($?)
done
sed 's/^/  | /' "$C/r1.err" "$C/r2.err" | head -n 6
eq "exit statuses (sorted)" "0 2" "$(printf '%s\n' "${rcs[@]}" | sort -n | tr '\n' ' ' | sed 's/ $//')"
note "exits ${rcs[*]}"
RC=0
finished
case_end

case_begin "resume with a smaller -S than its runs' blocks need" ext \
    "refused before anything is touched, naming the -S that works; that -S finishes"
stop ext 64M --out-of-core
STATE=$(ckpt_state)
run_job "$N" --resume -S 4M "${ARGS_NOS[@]}"
refused "merging them needs -S [0-9.]+ MiB or more"
need=$(grep -Eo 'needs -S [0-9.]+ MiB' "$T/stderr" | head -n 1 | grep -Eo '[0-9.]+')
note "needs -S ${need} MiB"
run_job "$N" --resume -S "${need%.*}M" "${ARGS_NOS[@]}"
finished
case_end

case_begin "resume with a smaller -S" lines "finishes (the merge buffers are the runs' own)"
stop lines 64M --out-of-core
run_job "$N" --resume -S 4M "${ARGS_NOS[@]}"
finished
case_end

case_begin "a refused resume names the nearest checkpoint and what differs" ext \
    "exit 2 naming the checkpoint and the difference; the checkpoint untouched"
stop ext
STATE=$(ckpt_state)
spelled=("${ARGS_RUN[@]}")
spelled[-1]=$C/./in.dat
run_job "$N" --resume "${spelled[@]}"
refused "the nearest, in '$TMP_DIR/dsort-[^']*-r0', is not: '$C/in.dat' then and '$C/\./in.dat' now are the same file spelled differently \(give it as it was given then\)"
spelled=()
for a in "${ARGS_RUN[@]}"; do spelled+=("${a/#$OUT_DIR\//$C/out/../out/}"); done
run_job "$N" --resume "${spelled[@]}"
refused "'$C/out/sorted.dat' then and '$C/out/\.\./out/sorted.dat' now are the same file spelled differently"
run_job "$N" --resume -r "${ARGS_RUN[@]}"
refused "the nearest, in '$TMP_DIR/dsort-[^']*-r0', is not: this command adds '-r'"
run_job "$N" --resume "${ARGS_RUN[@]}"
finished
case_end

# A signal after the commit (the output is published, --stats not yet renamed in place): the
# rank says the output is complete, not that nothing was written, and a kept checkpoint is not
# left to resume a finished job.
case_begin "SIGTERM after the commit, before --stats is in place" ext \
    "dies by the signal, says the output is complete; the output is whole, nothing left in -T"
pipeline_args ext
out_setup o-new
ARGS_RUN=(-T "$TMP_DIR" "${OUTARGS[@]}" --stats "$C/stats.json" "${PARGS[@]}")
FX=(FAULT_RENAME=stats.json FAULT_RENAME_STOP=1 FAULT_RANK=0 "FAULT_READY=$C/ready"
    "FAULT_LOG=$C/fault.log")
start_job "$N" --checkpoint "${ARGS_RUN[@]}"
if wait_ready 0; then
    for p in $(dsort_procs "$C"); do kill -TERM "$p"; done
    resume 0
    wait_end
    FX=()
    cond "ended non-zero by the signal (exit $RC)" "$RC != 0 and $RC != 3"
    contains "rank 0 says the output is complete" "$T/stderr" \
        "^dsort: rank 0/$N \([^)]+\): stopped by SIGTERM after the output was committed; the output is complete"
    eq "nobody says nothing was written" "" "$(grep 'no output written' "$T/stderr")"
    same_output
    eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
fi
case_end

suite_finish
