#!/bin/bash
# dsort --plan --json and a real sort over real mounts: three tmpfs mounts and a disk image
# with two ext4 partitions on a loop device, inputs spread over all five file systems.
# Checks that the plan shows the two partitions as one device (the loop disk, one reading
# stream: ranks take turns), each tmpfs as its own device, every input byte range assigned,
# spill dirs on devices the rank does not read; then that the sort is correct (count,
# checksum from dsort-gen -c, order from dsort-validate, bytes equal to GNU sort).
# Root and loop devices needed; exit 77 (skip) with the reason otherwise.
# Usage: plan_mounts.sh BIN_DIR
set -u
bin=${1:?usage: plan_mounts.sh BIN_DIR}
# skip (exit 77), fail (exit 1 at once: FAIL_FAST), kto and MPI_PREFLAGS are tests/lib/check.sh's.
# shellcheck disable=SC2034 # read by check.sh
FAIL_FAST=1
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
[ "$(id -u)" = 0 ] || skip "not running as root"
for tool in sfdisk losetup partx mkfs.ext4 mount umount truncate python3; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing"
done
[ -e /dev/loop-control ] || skip "no loop devices"
if [ -z "${DSORT_PLAN_NS:-}" ] && unshare --mount --propagation private true 2>/dev/null; then
    DSORT_PLAN_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/dsort-plan-XXXXXX") || fail mktemp
loop="" mounted=""
cleanup() {
    for m in $mounted; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
    [ -n "$loop" ] && { partx -d "$loop" 2>/dev/null; losetup -d "$loop" 2>/dev/null; }
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
truncate -s 80M "$work/disk.img" || fail truncate
printf 'label: dos\n,36MiB,L\n,,L\n' | sfdisk -q "$work/disk.img" >/dev/null 2>&1 || fail sfdisk
loop=$(losetup -f --show -P "$work/disk.img" 2>/dev/null) || { loop=""; skip "losetup failed"; }
[ -b "${loop}p2" ] || partx -a "$loop" 2>/dev/null
i=0
while [ ! -b "${loop}p2" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -b "${loop}p2" ] || skip "no partition nodes for $loop"
for p in 1 2; do
    mkfs.ext4 -q -F "${loop}p$p" >/dev/null 2>&1 || fail "mkfs ${loop}p$p"
    mkdir "$work/p$p" && mount "${loop}p$p" "$work/p$p" || fail "mount p$p"
    mounted="$mounted $work/p$p"
done
for t in 1 2 3; do
    mkdir "$work/t$t" && mount -t tmpfs -o size=24m tmpfs "$work/t$t" || fail "mount t$t"
    mounted="$mounted $work/t$t"
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpiexec=${DSORT_MPIEXEC:-mpiexec}
run() { kto 60 "$mpiexec" -q "${MPI_PREFLAGS[@]}" "$@"; }
# Five inputs, one per file system, in order; the generator's checksum of all of them.
sum=$(run -n 1 "$bin/dsort-gen" -a -c 30000 "$work/all.txt" 2>&1 >/dev/null) || fail gen
i=0
for fs in p1 p2 t1 t2 t3; do
    dd if="$work/all.txt" of="$work/$fs/in" bs=100 skip=$((i * 6000)) count=6000 2>/dev/null
    i=$((i + 1))
done
inputs="$work/p1/in $work/p2/in $work/t1/in $work/t2/in $work/t3/in"
disk=$(basename "$loop")
for n in 2 3; do
    run -n $n "$bin/dsort" --plan --json -T "$work/t3" -T "$work/p1" $inputs >"$work/plan.json" ||
        fail "--plan -n $n"
    python3 - "$work/plan.json" "$disk" "$n" "$work" <<'PY' || { cat "$work/plan.json"; fail "plan -n $n"; }
import json, sys
plan, disk, n, work = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), sys.argv[4]
node = plan["nodes"][0]
devs = {d["key"]: d for d in node["devices"]}
d = devs[disk]  # both partitions: one device, the loop disk
assert d["disk"] == disk and len(d["st_devs"]) == 2, d
assert d["streams"] == 1, d  # unknown/rotational: one stream
assert sum(1 for k in devs if k.startswith("st_dev:0:")) == 3, devs.keys()
reads = [r for rk in node["ranks"] for r in rk["reads"]]
total = sum(r["length"] for r in reads)
assert total == 30000 * 100, total
for rk in node["ranks"]:
    on_disk = [t for t in rk["threads"] if t["device"] == disk]
    assert len(on_disk) <= 1, rk  # one thread per device
    keys = {r["device"] for r in rk["reads"]}
    for t in rk["temp_dirs"][:1]:
        tdev = [k for k, v in devs.items() if t in (work + "/t3", work + "/p1")]
    for r in rk["reads"]:
        dev = devs[r["device"]]
        assert r["st_dev"] in dev["st_devs"], (r, dev)
readers = [rk["rank"] for rk in node["ranks"] if any(t["device"] == disk for t in rk["threads"])]
chain = [t for rk in node["ranks"] for t in rk["threads"] if t["device"] == disk]
starters = [t for t in chain if t["wait_for"] is None]
assert len(starters) == 1, chain  # the partitions are read by one stream at a time
print("plan ok: %d ranks, %d devices, disk %s read by ranks %s" % (n, len(devs), disk, readers))
PY
    # What --plan answers before a job is submitted (issue 29): out of core under -S 2M, the
    # budget and where it comes from, the spill per -T file system against what is free, the
    # output's file system; every field docs/plan.md lists.
    run -n $n "$bin/dsort" --plan --json -S 2M -T "$work/t3" -T "$work/p1" $inputs \
        -o "$work/t1/out.txt" >"$work/plan2.json" || fail "--plan -S 2M -n $n"
    python3 - "$work/plan2.json" "$n" "$work" <<'PY' || { cat "$work/plan2.json"; fail "plan job/space -n $n"; }
