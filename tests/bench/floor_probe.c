/* floor_probe.c - the hardware floors of dsort's in-memory phases on this machine (issue 14's
 * floor table; run by tests/bench/bench_floor.sh, not a test).
 *
 *   mpirun -n P dsort-floor-probe INPUT TMPDIR
 *   mpirun -n P dsort-floor-probe --init      (MPI_Init and MPI_Finalize only: the start-up,
 *                                              timed from outside)
 *
 * Every rank takes its even share of INPUT (gensort records, 100 bytes) and times, between
 * barriers, each elementary operation a phase of `dsort INPUT -o OUT` is made of, done alone on
 * memory that is already touched (except where the fresh memory is the point):
 *   touch_fresh    write every page of a fresh share-sized buffer (what a new buffer costs)
 *   touch_warm     write the same buffer again
 *   memcpy         copy the share once between two warm buffers (a merge's streaming floor)
 *   read_cached    read the share from the page cache into a warm buffer (4 MiB reads; the
 *                  file is read once before, so it is cached)
 *   radix          dsort_keysort_sort of the share's records (key prefixes, 16-byte entries)
 *   gather         dsort_keysort_gather: every record moved once, in sorted order
 *   alltoall       MPI_Alltoall of the share cut in P equal pieces (what the exchange moves
 *                  with uniform keys), warm buffers
 *   write_direct   the share written with O_DIRECT at the rank's offset of one file in TMPDIR
 *                  (8 MiB writes; the file is preallocated by rank 0 first)
 *   fsync          fsync of that file after the direct writes (every rank, one after another
 *                  is not needed: the file is one; rank 0 calls it and the others wait)
 * It prints one line per operation, "NAME SECONDS", with the slowest rank's time (the phases of
 * --stats are the slowest rank's too). Errors end the probe with a message and status 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "keysort.h"

static int rank, size;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const char *path)
{
    fprintf(stderr, "dsort-floor-probe: rank %d: %s '%s': %s\n", rank, what, path, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* A fresh anonymous mapping (no huge pages asked: the plain cost of new memory). */
static unsigned char *fresh(size_t len)
{
    void *p = mmap(NULL, len ? len : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("cannot map memory for", "the probe");
    return p;
}

/* Time fn between barriers; print the slowest rank's seconds under name. */
static double t0;
static void start(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
}
static void stop(const char *name)
{
    double mine = now() - t0, most = 0;
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %.4f\n", name, most);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc == 2 && !strcmp(argv[1], "--init")) {
        MPI_Finalize();
        return 0;
    }
    if (argc != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n P dsort-floor-probe INPUT TMPDIR\n");
        MPI_Finalize();
        return 2;
    }
    const char *in = argv[1];
    struct stat sb;
    if (stat(in, &sb))
        die("cannot stat", in);
    const size_t rs = 100;
    const uint64_t total = (uint64_t)sb.st_size / rs;
    const uint64_t first = total * (uint64_t)rank / (uint64_t)size;
    const uint64_t n = total * (uint64_t)(rank + 1) / (uint64_t)size - first;
    /* Whole pieces of the share per destination, for the all-to-all. */
    const size_t piece = (size_t)(n / (uint64_t)size) * rs;
    const size_t len = (size_t)n * rs;

    unsigned char *a = fresh(len), *b = fresh(len), *c = fresh(len);
    memset(b, 1, len);
    memset(c, 1, len);

    start();
    memset(a, 2, len);
    stop("touch_fresh");
    start();
    memset(a, 3, len);
    stop("touch_warm");
    start();
    memcpy(b, a, len);
    stop("memcpy");

    int fd = open(in, O_RDONLY);
    if (fd < 0)
        die("cannot open", in);
    for (int pass = 0; pass < 2; pass++) { /* the first pass only brings the file into the cache */
        if (pass)
            start();
        for (size_t at = 0; at < len;) {
            size_t want = len - at < ((size_t)4 << 20) ? len - at : (size_t)4 << 20;
            ssize_t got = pread(fd, a + at, want, (off_t)(first * rs + at));
            if (got <= 0)
                die("cannot read", in);
            at += (size_t)got;
        }
        if (pass)
            stop("read_cached");
    }
    close(fd);

    struct dsort_format fmt;
    dsort_format_gensort(&fmt);
    struct dsort_order ord = {0, 0, 0};
    struct dsort_sortent *ents = (struct dsort_sortent *)(void *)fresh(n * sizeof *ents);
    /* b is the radix sort's scratch (as in dsort: records are longer than entries) */
    memset(ents, 0, n * sizeof *ents);
    start();
    dsort_keysort_sort(&fmt, &ord, a, (size_t)n, ents, (struct dsort_sortent *)(void *)b);
    stop("radix");
    start();
    dsort_keysort_gather(&fmt, a, ents, (size_t)n, c);
    stop("gather");

    start();
    MPI_Alltoall(c, (int)piece, MPI_BYTE, b, (int)piece, MPI_BYTE, MPI_COMM_WORLD);
    stop("alltoall");

    char path[4096];
    snprintf(path, sizeof path, "%s/floor-probe.%d.out", argv[2], (int)getppid());
    if (rank == 0) {
        int w = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (w < 0 || posix_fallocate(w, 0, (off_t)(total * rs)) || close(w))
            die("cannot create", path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int w = open(path, O_WRONLY | O_DIRECT);
    if (w < 0)
        die("cannot open with O_DIRECT", path);
    /* O_DIRECT needs aligned offsets and lengths: each rank writes the aligned part of its
     * range (the few bytes at the edges do not change the figure). */
    uint64_t lo = (first * rs + 4095) & ~(uint64_t)4095, hi = ((first + n) * rs) & ~(uint64_t)4095;
    start();
    for (uint64_t at = lo; at < hi;) {
        size_t want = hi - at < ((uint64_t)8 << 20) ? (size_t)(hi - at) : (size_t)8 << 20;
        ssize_t put = pwrite(w, c + (at - lo), want, (off_t)at);
        if (put <= 0)
            die("cannot write", path);
        at += (uint64_t)put;
    }
    stop("write_direct");
    start();
    if (rank == 0 && fsync(w))
        die("cannot fsync", path);
    stop("fsync");
    close(w);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        unlink(path);
    MPI_Finalize();
    return 0;
}
