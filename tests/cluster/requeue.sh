#!/usr/bin/env bash
# cluster.requeue: a sort that does not finish in its allocation finishes in the next one
# (issue 13). jobs/dsort.sbatch with DSORT_RESUMABLE (a directory every node sees) runs dsort
# with --checkpoint; the time-limit warning (scancel --signal=USR1 --batch, what
# --signal=B:USR1@N sends) comes once every node has spilled a run; the ranks finish their round,
# keep their runs and checkpoints, exit 3; the script requeues the job, whose next run passes
# --resume and completes. Checked: the job's output says it stopped and was requeued, the job
# ends COMPLETED, the output is sorted with the generator's checksum (dsort-validate over the
# three nodes) and byte-identical to a one-shot sort, and nothing is left in the checkpoint
# directory or in any node's scratch.
# Then a job that Slurm requeues before its first checkpoint (scontrol requeue, as for a node
# failure or preemption, while its ranks are still starting) starts over instead of passing
# --resume (issue 29 item 6): it completes with the same output.
. "$(dirname "$0")/lib.sh"
cl_init

export DSORT_LOCAL_TMP=$LT
COUNT=1000000 # 100 MB: 8-20 s with -S 2M on two cores
gen 6 "$COUNT" "$S/in"
sum=$GEN_SUM
CK=$S/ckpt
mkdir -p "$CK" "$S/rq" "$S/once"

# await_requeued JOB: wait until the requeued JOB completes. The requeued run writes its record
# when it completes (the stopped run's record first). slurmctld holds a requeued job back (its
# BeginTime is set ahead: about two minutes of this test's time went there); once it is pending
# for that reason, release it as an administrator can (scontrol update StartTime=now): the
# requeue itself is what is tested. A job held instead (JobHeldAdmin, JobHeldUser: seen under
# load) is released the same way. On a timeout, say what Slurm knows of the job.
await_requeued() {
    local job=$1 polls=0 released=0
    completed() { grep -Eq "^JobId=$job .*JobState=COMPLETED" "$TB_LAB/slurm/jobcomp.txt"; }
    completed_or_release() {
        completed && return 0
        polls=$((polls + 1))
        [ "$released" = 0 ] && [ $((polls % 10)) = 0 ] || return 1
        local st
        st=$(tb_exec n0 squeue -h -j "$job" -o '%T %r' 2>/dev/null)
        case $st in
        "PENDING BeginTime")
            tb_exec n0 scontrol update JobId="$job" StartTime=now >/dev/null 2>&1 && released=1 ;;
        "PENDING JobHeld"*)
            tb_exec n0 scontrol release "$job" >/dev/null 2>&1 && released=1 ;;
        esac
        return 1
    }
    wait_for 280 completed_or_release && return 0
    fail "job $job did not complete after its requeue (squeue: $(tb_exec n0 squeue -h -j "$job" -o '%T %r' 2>&1); released: $released)"
    tail -n 30 "$S/job-$job.out" | sed 's/^/  | /' >&2
    {
        echo "  scontrol show job $job:"
        tb_exec n0 scontrol show job "$job" 2>&1 | grep -E "JobState|Reason|BeginTime|Restarts|NodeList"
        echo "  squeue -a:"
        tb_exec n0 squeue -a 2>&1
        echo "  jobcomp.txt on job $job:"
        grep -E "^JobId=$job " "$TB_LAB/slurm/jobcomp.txt" 2>&1
        echo "  slurmctld.log, last 25 lines:"
        tail -n 25 "$TB_LAB/slurm/log/slurmctld.log" 2>&1
    } | sed 's/^/  | /' >&2
}

# A one-shot sort of the same input, for comparison.
DSORT_MEMORY=2M DSORT_OPTS="--out-of-core" submit -N 3 --ntasks-per-node=2 -t 5 \
    "$JOBS/dsort.sbatch" "$S/in" "$S/once/sorted"
job_ok "$JOB" 180

# ckpt_spilling: every rank's directory in the shared checkpoint dir holds a run.
ckpt_spilling() {
    [ "$(find "$CK" -path '*/dsort-*/run-000000' 2>/dev/null | wc -l)" -ge 6 ]
}

# --open-mode=append: the requeued run appends to the job's output (else it starts it anew).
DSORT_RESUMABLE=$CK DSORT_MEMORY=2M DSORT_OPTS="--out-of-core" \
    submit -N 3 --ntasks-per-node=2 -t 5 --open-mode=append "$JOBS/dsort.sbatch" "$S/in" \
    "$S/rq/sorted"
job=$JOB
if ! wait_for 90 ckpt_spilling; then
    fail "job $job: the ranks did not all spill into $CK within 90 s"
    cat "$S/job-$job.out" >&2
else
    tb_exec n0 scancel --signal=USR1 --batch "$job"
    await_requeued "$job"
    log=$S/job-$job.out
    contains "the stop is said" "$log" 'stopped after round [0-9]+ with a checkpoint'
    contains "the script requeued the job" "$log" "requeueing job $job"
    contains "the requeued run resumed" "$log" 'dsort exited with status 0'
    eq "ExitCode of the completed job" 0:0 "$(grep -E "^JobId=$job .*JobState=COMPLETED" \
        "$TB_LAB/slurm/jobcomp.txt" | tail -n 1 | tr ' ' '\n' | sed -n 's/^ExitCode=//p')"
    validated "resumed over two allocations" "$sum" "$S/rq/sorted"
    CHECKS=$((CHECKS + 1))
    cmp -s "$S/once/sorted" "$S/rq/sorted" || fail "the resumed output differs from the one-shot sort's"
    eq "left in the checkpoint directory" "" "$(ls -A "$CK")"
    no_temp_left "requeue"
fi

# Requeued before any checkpoint: the first run's ranks wait (a wrapper in front of dsort) until
# the test has requeued the job; the second run must start over and complete.
W=$S/wrap
mkdir -p "$W" "$S/early"
cat >"$W/dsort" <<EOF2
#!/bin/bash
if [ ! -e "$S/requeued" ]; then touch "$S/first-run"; exec sleep 600; fi
exec "$DSORT" "\$@"
EOF2
chmod +x "$W/dsort"
rm -rf "${CK:?}"/*
DSORT_BIN_DIR=$W DSORT_RESUMABLE=$CK DSORT_MEMORY=2M DSORT_OPTS="--out-of-core" \
    submit -N 3 --ntasks-per-node=2 -t 5 "$JOBS/dsort.sbatch" "$S/in" "$S/early/sorted"
job=$JOB
if ! wait_for 90 test -e "$S/first-run"; then
    fail "job $job: the first run did not start within 90 s"
    tb_exec n0 scancel "$job"
else
    touch "$S/requeued"
    tb_exec n0 scontrol requeue "$job"
    await_requeued "$job"
    log=$S/job-$job.out
    contains "early requeue: the script starts over" "$log" "no checkpoint of it in .*, starting over"
    contains "early requeue: the sort completed" "$log" 'dsort exited with status 0'
    CHECKS=$((CHECKS + 1))
    cmp -s "$S/once/sorted" "$S/early/sorted" || fail "the early-requeued job's output differs from the one-shot sort's"
    eq "left in the checkpoint directory" "" "$(ls -A "$CK")"
    no_temp_left "early requeue"
fi
cl_finish
