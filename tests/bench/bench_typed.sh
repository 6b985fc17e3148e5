#!/usr/bin/env bash
# Issue 28's typed-key benchmark: MB of 32-byte records (a uniform little-endian uint64 at 0,
# 24 random bytes), `mpirun -n RANKS`, each round running, one after another, the same file
#   typed    dsort --format fixed:32:0:32 -k 0:u64le           (the default: mapped)
#   tcopy    dsort --format fixed:32:0:32 -k 0:u64le --no-map  (the copying path, in place)
#   raw      dsort --format fixed:32:0:8 --no-map              (8 raw bytes, the copying path)
#   mapped   dsort --format fixed:32:0:8                       (8 raw bytes, the default: mapped)
# and prints per variant the median of the job's seconds (--stats "seconds"), of the ranks'
# CPU seconds (user + system, /usr/bin/time; and user alone: the system part is mostly the
# kernel zeroing fresh pages, which swings with the other jobs' memory), the path the job took (--stats "mapped") and the
# typed/raw ratios against the issue's 1.2x: on the default paths (typed / mapped) and on the
# copying path (tcopy / raw), with the load average before and after. The first round's outputs are checked in order
# (dsort-validate, by -k 0:u64le and by the raw key). A measurement, not a test.
#   tests/bench/bench_typed.sh [MB] [ROUNDS]     (default 1024 MB, 5 rounds)
# Environment: DSORT_BENCH_DIR (data; default ./data/bench), DSORT_BENCH_RANKS (default 2),
# DSORT_BIN_DIR (programs; default a Release build in build-bench). Not part of ctest.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
mb=${1:-1024}
rounds=${2:-5}
dir=${DSORT_BENCH_DIR:-$top/data/bench}
ranks=${DSORT_BENCH_RANKS:-2}
. "$top/scripts/env.sh"
bin=${DSORT_BIN_DIR:-}
if [ -z "$bin" ]; then
    cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$top/build-bench" -j 2 --target dsort dsort-gen dsort-validate >/dev/null
    bin=$top/build-bench/src/cli
fi
records=$((mb * 1048576 / 32))
mkdir -p "$dir"
in=$dir/typed-$mb.bin
[ -f "$in" ] || "$DSORT_MPIEXEC" -q $DSORT_MPIEXEC_PREFLAGS -n 2 "$bin/dsort-gen" \
    --format fixed:32:0:32 --field 0:u64le --field 8:bytes:24 --seed 7 "$records" "$in"
res=$(mktemp -d "${TMPDIR:-/tmp}/dsort-typed.XXXXXX")
out=$dir/typed-out.bin
trap 'rm -rf "$res" "$out"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# run NAME ROUND DSORT-ARGS...: one job; its seconds to $res/NAME, the ranks' CPU to
# $res/cpu.NAME; the first round's output validated by VALIDATE-ARGS in $res/val.NAME.
run() {
    local name=$1 round=$2
    shift 2
    rm -f "$out" "$res/st.json" "$res/cpu.rank".*
    # shellcheck disable=SC2016 # expanded by the inner sh
    "$DSORT_MPIEXEC" -q $DSORT_MPIEXEC_PREFLAGS -n "$ranks" \
        sh -c 'exec /usr/bin/time -f "%U %S" -o "$0.$OMPI_COMM_WORLD_RANK" "$@"' \
        "$res/cpu.rank" "$bin/dsort" "$@" --stats "$res/st.json" -o "$out" "$in"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["seconds"])' \
        "$res/st.json" >>"$res/$name"
    python3 -c 'import json, sys; print("mapped" if json.load(open(sys.argv[1]))["mapped"] else "copied")' \
        "$res/st.json" >"$res/path.$name"
    cat "$res/cpu.rank".* | awk '{c += $1 + $2} END {print c}' >>"$res/cpu.$name"
    cat "$res/cpu.rank".* | awk '{c += $1} END {print c}' >>"$res/user.$name"
    if [ "$round" = 1 ]; then
        local v=() f=fixed:32:0:8
        case $name in typed | tcopy) v=(-k 0:u64le) f=fixed:32:0:32 ;; esac
        "$DSORT_MPIEXEC" -q $DSORT_MPIEXEC_PREFLAGS -n "$ranks" "$bin/dsort-validate" \
            --no-manifest --format "$f" "${v[@]}" "$out" | grep -q '^SUCCESS' ||
            echo "$name: the output is NOT in order" >>"$res/bad"
    fi
}

echo "load before: $(cat /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
    run typed "$r" --format fixed:32:0:32 -k 0:u64le
    run tcopy "$r" --format fixed:32:0:32 -k 0:u64le --no-map
    run raw "$r" --format fixed:32:0:8 --no-map
    run mapped "$r" --format fixed:32:0:8
done
echo "load after: $(cat /proc/loadavg)"
[ -f "$res/bad" ] && cat "$res/bad"
printf '%s MB of 32-byte records (%d), %d ranks, medians of %d, alternating\n' "$mb" "$records" \
    "$ranks" "$rounds"
for v in typed tcopy raw mapped; do
    printf '%-7s %-6s job s %7.3f (%s)  CPU s %7.3f  user s %7.3f\n' "$v" "$(cat "$res/path.$v")" \
        "$(median <"$res/$v")" "$(sort -g "$res/$v" | tr '\n' ' ' | sed 's/ $//')" \
        "$(median <"$res/cpu.$v")" "$(median <"$res/user.$v")"
done
# ratio A B WHAT: A's medians over B's
ratio() {
    printf '%-6s / %-6s job %.3fx  CPU %.3fx  user %.3fx  (%s; issue 28: within 1.2x)\n' \
        "$1" "$2" "$(echo "$(median <"$res/$1") / $(median <"$res/$2")" | bc -l)" \
        "$(echo "$(median <"$res/cpu.$1") / $(median <"$res/cpu.$2")" | bc -l)" \
        "$(echo "$(median <"$res/user.$1") / $(median <"$res/user.$2")" | bc -l)" "$3"
}
ratio typed mapped "the default paths"
ratio tcopy raw "the copying path"
ratio typed raw "typed default over raw copying"
