#!/usr/bin/env bash
# cluster.rankkill: a rank killed with SIGKILL in the middle of a sort (jobs/dsort.sbatch with
# mpirun, then with srun; out of core: most of the time goes to the exchange), as when a
# node's OOM killer strikes. Checked: the job ends within 10 s, as failed (jobcomp); no
# _SUCCESS and no part under a final name; the killed rank's temp directory is left on its
# node (nothing could remove it); the next run with the same temp dirs removes every stale
# directory and says so ("removed N temp directories left by dead dsort jobs"), and sorts
# correctly.
. "$(dirname "$0")/lib.sh"
cl_init

export DSORT_LOCAL_TMP=$LT
gen 6 3000000 "$S/in" # 300 MB: about 8 s with -S 2M on two cores (100 MB took 3 s by 2026-12-04: done before the kill)
# kill_case LAUNCHER NODE: run jobs/dsort.sbatch with LAUNCHER, SIGKILL one rank on NODE once
# NODE spills, check how the job ends and what it leaves.
kill_case() {
    local launcher=$1 node=$2 out=$S/out-$1
    echo "== $launcher: a rank on $node SIGKILLed"
    local job again
    # Runs of this job only: an earlier job's killed ranks may have left theirs on NODE (the
    # srun case once took the mpirun case's for its own and looked for its ranks too early).
    local SPILL_NEWER=$S/submitted-$launcher
    touch "$SPILL_NEWER"
    # Open MPI 4.1's start-up crash under srun (see sbatch.sh) ends a job before it spills:
    # such a job is submitted again, up to twice.
    for again in 0 1 2; do
        DSORT_LAUNCHER=$launcher DSORT_MEMORY=2M DSORT_OPTS="--out-of-core" \
            submit -N 3 --ntasks-per-node=2 -t 5 "$JOBS/dsort.sbatch" "$S/in" "$out/" || return
        job=$JOB
        wait_for 60 spilling_or_ended "$job" "$node" && spilling "$node" && break
        if [ "$again" -lt 2 ] && [ -n "$(tb_job_line "$job")" ] && ompi_startup_crash "$job" 30; then
            job_gone "$job" 30
            rm -rf "$out"
            continue
        fi
        fail "$launcher: job $job: $node did not spill within 60 s"
        cat "$S/job-$job.out" >&2
        tb_exec n0 scancel "$job"
        tb_wait_job "$job" 30
        return
    done
    local victim rank t0 ms
    victim=$(tb_pids "$node" dsort | head -n 1)
    # Its MPI rank: from mpirun, or from srun (the SLURM_PROCID of mpirun's ranks is that of
    # the Open MPI daemon's task).
    rank=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ -n "$rank" ] || rank=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^SLURM_PROCID=//p')
    echo "$launcher: killing rank $rank (pid $victim on $node) with SIGKILL"
    t0=$(date +%s%N)
    kill -KILL "$victim"
    if job_ends "$job" 30; then
        ms=$((($(date +%s%N) - t0) / 1000000))
        echo "$launcher: job $job ended $ms ms after the SIGKILL"
        CHECKS=$((CHECKS + 1))
        [ "$ms" -le 10000 ] || fail "$launcher: job $job ended $ms ms after a rank was killed: more than 10 s"
        CHECKS=$((CHECKS + 1))
        [ "$STATE" = FAILED ] && [ "$EXIT" != 0:0 ] ||
            fail "$launcher: job $job: JobState=$STATE ExitCode=$EXIT, expected FAILED with a non-zero exit code"
    fi
    job_gone "$job" 30
    grep -Eo "stopped by SIG[A-Z0-9]+( \([^)]*\))? in the [a-z_]+ phase" "$S/job-$job.out" |
        sort | uniq -c | sed "s/^/$launcher: the other ranks: /"
    eq "$launcher: output files after the failure" "" \
        "$(ls -A "$out" 2>/dev/null | grep -E '^(_SUCCESS|part-[0-9]+)$')"
    # Left: at least the killed rank's directory (others may have been SIGKILLed too before
    # they had cleaned up).
    eq "$launcher: the killed rank's temp directories left on $node" 1 \
        "$(temp_left "$node" | grep -c -- "-r$rank\$")"
}

# spilling_or_ended JOB NODE: NODE spills (the victim's: as soon as it does, since the whole
# job takes a few seconds), or the job has ended (its jobcomp record).
spilling_or_ended() {
    spilling "$2" || [ -n "$(tb_job_line "$1")" ]
}

kill_case mpirun n1
kill_case srun n2
stale=0
for node in "${TB_NODES[@]}"; do
    left=$(temp_left "$node")
    [ -n "$left" ] && echo "left on $node: $(echo $left)"
    stale=$((stale + $(echo -n "$left" | grep -c .)))
done

# The next run, with the same temp dirs (a smaller input: it only has to spill).
gen 6 200000 "$S/in2"
sum2=$GEN_SUM
DSORT_MEMORY=2M DSORT_OPTS="--out-of-core" \
    submit -N 3 --ntasks-per-node=2 -t 5 "$JOBS/dsort.sbatch" "$S/in2" "$S/out2/"
if job_ok "$JOB" 120; then
    validated "the next run" "$sum2" "$S/out2"
    removed=$(sed -n 's/^dsort: .*removed \([0-9]*\) temp director.* left by dead dsort jobs.*/\1/p' "$S/job-$JOB.out" |
        awk '{ n += $1 } END { print n + 0 }')
    eq "temp directories the next run says it removed (over all nodes)" "$stale" "$removed" ||
        sed 's/^/  | /' "$S/job-$JOB.out" >&2
fi
no_temp_left "after the next run"
cl_finish
