#!/bin/bash
# Text lines read device-parallel (issue 15): the lines pipeline reads each chunk's byte range
# with the topology's reader (dsort_job_topo_read_padded), one thread per device, several files
# in one read. Inputs of different sizes on two devices where the machine has them (the test's
# directory and /dev/shm, a tmpfs: two plan devices, so two reading threads): lines of several
# kinds, a file without a final newline, an empty file, five tiny files of which three lack
# the final newline (several eols added in one read), and a 3 MB line that the rank boundaries
# at -n 2 and -n 3 fall inside. Each case is sorted device-parallel and with --one-stream, in
# memory and out of core under -S 1M (the 3 MB line is held past the budget), plain and with
# -s -k1,1 (ties in input order: the input positions of the lines must be right); dsort's
# output must be byte-identical to `LC_ALL=C sort` of the same files with the same options.
# --stats: in memory at -n 1 the plan's per-device read bytes add up to the inputs' size (the
# whole share went through the device reader) and every device read something (--one-stream
# reads in one thread that is no plan device's, as fixed records do: not counted there).
# Usage: lines_read.sh NRANKS
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
suite_init "$1"
# shellcheck disable=SC2034 # read by lib.sh's run (RUN_TIMEOUT_VAR)
E2E_TIMEOUT=${DSORT_E2E_TIMEOUT:-60}
GEN_LINES=$(cd "$(dirname "$0")/.." && pwd)/lines_gen.py
export LC_ALL=C

# The second device: a directory on /dev/shm when it is writable and not the test directory's
# file system; else everything stays in $T (one device: still correct, one thread).
D2=$T/d2
if [ -d /dev/shm ] && [ -w /dev/shm ] &&
    [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$T")" ]; then
    D2=$(mktemp -d /dev/shm/dsort-lines-read.XXXXXX) || die "mktemp /dev/shm"
    trap 'rm -rf "$D2"; suite_cleanup' EXIT
    echo "second device: $D2"
else
    mkdir "$D2"
    echo "note: one device only (no separate /dev/shm)"
fi

s=$SEED
python3 "$GEN_LINES" --seed $((s + 1)) --profile mixed --lines 20000 >"$T/a.txt"
python3 "$GEN_LINES" --seed $((s + 2)) --profile csv --lines 6000 | head -c -1 >"$D2/b.txt"
: >"$T/empty.txt"
# the 3 MB line between short ones
python3 - "$T/c.txt" $((s + 3)) <<'EOF'
import random, sys
r = random.Random(int(sys.argv[2]))
big = ''.join(r.choice('abcdefghij') for _ in range(3 << 20))
with open(sys.argv[1], 'w') as f:
    f.write('short1\nzz\n' + big + '\nmid\n' + 'x' * 100 + '\n')
EOF
python3 "$GEN_LINES" --seed $((s + 4)) --profile dups --lines 30000 >"$D2/d.txt"
printf 'tiny no eol' >"$T/t1.txt"
printf 'tiny\n' >"$D2/t2.txt"
printf 'q' >"$T/t3.txt"
printf 'two\nlines no eol' >"$D2/t4.txt"
printf 'zz last\n' >"$T/t5.txt"
python3 "$GEN_LINES" --seed $((s + 5)) --profile human --lines 8000 >"$T/f.txt"
inputs=("$T/a.txt" "$D2/b.txt" "$T/empty.txt" "$T/c.txt" "$D2/d.txt" "$T/t1.txt" "$D2/t2.txt"
    "$T/t3.txt" "$D2/t4.txt" "$T/t5.txt" "$T/f.txt")
total=$(cat "${inputs[@]}" | wc -c)

