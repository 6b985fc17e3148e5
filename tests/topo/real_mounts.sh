#!/bin/sh
# Real mounts on this machine: a disk image with two ext4 partitions on a loop device and two
# tmpfs mounts. Checks through topo_probe (the topology library) that the two partitions map
# to one device key (the loop disk), the two tmpfs mounts to two st_dev keys, and that the
# plan reads the partitions with one stream and spills to a device it does not read.
# Needs root, loop devices, sfdisk (Debian: fdisk), mkfs.ext4 (e2fsprogs), partx, losetup.
# Exit 0 pass, 1 fail, 77 skip (with the reason). Runs in its own mount namespace when
# unshare is there, so that mounts cannot outlive it; the trap unmounts and detaches anyway.
# Usage: real_mounts.sh PATH/TO/topo_probe
set -u
probe=${1:?usage: real_mounts.sh topo_probe}

skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

[ "$(id -u)" = 0 ] || skip "not running as root"
for tool in sfdisk losetup partx mkfs.ext4 mount umount truncate; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is missing (apt-get install fdisk e2fsprogs)"
done
[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control is missing)"

if [ -z "${DSORT_TOPO_NS:-}" ] && command -v unshare >/dev/null 2>&1 &&
    unshare --mount --propagation private true 2>/dev/null; then
    DSORT_TOPO_NS=1 exec unshare --mount --propagation private sh "$0" "$@"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/dsort-topo-mounts-XXXXXX") || fail "mktemp"
loop=""
mounted=""
cleanup() {
    for m in $mounted; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
    done
    if [ -n "$loop" ]; then
        partx -d "$loop" 2>/dev/null
        losetup -d "$loop" 2>/dev/null
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

truncate -s 80M "$work/disk.img" || fail "truncate"
printf 'label: dos\n,36MiB,L\n,,L\n' | sfdisk -q "$work/disk.img" >/dev/null 2>&1 ||
    fail "sfdisk could not partition the image"
loop=$(losetup -f --show -P "$work/disk.img" 2>/dev/null) || {
    loop=""
    skip "losetup could not attach the image (no free loop device?)"
}
# Some kernels or containers do not scan the partitions: ask for them explicitly.
if [ ! -b "${loop}p1" ] || [ ! -b "${loop}p2" ]; then
    partx -a "$loop" 2>/dev/null
fi
i=0
while { [ ! -b "${loop}p1" ] || [ ! -b "${loop}p2" ]; } && [ $i -lt 50 ]; do
    sleep 0.1
    i=$((i + 1))
done
[ -b "${loop}p2" ] || skip "no partition nodes appear for $loop (partx -a failed)"

for p in 1 2; do
    mkfs.ext4 -q -F "${loop}p$p" >/dev/null 2>&1 || fail "mkfs.ext4 ${loop}p$p"
    { mkdir "$work/p$p" && mount "${loop}p$p" "$work/p$p"; } || fail "mount ${loop}p$p"
    mounted="$mounted $work/p$p"
done
for t in 1 2; do
    { mkdir "$work/t$t" && mount -t tmpfs -o size=16m tmpfs "$work/t$t"; } || fail "mount tmpfs $t"
    mounted="$mounted $work/t$t"
done
for f in p1/a p2/b t1/c t2/d; do
    dd if=/dev/urandom of="$work/$f" bs=64k count=16 2>/dev/null || fail "write $f"
done

out=$("$probe" key "$work/p1/a" "$work/p2/b" "$work/t1/c" "$work/t2/d") || fail "topo_probe key"
echo "$out"
field() { # field LINE-NUMBER COLUMN
    echo "$out" | sed -n "${1}p" | cut -f "$2"
}
disk=$(basename "$loop")
[ "$(field 1 2)" = "$disk" ] || fail "p1 key is '$(field 1 2)', want '$disk'"
[ "$(field 2 2)" = "$disk" ] || fail "p2 key is '$(field 2 2)', want '$disk'"
[ "$(field 1 3)" != "$(field 2 3)" ] || fail "the two partitions have one st_dev"
[ "$(field 1 4)" = "${disk}p1" ] || fail "p1 sysfs name is '$(field 1 4)', want ${disk}p1"
[ "$(field 1 5)" = disks ] || fail "p1 kind is '$(field 1 5)'"
case $(field 3 2) in st_dev:0:*) ;; *) fail "tmpfs 1 key is '$(field 3 2)'" ;; esac
case $(field 4 2) in st_dev:0:*) ;; *) fail "tmpfs 2 key is '$(field 4 2)'" ;; esac
[ "$(field 3 2)" != "$(field 4 2)" ] || fail "the two tmpfs mounts share a key"
[ "$(field 3 5)" = none ] || fail "tmpfs kind is '$(field 3 5)'"

# The plan: 2 ranks read a (rank 0), b (rank 1), c (rank 0); spill candidates t2 and p1.
"$probe" plan 2 -T "$work/p1" -T "$work/t2" "$work/p1/a" "$work/p2/b" "$work/t1/c" \
    >"$work/plan.json" || fail "topo_probe plan"
cat "$work/plan.json"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$work/plan.json" "$disk" "$work" <<'EOF' || fail "the plan is wrong"
import json, sys
plan = json.load(open(sys.argv[1]))
disk, work = sys.argv[2], sys.argv[3]
node = plan["nodes"][0]
devs = {d["key"]: d for d in node["devices"]}
assert disk in devs, devs.keys()
d = devs[disk]
assert d["disk"] == disk and d["disks"] == [disk], d
assert len(d["st_devs"]) == 2 and d["sysfs"] == [disk + "p1", disk + "p2"], d
assert d["readers"] == 2 and d["streams"] == 1 and d["rounds"] == 2, d
assert d["read_bytes"] == 2 * 1024 * 1024, d
assert d["numa"] is None, d  # hwloc does not list loop devices
nodisk = [k for k in devs if k.startswith("st_dev:0:")]
assert len(nodisk) == 2, devs.keys()
assert len(devs) == 3, devs.keys()
r0, r1 = node["ranks"]
assert [t["device"] for t in r0["threads"]] == [disk, nodisk[0]], r0
assert r1["threads"][0]["wait_for"] == 0 and r0["threads"][0]["pass_to"] == 1, (r0, r1)
for r in (r0, r1):
    assert r["temp_dirs"] == [work + "/t2"], r
print("plan ok")
EOF
else
    grep -q "\"key\": \"$disk\"" "$work/plan.json" || fail "no device $disk in the plan"
fi
echo "PASS"
