#!/bin/bash
# I/O faults through the LD_PRELOAD shim (issue 9), on every read and write path: the input,
# the spilled runs (written by the writer thread, read by the read-ahead thread, with O_DIRECT
# on this file system), the output (-o FILE through O_DIRECT and the page cache, -O parts).
#   retry: short reads and writes (about half of each request; whole 4 KiB pages on O_DIRECT
#          descriptors), then EINTR on every other call, on every file of the job. The result
#          must not change: exit 0 and output byte-identical to GNU sort's (the fault-free
#          result). The shim's log must show faults on the input, the runs (both ways) and the
#          output, or the case proves nothing.
#   eio:   EIO on one path (after some bytes went through, and from then on). Exit 2 within
#          10 s of the first EIO, a line naming the rank, the file and the error, nothing under
#          the output's final name, nothing left in the temp dir or beside the output.
# Usage: io.sh NRANKS retry|eio
FAULTS_SUFFIX=.${2:-}
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
WHAT=${2:-}
case $WHAT in retry | eio) ;; *) die "usage: $0 NRANKS retry|eio" ;; esac

# retry_case PIPE MODE OUTKIND
retry_case() {
    local pipe=$1 mode=$2 kind=$3
    case_begin "$mode reads and writes on every file" "$pipe" \
        "exit 0, output byte-identical to the fault-free result"
    data "$pipe"
    pipeline_args "$pipe"
    out_setup "$kind"
    note "output $kind"
    FX=("FAULT_MODE=$mode" "FAULT_PATH=$C/:$(dirname "$PREF")/" "FAULT_LOG=$C/fault.log")
    run_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
    eq "exit status" 0 "$RC" || show_output
    note "exit $RC"
    [ "$RC" -ne 0 ] || same_output
    local log=$C/fault.log faults
    [ "$pipe" = map ] || # a mapped input is read by page faults, not calls
        contains "faults on reads of the input" "$log" " fault .* pread[0-9]*\([^,]*/(in|mem)\.dat,"
    contains "faults on writes of the output" "$log" " fault .* pwrite[0-9]*\([^,]*/out/"
    if [ "$pipe" != mem ] && [ "$pipe" != map ]; then
        contains "faults on writes of the runs" "$log" " fault .* pwrite[0-9]*\([^,]*/run-"
        contains "faults on reads of the runs" "$log" " fault .* pread[0-9]*\([^,]*/run-"
    fi
    faults=$(sed -n 's/.* total faults=\([0-9]*\).*/\1/p' "$log" | awk '{s += $1} END {print s}')
    note "${faults:-?} faults injected"
    case_end
}

# eio_case PIPE OP PATH-SUBSTRING AFTER RANK OUTKIND FILE-REGEX WHAT
eio_case() {
    local pipe=$1 op=$2 path=$3 after=$4 rank=$5 kind=$6 re=$7 what=$8
    case_begin "EIO on $what" "$pipe" \
        "exit 2 within 10 s, error naming rank and file, nothing committed"
    data "$pipe"
    pipeline_args "$pipe"
    out_setup "$kind"
    note "output $kind"
    FX=("FAULT_MODE=eio" "FAULT_OP=$op" "FAULT_PATH=$path" "FAULT_AFTER=$after"
        "FAULT_RANK=$rank" "FAULT_LOG=$C/fault.log")
    run_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
    since_first_fault
    check_faulted
    check_exit 2
    check_prompt
    check_rank_line "$re.*Input/output error"
    [ "$rank" = all ] || contains "the rank that failed is named" "$T/stderr" "^dsort: rank $rank/$N "
    check_final
    check_no_temps
    case_end
}

if [ "$WHAT" = retry ]; then
    for mode in short eintr; do
        retry_case mem "$mode" o-new
        retry_case mem "$mode" O
        retry_case ext "$mode" o-old
        retry_case ext "$mode" O
        retry_case lines "$mode" o-new
        retry_case map "$mode" o-old
    done
else
    eio_case mem read /mem.dat 0 1 o-old "mem\.dat" "reading the input (rank 1)"
    eio_case mem write /out/ 0 all o-new "sorted\.dat" "writing the output (-o)"
    eio_case mem write /out/ 0 all O "part-0000[0-9]" "writing an output part (-O)"
    eio_case map write /out/ 0 all O "part-0000[0-9]" "writing an output part (-O)"
    eio_case map write /out/ 200000 1 o-new "sorted\.dat" "writing the output (rank 1, after 200 KB)"
    eio_case ext read /in.dat 8000000 1 o-new "in\.dat" "reading the input (rank 1, after 8 MB)"
    eio_case ext write /run- 2000000 all o-old "run-[0-9]+" "writing a spilled run (after 2 MB)"
    eio_case ext read /run- 0 1 O "run-[0-9]+" "reading a spilled run (rank 1)"
    eio_case ext write /out/ 1000000 all o-new "sorted\.dat" "writing the output (after 1 MB)"
    eio_case lines read /in.dat 8000000 1 o-old "in\.dat" "reading the input (rank 1, after 8 MB)"
    eio_case lines write /run- 2000000 all o-new "run-[0-9]+" "writing a spilled run (after 2 MB)"
    eio_case lines read /run- 0 0 O "run-[0-9]+" "reading a spilled run (rank 0)"
    eio_case lines write /out/ 1000000 all o-old "sorted\.dat" "writing the output (after 1 MB)"
fi
suite_finish
