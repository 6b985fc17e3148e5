#!/bin/bash
# The default memory budget obeys the cgroup's memory limit (issue 9, item 11). Makes a child
# of this process's cgroup v1 memory cgroup with a 1 GiB limit, runs a small 2-rank sort with
# -v and --stats (no -S, no Slurm variables) inside it, and checks every rank's budget is 75% of
# 1 GiB / 2 ranks (below 1 GiB), the reason names the cgroup limit in --stats and -v, and the
# output is right. The cgroup is removed afterwards. Needs root and a cgroup v1 memory
# hierarchy (exit 77 = skipped otherwise). Usage: cgroup_budget.sh BIN_DIR
set -u
bin=${1:?usage: cgroup_budget.sh BIN_DIR}
# skip (exit 77), fail (exit 1 at once: FAIL_FAST), kto and MPI_PREFLAGS are tests/lib/check.sh's.
# shellcheck disable=SC2034 # read by check.sh
FAIL_FAST=1
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
[ "$(id -u)" = 0 ] || skip "not running as root"
command -v python3 >/dev/null 2>&1 || skip "python3 is missing"
# The v1 memory hierarchy's mount point and this process's cgroup in it.
mnt=$(awk '{ for (i = 1; $i != "-"; i++) ; if ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)memory(,|$)/)
        { print $5; exit } }' /proc/self/mountinfo)
mroot=$(awk '{ for (i = 1; $i != "-"; i++) ; if ($(i + 1) == "cgroup" && $(i + 3) ~ /(^|,)memory(,|$)/)
        { print $4; exit } }' /proc/self/mountinfo)
[ -n "$mnt" ] || skip "no cgroup v1 memory hierarchy mounted"
path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
[ -n "$path" ] || skip "this process has no memory cgroup"
[ "$mroot" = / ] || path=${path#"$mroot"}
parent=$mnt$path
[ -w "$parent" ] || skip "cannot make a cgroup under $parent"
cg=$parent/dsort-budget-$$
work=$(mktemp -d "${TMPDIR:-/tmp}/dsort-cgroup-XXXXXX") || fail mktemp
cleanup() {
    if [ -d "$cg" ]; then
        i=0
        while ! rmdir "$cg" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        [ -d "$cg" ] && echo "warning: cannot remove $cg" >&2
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
mkdir "$cg" || skip "cannot make a cgroup under $parent"
echo $((1 << 30)) >"$cg/memory.limit_in_bytes" || fail "cannot set the limit"
[ "$(cat "$cg/memory.limit_in_bytes")" = $((1 << 30)) ] || fail "limit not taken"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset SLURM_MEM_PER_NODE SLURM_MEM_PER_CPU SLURM_CPUS_ON_NODE
sum=$(kto 60 mpirun -q -n 1 "$bin/dsort-gen" -a -c 20000 "$work/in.txt" 2>&1 >/dev/null) ||
    fail gen
mkdir "$work/spill"
# The sort, inside the cgroup: the shell moves itself in, then becomes mpirun.
kto 120 sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
    mpirun -q "${MPI_PREFLAGS[@]}" -n 2 "$bin/dsort" -v --stats "$work/stats.json" -T "$work/spill" \
    -o "$work/out.txt" "$work/in.txt" 2>"$work/err" || { cat "$work/err"; fail "dsort failed"; }
cat "$work/err"
python3 - "$work/stats.json" <<'PY' || fail "--stats"
import json, sys
s = json.load(open(sys.argv[1]))
want = (1 << 30) // 4 * 3 // 2
for r in s["per_rank"]:
    b, why = r["memory_budget"], r["memory_budget_reason"]
    print("rank %d: budget %d (%s)" % (r["rank"], b, why))
    assert b < 1 << 30, b
    assert abs(b - want) <= want * 0.005, (b, want)
    assert "cgroup limit" in why and "1.00 GiB" in why, why
PY
grep -q "memory budget per rank .*cgroup limit" "$work/err" || fail "-v does not name the cgroup"
LC_ALL=C sort "$work/in.txt" | cmp -s - "$work/out.txt" || fail "output differs from GNU sort"
v=$(kto 60 mpirun -q -n 1 "$bin/dsort-validate" "$work/out.txt") || fail "validate: $v"
echo "$v" | grep -q "Checksum: $sum" || fail "checksum: $v, want $sum"
echo PASS
