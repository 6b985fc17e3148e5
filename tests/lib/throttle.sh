# shellcheck shell=bash disable=SC2034
# Throttled loop disks: a test bed of block devices that are really independent, each with its
# own bandwidth, on a machine that has one virtual disk (issue 15). Sourced by
# tests/topo/throttled.sh and tests/bench/bench_throttled.sh; needs bash and root.
#
# Each disk is a sparse image file under a mktemp directory in /var/tmp, attached to a loop
# device, formatted ext4 and mounted. A child cgroup of its own holds a read and a write limit
# (bytes per second) for each loop device: cgroup v1 blkio (blkio.throttle.read_bps_device and
# blkio.throttle.write_bps_device) where it is mounted, else cgroup v2 io.max
# ("MAJ:MIN rbps=N wbps=N"). thr_run runs a command in that cgroup after a sync and a drop of
# the page cache, so that reads go to the (throttled) loop devices. Under v1, writes are
# throttled only when they bypass the page cache (O_DIRECT, as dsort's spills and output are):
# v1 does not throttle buffered writeback.
#
#   thr_init                  checks, work dir, cgroup; 0, or THR_SKIP (77) with THR_REASON set
#   thr_disk NAME MB RBPS WBPS
#                             a throttled ext4 disk of MB megabytes, mounted at $THR_WORK/NAME
#                             (THR_MNT is set to that path)
#   thr_split_disk NAME MB RBPS WBPS
#                             one throttled loop disk with two ext4 partitions, mounted at
#                             $THR_WORK/NAME1 and $THR_WORK/NAME2 (THR_MNT1, THR_MNT2), both
#                             under the one limit of the disk
#   thr_run CMD...            run CMD in the throttled cgroup, page cache dropped first; its
#                             exit status is returned, THR_ELAPSED is its wall time in seconds
#                             (the sync and the drop not counted)
#   thr_drop_caches           sync and drop the page cache
#   thr_teardown              kill what still runs in the cgroup, unmount, detach, remove the
#                             cgroup and the work dir; safe to call twice and from a trap
#   thr_reap_stale            tear down what a killed (SIGKILL) earlier run left behind
#   thr_isolate ARGS...       (a test's first step) run the calling script again, with ARGS,
#                             in a mount namespace of its own, so that no mount outlives it
#   thr_begin WHO             thr_init, then the traps (teardown on exit; exit 1 on INT, TERM,
#                             HUP); a skip prints "WHO: SKIP: reason" and exits 77, a failure
#                             exits 1
#   thr_setup CMD...          run a thr_* set-up step: exit 77 on a skip, 1 on a failure
#   thr_python3               set PYTHON3 to python3's real path, found once (a version
#                             manager's shim, pyenv's, costs seconds a start on a busy machine)
#   thr_bench_start TOP WHO   (benchmarks) the programs: DSORT_BIN_DIR, or a Release build in
#                             TOP/build-bench (sets bin); then thr_python3 and thr_begin WHO
#   thr_check_gain N P O WHAT (tests) device-parallel WHAT at -n N took P s, one stream O s:
#                             prints the ratio, calls the test's fail if P > 1.5 O + 0.2 s
#                             (a loose check: this is a test, not a benchmark); nan skips
#   thr_finish                (tests) fail if a dsort temp dir is left under THR_WORK, then
#                             print PASS, or FAIL and exit 1 when the test's $FAILS is not 0
#
# Every function but thr_init returns 0 on success, THR_SKIP (77) when this machine cannot do
# it (no free loop device, no partition nodes; THR_REASON says why) and 1 on other errors
# (with a message on stderr). Callers skip on 77:
#   thr_init || { [ $? = 77 ] && skip "$THR_REASON"; exit 1; }
#   trap thr_teardown EXIT; trap 'exit 1' INT TERM HUP
# THR_CGROUP_KIND=v1|v2 (in the environment) forces one kind of cgroup.

THR_SKIP=77
THR_REASON=""
THR_WORK=""
THR_CG=""        # the cgroup directory
THR_CG_KIND=""   # v1 or v2
THR_CG_PARENT="" # where its processes go back to (cgroup.procs of the parent)
THR_LOOPS=()     # loop devices, in the order made
THR_MOUNTS=()    # mount points, in the order made
THR_MNT=""
THR_MNT1=""
THR_MNT2=""
THR_ELAPSED=0

thr_skip_reason() {
    THR_REASON=$*
    return "$THR_SKIP"
}

