/* dsort-bibw: what MPI moves between two ranks when both send at once, as an exchange does
 * (issue 27; tests/bench/bench_cluster.sh prints it beside the link's given rate).
 *
 *   mpirun -n 2 dsort-bibw [BYTES [PARTS [DEPTH [ONEWAY]]]]
 *
 * Each rank sends BYTES (default 256 MiB) to the other and receives as many, in PARTS messages
 * (default 1) with DEPTH of them in flight (default 1); ONEWAY 1: rank 0 sends, rank 1
 * receives. Three timed repetitions after a barrier each; rank 0 prints one line per
 * repetition: seconds and MB/s (10^6 bytes) each way. Every byte received is checked. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int from, size_t i)
{
    return (unsigned char)(i * 131u + (size_t)from * 7u + (i >> 12));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    const size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)256 << 20;
    const int parts = argc > 2 ? atoi(argv[2]) : 1, depth = argc > 3 ? atoi(argv[3]) : 1;
    const int oneway = argc > 4 && atoi(argv[4]) != 0;
    if (p != 2 || parts < 1 || depth < 1 || n < (size_t)parts || n / (size_t)parts > INT32_MAX) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -n 2 dsort-bibw [BYTES [PARTS [DEPTH [ONEWAY]]]] "
                            "(parts of at most 2 GiB)\n");
        MPI_Finalize();
        return 2;
    }
    unsigned char *s = malloc(n), *d = malloc(n);
    MPI_Request *rq = malloc(2 * (size_t)parts * sizeof *rq);
    if (!s || !d || !rq)
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t i = 0; i < n; i++)
        s[i] = pattern(rank, i);
    const int other = 1 - rank, sends = !oneway || rank == 0, recvs = !oneway || rank == 1;
    const size_t q = n / (size_t)parts;
    int bad = 0;
    for (int rep = 0; rep < 3; rep++) {
        memset(d, 0, n);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int posted = 0, waited = 0; waited < parts; waited++) {
            for (; posted < parts && posted - waited < depth; posted++) {
                const size_t off = (size_t)posted * q;
                const int len = (int)(posted == parts - 1 ? n - off : q);
                rq[2 * posted] = rq[2 * posted + 1] = MPI_REQUEST_NULL;
                if (recvs)
                    MPI_Irecv(d + off, len, MPI_BYTE, other, 7, MPI_COMM_WORLD, &rq[2 * posted]);
                if (sends)
                    MPI_Isend(s + off, len, MPI_BYTE, other, 7, MPI_COMM_WORLD,
                              &rq[2 * posted + 1]);
            }
            MPI_Waitall(2, &rq[2 * waited], MPI_STATUSES_IGNORE);
        }
        const double e = MPI_Wtime() - t0;
        for (size_t i = 0; recvs && i < n && !bad; i++)
            bad = d[i] != pattern(other, i);
        if (rank == 0)
            printf("bibw: %zu bytes, %d parts, %d in flight, %s: %.3f s, %.1f MB/s each way\n", n,
                   parts, depth, oneway ? "one way" : "both ways", e, (double)n / e / 1e6);
    }
    int all_bad = 0;
    MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0 && all_bad)
        fprintf(stderr, "bibw: received bytes differ from what was sent\n");
    free(s);
    free(d);
    free(rq);
    MPI_Finalize();
    return all_bad ? 1 : 0;
}