import json, sys
plan, n, work = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
job = plan["job"]
assert set(job) == {"sort", "input", "spill", "budget", "output", "space_check"}, job
assert job["sort"] == "out_of_core" and job["input"] == "read" and job["spill"] is True, job
assert job["budget"] == 2 << 20 and job["output"] == {"kind": "file", "bytes": 3000000}, job
assert job["space_check"] is True, job
assert [b["rank"] for b in plan["budgets"]] == list(range(n)), plan["budgets"]
for b in plan["budgets"]:
    assert set(b) == {"rank", "host", "budget", "budget_from", "share_bytes", "spill_bytes",
                      "output_bytes"}, b
    assert b["budget"] == 2 << 20 and b["budget_from"] == "-S 2M", b
    assert b["spill_bytes"] == b["share_bytes"] == b["output_bytes"], b
assert sum(b["share_bytes"] for b in plan["budgets"]) == 3000000
space = {s["file_system"]: s for s in plan["space"]}
for s in plan["space"]:
    assert set(s) == {"file_system", "type", "host", "key", "paths", "output", "temp_dirs",
                      "ranks", "need", "free", "ok", "error"}, s
    assert s["ok"] is True and s["error"] is None and s["free"] > 0, s
out = space[work + "/t1"]
assert out["output"] and out["temp_dirs"] == 0 and out["need"] == 3000000, out
assert out["type"] == "tmpfs" and out["paths"] == [work + "/t1"], out
temps = [space[work + "/t3"], space[work + "/p1"]]
# each rank spills where the node's plan sends it (striped when it has both dirs): the
# spill of all ranks, with the margin, over the temp file systems that the ranks use
users = {}
for rk in plan["nodes"][0]["ranks"]:
    for t in rk["temp_dirs"]:
        users[t] = users.get(t, 0) + 1
for t in temps:
    assert not t["output"] and t["ranks"] == users.get(t["file_system"], 0), (t, users)
need = sum(t["need"] for t in temps)
assert 3000000 < need < 3000000 * 1.04 + n * (1 << 20), temps
print("plan space ok: -n %d, spill %s" % (n, [t["need"] for t in temps]))
PY
    # In memory over one mapped input: the plan says so, maps rather than reads, spills nowhere.
    run -n $n "$bin/dsort" --plan -T "$work/t3" "$work/all.txt" -o "$work/t1/out.txt" \
        >"$work/plan.txt" || fail "--plan in memory -n $n"
    grep -q "^job: in memory, input mapped; budget .* per rank" "$work/plan.txt" &&
        grep -q "^    map .*all.txt \[0, +" "$work/plan.txt" &&
        ! grep -q "spill to\|^    read " "$work/plan.txt" &&
        grep -q "^  rank 0 (.*): budget .* (default: .*), share [0-9]* bytes, spill 0 bytes" "$work/plan.txt" &&
        grep -q "^space: $work/t1 (tmpfs on .*) for the output's directory '$work/t1': needs .*, .* free: ok" "$work/plan.txt" ||
        { cat "$work/plan.txt"; fail "--plan in memory -n $n"; }
    for opt in "" "--out-of-core -S 2M"; do
        rm -f "$work/out.txt"
        run -n $n "$bin/dsort" $opt -T "$work/t3" -T "$work/p1" $inputs -o "$work/out.txt" ||
            fail "sort -n $n $opt"
        LC_ALL=C sort "$work/all.txt" | cmp -s - "$work/out.txt" || fail "output differs from GNU sort (-n $n $opt)"
        v=$(run -n $n "$bin/dsort-validate" "$work/out.txt") || fail "validate: $v"
        echo "$v" | grep -q "Checksum: $sum" || fail "checksum: $v, want $sum"
        echo "sort ok: -n $n $opt"
    done
done
# Per-disk figures (--stats "devices", -v "disk HOST:DISK"): spills to the loop disk's first
# partition (O_DIRECT: the block layer sees them at once) show as writes on the loop disk in
# the spill phase, at least the bytes the rank spilled; tmpfs has no disk to show.
rm -f "$work/out.txt"
run -n 2 "$bin/dsort" --out-of-core -S 2M -T "$work/p1" $inputs -o "$work/out.txt" \
    --stats "$work/stats.json" -v 2>"$work/v.err" || fail "sort with --stats"
grep -q "^dsort: disk [^:]*:$disk: read .*, wrote .* | spill .*w [0-9.]* MB/s" "$work/v.err" ||
    { cat "$work/v.err"; fail "-v names no writes to $disk in the spill phase"; }
python3 - "$work/stats.json" "$disk" <<'PY' || fail "--stats devices"
import json, sys
st, disk = json.load(open(sys.argv[1])), sys.argv[2]
for rk in st["per_rank"]:
    devs = {d["disk"]: d for d in rk["devices"]}
    assert disk in devs, (disk, list(devs))
    assert all(not k.startswith("st_dev") for k in devs), devs.keys()
    spilled = devs[disk]["write_bytes"]["spill"] + devs[disk]["write_bytes"]["merge"]
    assert rk["spill_bytes"] > 0 and spilled >= rk["spill_bytes"], (spilled, rk["spill_bytes"])
    assert all(v >= 0 for v in devs[disk]["busy_seconds"].values())
print("devices ok: %s written in the spill phase, at least each rank's spill bytes" % disk)
PY
left=$(find "$work/t3" "$work/p1" -maxdepth 1 -name "dsort-*") && [ -n "$left" ] && fail "temp dirs left behind: $left"
echo PASS
