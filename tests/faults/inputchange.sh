#!/bin/bash
# An input that changes while it is sorted (issue 9): truncated to a third, or appended to
# (whole records), after dsort read it (in memory: every rank stopped at the start of its sort,
# the input read) or while it reads it (out of core: rank 0 stopped at the start of its second
# read). Sorting a file that changed gives an output that is neither the old nor the new
# content sorted, so it must be detected: exit 2 within 10 s of the change, a line naming the
# rank and the input, nothing under the output's final name, nothing left. (Detection of a
# change after the data was read is probably not implemented yet.) Usage: inputchange.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data mem ext

# change_case PIPE HOW KIND
change_case() {
    local pipe=$1 how=$2 kind=$3 phase nth rank ranks=() r
    if [ "$pipe" = mem ] || [ "$pipe" = map ] || [ "$pipe" = mlines ]; then
        phase=sort nth=1 rank=all
        for ((r = 0; r < N; r++)); do ranks+=("$r"); done
    else
        phase=read nth=2 rank=0 ranks=(0)
    fi
    case_begin "the input $([ "$how" = truncate ] && echo "truncated to a third" || echo "appended to") in the $phase phase" \
        "$pipe" "exit 2 within 10 s; error naming rank and input; nothing committed"
    if need_phase_hook; then
        pipeline_args "$pipe"
        local src=${PARGS[-1]}
        cp "$src" "$C/input.dat"
        PARGS[-1]=$C/input.dat
        out_setup "$kind"
        note "output $kind"
        phase_hook "$phase" "$nth" 0 "$rank"
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready "${ranks[@]}"; then
            local size
            size=$(stat -c %s "$C/input.dat")
            if [ "$how" = truncate ]; then
                truncate -s $((size / 3 / 100 * 100)) "$C/input.dat"
            else
                head -c 100000 "$SMALL" >>"$C/input.dat"
            fi
            local t0
            t0=$(date +%s%N)
            resume "${ranks[@]}"
            wait_end "$t0"
            check_exit 2
            check_prompt
            check_rank_line "input\.dat"
            check_final
            check_no_temps
        fi
    fi
    case_end
}

change_case mem truncate o-new
change_case mem append o-old
change_case map truncate O
change_case map append o-new
change_case mlines truncate o-old
change_case ext truncate O
change_case ext append o-new
change_case lines truncate o-old
change_case lines append O
ext_finish
