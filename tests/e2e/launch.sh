#!/bin/bash
# Launchers (issue 25, items 5 and 6).
#  - A task that MPI started as a singleton while its environment says that the launcher
#    started N > 1 tasks (srun without a working --mpi plugin: SLURM_STEP_NUM_TASKS with
#    SLURM_PROCID; an mpirun or mpiexec of another MPI: OMPI_COMM_WORLD_SIZE, PMI_SIZE) must
#    refuse at once, exit 2, touching no output: dsort, dsort-gen and dsort-validate. A
#    singleton with only an allocation's variables (an salloc shell: SLURM_NTASKS,
#    SLURM_JOB_NUM_NODES) or a step of one task must sort. These run without mpirun.
#  - Standard output through mpirun, which drops what it cannot write and exits 0: to a file
#    with room the output is whole and nothing is said; to a full tmpfs (root) the job fails
#    with exit 2 naming mpirun, the file and the bytes it got; to /dev/full and to a pipe rank 0
#    says how many records and bytes it handed over (checked against the data). A singleton
#    writing to /dev/full reports the write error itself.
# Oracle: LC_ALL=C sort of gensort ASCII records (unique keys, so whole-line order is key order).
# Usage: launch.sh NRANKS
[ "${1:-0}" -gt 1 ] 2>/dev/null && FAST_KILL=0
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=60

COUNT=3000
gen 1 -a "$COUNT" "$T/in"
LC_ALL=C sort "$T/in" >"$T/ref"
BYTES=$((COUNT * 100))

# Every launcher variable dsort reads, removed from the singletons' environment (the suite may
# itself run inside a Slurm step or under a launcher).
CLEAN=(-u SLURM_STEP_NUM_TASKS -u SLURM_PROCID -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_RANK
    -u PMI_SIZE -u PMI_RANK -u MPI_LOCALNRANKS -u MV2_COMM_WORLD_SIZE -u MV2_COMM_WORLD_RANK
    -u JSM_NAMESPACE_SIZE -u JSM_NAMESPACE_RANK)

# single VAR=VALUE... -- CMD...: CMD as a singleton (no mpirun) with those variables; RC, and
# stdout and stderr in $T/stdout and $T/stderr.
single() {
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    LAST_CMD="env ${envs[*]} $*"
    kto "$E2E_TIMEOUT" env "${CLEAN[@]}" "${envs[@]}" "$@" </dev/null \
        >"$T/stdout" 2>"$T/stderr"
    RC=$?
}

echo "== singletons that a launcher of N tasks started: refused"
STEP=(SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=4 SLURM_PROCID=2)
mkdir -p "$T/o"
printf 'old output\n' >"$T/o/old"
old=$(sha256sum <"$T/o/old")
for out in "-o $T/o/new" "-o $T/o/old" "-O $T/o/parts"; do
    read -ra oa <<<"$out"
    single "${STEP[@]}" -- "$DSORT" "$T/in" "${oa[@]}"
    eq "srun step of 4, $out: exit status" 2 "$RC"
    contains "srun step of 4, $out: the message" "$T/stderr" \
        "^dsort: rank 0/1 \(.*\): started as 1 rank but srun started 4 tasks: use srun --mpi=pmix or mpirun \(this is task 2"
done
eq "no new output, the old one unchanged" "old $old" "$(ls "$T/o") $(sha256sum <"$T/o/old")"
single "${STEP[@]}" -- "$GEN" 100 "$T/o/gen"
eq "dsort-gen in a step of 4: exit status" 2 "$RC"
contains "dsort-gen in a step of 4: the message" "$T/stderr" "^dsort-gen: rank 0/1 .*srun started 4 tasks"
eq "dsort-gen wrote nothing" "old" "$(ls "$T/o")"
single "${STEP[@]}" -- "$VALIDATE" "$T/ref"
eq "dsort-validate in a step of 4: exit status" 2 "$RC"
single OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 -- "$DSORT" "$T/in" -o "$T/o/new"
eq "mpirun of another MPI (OMPI_COMM_WORLD_SIZE=2): exit status" 2 "$RC"
contains "mpirun of another MPI: the message" "$T/stderr" "started as 1 rank but mpirun started 2 tasks"
single PMI_SIZE=3 PMI_RANK=0 MPI_LOCALNRANKS=3 -- "$DSORT" "$T/in" -o "$T/o/new"
eq "mpiexec (Hydra, PMI_SIZE=3): exit status" 2 "$RC"
contains "mpiexec: the message" "$T/stderr" "started as 1 rank but mpiexec started 3 tasks"
eq "still no new output" "old" "$(ls "$T/o")"

