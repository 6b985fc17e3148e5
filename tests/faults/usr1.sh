#!/bin/bash
# SIGUSR1 without --checkpoint (issue 29 item 5): Slurm's time-limit warning, not a stop. Sent
# to mpirun (which forwards it to every rank) and to one rank, while the ranks are held in a
# phase (the shim's phase hook): in memory in the merge (its second write, the merge writing
# the output as it goes), out of core in a spill and in the
# final merge. What must hold: the job goes on and exits 0; its output is GNU sort's
# (LC_ALL=C, the oracle of data()); rank 0 said once, when it got the signal, that there is
# no checkpoint to write and the sort goes on (a rank other than 0 goes on without a word);
# nothing is left in the temp dir. On ce51767 the job died of the signal (exit 138).
# Usage: usr1.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data mem ext

# usr1_case PIPE PHASE NTH IO TARGET (mpirun or a rank number)
usr1_case() {
    local pipe=$1 phase=$2 nth=$3 io=$4 target=$5 ranks=() r
    if [ "$target" = mpirun ]; then
        for ((r = 0; r < N; r++)); do ranks+=("$r"); done
    else
        ranks=("$target")
    fi
    case_begin "SIGUSR1 to $target in $phase, no --checkpoint" "$pipe" \
        "exit 0, GNU sort's output, one 'goes on' line (rank 0), nothing left"
    if need_phase_hook; then
        pipeline_args "$pipe"
        out_setup o-new
        phase_hook "$phase" "$nth" "$io" "$([ "$target" = mpirun ] && echo all || echo "$target")"
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready "${ranks[@]}"; then
            if [ "$target" = mpirun ]; then
                kill -USR1 "$JOB"
            else
                kill -USR1 "${READY_PID[$target]}"
            fi
            # The ranks go on only once the test lets them; mpirun forwards the signal
            # asynchronously, so give it a moment to arrive while they are still held.
            sleep 1
            resume "${ranks[@]}"
            wait_end
            check_exit 0
            same_output
            local said
            said=$(grep -Ec "^dsort: rank 0/$N \([^)]+\): SIGUSR1 \(the time-limit warning\) in the [a-z_]+ phase: there is no checkpoint to write \(see --checkpoint\), so the sort goes on$" "$T/stderr")
            if [ "$target" = mpirun ] || [ "$target" = 0 ]; then
                eq "lines saying the sort goes on" 1 "$said"
            else
                eq "lines saying the sort goes on (only rank 0 speaks)" 0 "$said"
            fi
            eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
        fi
    fi
    case_end
}

# the copying path merges into the output as it goes (job_copy.c): held at its second write
usr1_case mem write 1 2 mpirun
usr1_case mem write 1 2 1
usr1_case ext spill 2 0 mpirun
usr1_case ext write 1 3 0
suite_finish
