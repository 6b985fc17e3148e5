#!/bin/bash
# SIGTERM, SIGINT, SIGHUP and SIGUSR2, to mpirun and to one rank, in chosen phases (issue 9):
# out of core in a spill (the second run, at its start) and in the final merge (at its third
# read or write); in memory in the merge, which writes the output as it goes (and with the input mapped, in its merge and sort). The shim's phase hook stops the ranks there: every
# rank when the signal goes to mpirun, the target rank when it goes to a rank (rank 0, which
# owns the output's temp, for TERM and HUP; rank 1 for INT and USR2; SIGUSR1 goes on: usr1.sh). What must hold:
#   - the job ends within 10 s of the signal, non-zero (or dies by the signal);
#   - a rank says so: "dsort: rank R/N (host): stopped by SIGx in the PHASE phase";
#   - nothing under the output's final name (-o FILE old or new, or -O DIR), no hidden output
#     temp, nothing in the temp dir (these signals are caught: no sweep is needed).
# Usage: signals.sh NRANKS PIPELINE (ext or mem)
FAULTS_SUFFIX=.${2:-}
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
PIPE=${2:-}
case $PIPE in mem | ext | lines) ;; *) die "usage: $0 NRANKS mem|ext|lines" ;; esac
data "$PIPE"

# sig_case PHASE NTH IO SIG TARGET (mpirun or a rank number)
sig_case() {
    local phase=$1 nth=$2 io=$3 sig=$4 target=$5 who kind ranks=() r
    if [ "$target" = mpirun ]; then
        who=mpirun kind=O
        for ((r = 0; r < N; r++)); do ranks+=("$r"); done
    else
        who="rank $target" ranks=("$target")
        kind="o-new"
        [ "$sig" = TERM ] || [ "$sig" = USR2 ] && kind="o-old"
    fi
    case_begin "SIG$sig to $who in $phase" "$PIPE" \
        "exit != 0 (or death by the signal) within 10 s; 'stopped by' line; nothing left"
    if need_phase_hook; then
        pipeline_args "$PIPE"
        out_setup "$kind"
        note "output $kind"
        phase_hook "$phase" "$nth" "$io" "$([ "$target" = mpirun ] && echo all || echo "$target")"
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready "${ranks[@]}"; then
            local t0
            t0=$(date +%s%N)
            if [ "$target" = mpirun ]; then
                kill -s "$sig" "$JOB"
            else
                kill -s "$sig" "${READY_PID[$target]}"
            fi
            wait_end "$t0"
            check_exit nz
            check_prompt
            check_rank_line "stopped by SIG[A-Z0-9]+ in the $phase phase"
            check_final
            check_no_temps
        fi
    fi
    case_end
}

sigs=(TERM INT HUP USR2)
declare -A rank_of=([TERM]=0 [INT]=1 [HUP]=0 [USR2]=1)
if [ "$PIPE" = mem ]; then
    for s in "${sigs[@]}"; do
        # the copying path merges into the output as it goes (job_copy.c): its second write
        sig_case write 1 2 "$s" mpirun
        sig_case write 1 2 "$s" "${rank_of[$s]}"
    done
    # at several ranks the copying path samples its share first, and its exchange phase starts
    # with the first quarter's flow while a reader thread reads the rest (job_copy.c)
    if [ "$N" -gt 1 ]; then
        sig_case sample 1 0 TERM mpirun
        sig_case sample 1 0 INT 1
        sig_case exchange 1 0 HUP 0
        sig_case exchange 1 0 USR2 mpirun
    fi
    # the mapped input: in its write phase, the merge writing the output as it goes (its second write)
    PIPE=map
    sig_case write 1 2 TERM mpirun
    sig_case write 1 2 USR2 1
    sig_case sort 1 0 INT 0
    PIPE=mem
else
    for s in "${sigs[@]}"; do
        sig_case spill 2 0 "$s" mpirun
        sig_case spill 2 0 "$s" "${rank_of[$s]}"
        sig_case write 1 3 "$s" mpirun
        sig_case write 1 3 "$s" "${rank_of[$s]}"
    done
fi
suite_finish
