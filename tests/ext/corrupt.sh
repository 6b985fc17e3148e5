#!/bin/bash
# Integrity of spilled runs (issue 3): while the sort spills (slow: -S 1M --block-size 4K),
# the ranks are stopped (SIGSTOP) once rank 0 has finished its first run file and started
# two more; a byte of that finished run is flipped, or the file is cut to about half, in the
# middle of a 4 KiB block or at a block boundary; then the ranks continue (SIGCONT). Reading
# the run back must fail: exit 2, one line naming the rank and the run file (and, for the
# flipped byte, the CRC and an offset); temp files removed, nothing under the output
# directory. Usage: corrupt.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=300000 # 30 MB
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
SUM=$GEN_SUM
K=0

# corrupt_case NAME HOW: HOW is flip (one byte at offset 1000), cut-mid (about half the file,
# in the middle of a 4 KiB block) or cut-block (about half, at a 4 KiB boundary).
corrupt_case() {
    local name=$1 how=$2
    K=$((K + 1))
    local td=$T/tmp-$K od=$T/out-$K job i run="" pids
    mkdir -p "$td" "$od"
    LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $N $DSORT -S 1M --block-size 4K -T $td -o $od/sorted.dat $T/in.dat"
    local t0
    t0=$(date +%s%N)
    "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --block-size 4K -T "$td" \
        -o "$od/sorted.dat" "$T/in.dat" </dev/null >"$T/stdout" 2>"$T/stderr" &
    job=$!
    for ((i = 0; i < 6000; i++)); do
        if compgen -G "$td/dsort-*-r0/run-000002" >/dev/null; then
            pids=$(dsort_procs "$td")
            # shellcheck disable=SC2086
            kill -STOP $pids
            run=$(compgen -G "$td/dsort-*-r0/run-000000")
            break
        fi
        kill -0 "$job" 2>/dev/null || break
        sleep 0.005
    done
    if [ -z "$run" ]; then
        fail "$name: rank 0 never had three run files (the job ended or hung)"
        wait "$job"
        return
    fi
    local size
    size=$(stat -c %s "$run")
    if [ "$how" = flip ]; then
        python3 - "$run" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(1000)
    b = f.read(1)
    f.seek(1000)
    f.write(bytes([b[0] ^ 0xff]))
PY
    elif [ "$how" = cut-mid ]; then
        truncate -s $((size / 2 / 4096 * 4096 + 2048)) "$run"
    else
        truncate -s $((size / 2 / 4096 * 4096)) "$run"
    fi
    echo "  $name: $run ($size bytes) damaged ($how) while the ranks were stopped"
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
    ELAPSED_MS=$((($(date +%s%N) - t0) / 1000000))
    echo "  $name: exit $RC after ${ELAPSED_MS} ms; stderr:"
    sed 's/^/  | /' "$T/stderr"
    eq "$name: exit status" 2 "$RC"
    eq "$name: lines of stderr that name a rank" 1 "$(grep -Ec "rank [0-9]+/$N" "$T/stderr")"
    contains "$name: the error names the rank and the run file" "$T/stderr" \
        "^dsort: rank 0/$N \(.+\): .*$run"
    [ "$how" = flip ] && contains "$name: the error says CRC and gives an offset" "$T/stderr" \
        "$run.*(CRC|crc|checksum).*offset [0-9]+|$run.*offset [0-9]+.*(CRC|crc|checksum)"
    empty_dir "$name: left in the temp dir" "$td"
    empty_dir "$name: left under the output directory" "$od"
    if [ "$RC" -eq 0 ] && [ -f "$od/sorted.dat" ]; then
        run 1 "$VALIDATE" "$od/sorted.dat"
        echo "  $name: dsort succeeded; dsort-validate on its output (want $COUNT records, checksum $SUM):"
        sed 's/^/  | /' "$T/stdout"
    fi
}

corrupt_case "a flipped byte in a spilled run" flip
corrupt_case "a spilled run cut in a block" cut-mid
corrupt_case "a spilled run cut at a block boundary" cut-block
suite_finish
