/* sort_particles.c - libdsort's example: every rank makes particles in memory, and
 * dsort_sort sorts them across MPI_COMM_WORLD by typed keys, giving each rank an equal share.
 *
 *   mpirun -n 4 ./sort_particles [-n PER_RANK] [-c] [-k KEYS] [-r] [-s] [-o PREFIX] [-x | -y]
 *
 * A particle is the struct below, 48 bytes as a simulation writes it (little-endian on x86
 * and most ARM machines). By default the particles sort by id, a little-endian uint64 at
 * offset 0: the key list "0:u64le". -c sorts them by cell, then id: "32:i32le,0:u64le" (the
 * first key decides, the second breaks its ties). -k gives any key list in dsort's -k syntax,
 * OFF:TYPE[:LEN][:r] joined by commas (e.g. "8:f64le:r,0:u64le": x descending, then id).
 * Ids and cells repeat, so the tie order (-s: input order; else the whole record) matters.
 * With -o, rank r writes its input to PREFIX.in.r and its sorted share to PREFIX.out.r, for a
 * check by another program (the test's oracle). -x shows an error: the last rank passes a key
 * beyond the record, and every rank gets the error code; -y: the last rank passes other keys
 * than the others.
 */
#include <dsort.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct particle {
    uint64_t id;
    double x, y, z;
    int32_t cell;
    float v[3];
}; /* 48 bytes, no padding: offsets 0, 8, 16, 24, 32, 36 */
_Static_assert(sizeof(struct particle) == 48 && offsetof(struct particle, cell) == 32,
               "the key lists below name these offsets");

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

/* n particles of rank r: ids and cells from small ranges (so that they repeat), x of a few
 * values, -0.0 among them. */
static void make_particles(struct particle *p, size_t n, int rank)
{
    uint64_t s = 0x9e3779b97f4a7c15u * (uint64_t)(rank + 1);
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17; /* xorshift64 */
        p[i].id = s % 1000;
        p[i].x = (double)((int)(s >> 20) % 5) - 2.0;
        if (p[i].x == 0.0 && (s & 1))
            p[i].x = -0.0;
        p[i].y = (double)rank, p[i].z = (double)i;
        p[i].cell = (int32_t)((s >> 40) % 16) - 8;
        for (int d = 0; d < 3; d++)
            p[i].v[d] = (float)((s >> (8 * d)) & 0xff) / 16.0f;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t per_rank = 10000;
    unsigned flags = 0;
    const char *prefix = NULL, *keys = "0:u64le"; /* by id */
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            per_rank = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-c"))
            keys = "32:i32le,0:u64le"; /* by cell, then id */
        else if (!strcmp(argv[i], "-k") && i + 1 < argc)
            keys = argv[++i];
        else if (!strcmp(argv[i], "-r"))
            flags |= DSORT_REVERSE;
        else if (!strcmp(argv[i], "-s"))
            flags |= DSORT_STABLE;
        else if (!strcmp(argv[i], "-x"))
            bad = 1; /* the last rank passes a bad key: every rank must get the error */
        else if (!strcmp(argv[i], "-y"))
            bad = 2; /* the last rank passes valid but different keys */
        else if (!strcmp(argv[i], "-o") && i + 1 < argc)
            prefix = argv[++i];
    }
    /* Unequal inputs (rank r has r * 7 more), so that balancing has work to do. */
    size_t n = per_rank + (size_t)rank * 7;
    struct particle *in = malloc((n ? n : 1) * sizeof *in);
    make_particles(in, n, rank);

    /* key_off and key_len are for raw byte keys (keys NULL); typed keys ignore them. */
    struct dsort_records fmt = {sizeof(struct particle), 0, 0, flags, keys};
    if (bad && rank == size - 1)
        fmt.keys = bad == 1 ? "44:u64le" : "0:u64le:r";
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
        printf("libdsort %s: sorted %llu particles on %d ranks by %s in %.3f s\n", dsort_version(),
               all, size, keys, t);
    free(out);
    free(in);
    MPI_Finalize();
    return ok ? 0 : 1;
}
