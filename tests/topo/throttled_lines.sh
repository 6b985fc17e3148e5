#!/usr/bin/env bash
# Text lines read device-parallel on devices that are really independent (issue 15): three
# loop disks, each throttled on its own to 10 MiB/s (read and write) by a cgroup
# (tests/lib/throttle.sh), 10 MB of lines on each (gensort ASCII records from dsort-gen -a:
# 100-byte lines ending in \r\n; the second disk's file lacks its final \n, so that an eol is
# added in the middle of a read of several files). dsort --format lines sorts them in memory at
# -n 1 and -n 2, device-parallel (the default) and with --one-stream, and out of core at -n 2
# under -S 4M, each run in the throttled cgroup with the page cache dropped. Every output must
# be byte-identical to `LC_ALL=C sort` of the three files (run outside the cgroup, once). The
# times are printed; the gain is checked only loosely (this is a test, not a benchmark):
# device-parallel reading (the sample and read phases of the slowest rank, --stats) must not be
# more than 1.5 times as slow as one stream, and the plan's
# per-device read bytes of a device-parallel run must show every disk. Needs root, loop
# devices, cgroup blkio (v1) or io (v2); exit 77 (skip) with the reason otherwise. Everything
# is undone on exit, INT, TERM and HUP (and, after a SIGKILL, by the next run).
# Usage: throttled_lines.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: throttled_lines.sh BIN_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=$here/../lib
# shellcheck source=tests/lib/throttle_test.sh
. "$lib/throttle_test.sh"
export LC_ALL=C
bps=$((10 * 1048576)) # 10 MiB/s, read and write, per disk
per=100000            # lines per disk: 10 MB
work=$THR_WORK
echo "throttled_lines: cgroup $THR_CG_KIND ($THR_CG), $((bps / 1048576)) MiB/s per disk"

inputs=()
for i in 0 1 2; do
    setup thr_disk "d$i" 64 "$bps" "$bps"
    kto 60 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n 1 "$bin/dsort-gen" -a -b $((i * per)) "$per" \
        "$THR_MNT/in" >/dev/null 2>&1 || { echo "FAIL: dsort-gen -a" >&2; exit 1; }
    inputs+=("$THR_MNT/in")
done
truncate -s -1 "${inputs[1]}" # its last line ends in \r: dsort and sort add the \n
sort "${inputs[@]}" >"$work/want" || { echo "FAIL: sort" >&2; exit 1; }
[ "$(wc -l <"$work/want")" = $((3 * per)) ] || { echo "FAIL: sort's output is not $((3 * per)) lines" >&2; exit 1; }
"$bin/dsort" --format lines --plan "${inputs[@]}" -o "$work/out" 2>&1 | sed 's/^/  plan: /' | head -n 8 || true

# read_phase STATS: the slowest rank's sample and read phases, summed, and each ("S R"): the
# input is read in both (the sample's 16 KiB windows, with the kernel's readahead, bring in a
# good part of a small share before the read phase starts).
read_phase() {
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); p = [r["phases"] for r in d["per_rank"]]; print("%.3f %.3f %.3f" % (max(x["sample"] + x["read"] for x in p), max(x["sample"] for x in p), max(x["read"] for x in p)))' "$1"
}
# dev_bytes STATS: the plan's read bytes of each device, "KEY=BYTES ...".
dev_bytes() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s=%d" % (v["key"], v.get("read_bytes", 0)) for n in d["plan"]["nodes"] for v in n["devices"]))' "$1"
}

# sort_case NAME N OPTS...: one sort in the cgroup, then the checks. Sets READ and TOTAL.
sort_case() {
    local name=$1 n=$2 rc=0 out=$work/out
    shift 2
    rm -f "$out" "$work/stats.json"
    thr_run timeout -k 5 90 "$mpiexec" -q "${MPI_PREFLAGS[@]}" -n "$n" "$bin/dsort" --format lines \
        -T "$work" "$@" --stats "$work/stats.json" "${inputs[@]}" -o "$out" || rc=$?
    TOTAL=$THR_ELAPSED
    READ=nan SAMPLE=nan RPHASE=nan
    if [ "$rc" != 0 ]; then
        fail "$name: dsort exited $rc"
        return 0
    fi
    read -r READ SAMPLE RPHASE <<<"$(read_phase "$work/stats.json")"
    cmp -s "$work/want" "$out" || fail "$name: output differs from LC_ALL=C sort: $(cmp "$work/want" "$out" 2>&1 | head -n 1)"
    DEVS=$(dev_bytes "$work/stats.json")
}

declare -A rd
for n in 1 2; do
    for mode in parallel one-stream; do
        opts=()
        [ "$mode" = one-stream ] && opts=(--one-stream)
        sort_case "n$n-$mode" "$n" "${opts[@]}"
        rd[$n.$mode]=$READ
        printf '  -n %d %-10s sample+read %6s s (sample %s, read %s)  total %6s s\n' "$n" "$mode" \
            "$READ" "$SAMPLE" "$RPHASE" "$TOTAL"
        if [ "$mode" = parallel ] && [ "$READ" != nan ]; then
            echo "    plan read bytes: $DEVS"
            # the three loop disks (the plan may list others: the work dir's disk)
            loops=$(echo "$DEVS" | tr ' ' '\n' | grep -c '^loop[0-9]*=[1-9]' || true)
            [ "$loops" -ge 3 ] || fail "n$n-$mode: not every throttled disk shows read bytes: $DEVS"
        fi
    done
done
sort_case "n2-out-of-core" 2 --out-of-core -S 4M
printf '  -n 2 out of core -S 4M sample+read %6s s (sample %s, read %s)  total %6s s\n' "$READ" \
    "$SAMPLE" "$RPHASE" "$TOTAL"

# The gain, loosely: device-parallel reading (sample and read phases) may not be more than 1.5
# times as slow as one stream (the sample is read with one stream in both).
for n in 1 2; do
    thr_check_gain "$n" "${rd[$n.parallel]}" "${rd[$n.one-stream]}" sample+read
done
thr_finish
