#!/bin/bash
# Integrity of spilled runs of text lines (issue 9, item 4), as corrupt.sh checks fixed-record
# runs. An out-of-core `--format lines` sort (-S 1M --block-size 4K: many small runs) is
# stopped (SIGSTOP to its ranks) once rank 0 has finished its first run file (runs of lines
# are written one after the other: it has started its second) and before any rank reads it
# back. The finished run must be in runfile.h's checksummed blocks (24-byte headers "DSRB",
# CRC32C, payload bytes, lines; each block at a multiple of 4 KiB, zero padding after its
# payload, to the end of the file; checked here by python).
# Then one byte of it is flipped (in its first block, or, with -s, whose lines carry
# positions, in the middle of the file), or it is cut in the middle of a block or at a block
# boundary, and the ranks continue (SIGCONT). Reading the run back must fail: exit 2, one line
# naming the rank and the run file (and, for a flipped byte, CRC32C and an offset); temp files
# removed, nothing under the output directory. Usage: corrupt_lines.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=150000 # 15 MB of 100-byte gensort ASCII lines
gen "$N" -a -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.txt" || suite_finish
K=0

# blocks RUN: the run's blocks as "offset payload lines" lines; fails (exit 1) when the file
# is not a sequence of well-formed blocks.
blocks() {
    python3 - "$1" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
at = 0
while at < len(data):
    if at + 24 > len(data):
        sys.exit(f"a partial block header at offset {at} of {len(data)}")
    magic, crc, payload, lines = struct.unpack_from('<4sIQQ', data, at)
    if magic != b'DSRB':
        sys.exit(f"no block header at offset {at}: {data[at:at + 24]!r}")
    took = (24 + payload + 4095) // 4096 * 4096
    if at + took > len(data) or lines < 1 or data[at + 24 + payload - 1] != 10 \
            or any(data[at + 24 + payload:at + took]):
        sys.exit(f"a bad block at offset {at}: {payload} bytes, {lines} lines")
    print(at, payload, lines)
    at += took
PY
}

