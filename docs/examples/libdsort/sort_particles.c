/* sort_particles.c - libdsort's example: every rank makes particles in memory, and
 * dsort_sort sorts them across MPI_COMM_WORLD by id, giving each rank an equal share.
 *
 *   mpirun -n 4 ./sort_particles [-n PER_RANK] [-r] [-s] [-o PREFIX] [-x | -y]
 *
 * A particle is 32 bytes: an id (uint64, big-endian, so that its bytes compare as the
 * number: libdsort compares keys as unsigned bytes), then x, y, z (doubles). Ids repeat
 * (about 1000 distinct values), so the tie order (-s: input order; else the whole record)
 * matters. With -o, rank r writes its input to PREFIX.in.r and its sorted share to
 * PREFIX.out.r, for a check by another program (the test's oracle). -x shows an error: the
 * last rank passes a key beyond the record, and every rank gets the error code; -y: the last
 * rank passes a shorter key than the others.
 */
#include <dsort.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct particle {
    unsigned char id[8]; /* big-endian */
    double x, y, z;
};

static void put_be64(unsigned char *out, uint64_t v)
{
    for (int i = 7; i >= 0; i--, v >>= 8)
        out[i] = (unsigned char)v;
}

static int write_file(const char *prefix, const char *what, int rank, const void *p, size_t n)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%s.%d", prefix, what, rank);
    FILE *f = fopen(name, "wb");
    int ok = f && fwrite(p, sizeof(struct particle), n, f) == n;
    if (f && fclose(f))
        ok = 0;
    if (!ok)
        fprintf(stderr, "sort_particles: rank %d: cannot write %s\n", rank, name);
    return ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t per_rank = 10000;
    unsigned flags = 0;
    const char *prefix = NULL;
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            per_rank = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-r"))
            flags |= DSORT_REVERSE;
        else if (!strcmp(argv[i], "-s"))
            flags |= DSORT_STABLE;
        else if (!strcmp(argv[i], "-x"))
            bad = 1; /* the last rank passes a bad layout: every rank must get the error */
        else if (!strcmp(argv[i], "-y"))
            bad = 2; /* the last rank passes a valid but different layout */
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            prefix = argv[++i];
    }
    /* Unequal inputs (rank r has r * 7 more), so that balancing has work to do. */
    size_t n = per_rank + (size_t)rank * 7;
    struct particle *in = malloc((n ? n : 1) * sizeof *in);
    uint64_t s = 0x9e3779b97f4a7c15u * (uint64_t)(rank + 1);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
        put_be64(in[i].id, s % 1000);
        in[i].x = (double)rank, in[i].y = (double)i, in[i].z = (double)(s >> 40);
    }

    struct dsort_records fmt = {sizeof(struct particle), 0, 8, flags};
    if (bad && rank == size - 1)
        fmt.key_len = bad == 1 ? 40 : 4;
    void *out;
    size_t n_out;
    struct dsort_errinfo err;
    double t0 = MPI_Wtime();
    int rc = dsort_sort(MPI_COMM_WORLD, &fmt, in, n, &out, &n_out, &err);
    double t = MPI_Wtime() - t0;
    if (rc != DSORT_SUCCESS) {
        /* Every rank has the same code and message: rank 0 alone says it. */
        if (rank == 0)
            fprintf(stderr, "sort_particles: %s (code %d): %s\n", dsort_strerror(rc), rc, err.msg);
        MPI_Finalize();
        return 1;
    }
    int ok = 1;
    if (prefix)
        ok = write_file(prefix, "in", rank, in, n) && write_file(prefix, "out", rank, out, n_out);
    unsigned long long total = n_out, all = 0;
    MPI_Reduce(&total, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("libdsort %s: sorted %llu particles on %d ranks in %.3f s\n", dsort_version(), all,
               size, t);
    free(out);
    free(in);
    MPI_Finalize();
    return ok ? 0 : 1;
}
