/* selftest.c - calls of known sizes, for checking libdsort_pmpi_count.so (tests/pmpi/check.sh).
 * Each rank makes exactly these calls, on MPI_COMM_WORLD of p ranks (p >= 2), rank 0 the root:
 *   MPI_Allgather   1000 bytes from each rank         recv p*1000, sent 1000
 *   MPI_Allgatherv  rank r sends r+1 ints             recv 4*p*(p+1)/2, sent 4*(r+1)
 *   MPI_Allreduce   10 uint64, twice (once in place)  recv 160, sent 160
 *   MPI_Reduce      3 doubles to rank 0               sent 24; rank 0 recv 24
 *   MPI_Gather      2 ints to rank 0                  sent 8; rank 0 recv 8*p
 *   MPI_Gatherv     rank r sends r bytes to rank 0    sent r; rank 0 recv p*(p-1)/2
 *   MPI_Bcast       100 bytes from rank 0             rank 0 sent 100; others recv 100
 *   MPI_Alltoall    1 uint64 to each                  recv 8*p, sent 8*p
 *   MPI_Exscan      1 uint64                          recv 8, sent 8
 *   MPI_Barrier     once
 *   MPI_Isend/Irecv 7 bytes to rank+1, from rank-1    sent 7, recv 7 (one call each)
 *   MPI_Send/Recv   rank 1 sends 5 doubles to rank 0  rank 1 sent 40; rank 0 recv 40
 *   MPI_Sendrecv    16 bytes around the ring          sent 16, recv 16
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (p < 2) {
        fprintf(stderr, "selftest: run with at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unsigned char mine[1000], *all = malloc((size_t)p * 1000);
    memset(mine, r, sizeof mine);
    MPI_Allgather(mine, 1000, MPI_BYTE, all, 1000, MPI_BYTE, MPI_COMM_WORLD);

    int *counts = malloc((size_t)p * sizeof *counts), *displs = malloc((size_t)p * sizeof *displs);
    int tot = 0;
    for (int i = 0; i < p; i++) {
        counts[i] = i + 1;
        displs[i] = tot;
        tot += i + 1;
    }
    int *ints = calloc((size_t)tot, sizeof *ints), my[64] = {0};
    MPI_Allgatherv(my, r + 1, MPI_INT, ints, counts, displs, MPI_INT, MPI_COMM_WORLD);

    uint64_t v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, w[10];
    MPI_Allreduce(v, w, 10, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, v, 10, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);

    double d[3] = {1, 2, 3}, dd[3];
    MPI_Reduce(d, dd, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

    int two[2] = {r, r}, *twos = malloc((size_t)p * 2 * sizeof *twos);
    MPI_Gather(two, 2, MPI_INT, twos, 2, MPI_INT, 0, MPI_COMM_WORLD);

    for (int i = 0, t = 0; i < p; i++) {
        counts[i] = i;
        displs[i] = t;
        t += i;
    }
    MPI_Gatherv(mine, r, MPI_BYTE, all, r == 0 ? counts : NULL, r == 0 ? displs : NULL, MPI_BYTE, 0,
                MPI_COMM_WORLD);

    MPI_Bcast(mine, 100, MPI_BYTE, 0, MPI_COMM_WORLD);

    uint64_t *a2a = calloc((size_t)p, 8), *b2a = calloc((size_t)p, 8);
    MPI_Alltoall(a2a, 1, MPI_UINT64_T, b2a, 1, MPI_UINT64_T, MPI_COMM_WORLD);

    uint64_t x = 1, before = 0;
    MPI_Exscan(&x, &before, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned char s7[7] = {0}, r7[7];
    MPI_Request req[2];
    MPI_Irecv(r7, 7, MPI_BYTE, (r - 1 + p) % p, 5, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(s7, 7, MPI_BYTE, (r + 1) % p, 5, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);

    double five[5] = {0};
    if (r == 1)
        MPI_Send(five, 5, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
    else if (r == 0)
        MPI_Recv(five, 5, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    unsigned char s16[16] = {0}, r16[16];
    MPI_Sendrecv(s16, 16, MPI_BYTE, (r + 1) % p, 7, r16, 16, MPI_BYTE, (r - 1 + p) % p, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    free(all);
    free(counts);
    free(displs);
    free(ints);
    free(twos);
    free(a2a);
    free(b2a);
    MPI_Finalize();
    return 0;
}