# thr_cgroup_find: set THR_CG_KIND and THR_CG_PARENT (the directory to make the child in), or
# return 77 with the reason.
thr_cgroup_find() {
    local want=${THR_CGROUP_KIND:-} v1=/sys/fs/cgroup/blkio v2=""
    if [ "$want" != v2 ] && [ -f "$v1/blkio.throttle.read_bps_device" ] &&
        [ -f "$v1/blkio.throttle.write_bps_device" ]; then
        THR_CG_KIND=v1
        THR_CG_PARENT=$v1
        return 0
    fi
    [ "$want" = v1 ] && { thr_skip_reason "no cgroup v1 blkio throttling ($v1)"; return; }
    # cgroup v2: the unified mount (pure v2 at /sys/fs/cgroup, hybrid at .../unified).
    v2=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -n 1)
    [ -n "$v2" ] || { thr_skip_reason "neither cgroup v1 blkio nor cgroup v2 is mounted"; return; }
    if ! grep -qw io "$v2/cgroup.controllers" 2>/dev/null; then
        thr_skip_reason "cgroup v2 at $v2 has no io controller (held by v1 blkio?)"
        return
    fi
    if ! grep -qw io "$v2/cgroup.subtree_control" 2>/dev/null &&
        ! echo +io >"$v2/cgroup.subtree_control" 2>/dev/null; then
        thr_skip_reason "cannot enable the io controller in $v2/cgroup.subtree_control"
        return
    fi
    THR_CG_KIND=v2
    THR_CG_PARENT=$v2
}

thr_init() {
    local tool
    [ "$(id -u)" = 0 ] || { thr_skip_reason "not running as root"; return; }
    for tool in losetup mkfs.ext4 mount umount truncate sfdisk partx findmnt; do
        command -v "$tool" >/dev/null 2>&1 ||
            { thr_skip_reason "$tool is missing (apt-get install util-linux fdisk e2fsprogs)"; return; }
    done
    [ -e /dev/loop-control ] || { thr_skip_reason "no loop devices (/dev/loop-control is missing)"; return; }
    [ -w /proc/sys/vm/drop_caches ] || { thr_skip_reason "cannot drop the page cache"; return; }
    thr_cgroup_find || return
    thr_reap_stale
    THR_WORK=$(mktemp -d /var/tmp/dsort-throttle.XXXXXX) || { echo "thr_init: mktemp failed" >&2; return 1; }
    echo $$ >"$THR_WORK/owner"
    THR_CG=$THR_CG_PARENT/$(basename "$THR_WORK")
    mkdir "$THR_CG" 2>/dev/null || {
        THR_CG=""
        thr_skip_reason "cannot make a cgroup under $THR_CG_PARENT"
        return
    }
    echo "$THR_CG" >"$THR_WORK/cgroup"
}

# thr_majmin DEV: the MAJ:MIN of a block device (its whole disk for a loop device).
thr_majmin() {
    cat "/sys/class/block/$(basename "$1")/dev"
}

# thr_limit DEV RBPS WBPS: the read and write limits of DEV in the cgroup.
thr_limit() {
    local mm
    mm=$(thr_majmin "$1") || return 1
    if [ "$THR_CG_KIND" = v1 ]; then
        echo "$mm $2" >"$THR_CG/blkio.throttle.read_bps_device" &&
            echo "$mm $3" >"$THR_CG/blkio.throttle.write_bps_device"
    else
        echo "$mm rbps=$2 wbps=$3" >"$THR_CG/io.max"
    fi || { echo "thr_limit: cannot set the limits of $1 ($mm) in $THR_CG" >&2; return 1; }
}

# thr_attach IMAGE [-P]: attach IMAGE to a free loop device; sets THR_LOOP.
thr_attach() {
    THR_LOOP=$(losetup -f --show "${@:2}" "$1" 2>/dev/null) || {
        THR_LOOP=""
        thr_skip_reason "losetup could not attach $1 (no free loop device?)"
        return
    }
    THR_LOOPS+=("$THR_LOOP")
}

# thr_mount DEV DIR: mkfs.ext4 DEV and mount it on DIR.
thr_mount() {
    mkdir -p "$2"
    mkfs.ext4 -q -F "$1" >/dev/null 2>&1 || { echo "thr_mount: mkfs.ext4 $1 failed" >&2; return 1; }
    mount "$1" "$2" || { echo "thr_mount: mount $1 $2 failed" >&2; return 1; }
    THR_MOUNTS+=("$2")
}

