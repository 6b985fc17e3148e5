#!/bin/bash
# SIGHUP that the user ignored (issue 9): dsort run as a singleton (no mpirun: Open MPI's mpirun
# resets signal dispositions and aborts on SIGHUP itself; see the machine notes), out of core,
# stopped by the shim's phase hook at the start of its second spill, sent SIGHUP, then let go.
#   - under nohup, and under `trap '' HUP`: the HUP must not stop it: exit 0 and the output
#     byte-identical to GNU sort's;
#   - the control, HUP not ignored: it must stop (death by SIGHUP or a non-zero exit) within
#     10 s, saying "stopped by SIGHUP", with nothing under the final name and nothing left.
# Usage: nohup.sh 1
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
[ "$N" = 1 ] || die "nohup.sh runs a singleton: usage $0 1"
data ext
pipeline_args ext

# hup_case HOW: nohup, trap or none
hup_case() {
    local how=$1 pre
    case $how in
    nohup) pre=(nohup) ;;
    trap) pre=(bash -c 'trap "" HUP; exec "$@"' trap-hup) ;;
    none) pre=(env) ;;
    esac
    if [ "$how" = none ]; then
        case_begin "SIGHUP to a singleton (not ignored: the control)" "ext, singleton" \
            "exit != 0 within 10 s; 'stopped by SIGHUP'; nothing left"
    else
        case_begin "SIGHUP to a singleton under $([ "$how" = nohup ] && echo nohup || echo "trap '' HUP")" \
            "ext, singleton" "the HUP is ignored: exit 0, output byte-identical"
    fi
    if need_phase_hook; then
        out_setup o-new
        phase_hook spill 2 0 0
        start_single "${pre[@]}" -- -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready 0; then
            signal_rank HUP 0
            if [ "$how" = none ]; then
                check_exit nz
                check_prompt
                check_rank_line "stopped by SIGHUP"
                check_final
                check_no_temps
            else
                eq "exit status" 0 "$RC"
                note "exit $RC"
                [ "$RC" -ne 0 ] || same_output
                CHECKS=$((CHECKS + 1))
                ! grep -q 'stopped by' "$T/stderr" || fail "stopped by the ignored SIGHUP: $(grep -m1 'stopped by' "$T/stderr")"
            fi
        fi
    fi
    case_end
}

hup_case nohup
hup_case trap
hup_case none
suite_finish
