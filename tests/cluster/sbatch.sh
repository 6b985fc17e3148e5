#!/usr/bin/env bash
# cluster.sbatch: jobs/dsort.sbatch and jobs/pipeline.sbatch through sbatch on the test bed's
# Slurm (3 nodes x 2 tasks), with mpirun (the default) and with srun --mpi=pmix. Each job's final
# state and exit code come from the jobcomp file (not sbatch --wait); every output is validated
# with dsort-validate against the generator's checksum; no temp directory may be left on any
# node's local disk. Also: dsort's default budget in a job is 80% of --mem shared by the
# node's ranks, and a failing sort fails the job with dsort's exit status. srun --mpi=none: every
# task refuses (singletons of a step of 6); the batch script's own singleton sorts.
. "$(dirname "$0")/lib.sh"
cl_init

# No DSORT_LOCAL_TMP: the scripts' default, $TMPDIR, is on each node's own disk (see submit).
COUNT=200000 # 20 MB
gen 6 "$COUNT" "$S/in"
sum=$GEN_SUM
ALLOC=(-N 3 --ntasks-per-node=2 -t 5)

# dsort.sbatch, mpirun, to one file; no -S: the budget comes from --mem (SLURM_MEM_PER_NODE).
DSORT_OPTS="--stats $S/mem.json" submit "${ALLOC[@]}" --mem=500M "$JOBS/dsort.sbatch" "$S/in" "$S/out1"
j1=$JOB
# dsort.sbatch, srun --mpi=pmix, out of core, to part files.
DSORT_LAUNCHER=srun DSORT_MEMORY=4M DSORT_OPTS="--out-of-core" \
    submit "${ALLOC[@]}" "$JOBS/dsort.sbatch" "$S/in" "$S/out2/"
j2=$JOB
# pipeline.sbatch, mpirun, on the shared path.
DSORT_MEMORY=4M submit "${ALLOC[@]}" "$JOBS/pipeline.sbatch" "$COUNT" "$S/pipe"
j3=$JOB
# pipeline.sbatch, srun --mpi=pmix, node-local: data stays on each node's own disk.
submit_j4() {
    DSORT_LAUNCHER=srun DSORT_NODE_LOCAL=1 DSORT_MEMORY=4M DSORT_OPTS="--out-of-core" \
        submit "${ALLOC[@]}" "$JOBS/pipeline.sbatch" "$COUNT" "$TB_LAB/local/$1"
}
P4=pipe
submit_j4 $P4
j4=$JOB
# dsort.sbatch with an input that does not exist: the job must fail with dsort's status 2.
submit "${ALLOC[@]}" "$JOBS/dsort.sbatch" "$S/no-such-input" "$S/out5"
j5=$JOB
# srun without PMI (issue 25): every task would be a singleton sorting the whole input; each
# must refuse at once. Then the batch script itself (allocation variables only) sorts alone.
submit "${ALLOC[@]}" --wrap "srun --mpi=none $DSORT $S/in -o $S/out6; echo srun-mpi-none=\$?; $DSORT $S/in -o $S/out7; echo singleton=\$?"
j6=$JOB

# The jobs run one after the other (each takes all three nodes).
if job_ok "$j1" 120; then
    validated "dsort.sbatch with mpirun" "$sum" "$S/out1"
    # 80% of 500 MiB shared by the 2 ranks of each node.
    eq "default memory budget per rank in a job with --mem=500M" "209715200 SLURM_MEM_PER_NODE" \
        "$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["per_rank"]; print(" ".join(sorted({"%d %s" % (x["memory_budget"], "SLURM_MEM_PER_NODE" if "SLURM_MEM_PER_NODE" in x["memory_budget_reason"] else x["memory_budget_reason"]) for x in r})))' "$S/mem.json")"
