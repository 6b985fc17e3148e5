#!/bin/bash
# kill -9 of one rank in each phase (issue 9). The rank is stopped by the shim's phase hook when
# it enters the phase (or in its first I/O there, where that is more telling: the first output
# write, a run block being written, the third read or write of the final merge), then killed
# with SIGKILL. What must hold:
#   - the whole job ends within 10 s of the kill, with a non-zero status;
#   - nothing under the output's final name (an old -o FILE keeps its content, -O DIR does not
#     exist);
#   - a next run with the same -T and the same output (the same pipeline, on a small input)
#     succeeds and leaves nothing behind: no dsort-* temp directory of the dead rank, no hidden
#     .NAME.dsort-* output temp.
# Usage: kill9.sh NRANKS PIPELINE (mem, map, ext or lines; see faultlib.sh)
FAULTS_SUFFIX=.${2:-}
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
PIPE=${2:-}
case $PIPE in mem | map | ext | lines) ;; *) die "usage: $0 NRANKS mem|map|ext|lines" ;; esac
data "$PIPE"

# kill_case PHASE NTH IO VICTIM OUTKIND
kill_case() {
    local phase=$1 nth=$2 io=$3 victim=$4 kind=$5 at="at its start"
    [ "$io" = 0 ] || at="in I/O call $io"
    [ "$nth" = 1 ] || at="$at, stretch $nth"
    case_begin "kill -9 of rank $victim in $phase ($at)" "$PIPE" \
        "exit != 0 within 10 s; nothing under the final name; the next run leaves no temp files"
    if need_phase_hook; then
        pipeline_args "$PIPE"
        out_setup "$kind"
        note "output $kind"
        phase_hook "$phase" "$nth" "$io" "$victim"
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready "$victim"; then
            eq "the phase the rank stopped in" "$phase" "${READY_PHASE[$victim]}"
            signal_rank KILL "$victim"
            check_exit nz
            check_prompt
            check_final
            KILL_MS=$GONE_MS
            local left
            left=$(cd "$C" && find out tmp -mindepth 1 -maxdepth 1 | grep -vx out/sorted.dat | tr '\n' ' ')
            note "left after the kill: ${left:-nothing}"
            next_run
        fi
    fi
    case_end
}

# next_run: the same pipeline and output on the small input, with the same -T.
next_run() {
    local args=("$SMALL")
    case $PIPE in
    mem) args=(--no-map "$SMALL") ;;
    ext) args=(--out-of-core -S 8M "$SMALL") ;;
    lines) args=(--format lines --out-of-core -S 8M "$SMALL") ;;
    esac
    FX=()
    run_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${args[@]}"
    local rc=$RC ms=$GONE_MS
    GONE_MS=$KILL_MS
    eq "the next run's exit status" 0 "$rc"
    local swept
    swept=$(grep -Eo 'removed [0-9]+ temp director(y|ies)' "$T/stderr" | head -n 1)
    note "next run: exit $rc in $ms ms${swept:+, $swept}"
    eq "after the next run: files in the temp dir" "" "$(listing "$C/tmp")"
    eq "after the next run: files in the output directory" "$(basename "$OUT_FINAL")" \
        "$(listing "$C/out")"
}

case $PIPE in
mem)
    kill_case read 1 0 0 o-old
    kill_case sort 1 0 0 o-new
    kill_case exchange 1 0 0 O
    kill_case write 1 1 0 o-new # the merge writes the output as it goes (job_copy.c)
    kill_case write 1 2 0 o-old
    kill_case commit 1 0 0 o-old
    ;;
map) # the merge writes the output as it goes: the write phase (its first write)
    kill_case read 1 0 1 o-new
    kill_case sort 1 0 0 O
    kill_case exchange 1 0 1 o-old
    kill_case write 1 1 0 o-new
    kill_case commit 1 0 1 o-old
    ;;
ext)
    kill_case read 2 0 0 o-new
    kill_case sort 2 0 0 o-old
    kill_case exchange 2 0 0 O
    kill_case spill 2 1 0 o-new
    kill_case write 1 3 0 o-old
    kill_case commit 1 0 0 O
    ;;
lines)
    kill_case read 2 0 1 o-old
    kill_case spill 2 0 1 o-new
    # Lines time their final merge into the output as the write phase (src/pipeline/ooc_lines.c).
    kill_case write 1 3 0 O
    kill_case commit 1 0 0 o-old
    ;;
esac
suite_finish
