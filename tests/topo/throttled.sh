#!/usr/bin/env bash
# Device-parallel reading on devices that are really independent (issue 15): three loop disks,
# each throttled on its own to 10 MiB/s (read and write) by a cgroup (tests/lib/throttle.sh),
# 10 MB of gensort records on each. dsort sorts them in memory at -n 1 and -n 2, device-parallel
# (the default) and with --one-stream, each run in the throttled cgroup with the page cache
# dropped; then 10 MB on two partitions of one throttled disk (one device: no gain expected);
# then the 30 MB out of core (-S 8M) with its runs spilled to a temp dir on each of the three
# throttled disks (runs striped over them) and to one of them only.
# Every output is checked: the first of each data set by dsort-validate (order, count, checksum
# against dsort-gen -c) and by the independent oracle tests/lib/oracle.py (count, checksum,
# order), every other one byte-equal to that first one. The times are printed; the gain is
# checked only loosely (this is a test, not a benchmark): device-parallel reading must not be
# more than 1.5 times as slow as one stream. Needs root, loop devices, cgroup blkio (v1) or io (v2); exit 77 (skip) with
# the reason otherwise. Everything is undone on exit, INT, TERM and HUP (and, after a SIGKILL,
# by the next run). Usage: throttled.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: throttled.sh BIN_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$here/../lib
# shellcheck source=tests/lib/throttle_test.sh
. "$lib/throttle_test.sh"
bps=$((10 * 1048576)) # 10 MiB/s, read and write, per disk
per=100000            # records per disk: 10 MB
work=$THR_WORK
echo "throttled: cgroup $THR_CG_KIND ($THR_CG), $((bps / 1048576)) MiB/s per disk"

# gen FILE COUNT: dsort-gen -c (outside the cgroup); prints the checksum.
gen() {
    kto 60 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort-gen" -c "$2" "$1" 2>&1 >/dev/null |
        grep -Eo '^[0-9a-f]+$' | tail -n 1
}
# cut_records SRC FIRST COUNT DEST: records FIRST .. FIRST+COUNT-1 of SRC into DEST.
cut_records() {
    dd if="$1" of="$4" bs=1M skip=$(($2 * 100)) count=$(($3 * 100)) iflag=skip_bytes,count_bytes status=none
}
# read_phase STATS: the slowest rank's read phase.
read_phase() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("%.3f" % max(r["phases"]["read"] for r in d["per_rank"]))' "$1"
}

# Two data sets, each generated once (the generator's checksum is the oracle's input) and cut
# over the disks: 3 x per records on d0, d1, d2; per records on the two partitions.
want_n=$((3 * per))
want_sum=$(gen "$work/all" "$want_n") || true
part_sum=$(gen "$work/half" "$per") || true
if [ -z "$want_sum" ] || [ -z "$part_sum" ]; then
    echo "FAIL: dsort-gen printed no checksum" >&2
    exit 1
fi
inputs=()
for i in 0 1 2; do
    setup thr_disk "d$i" 64 "$bps" "$bps"
    cut_records "$work/all" $((i * per)) "$per" "$THR_MNT/in"
    inputs+=("$THR_MNT/in")
done
setup thr_split_disk s 64 "$bps" "$bps"
cut_records "$work/half" 0 $((per / 2)) "$THR_MNT1/in"
cut_records "$work/half" $((per / 2)) $((per / 2)) "$THR_MNT2/in"
part_inputs=("$THR_MNT1/in" "$THR_MNT2/in")
rm -f "$work/all" "$work/half"
"$bin/dsort" --plan "${inputs[@]}" "${part_inputs[@]}" -o "$work/out" 2>&1 | sed 's/^/  plan: /' | head -n 12 || true

