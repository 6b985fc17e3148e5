#include "exchange.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"

enum dsort_status dsort_exchange_counts(MPI_Comm comm, const uint64_t *sendcounts,
                                        uint64_t *recvcounts, struct dsort_error *err)
{
    int rc = MPI_Alltoall(sendcounts, 1, MPI_UINT64_T, recvcounts, 1, MPI_UINT64_T, comm);
    if (rc != MPI_SUCCESS)
        return dsort_comm_mpi_error(rc, "exchanging piece sizes", err);
    return DSORT_OK;
}

enum dsort_status dsort_exchange_run(MPI_Comm comm, const unsigned char *sendbuf,
                                     const uint64_t *sendcounts, unsigned char *recvbuf,
                                     const uint64_t *recvcounts, size_t chunk, int *rounds,
                                     struct dsort_error *err)
{
    return dsort_exchange_runv(comm, sendbuf, sendcounts, NULL, recvbuf, recvcounts, NULL, chunk,
                               rounds, err);
}

enum dsort_status dsort_exchange_runv(MPI_Comm comm, const unsigned char *sendbuf,
                                      const uint64_t *sendcounts, const uint64_t *sdispls,
                                      unsigned char *recvbuf, const uint64_t *recvcounts,
                                      const uint64_t *rdispls, size_t chunk, int *rounds,
                                      struct dsort_error *err)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    uint64_t *soff = malloc((size_t)p * sizeof *soff), *roff = malloc((size_t)p * sizeof *roff);
    MPI_Request *req = malloc(2 * (size_t)p * sizeof *req);
    int ok = soff && roff && req, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    enum dsort_status st = DSORT_OK;
    if (!all_ok) {
        st = DSORT_ERR(err, DSORT_ENOMEM, ok ? 0 : ENOMEM, "cannot allocate the exchange state");
        goto out;
    }
    /* Offsets of each piece, and the number of rounds the largest pair needs. */
    uint64_t s = 0, r = 0, need = 0;
    for (int i = 0; i < p; i++) {
        soff[i] = sdispls ? sdispls[i] : s;
        roff[i] = rdispls ? rdispls[i] : r;
        s += sendcounts[i];
        r += recvcounts[i];
        if (i != rank) {
            uint64_t a = (sendcounts[i] + chunk - 1) / chunk,
                     b = (recvcounts[i] + chunk - 1) / chunk;
            need = a > need ? a : need;
            need = b > need ? b : need;
        }
    }
    uint64_t nrounds = 0;
    MPI_Allreduce(&need, &nrounds, 1, MPI_UINT64_T, MPI_MAX, comm);
    if (recvcounts[rank] != sendcounts[rank]) {
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0, "exchange: self piece sizes differ");
        goto out;
    }
    memcpy(recvbuf + roff[rank], sendbuf + soff[rank], sendcounts[rank]);
    for (uint64_t round = 0; round < nrounds && !st; round++) {
        int nreq = 0;
        uint64_t at = round * chunk;
        for (int k = 1; k < p; k++) {
            /* Shifted partners spread the traffic: receive from rank-k, send to rank+k. */
            int from = (rank - k + p) % p, to = (rank + k) % p;
            if (recvcounts[from] > at) {
                uint64_t len = recvcounts[from] - at < chunk ? recvcounts[from] - at : chunk;
                int rc = MPI_Irecv(recvbuf + roff[from] + at, (int)len, MPI_BYTE, from, 77, comm,
                                   &req[nreq++]);
                if (rc != MPI_SUCCESS)
                    st = dsort_comm_mpi_error(rc, "posting a receive", err);
            }
            if (sendcounts[to] > at) {
                uint64_t len = sendcounts[to] - at < chunk ? sendcounts[to] - at : chunk;
                int rc = MPI_Isend(sendbuf + soff[to] + at, (int)len, MPI_BYTE, to, 77, comm,
                                   &req[nreq++]);
                if (rc != MPI_SUCCESS)
                    st = dsort_comm_mpi_error(rc, "posting a send", err);
            }
        }
        int rc = MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS && !st)
            st = dsort_comm_mpi_error(rc, "exchanging records", err);
    }
    if (rounds)
        *rounds = (int)nrounds;
out:
    free(soff);
    free(roff);
    free(req);
    return st;
}
