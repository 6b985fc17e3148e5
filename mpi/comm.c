#include "comm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

void dsort_comm_init(struct dsort_comm *c, MPI_Comm comm, const char *prog)
{
    memset(c, 0, sizeof *c);
    c->comm = comm;
    c->prog = prog;
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    if (gethostname(c->host, sizeof c->host - 1))
        snprintf(c->host, sizeof c->host, "unknown");
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &c->node_rank);
    MPI_Comm_size(node, &c->node_size);
    c->node = node;
    /* Nodes are numbered in the order of their lowest rank. */
    int low = c->rank, mylow = 0;
    MPI_Allreduce(&low, &mylow, 1, MPI_INT, MPI_MIN, node);
    int *lows = malloc((size_t)c->size * sizeof *lows);
    c->node_index = 0;
    c->node_count = 0;
    if (lows) {
        MPI_Allgather(&mylow, 1, MPI_INT, lows, 1, MPI_INT, comm);
        for (int r = 0; r < c->size; r++)
            if (lows[r] == r) { /* r is a node's lowest rank */
                if (r < mylow)
                    c->node_index++;
                c->node_count++;
            }
        free(lows);
    }
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s: rank %d/%d (%s): ", prog, c->rank, c->size, c->host);
    dsort_cleanup_set_prefix(prefix);
}

void dsort_comm_destroy(struct dsort_comm *c)
{
    if (c->node != MPI_COMM_NULL)
        MPI_Comm_free(&c->node);
    c->node = MPI_COMM_NULL;
}

int dsort_comm_all_ok(const struct dsort_comm *c, int ok)
{
    int in = ok ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, c->comm);
    return out;
}

void dsort_comm_print(const struct dsort_comm *c, const char *fmt, ...)
{
    char line[1024];
    int n =
        snprintf(line, sizeof line, "%s: rank %d/%d (%s): ", c->prog, c->rank, c->size, c->host);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

enum dsort_status dsort_comm_agree(const struct dsort_comm *c, enum dsort_status st,
                                   const struct dsort_error *err)
{
    int mine[2] = {st ? c->rank : c->size, (int)st}, low[2];
    /* MINLOC on (rank, status) pairs: the lowest failing rank and its status. */
    MPI_Allreduce(mine, low, 1, MPI_2INT, MPI_MINLOC, c->comm);
    if (low[0] == c->size)
        return DSORT_OK;
    if (low[0] == c->rank)
        dsort_comm_print(c, "%s", err && err->msg[0] ? err->msg : dsort_status_name(st));
    int status = (int)st;
    MPI_Bcast(&status, 1, MPI_INT, low[0], c->comm);
    return (enum dsort_status)status;
}

_Noreturn void dsort_comm_die(const struct dsort_comm *c, const struct dsort_error *err)
{
    dsort_comm_print(c, "%s", err && err->msg[0] ? err->msg : "fatal error");
    dsort_cleanup_run();
    MPI_Abort(c->comm, 2);
    _exit(2); /* MPI_Abort does not return; this keeps the promise if it ever does */
}

uint64_t dsort_comm_sum(const struct dsort_comm *c, uint64_t v)
{
    uint64_t out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    return out;
}

uint64_t dsort_comm_max(const struct dsort_comm *c, uint64_t v)
{
    uint64_t out = 0;
    MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MAX, c->comm);
    return out;
}

enum dsort_status dsort_comm_mpi_error(int code, const char *what, struct dsort_error *err)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    return DSORT_ERR(err, DSORT_EIO, 0, "%s: %s", what, text);
}