# start_stopped CMD...: start CMD under mpiexec in the background (JOB) and stop its ranks
# (PIDS) once rank 0 has finished run-000000 (RUN) and before any rank reads it back, i.e.
# while no rank has it open: the spill of lines is fast, so a stop that comes too late (the
# final merge has begun, or is over) lets the job finish and starts it again, up to 5 times.
# Returns 1 when that never worked.
start_stopped() {
    local attempt i p late
    for ((attempt = 1; attempt <= 5; attempt++)); do
        rm -rf "${td:?}"/* "${od:?}"/*
        "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$@" </dev/null >"$T/stdout" 2>"$T/stderr" &
        JOB=$!
        PIDS="" RUN="" late=1
        for ((i = 0; i < 6000; i++)); do
            if compgen -G "$td/dsort-*-r0/run-000001" >/dev/null; then
                PIDS=$(dsort_procs "$td")
                # shellcheck disable=SC2086
                [ -n "$PIDS" ] && kill -STOP $PIDS
                RUN=$(compgen -G "$td/dsort-*-r0/run-000000")
                late=0
                [ -n "$RUN" ] && [ -n "$PIDS" ] || late=1
                for p in $PIDS; do
                    find "/proc/$p/fd" -lname "$RUN" 2>/dev/null | grep -q . && late=1
                done
                break
            fi
            kill -0 "$JOB" 2>/dev/null || break
            sleep 0.005
        done
        [ "$late" = 0 ] && return 0
        echo "  (attempt $attempt: the ranks were not stopped before run-000000 was read; again)"
        # shellcheck disable=SC2086
        [ -n "$PIDS" ] && kill -CONT $PIDS
        wait "$JOB"
    done
    return 1
}

# corrupt_case NAME HOW OPTS...: HOW is flip (a byte in the first block's payload), flip-mid (a
# byte in the middle of the file), cut-mid (the file cut in the middle of a block at about
# half) or cut-block (cut at the block boundary nearest half).
corrupt_case() {
    local name=$1 how=$2
    shift 2
    K=$((K + 1))
    local td=$T/tmp-$K od=$T/out-$K i run pids job
    mkdir -p "$td" "$od"
    local cmd=("$DSORT" --format lines "$@" -S 1M --block-size 4K -T "$td" -o "$od/sorted.txt"
        "$T/in.txt")
    LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $N ${cmd[*]}"
    if ! start_stopped "${cmd[@]}"; then
        fail "$name: the ranks could not be stopped between writing and reading run-000000"
        return
    fi
    run=$RUN pids=$PIDS job=$JOB
    local size off
    size=$(stat -c %s "$run")
    CHECKS=$((CHECKS + 1))
    blocks "$run" >"$T/blocks" 2>"$T/blocks.err" ||
        fail "$name: $run ($size bytes) is not in checksummed blocks: $(cat "$T/blocks.err")"

    case $how in
    flip) off=1000 ;;
    flip-mid) # the payload of the block at about half (half is a block's header: 4 KiB-aligned)
        off=$(awk -v h=$((size / 2)) '$1 >= h { print $1 + 24 + int($2 / 2); exit }' "$T/blocks")
        ;;
    cut-mid)
        off=$(awk -v h=$((size / 2)) '$1 + 24 + $2 > h { print $1 + 24 + int($2 / 2); exit }' \
            "$T/blocks")
        ;;
    cut-block) off=$(awk -v h=$((size / 2)) '$1 >= h { print $1; exit }' "$T/blocks") ;;
    esac
    [ -n "$off" ] || off=$((size / 2)) # not in blocks (failed above): damage it anyway
    if [ "$how" = flip ] || [ "$how" = flip-mid ]; then
        python3 - "$run" "$off" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    at = int(sys.argv[2])
    f.seek(at)
    b = f.read(1)
    f.seek(at)
    f.write(bytes([b[0] ^ 0xff]))
PY
    else
        truncate -s "$off" "$run"
    fi
    echo "  $name: $run ($size bytes, $(wc -l <"$T/blocks") blocks) damaged ($how at $off)" \
        "while the ranks were stopped"
    # shellcheck disable=SC2086
    kill -CONT $pids
    # Wait for the job (with a deadline, in case it hangs).
    for ((i = 0; i < 3000; i++)); do
        kill -0 "$job" 2>/dev/null || break
        sleep 0.02
    done
    if kill -0 "$job" 2>/dev/null; then
        fail "$name: still running 60 s after the damage"
        # shellcheck disable=SC2046
        kill -KILL "$job" $(dsort_procs "$td") 2>/dev/null
    fi
    wait "$job"
    RC=$?
    echo "  $name: exit $RC; stderr:"
    sed 's/^/  | /' "$T/stderr"
    eq "$name: exit status" 2 "$RC"
    eq "$name: lines of stderr that name a rank" 1 "$(grep -Ec "rank [0-9]+/$N" "$T/stderr")"
    contains "$name: the error names the rank and the run file" "$T/stderr" \
        "^dsort: rank 0/$N \(.+\): .*$run"
    case $how in
    flip*)
        contains "$name: the error says CRC32C and gives an offset" "$T/stderr" \
            "$run.* offset [0-9]+.*CRC32C"
        ;;
    cut-mid)
        contains "$name: the error says truncated" "$T/stderr" "$run.*truncated at offset [0-9]+"
        ;;
    cut-block)
        contains "$name: the error counts the lines" "$T/stderr" "$run.*ends after [0-9]+ of its"
        ;;
    esac
    empty_dir "$name: left in the temp dir" "$td"
    empty_dir "$name: left under the output directory" "$od"
}

corrupt_case "a flipped byte in a spilled run of lines" flip
corrupt_case "a flipped byte in the middle of a spilled run of lines, -s" flip-mid -s
corrupt_case "a spilled run of lines cut in a block" cut-mid
corrupt_case "a spilled run of lines cut at a block boundary" cut-block
suite_finish
