#!/bin/bash
# Process limits that batch systems set (issue 25, item 15): the file size limit (ulimit -f,
# RLIMIT_FSIZE) and the soft CPU time limit (ulimit -t, RLIMIT_CPU). By default their signals,
# SIGXFSZ and SIGXCPU, kill a process without a word and leave the output's hidden temp and the
# -T directories behind. What must hold:
#   - a write past the file size limit fails with EFBIG: exit 2, one line naming the rank, the
#     file and the limit ("ulimit -f"), nothing under the final name, nothing left; with -o the
#     output is sized up front, with -O the parts are written in the final merge (runs on disk);
#   - the soft CPU limit running out (the shim's phase hook spins at the start of the first
#     spill, under prlimit --cpu=2:, 8 s under ASan) stops the job as SIGTERM does: "stopped
#     by SIGXCPU (the CPU time limit, ulimit -t, was reached: 2.0 s of CPU time used) in the
#     spill phase", within 10 s + 5 x the CPU limit of the stop (on a loaded machine the CPU
#     time is used up slowly), nothing left;
#   - SIGXFSZ sent by another process stops the job as SIGTERM does.
# At 1 rank dsort runs as a singleton (prlimit runs it); at 2 ranks prlimit runs mpiexec (the
# file size limit, which the ranks inherit) or each rank (the CPU limit: mpiexec's own CPU time
# is not the test's).
# Usage: limits.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
FAULTS_SUFFIX=.$1 # limits.1 and limits.2 each write their own rows
faults_init "$1"
data ext mem
pipeline_args ext
command -v prlimit >/dev/null || die "prlimit (util-linux) is needed"
# 10 MB: more than a run (-S 8M), less than the output (30 MB) and than one rank's part.
FSIZE=10240000
# The soft CPU limit: more than a rank uses before its first spill (more under ASan).
CPU_S=2
if nm "$DSORT" 2>/dev/null | grep __asan_init >/dev/null; then CPU_S=8; fi

# start_limited PRE... -- ARGS...: dsort ARGS in the background, run by the command PRE...
# (which execs what follows): a singleton at 1 rank, mpiexec at more.
start_limited() {
    local pre=()
    while [ "$1" != -- ]; do
        pre+=("$1")
        shift
    done
    shift
    if [ "$N" = 1 ]; then
        start_single "${pre[@]}" -- "$@"
    else
        BEFORE_MPIEXEC=("${pre[@]}")
        start_job "$N" "$@"
    fi
}

# fsize_case KIND: -o (o-old) or -O (O) under ulimit -f.
fsize_case() {
    local kind=$1 where
    [ "$kind" = O ] && where="a part written in the final merge" || where="-o, sized up front"
    case_begin "file size limit (ulimit -f) reached: $where" "ext" \
        "exit 2; the rank, the file and 'ulimit -f' named; nothing left"
    out_setup "$kind"
    start_limited prlimit "--fsize=$FSIZE" -- -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
    wait_end "$T_START"
    check_exit 2
    check_rank_line "'[^']*$(basename "$OUT_FINAL")[^']*'.*File too large \(the file size limit of this process is $FSIZE bytes: ulimit -f $((FSIZE / 1024))\)"
    CHECKS=$((CHECKS + 1))
    ! grep -q 'File size limit exceeded\|SIGXFSZ' "$T/stderr" || fail "killed by SIGXFSZ"
    check_final
    check_no_temps
    case_end
}

# cpu_case: the soft CPU limit runs out while rank 0 spins in the first spill.
cpu_case() {
    case_begin "CPU time limit (soft ulimit -t) reached in a spill" "ext" \
        "exit != 0 within 10 s of the limit; 'stopped by SIGXCPU (the CPU time limit, ulimit -t, ...)'; nothing left"
    if need_phase_hook; then
        out_setup o-new
        phase_hook spill 1 0 0
        FX+=(FAULT_SPIN=1)
        if [ "$N" = 1 ]; then
            start_single prlimit "--cpu=$CPU_S:" -- -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        else
            BEFORE_RANK=(prlimit "--cpu=$CPU_S:")
            start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        fi
        if wait_ready 0; then
            local t0
            t0=$(date +%s%N)
            wait_end "$t0"
            check_exit nz
            # From the stop, the spinning rank still has to use up its CPU time (CPU_S s of it,
            # on a loaded machine: at a third of a core, three times as long) before the limit is
            # reached.
            LIMIT_S=$((10 + 10 * CPU_S)) check_prompt
            check_rank_line "stopped by SIGXCPU \(the CPU time limit, ulimit -t, was reached: [1-9][.][0-9] s of CPU time used\) in the spill phase"
            check_final
            check_no_temps
        fi
    fi
    case_end
}

# kill_case: SIGXFSZ from another process (kill -XFSZ) to rank 0 in the first spill.
kill_case() {
    case_begin "SIGXFSZ sent to rank 0 in a spill" "ext" \
        "exit != 0 within 10 s; 'stopped by SIGXFSZ'; nothing left"
    if need_phase_hook; then
        out_setup o-old
        phase_hook spill 1 0 0
        start_limited env -- -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready 0; then
            signal_rank XFSZ 0
            check_exit nz
            check_prompt
            check_rank_line "stopped by SIGXFSZ \(the file size limit, ulimit -f\) in the spill phase"
            check_final
            check_no_temps
        fi
    fi
    case_end
}

fsize_case o-old
fsize_case O

# The same limit set on each rank, below what MPI_Init itself writes (Open MPI's shared-memory
# segment, 4 MiB at 2 ranks): SIGXFSZ killed every rank there without a word (exit 153).
small_fsize_case() {
    [ "$N" -gt 1 ] || return 0
    case_begin "file size limit (ulimit -f 1000000 bytes) on each rank, below MPI_Init's own files" "mem" \
        "exit 2; the rank, the output and 'ulimit -f' named; nothing left"
    out_setup o-new
    BEFORE_RANK=(prlimit --fsize=1000000)
    start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "$MEM"
    wait_end "$T_START"
    BEFORE_RANK=()
    check_exit 2
    check_rank_line "'[^']*$(basename "$OUT_FINAL")[^']*'.*File too large \(the file size limit of this process is 1000000 bytes: ulimit -f 976\)"
    CHECKS=$((CHECKS + 1))
    ! grep -q 'File size limit exceeded\|SIGXFSZ' "$T/stderr" || fail "killed by SIGXFSZ"
    check_final
    check_no_temps
    case_end
}
small_fsize_case
cpu_case
kill_case
suite_finish