echo "== singletons that run: an salloc shell, a step of one task"
single SLURM_JOB_ID=4242 SLURM_NTASKS=4 SLURM_NPROCS=4 SLURM_JOB_NUM_NODES=2 SLURM_NNODES=2 \
    -- "$DSORT" "$T/in" -o "$T/o/alloc"
eq "salloc shell (allocation variables only): exit status" 0 "$RC"
same_file "salloc shell: output against sort" 100 "$T/ref" "$T/o/alloc"
single SLURM_JOB_ID=4242 SLURM_STEP_ID=1 SLURM_NTASKS=4 SLURM_STEP_NUM_TASKS=1 SLURM_PROCID=0 \
    -- "$DSORT" "$T/in" -o "$T/o/step1"
eq "a step of one task: exit status" 0 "$RC"
same_file "a step of one task: output against sort" 100 "$T/ref" "$T/o/step1"

echo "== standard output through mpirun (-n $N)"
HANDED="^dsort: rank 0/$N \(.*\): handed $COUNT records \($BYTES bytes\) to [a-z_]+ for standard output"
run "$N" "$DSORT" "$T/in"
eq "to a file: exit status" 0 "$RC"
same_file "to a file: output against sort" 100 "$T/ref" "$T/stdout"
eq "to a file with room: nothing said" "" "$(cat "$T/stderr")"
# /dev/full: mpirun's write fails; Open MPI 4.1 exits 0 anyway.
kto "$E2E_TIMEOUT" "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" \
    "$T/in" </dev/null >/dev/full 2>"$T/stderr"
RC=$?
echo "  > /dev/full: exit $RC"
# Open MPI's mpirun drops what it cannot write and exits 0: then rank 0 must have said what it
# handed over. MPICH's mpiexec reports the error itself and exits non-zero.
if [ "$RC" -eq 0 ]; then
    contains "> /dev/full, exit 0: rank 0 says what it handed over" "$T/stderr" "$HANDED"
else
    contains "> /dev/full, exit $RC: the error said" "$T/stderr" "$HANDED|No space left on device"
fi
# A pipe: what the reader does with it is not mpirun's to report; rank 0 says what it handed.
kto "$E2E_TIMEOUT" "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" \
    "$T/in" </dev/null 2>"$T/stderr" | cat >"$T/piped"
RC=$?
eq "| cat: exit status" 0 "$RC"
same_file "| cat: output against sort" 100 "$T/ref" "$T/piped"
contains "| cat: rank 0 says what it handed over" "$T/stderr" "$HANDED"
if [ "$(id -u)" = 0 ] && mkdir -p "$T/full" && mount -t tmpfs -o size=64k tmpfs "$T/full"; then
    kto "$E2E_TIMEOUT" "$MPIEXEC" "${RUN_FLAGS[@]}" "${MPI_PREFLAGS[@]}" -n "$N" \
        "$DSORT" "$T/in" </dev/null >"$T/full/out" 2>"$T/stderr"
    RC=$?
    got=$(stat -c %s "$T/full/out")
    umount "$T/full"
    # dsort's check (Open MPI's mpirun says nothing), or the launcher's own report (MPICH's)
    check $((RC == 0)) "to a full tmpfs (the launcher wrote $got of $BYTES bytes): exit status 0"
    contains "to a full tmpfs: the error names the launcher, the bytes and the file" "$T/stderr" \
        "^dsort: rank 0/$N \(.*\): [a-z_]+ wrote only $got of the $BYTES bytes of standard output \($COUNT records\) to '$T/full/out'|^\[mpiexec@.*No space left on device"
    [ "${DSORT_MPI:-openmpi}" != openmpi ] || eq "to a full tmpfs, Open MPI: exit status" 2 "$RC"
else
    echo "note: not root or no tmpfs: the full file system case is left out"
fi
single -- sh -c "exec \"\$0\" \"\$1\" >/dev/full" "$DSORT" "$T/in"
eq "a singleton to /dev/full: exit status" 2 "$RC"
contains "a singleton to /dev/full: its own error" "$T/stderr" "cannot write standard output: No space left on device"

suite_finish