fi
# Open MPI 4.1.4 under srun --mpi=pmix on this test bed: about 2% of job steps crash inside
# MPI_Init (a NULL callback in the TCP BTL, seen in a core dump: PMPI_Init -> opal_progress ->
# mca_btl_tcp), before dsort runs a line of its own; on a loaded machine (the CI's other
# tests beside it) more often: twice in a row was seen. Such a job is submitted again, up to
# twice; the last run must pass.
for _ in 1 2; do
    ompi_startup_crash "$j2" 120 || break
    rm -rf "$S/out2"
    DSORT_LAUNCHER=srun DSORT_MEMORY=4M DSORT_OPTS="--out-of-core" \
        submit "${ALLOC[@]}" "$JOBS/dsort.sbatch" "$S/in" "$S/out2/"
    j2=$JOB
done
if job_ok "$j2" 120; then
    validated "dsort.sbatch with srun" "$sum" "$S/out2"
    contains "dsort.sbatch with srun: the manifest" "$S/out2/_SUCCESS" '"part-00005"'
fi
if job_ok "$j3" 120; then
    contains "pipeline.sbatch with mpirun: its verdict" "$S/job-$j3.out" '^pipeline: OK: '
    validated "pipeline.sbatch with mpirun" \
        "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["checksum"])' "$S/pipe/input/_SUCCESS")" \
        "$S/pipe/output"
fi
for again in 1 2; do
    ompi_startup_crash "$j4" 120 || break
    P4=pipe-again$again
    submit_j4 $P4
    j4=$JOB
done
if job_ok "$j4" 120; then
    contains "pipeline.sbatch with srun, node-local: its verdict" "$S/job-$j4.out" '^pipeline: OK: '
    on n0 cat "$TB_LAB/local/$P4/input/_SUCCESS"
    validated "pipeline.sbatch with srun, node-local" \
        "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["checksum"])' "$S/.out")" \
        --local-inputs "$TB_LAB/local/$P4/output"
    # Each node holds the parts of its own ranks, in and out.
    for node in n0 n1 n2; do
        i=${node#n}
        on "$node" sh -c "cd $TB_LAB/local/$P4 && echo input/part-* output/part-*"
        eq "node-local parts on $node" \
            "$(printf 'input/part-%05d input/part-%05d output/part-%05d output/part-%05d' $((2 * i)) $((2 * i + 1)) $((2 * i)) $((2 * i + 1)))" \
            "$(cat "$S/.out")"
    done
fi
if job_ends "$j5" 120; then
    eq "dsort.sbatch with a missing input: JobState ExitCode" "FAILED 2:0" "$STATE $EXIT"
    contains "dsort.sbatch with a missing input: dsort's message" "$S/job-$j5.out" \
        "^dsort: rank [0-9]+/6 \(n[0-2]\): .*no-such-input"
fi
[ -e "$S/out5" ]
check $((!$?)) "a failed sort left $S/out5"
if job_ends "$j6" 120; then
    # Each task refuses (an MPI that makes singletons), or Open MPI 4.1's MPI_Init refuses a
    # direct launch without PMI before dsort can ("direct launched using srun"); never 6 sorts.
    refused=$(grep -Ec '^dsort: rank 0/1 \(n[0-2]\): started as 1 rank but srun started 6 tasks: use srun --mpi=pmix or mpirun' "$S/job-$j6.out")
    how="dsort's check"
    if grep -q 'appears to have been direct launched using "srun"' "$S/job-$j6.out"; then
        refused=6 how="Open MPI's MPI_Init"
    fi
    eq "srun --mpi=none: tasks that refused" 6 "$refused"
    note "srun --mpi=none: refused by $how"
    contains "srun --mpi=none: srun's status" "$S/job-$j6.out" '^srun-mpi-none=[1-9]'
    [ -e "$S/out6" ]
    check $((!$?)) "srun --mpi=none left $S/out6"
    contains "the batch script's singleton: its status" "$S/job-$j6.out" '^singleton=0$'
    validated "the batch script's singleton" "$sum" "$S/out7"
fi

no_temp_left "after the jobs"
cl_finish
