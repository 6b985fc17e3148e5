#!/bin/bash
# ENOSPC (issue 9): a 4 MiB tmpfs as the only temp dir (out of core, fixed records and lines),
# and as the output's directory (in memory and out of core, -o and -O). What must hold: exit 2
# within 10 s of the start (the whole run is short), one line naming the rank, the file on the
# full file system and "No space left on device", nothing under the output's final name, and
# the full file system empty afterwards (no run, no temp dir, no hidden output temp). Needs root
# to mount; otherwise it says why and exits 77 (skipped). Usage: enospc.sh NRANKS
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
# The write that fails mid-run is the case: the space preflight (issue 29), which would refuse
# the job before it starts, is off (tests/ext/diskfull.sh tests it).
export DSORT_NO_SPACE_CHECK=1
FULL=$T/full
mount_tmpfs "$FULL" 4M || skip "$MOUNT_WHY"
data mem ext

# full_case PIPE WHERE KIND: WHERE is tmp (-T on the tmpfs) or out (the output on it).
full_case() {
    local pipe=$1 where=$2 kind=$3
    case_begin "ENOSPC on the $([ "$where" = tmp ] && echo "temp dir" || echo output) (4 MiB tmpfs)" \
        "$pipe" "exit 2 within 10 s; error naming rank, file and ENOSPC; nothing left"
    # Whatever an earlier case left on the tmpfs was counted against it; start empty.
    find "$FULL" -mindepth 1 -delete
    pipeline_args "$pipe"
    local td=$C/tmp
    if [ "$where" = tmp ]; then
        td=$FULL TMP_DIR=$FULL
        out_setup "$kind"
    else
        out_setup "$kind" "$FULL"
    fi
    note "output $kind"
    run_job "$N" -T "$td" "${OUTARGS[@]}" "${PARGS[@]}"
    check_exit 2
    check_prompt
    check_rank_line "$FULL.*No space left on device"
    eq "lines of stderr that name a rank" 1 "$(grep -Ec "^dsort: rank [0-9]+/$N " "$T/stderr")"
    check_final
    check_no_temps
    case_end
}

full_case ext tmp o-new
full_case lines tmp O
full_case mem out o-new
full_case mem out O
full_case ext out o-old
full_case lines out o-new
suite_finish