thr_disk() {
    local name=$1 mb=$2 rbps=$3 wbps=$4 img=$THR_WORK/$1.img
    truncate -s "${mb}M" "$img" || return 1
    thr_attach "$img" || return
    thr_mount "$THR_LOOP" "$THR_WORK/$name" || return 1
    thr_limit "$THR_LOOP" "$rbps" "$wbps" || return 1
    THR_MNT=$THR_WORK/$name
}

thr_split_disk() {
    local name=$1 mb=$2 rbps=$3 wbps=$4 img=$THR_WORK/$1.img i=0 half=$(($2 / 2))
    truncate -s "${mb}M" "$img" || return 1
    printf 'label: dos\n,%dMiB,L\n,,L\n' "$half" | sfdisk -q "$img" >/dev/null 2>&1 ||
        { echo "thr_split_disk: sfdisk could not partition $img" >&2; return 1; }
    thr_attach "$img" -P || return
    # Some kernels or containers do not scan the partitions: ask for them explicitly.
    [ -b "${THR_LOOP}p2" ] || partx -a "$THR_LOOP" 2>/dev/null || true
    while [ ! -b "${THR_LOOP}p2" ] && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    [ -b "${THR_LOOP}p2" ] || { thr_skip_reason "no partition nodes appear for $THR_LOOP"; return; }
    thr_mount "${THR_LOOP}p1" "$THR_WORK/${name}1" || return 1
    thr_mount "${THR_LOOP}p2" "$THR_WORK/${name}2" || return 1
    # The limit is the whole disk's: blk-throttle limits a disk (its request queue), and both
    # partitions' I/O goes through it.
    thr_limit "$THR_LOOP" "$rbps" "$wbps" || return 1
    THR_MNT1=$THR_WORK/${name}1
    THR_MNT2=$THR_WORK/${name}2
}

thr_drop_caches() {
    sync
    echo 3 >/proc/sys/vm/drop_caches
}

# thr_run CMD...: CMD in the cgroup. It runs in the background and is waited for, so that a
# signal to this shell runs its trap at once (and thr_teardown kills CMD through the cgroup).
thr_run() {
    local pid rc=0 t0
    thr_drop_caches
    t0=$(date +%s%N)
    (
        echo "$BASHPID" >"$THR_CG/cgroup.procs" || exit 1
        exec "$@"
    ) &
    pid=$!
    wait "$pid" || rc=$?
    THR_ELAPSED=$(awk -v ns=$(($(date +%s%N) - t0)) 'BEGIN { printf "%.3f", ns / 1e9 }')
    return "$rc"
}

# thr_cg_kill CGROUP PARENT: kill what still runs in CGROUP (only this library's commands run
# there), then move any survivor back to PARENT so that the cgroup can be removed.
thr_cg_kill() {
    local cg=$1 parent=$2 p i sig procs
    [ -d "$cg" ] || return 0
    # (cgroup files have no size: test what they hold, not -s.)
    for sig in TERM KILL; do
        for i in 1 2 3 4 5 6 7 8 9 10; do
            procs=$(cat "$cg/cgroup.procs" 2>/dev/null) || procs=""
            [ -n "$procs" ] || break 2
            for p in $procs; do kill "-$sig" "$p" 2>/dev/null || true; done
            sleep 0.2
        done
    done
    procs=$(cat "$cg/cgroup.procs" 2>/dev/null) || procs=""
    for p in $procs; do echo "$p" >"$parent/cgroup.procs" 2>/dev/null || true; done
    rmdir "$cg" 2>/dev/null || echo "thr_teardown: cannot remove the cgroup $cg" >&2
}

