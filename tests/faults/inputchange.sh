#!/bin/bash
# An input that changes while it is sorted (issue 9): truncated to a third, or appended to
# (whole records), after dsort read it (in memory: every rank stopped at the start of its sort,
# the input read) or while it reads it (out of core: rank 0 stopped at the start of its second
# read). Sorting a file that changed gives an output that is neither the old nor the new
# content sorted, so it must be detected: exit 2 within 10 s of the change, a line naming the
# rank and the input, nothing under the output's final name, nothing left. (Detection of a
# change after the data was read is probably not implemented yet.) Usage: inputchange.sh NRANKS
#
# With GROUP inplace (issue 25): the mapped input rewritten in place, same size, other data
# (every rank stopped at the start of the splitters, the exchange or the merge: exact splitters
# over keys that change under them spun forever, or blamed dsort, naming no file), and a mapped
# text input's final newline overwritten during the exchange (its last line 20 MiB long, so
# measured by looking for the newline: a rank died of SIGSEGV). Every one must end as a
# truncation does: exit 2 within 10 s with a line naming the input and saying that it changed.
# A hang is caught by the case's own deadline (HANG_S), well within ctest's timeout.
#
# And typed keys on the mapped path (-k, 32-byte records of typed fields from dsort-gen
# --format/--field), whose merge checks each entry against its record (the prefix must match it
# and never go down): the input rewritten in place (same size, other records) or truncated to a
# third, every rank stopped at the start of the write phase (the merge), with a u64le key and
# with an f64le key. The same ending: exit 2 within 10 s, a line naming the rank and the input,
# nothing committed; and not one byte written to the output after the change (a write there
# fails with EIO: without the merge's check, the merge wrote the changed records out, the write
# failed, and the error named the output, since the change itself is seen only at the end).
# Usage: inputchange.sh NRANKS [inplace]
FAULTS_SUFFIX=${2:+.$2}
. "$(dirname "$0")/faultlib.sh"
faults_init "$1"
GROUP=${2:-}
case $GROUP in "" | inplace) ;; *) die "usage: $0 NRANKS [inplace]" ;; esac
data mem ext

# check_refused PATTERN: the job ended with exit 2, the prompt came back, a rank's line matches
# PATTERN, nothing was committed and no temp file is left.
check_refused() {
    check_exit 2
    check_prompt
    check_rank_line "$1"
    check_final
    check_no_temps
}

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
            check_refused "input\.dat"
        fi
    fi
    case_end
}

# HANG_S: a job still running this long after the change hangs (a normal end takes 1-2 s; the
# deadline is generous for a loaded machine, and well within ctest's timeout of the test).
HANG_S=40

# inplace_case PIPE HOW PHASE KIND: HOW is rewrite (other records of the same size written over
# the input in place: same inode, same size), sorted (its own records in sorted order written
# over it, as a sort into the input itself would leave it) or eol (the final newline
# overwritten); every rank stopped at the start of PHASE meanwhile. (At 2 ranks, sorted in the
# splitters phase made the old exact splitters spin forever, rewrite made them "lose their
# target".)
inplace_case() {
    local pipe=$1 how=$2 phase=$3 kind=$4 ranks=() r what
    for ((r = 0; r < N; r++)); do ranks+=("$r"); done
    case $how in
    rewrite) what="the input rewritten in place (same size, other data)" ;;
    sorted) what="the input rewritten in place with its records sorted" ;;
    *) what="the final newline of a 20 MiB last line overwritten" ;;
    esac
    case_begin "$what in the $phase phase" "$pipe" \
        "exit 2 within 10 s; error naming the input and saying it changed; nothing committed"
    if need_phase_hook; then
        pipeline_args "$pipe"
        local src=${PARGS[-1]}
        if [ "$how" = eol ]; then
            # the long line last, so that its newline is the file's last byte
            { cat "$src" && head -c $((20 << 20)) /dev/zero | tr '\0' z && echo; } >"$C/input.dat"
        else
            cp "$src" "$C/input.dat"
        fi
        PARGS[-1]=$C/input.dat
        out_setup "$kind"
        note "output $kind"
        phase_hook "$phase" 1 0 all
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" "${PARGS[@]}"
        if wait_ready "${ranks[@]}"; then
            local size ino
            size=$(stat -c %s "$C/input.dat")
            ino=$(stat -c %i "$C/input.dat")
            if [ "$how" = rewrite ]; then
                head -c "$size" "$IN" | dd of="$C/input.dat" bs=1M iflag=fullblock conv=notrunc \
                    status=none
            elif [ "$how" = sorted ]; then
                dd if="$PREF" of="$C/input.dat" bs=1M conv=notrunc status=none
            else
                printf z | dd of="$C/input.dat" bs=1 seek=$((size - 1)) conv=notrunc status=none
            fi
            eq "the input's inode and size after the change" "$ino $size" \
                "$(stat -c '%i %s' "$C/input.dat")"
            local t0 reach=$REACH_S
            t0=$(date +%s%N)
            resume "${ranks[@]}"
            REACH_S=$HANG_S
            wait_end "$t0"
            REACH_S=$reach
            check_refused "input\.dat' changed while it was being sorted"
        fi
    fi
    case_end
}

