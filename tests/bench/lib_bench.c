/* lib_bench.c - libdsort's in-memory sort (dsort_sort) on records like DTCMP's use cases,
 * against a plain local sort of the same records as a floor (issue 28, docs/performance.md
 * "libdsort against DTCMP"). A benchmark, not a test: it prints times and checks the order.
 *
 *   mpirun -n P dsort-lib-bench REC N MODE
 *     REC  16 ({u64 key; u64 sat}) or 32 (u64 key then 24 bytes)
 *     N    records per rank; keys little-endian uint64 from xorshift64, distinct per rank
 *     MODE raw    key bytes as they lie (8 bytes at 0, memcmp: the order of the bytes)
 *          typed  keys "0:u64le" (numeric order of the little-endian key)
 *          qsort  local qsort(3) by the u64 key, on each rank alone (no MPI traffic)
 *          radix  local LSD radix sort by the u64 key (8 passes of 8 bits), each rank alone
 * Checks each rank's output in order and the record count kept. Prints on rank 0: "MODE REC N P
 * wall SECONDS recs/s/rank R ok|BAD". */
#define _POSIX_C_SOURCE 200809L
#include <dsort.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_at(const unsigned char *r)
{
    uint64_t k = 0;
    for (int b = 7; b >= 0; b--)
        k = k << 8 | r[b];
    return k;
}

static size_t g_rec;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = key_at(a), y = key_at(b);
    if (x != y)
        return x < y ? -1 : 1;
    return memcmp(a, b, g_rec);
}

/* LSD radix by the 8 key bytes, least significant first; tmp as large as recs. */
static void radix_sort(unsigned char *recs, unsigned char *tmp, size_t n, size_t rec)
{
    for (int pass = 0; pass < 8; pass++) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[recs[i * rec + pass] + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t i = 0; i < n; i++)
            memcpy(tmp + count[recs[i * rec + pass]]++ * rec, recs + i * rec, rec);
        unsigned char *t = recs;
        recs = tmp;
        tmp = t;
    }
}

/* 1 if the n records at r are in order for MODE (raw: memcmp of the 8 key bytes). */
static int in_order(const unsigned char *r, size_t n, size_t rec, int raw)
{
    for (size_t i = 1; i < n; i++) {
        const unsigned char *a = r + (i - 1) * rec, *b = r + i * rec;
        if (raw ? memcmp(a, b, 8) > 0 : key_at(a) > key_at(b))
            return 0;
    }
    return 1;
}

static double run(const char *mode, unsigned char *in, size_t n, size_t rec, int *ok)
{
    double t0 = MPI_Wtime();
    unsigned char *out = NULL;
    size_t n_out = n;
    if (!strcmp(mode, "qsort")) {
        qsort(in, n, rec, cmp_u64);
        out = in;
    } else if (!strcmp(mode, "radix")) {
        unsigned char *tmp = malloc(n * rec);
        radix_sort(in, tmp, n, rec);
        free(tmp);
        out = in;
    } else {
        struct dsort_records f = {rec, 0, 8, 0, !strcmp(mode, "typed") ? "0:u64le" : NULL};
        struct dsort_errinfo e;
        void *o;
        if (dsort_sort(MPI_COMM_WORLD, &f, in, n, &o, &n_out, &e) != DSORT_SUCCESS) {
            fprintf(stderr, "%s\n", e.msg);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        out = o;
    }
    double t = MPI_Wtime() - t0;
    *ok = in_order(out, n_out, rec, !strcmp(mode, "raw"));
    unsigned long long cnt[2] = {n, n_out}, sum[2];
    MPI_Allreduce(cnt, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    *ok = *ok && sum[0] == sum[1];
    if (out != in)
        free(out);
    return t;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: %s 16|32 N raw|typed|qsort|radix\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    size_t rec = strtoul(argv[1], NULL, 10), n = strtoul(argv[2], NULL, 10);
    g_rec = rec;
    unsigned char *in = malloc(n * rec);
    uint64_t s = 0x9e3779b97f4a7c15u * (uint64_t)(rank + 1);
    for (size_t i = 0; i < n * rec / 8; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        memcpy(in + i * 8, &s, 8);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int ok, all_ok;
    double t = run(argv[3], in, n, rec, &ok), tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s %zu %zu %d wall %.3f recs/s/rank %.3g %s\n", argv[3], rec, n, p, tmax,
               (double)n / tmax, all_ok ? "ok" : "BAD");
    free(in);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