# thr_undo_dir WORK: unmount the file systems under WORK, detach the loop devices of its images
# (and their partitions), remove its cgroup and WORK. Used by thr_teardown and thr_reap_stale.
thr_undo_dir() {
    local work=$1 m l cg
    [ -n "$work" ] && [ -d "$work" ] || return 0
    if [ -f "$work/cgroup" ]; then
        cg=$(cat "$work/cgroup")
        case $cg in /sys/fs/cgroup/*dsort-throttle.*) thr_cg_kill "$cg" "$(dirname "$cg")" ;; esac
    fi
    # Deepest first; a busy mount is detached lazily.
    for m in $(findmnt -rn -o TARGET | grep -F "$work/" | sort -r); do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "thr_teardown: cannot unmount $m" >&2
    done
    for l in $(for f in "$work"/*.img; do
        [ -e "$f" ] && losetup -n -O NAME -j "$f" 2>/dev/null; done | sort -u); do
        partx -d "$l" >/dev/null 2>&1 || true
        losetup -d "$l" 2>/dev/null || echo "thr_teardown: cannot detach $l" >&2
    done
    rm -rf "$work"
}

thr_teardown() {
    local m l i
    # This run's own mounts and loops first (what thr_undo_dir finds too, but by name).
    if [ -n "$THR_CG" ]; then
        thr_cg_kill "$THR_CG" "$THR_CG_PARENT"
    fi
    for ((i = ${#THR_MOUNTS[@]} - 1; i >= 0; i--)); do
        m=${THR_MOUNTS[i]}
        if mountpoint -q "$m" 2>/dev/null; then
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "thr_teardown: cannot unmount $m" >&2
        fi
    done
    for l in "${THR_LOOPS[@]}"; do
        if losetup "$l" >/dev/null 2>&1; then
            partx -d "$l" >/dev/null 2>&1 || true
            losetup -d "$l" 2>/dev/null || echo "thr_teardown: cannot detach $l" >&2
        fi
    done
    thr_undo_dir "$THR_WORK"
    THR_MOUNTS=()
    THR_LOOPS=()
    THR_CG=""
    THR_WORK=""
}

# thr_reap_stale: undo the work dirs of runs whose shell is gone (killed with SIGKILL, where no
# trap runs, as CTest does at a timeout).
thr_reap_stale() {
    local d owner
    for d in /var/tmp/dsort-throttle.*; do
        [ -d "$d" ] || continue
        owner=$(cat "$d/owner" 2>/dev/null) || owner=""
        if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then
            continue
        fi
        # A run that is starting has no owner file yet.
        if [ -z "$owner" ] && [ -n "$(find "$d" -maxdepth 0 -mmin -1)" ]; then
            continue
        fi
        echo "throttle: removing what an earlier run left behind: $d" >&2
        thr_undo_dir "$d"
    done
}

thr_isolate() {
    if [ -z "${DSORT_THROTTLE_NS:-}" ] && command -v unshare >/dev/null 2>&1 &&
        unshare --mount --propagation private true 2>/dev/null; then
        DSORT_THROTTLE_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
    fi
}

thr_begin() {
    local rc=0
    THR_WHO=$1
    thr_init || rc=$?
    if [ "$rc" != 0 ]; then
        [ "$rc" = "$THR_SKIP" ] && { echo "$THR_WHO: SKIP: $THR_REASON"; exit 77; }
        echo "$THR_WHO: FAIL: thr_init" >&2
        exit 1
    fi
    trap thr_teardown EXIT
    trap 'exit 1' INT TERM HUP
}

thr_setup() {
    local rc=0
    "$@" || rc=$?
    [ "$rc" = 0 ] && return 0
    [ "$rc" = "$THR_SKIP" ] && { echo "${THR_WHO:-throttle}: SKIP: $THR_REASON"; exit 77; }
    echo "${THR_WHO:-throttle}: FAIL: $*" >&2
    exit 1
}

thr_python3() {
    PYTHON3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PYTHON3=python3
}

thr_check_gain() {
    local n=$1 p=$2 o=$3 what=$4
    if [ "$p" = nan ] || [ "$o" = nan ]; then return 0; fi
    echo "  -n $n: one stream / device-parallel $what = $(awk -v p="$p" -v o="$o" 'BEGIN { printf "%.2f", o / p }')"
    awk -v p="$p" -v o="$o" 'BEGIN { exit !(p <= 1.5 * o + 0.2) }' ||
        fail "-n $n: device-parallel $what $p s is much slower than one stream ($o s)"
}

thr_finish() {
    local left
    left=$(find "$THR_WORK" -mindepth 1 -maxdepth 2 -name 'dsort-*' 2>/dev/null | head -n 5)
    [ -z "$left" ] || fail "temp files left behind: $left"
    if [ "${FAILS:?the test sources tests/lib/check.sh}" -gt 0 ]; then
        echo "FAIL: $FAILS checks failed"
        exit 1
    fi
    echo PASS
}

thr_bench_start() {
    local top=$1
    if [ -n "${DSORT_BIN_DIR:-}" ]; then
        bin=$DSORT_BIN_DIR
    else
        cmake -S "$top" -B "$top/build-bench" -DCMAKE_BUILD_TYPE=Release >/dev/null
        cmake --build "$top/build-bench" -j "$(nproc)" >/dev/null
        bin=$top/build-bench/src/cli
    fi
    thr_python3
    thr_begin "$2"
}
