/* fault.c - a PMPI fault injector: one rank's n-th MPI_Isend fails as a failing transport's
 * would. Built as libdsort_pmpi_fault.so and loaded with LD_PRELOAD in front of the MPI library
 * (Open MPI: mpirun -x LD_PRELOAD=... -x DSORT_PMPI_FAIL_ISEND=RANK:N).
 *
 * DSORT_PMPI_FAIL_ISEND=RANK:N: on the rank RANK of MPI_COMM_WORLD, the N-th call of MPI_Isend
 * (N from 1) sends nothing: it calls the communicator's error handler with MPI_ERR_OTHER, as MPI
 * does for an error it detects (MPI_ERRORS_ARE_FATAL ends the job there; a handler that
 * returns gets MPI_ERR_OTHER back, and an inactive request). The other ranks then wait for a
 * message that never comes, unless the job ends. Unset: every call goes through unchanged. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int fail_rank = -1;
static long fail_at, calls;

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    static int parsed;
    if (!parsed) {
        parsed = 1;
        const char *v = getenv("DSORT_PMPI_FAIL_ISEND");
        if (!v || sscanf(v, "%d:%ld", &fail_rank, &fail_at) != 2)
            fail_rank = -1;
    }
    int me = -2;
    if (fail_rank >= 0)
        PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == fail_rank && ++calls == fail_at) {
        *req = MPI_REQUEST_NULL;
        PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
        return MPI_ERR_OTHER;
    }
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
