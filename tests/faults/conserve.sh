#!/bin/bash
# Conservation, always on (issue 9): silent corruption between reading and writing must not be
# committed. The ranks talk over TCP on loopback (Open MPI's tcp BTL, no receive cache), and
# the shim flips the last byte of three large receives (>= 64 KiB: payload, not MPI's
# headers; three, because the first may be the sample of lines, which only steers balance)
# on rank 1. No checksum covers the network; only the conservation check (count and
# the sum of per-record CRC32C, read vs handed to the writer, over all ranks) can see it:
# exit 2 within 10 s, "conservation check failed", nothing under the final name, nothing left.
# For lines a flipped byte may also be the newline that ends a received piece; the framing
# check names that first ("a piece received in the exchange ends inside a line"), which is
# as good: the corruption is caught and nothing is committed.
# In memory, out of core, and text lines. Usage: conserve.sh 2
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
[ "$N" -ge 2 ] || die "conserve.sh needs ranks that exchange: usage $0 2"
export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_btl_tcp_endpoint_cache=0

flip_case() {
    local pipe=$1
    case_begin "a byte of the exchange flipped on the wire" "$pipe" \
        "exit 2 within 10 s, conservation check names both sums, nothing committed"
    data "$pipe"
    pipeline_args "$pipe"
    out_setup o-new
    FX=("FAULT_MODE=flip" "FAULT_PATH=socket:" "FAULT_MINLEN=65536" "FAULT_COUNT=3"
        "FAULT_RANK=1" "FAULT_LOG=$C/fault.log")
    run_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
    since_first_fault
    check_faulted
    check_exit 2
    check_prompt
    if [ "$pipe" = lines ]; then
        check_rank_line "(conservation check failed|piece received in the exchange ends inside a line)"
    elif [ "$pipe" = map ] || [ "$pipe" = mlines ]; then # entries on the wire: checked against the data
        check_rank_line "(conservation check failed|corrupted in the exchange)"
    else
        check_rank_line "conservation check failed"
    fi
    check_final
    check_no_temps
    case_end
}

flip_case mem
flip_case map
flip_case mlines
flip_case ext
flip_case lines
suite_finish