# typed_case KEY HOW KIND: the typed-key mapped path (--format fixed:32:0:8 -k KEY), HOW
# rewrite (other records of the same size written over the input in place) or truncate (to a
# third); every rank stopped at the start of the write phase, the merge of the entries.
TFMT=fixed:32:0:8
typed_case() {
    local key=$1 how=$2 kind=$3 ranks=() r
    for ((r = 0; r < N; r++)); do ranks+=("$r"); done
    case_begin "typed key $key: the input $([ "$how" = truncate ] && echo "truncated to a third" ||
        echo "rewritten in place (same size, other data)") in the write phase" "map -k $key" \
        "exit 2 within 10 s; error naming rank and input; nothing committed"
    if need_phase_hook; then
        if [ ! -f "$T/typed.a" ]; then # 160000 records of 32 bytes (5 MB), two seeds
            gen 2 --format "$TFMT" --field 0:u64le --field 8:f64le --field 16:u64le \
                --seed 1 160000 "$T/typed.a" &&
                gen 2 --format "$TFMT" --field 0:u64le --field 8:f64le --field 16:u64le \
                    --seed 2 160000 "$T/typed.b" || suite_finish
        fi
        cp "$T/typed.a" "$C/input.dat"
        out_setup "$kind"
        note "output $kind"
        phase_hook write 1 0 all
        # a tripwire: a write to the output fails with EIO, so a merge that went on writing
        # records once they no longer matched their entries would report that, not the change
        FX+=("FAULT_MODE=eio" "FAULT_OP=write" "FAULT_PATH=$OUT_DIR/")
        start_job "$N" -T "$C/tmp" "${OUTARGS[@]}" --format "$TFMT" -k "$key" "$C/input.dat"
        if wait_ready "${ranks[@]}"; then
            local size t0
            size=$(stat -c %s "$C/input.dat")
            if [ "$how" = truncate ]; then
                truncate -s $((size / 3 / 32 * 32)) "$C/input.dat"
            else
                dd if="$T/typed.b" of="$C/input.dat" bs=1M conv=notrunc status=none
                eq "the input's size after the rewrite" "$size" "$(stat -c %s "$C/input.dat")"
            fi
            t0=$(date +%s%N)
            resume "${ranks[@]}"
            wait_end "$t0"
            check_refused "input\.dat' changed while it was being sorted"
        fi
    fi
    case_end
}

if [ "$GROUP" = inplace ]; then
    inplace_case map sorted splitters o-new
    inplace_case map rewrite splitters O
    inplace_case map rewrite exchange O
    inplace_case map rewrite write o-old
    inplace_case mlines rewrite write o-new
    inplace_case mlines eol sort o-new
    inplace_case mlines eol exchange o-old
    inplace_case mlines eol write O
    # the copying path (--no-map: the share read into memory, gathered into the stage per send):
    # the input rewritten after it was read must still be refused at the commit
    # (at several ranks it samples the share first, then reads its first quarter; the rest is
    # read during the exchange)
    [ "$N" -gt 1 ] && inplace_case mem rewrite sample O
    inplace_case mem rewrite read o-old
    inplace_case mem rewrite sort o-new
    inplace_case mem rewrite exchange O
    inplace_case mem rewrite write o-old
    suite_finish
fi

change_case mem truncate o-new
change_case mem append o-old
change_case map truncate O
change_case map append o-new
change_case mlines truncate o-old
change_case ext truncate O
change_case ext append o-new
change_case lines truncate o-old
change_case lines append O
typed_case 0:u64le rewrite o-new
typed_case 8:f64le rewrite O
typed_case 0:u64le truncate o-old
typed_case 8:f64le truncate o-new
suite_finish