# sort_case "DSORT_OPTS" SORT_OPTS...: dsort with DSORT_OPTS and SORT_OPTS, GNU sort with
# SORT_OPTS, on the inputs; byte-identical outputs.
sort_case() {
    local dopts=$1
    shift
    rm -f "$T/out" "$T/want"
    sort "$@" "${inputs[@]}" >"$T/want" || die "GNU sort failed"
    # shellcheck disable=SC2086
    ok "$N" "$DSORT" --format lines $dopts "$@" --stats "$T/stats.json" -o "$T/out" \
        "${inputs[@]}" || return 1
    CHECKS=$((CHECKS + 1))
    if ! cmp -s "$T/want" "$T/out"; then
        fail "dsort --format lines $dopts $* differs from LC_ALL=C sort: $(cmp "$T/want" "$T/out" 2>&1 | head -n 1)"
        return 1
    fi
    eq "files left in \$TMPDIR after dsort $dopts $*" "" "$(ls -A "$TMPDIR")"
}

# read_bytes: the plan's per-device read bytes, "DEVICE=BYTES ..." and the sum last.
read_bytes() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
devs = [(v["key"], v.get("read_bytes", 0)) for n in d["plan"]["nodes"] for v in n["devices"]]
print(" ".join("%s=%d" % kv for kv in devs), sum(b for _, b in devs))' "$T/stats.json"
}

for stream in "" --one-stream; do
    for mem in "" "--out-of-core -S 1M"; do
        for keys in "" "-s -k1,1"; do
            # shellcheck disable=SC2086
            sort_case "$stream $mem" $keys || continue
            if [ "$N" = 1 ] && [ -z "$mem" ] && [ -z "$stream" ]; then
                rb=$(read_bytes)
                echo "  -n 1 ${keys:-plain}: read bytes by device: $rb"
                eq "-n 1 in memory: the devices' read bytes" "$total" "${rb##* }"
                cond "every device read something ($rb)" \
                    "all(int(x.split('=')[1]) > 0 for x in '$rb'.split()[:-1])"
            fi
        done
    done
done

# An input whose last byte is not, in the bulk read, what it was when dsort looked at it to
# leave room for a missing final newline (the fault shim flips the last byte of the last
# rank's reads that reach the file's end: its sample's and its bulk read's, the only reads as
# long as that; nothing on disk changes, so the checks before the commit cannot see it):
# exit 2, a line naming the input as changed, nothing written. (It said "read past the end of
# the inputs", naming nothing.) The copying reader: --no-map (a mapped input is not read(2)).
if [ -n "${DSORT_FAULT_SHIM:-}" ] && [ -f "$DSORT_FAULT_SHIM" ]; then
    awk 'BEGIN { for (i = 0; i < 20000; i++) printf "line %d\n", (i * 7919) % 20000 }' >"$T/flipme.txt"
    # the last rank's lines: from the first line start at or after its share's first byte
    tail_len=$(python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
n = int(sys.argv[2])
first = len(d) * (n - 1) // n
start = first if first == 0 or d[first - 1] == 10 else d.index(10, first) + 1
print(len(d) - start)' "$T/flipme.txt" "$N") || die "python3 could not measure the last share"
    rm -f "$T/never.txt"
    # (under the sanitizers the shim comes before their runtime: allowed, as e2e.inplace does)
    run "$N" env LD_PRELOAD="$DSORT_FAULT_SHIM" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" FAULT_MODE=flip FAULT_PATH=flipme.txt \
        FAULT_OP=read FAULT_MINLEN="$tail_len" FAULT_RANK=$((N - 1)) \
        "$DSORT" --format lines --no-map "$T/flipme.txt" -o "$T/never.txt"
    eq "last byte changed under the read: exit status" 2 "$RC"
    contains "last byte changed under the read: the error names the input" "$T/stderr" \
        "^dsort: rank $((N - 1))/$N .*'.*flipme.txt' changed while it was being sorted"
    eq "last byte changed under the read: no output" "" "$(ls "$T/never.txt" 2>/dev/null)"
    eq "files left in \$TMPDIR after the changed input" "" "$(ls -A "$TMPDIR")"
else
    echo "  (no fault shim: the changed-last-byte case is not run)"
fi
suite_finish
