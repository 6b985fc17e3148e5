#!/bin/bash
# A damaged spilled run (issue 9). Rank 0 is stopped by the shim's phase hook at the start of
# its final merge (every run of it written and closed); its first run is damaged (one byte
# flipped at offset 1000, or the file cut to half, in the middle of a 4 KiB block); then it goes
# on. What must hold: exit 2 within 10 s of the damage, a line naming rank 0 and the run file,
# nothing under the output's final name, nothing left in the temp dir. Fixed records' runs have
# a CRC32C per block; text lines' runs get one in a change being made (until it lands the
# lines cases are expected to fail). Usage: corrupt.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
data ext

# damage_case PIPE HOW KIND
damage_case() {
    local pipe=$1 how=$2 kind=$3 run size
    case_begin "a spilled run $([ "$how" = flip ] && echo "with a flipped byte" || echo "cut in a block") before the final merge" \
        "$pipe" "exit 2 within 10 s; error naming rank and run file; nothing committed"
    if need_phase_hook; then
        pipeline_args "$pipe"
        out_setup "$kind"
        note "output $kind"
        phase_hook merge 1 0 0
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready 0; then
            run=$(compgen -G "$C/tmp/dsort-*-r0/run-000000")
            size=$(stat -c %s "$run" 2>/dev/null || echo 0)
            if [ "$how" = flip ]; then
                local b
                b=$(od -An -tu1 -j1000 -N1 "$run" | tr -d ' ')
                # shellcheck disable=SC2059
                printf "\\$(printf '%03o' $((b ^ 255)))" |
                    dd of="$run" bs=1 seek=1000 conv=notrunc status=none
            else
                truncate -s $((size / 2 / 4096 * 4096 + 2048)) "$run"
            fi
            note "$(basename "$run") of $size bytes damaged ($how)"
            local t0
            t0=$(date +%s%N)
            resume 0
            wait_end "$t0"
            check_exit 2
            check_prompt
            check_rank_line "run-000000"
            contains "rank 0 is named" "$T/stderr" "^dsort: rank 0/$N "
            check_final
            check_no_temps
        fi
    fi
    case_end
}

damage_case ext flip o-new
damage_case ext cut O
damage_case lines flip o-old
damage_case lines cut o-new
suite_finish
