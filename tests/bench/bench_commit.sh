#!/usr/bin/env bash
# What dsort's commit costs after O_DIRECT output, step by step (issue 14: "find out why the
# commit takes over a second after direct writes; measure it with and without each step").
# A small C program (built here with cc) writes MB megabytes with O_DIRECT in 4 MiB blocks, as
# dsort's output does, to a new file in DIR, then syncs it; each way of sizing the file and
# each sync call are timed:
#   size: ftruncate (dsort's way: a sparse file of the final size), fallocate (blocks
#         reserved, unwritten extents), extend (no sizing: the writes extend the file);
#   sync: fsync (dsort's way) or fdatasync;
# and two controls: "flush" overwrites the file (its blocks written, no metadata left to change)
# and then times fdatasync: what is left is the device's own cache flush; "tiny" times the
# fsync of a one-byte file right after it (the journal alone).
# Prints every run and the medians (seconds) of RUNS runs per way, alternating the ways.
#
#   tests/bench/bench_commit.sh [RUNS] [MB] [DIR]     (defaults: 5 runs, 500 MB, /var/tmp)
set -euo pipefail
runs=${1:-5}
mb=${2:-500}
dir=${3:-/var/tmp}
work=$(mktemp -d "$dir/dsort-bench-commit-XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
cat >"$work/commit.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* commit PATH SIZE_MODE SYNC_MODE MB: SIZE_MODE ftruncate|fallocate|extend|flush,
 * SYNC_MODE fsync|fdatasync. Prints "size write sync tiny" seconds. */
int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    const char *path = argv[1], *size = argv[2], *sync = argv[3];
    size_t total = (size_t)atol(argv[4]) << 20, blk = (size_t)4 << 20;
    void *buf;
    if (posix_memalign(&buf, 4096, blk))
        die("posix_memalign");
    memset(buf, 'x', blk);
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0)
        die("open");
    double t0 = now();
    if (!strcmp(size, "ftruncate") && ftruncate(fd, (off_t)total))
        die("ftruncate");
    if ((!strcmp(size, "fallocate") || !strcmp(size, "flush")) &&
        fallocate(fd, 0, 0, (off_t)total))
        die("fallocate");
    double t1 = now();
    int dfd = open(path, O_WRONLY | O_DIRECT);
    if (dfd < 0)
        die("open O_DIRECT");
    int passes = !strcmp(size, "flush") ? 2 : 1;
    double tw = t1;
    for (int p = 0; p < passes; p++) {
        if (p == 1) { /* the blocks are written and synced: the second pass changes no metadata */
            if (fsync(fd))
                die("fsync");
            tw = now();
        }
        for (size_t off = 0; off < total; off += blk)
            if (pwrite(dfd, buf, blk, (off_t)off) != (ssize_t)blk)
                die("pwrite");
    }
    close(dfd);
    double t2 = now();
    if (!strcmp(sync, "fdatasync") ? fdatasync(fd) : fsync(fd))
        die("sync");
    double t3 = now();
    close(fd);
    char tiny[4096];
    snprintf(tiny, sizeof tiny, "%s.tiny", path);
    int tf = open(tiny, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (tf < 0 || write(tf, "x", 1) != 1)
        die("tiny");
    double t4 = now();
    if (fsync(tf))
        die("fsync tiny");
    double t5 = now();
    close(tf);
    unlink(tiny);
    unlink(path);
    printf("%.4f %.4f %.4f %.4f\n", t1 - t0, t2 - tw, t3 - t2, t5 - t4);
    return 0;
}
EOF
cc -O2 -o "$work/commit" "$work/commit.c"
ways="ftruncate:fsync ftruncate:fdatasync fallocate:fsync fallocate:fdatasync extend:fsync extend:fdatasync flush:fdatasync"
echo "# $mb MB with O_DIRECT in 4 MiB blocks to $dir ($(df -T "$dir" | awk 'NR==2 {print $1, $2}')),"
src=$(df "$dir" | awk 'NR==2 {print $1}')
disk=$(lsblk -no pkname "$src" 2>/dev/null | head -n 1)
disk=${disk:-$(basename "$src")}
echo "# disk $disk, write cache: $(cat "/sys/block/$disk/queue/write_cache" 2>/dev/null || echo unknown); $runs runs a way, alternating; load $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
    for w in $ways; do
        t=$("$work/commit" "$work/out" "${w%%:*}" "${w#*:}" "$mb")
        echo "run $r $w $t"
    done
done | tee "$work/runs"
echo
echo "| sizing | sync | size s | write s | sync s | write + sync s | tiny fsync s |"
echo "|---|---|---|---|---|---|---|"
for w in $ways; do
    grep " $w " "$work/runs" | python3 -c '
import statistics, sys
rows = [list(map(float, l.split()[3:7])) for l in sys.stdin]
m = [statistics.median(c) for c in zip(*rows)]
w = sys.argv[1].split(":")
print("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.4f |" % (w[0] if w[0] != "flush" else "flush (overwrite)", w[1], m[0], m[1], m[2], statistics.median(r[1] + r[2] for r in rows), m[3]))' "$w"
done