declare -A ref # the first output of each data set (by its checksum) that the oracle passed
# sort NAME N WANT_N WANT_SUM OPTS... -- INPUTS...: one sort in the cgroup, then the checks.
# Sets READ and TOTAL.
sort_case() {
    local name=$1 n=$2 wn=$3 ws=$4 opts=() rc=0 out=$work/out.$1 v got
    shift 4
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    rm -f "$out" "$work/stats.json"
    thr_run timeout -k 5 90 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n "$n" "$bin/dsort" "${opts[@]}" \
        --stats "$work/stats.json" "$@" -o "$out" || rc=$?
    TOTAL=$THR_ELAPSED
    READ=nan
    if [ "$rc" != 0 ]; then
        fail "$name: dsort exited $rc"
        return 0
    fi
    READ=$(read_phase "$work/stats.json")
    if [ -z "${ref[$ws]:-}" ]; then
        v=$(kto 60 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort-validate" "$out" 2>&1) ||
            fail "$name: dsort-validate: $v"
        echo "$v" | grep -q "^Records: $wn\$" || fail "$name: dsort-validate: $v; want $wn records"
        echo "$v" | grep -q "^Checksum: $ws\$" || fail "$name: dsort-validate: $v; want checksum $ws"
        got=$(python3 "$lib/oracle.py" sum 100 "$out")
        [ "$got" = "$wn $ws" ] || fail "$name: oracle sum '$got', want '$wn $ws'"
        got=$(python3 "$lib/oracle.py" firstdisorder 100 0 10 "" "$out")
        [ "$got" = none ] || fail "$name: oracle: out of order at $got"
        ref[$ws]=$out
    elif cmp -s "${ref[$ws]}" "$out"; then
        rm -f "$out"
    else
        fail "$name: output differs from $(basename "${ref[$ws]}")"
    fi
}

declare -A rd
for n in 1 2; do
    for mode in parallel one-stream; do
        opts=()
        [ "$mode" = one-stream ] && opts=(--one-stream)
        sort_case "n$n-$mode" "$n" "$want_n" "$want_sum" "${opts[@]}" -- "${inputs[@]}"
        rd[$n.$mode]=$READ
        printf '  -n %d %-10s read %6s s  total %6s s\n' "$n" "$mode" "$READ" "$TOTAL"
    done
done
for mode in parallel one-stream; do
    opts=()
    [ "$mode" = one-stream ] && opts=(--one-stream)
    sort_case "parts-$mode" 1 "$per" "$part_sum" "${opts[@]}" -- "${part_inputs[@]}"
    printf '  two partitions of one disk, -n 1 %-10s read %6s s  total %6s s\n' "$mode" "$READ" "$TOTAL"
done

# Out of core: spilled to the three throttled disks (runs striped over three devices), then to
# one of them; both outputs must be the in-memory sorts' (byte-equal), and nothing left behind.
tmps=()
for i in 0 1 2; do
    mkdir -p "$work/d$i/tmp"
    tmps+=(-T "$work/d$i/tmp")
done
sort_case "ooc-3-temp-disks" 1 "$want_n" "$want_sum" -S 8M "${tmps[@]}" -- "${inputs[@]}"
ooc3=$TOTAL
printf '  out of core -n 1, 3 temp disks  total %6s s\n' "$TOTAL"
sort_case "ooc-1-temp-disk" 1 "$want_n" "$want_sum" -S 8M -T "$work/d0/tmp" -- "${inputs[@]}"
printf '  out of core -n 1, 1 temp disk   total %6s s\n' "$TOTAL"
awk -v a="$ooc3" -v b="$TOTAL" 'BEGIN { exit !(a <= 1.5 * b + 0.5) }' ||
    fail "out of core: 3 temp disks ($ooc3 s) much slower than 1 ($TOTAL s)"
for i in 0 1 2; do
    left=$(ls -A "$work/d$i/tmp")
    [ -z "$left" ] || fail "out of core: left in $work/d$i/tmp: $left"
done

# Two partitions of one disk as the temp dirs: one disk, so runs are not striped over them
# (that would only make its head seek between the partitions): stopped after two rounds with
# a checkpoint, the two runs are one file each, one in each partition's directory (spread
# round-robin), not two files each; resumed, the sort is the in-memory one.
mkdir -p "$THR_MNT1/tmp" "$THR_MNT2/tmp"
ptmps=(-T "$THR_MNT1/tmp" -T "$THR_MNT2/tmp")
rm -f "$work/out.parts-temp"
rc=0
thr_run timeout -k 5 90 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort" -S 8M "${ptmps[@]}" \
    --checkpoint --stop-after=2 "${inputs[@]}" -o "$work/out.parts-temp" 2>/dev/null || rc=$?
[ "$rc" = 3 ] || fail "partitions as temp dirs: --stop-after=2 exited $rc, not 3"
runs=$(find "$THR_MNT1/tmp" "$THR_MNT2/tmp" -name 'run-*' | wc -l)
[ "$runs" = 2 ] || fail "partitions as temp dirs: $runs run files after two rounds, want 2 (one a run: not striped over one disk's partitions): $(find "$THR_MNT1/tmp" "$THR_MNT2/tmp" -name 'run-*')"
sort_case "parts-temp" 1 "$want_n" "$want_sum" -S 8M "${ptmps[@]}" --resume -- "${inputs[@]}"
for d in "$THR_MNT1/tmp" "$THR_MNT2/tmp"; do
    left=$(ls -A "$d")
    [ -z "$left" ] || fail "partitions as temp dirs: left in $d: $left"
done

# The gain, loosely: device-parallel reading may not be more than 1.5 times as slow as one
# stream (expected: about 3 times faster at -n 1, where one stream reads the disks in turn).
for n in 1 2; do
    thr_check_gain "$n" "${rd[$n.parallel]}" "${rd[$n.one-stream]}" read
done
thr_finish
