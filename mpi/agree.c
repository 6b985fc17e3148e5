#include "agree.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

int dsort_agree_ok(const struct dsort_comm *c, MPI_Comm comm, int ok)
{
    int in = ok ? 1 : 0, out = 0;
    dsort_comm_require(c, MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, comm),
                       "agreeing (MPI_Allreduce)");
    return out;
}

uint64_t dsort_agree_min(const struct dsort_comm *c, uint64_t v)
{
    uint64_t out = 0;
    dsort_agree_reduce(c, c->comm, &v, &out, 1, MPI_UINT64_T, MPI_MIN, -1,
                       "the minimum over the ranks (MPI_Allreduce)");
    return out;
}

void dsort_agree_any(const struct dsort_comm *c, int *flags, size_t n)
{
    dsort_agree_reduce(c, c->comm, MPI_IN_PLACE, flags, n, MPI_INT, MPI_LOR, -1,
                       "finding what any rank has (MPI_Allreduce)");
}

void dsort_agree_reduce(const struct dsort_comm *c, MPI_Comm comm, const void *in, void *out,
                        size_t n, MPI_Datatype type, MPI_Op op, int root, const char *what)
{
    if (n > INT_MAX) { /* the same n on every rank: every rank ends here */
        struct dsort_error err;
        DSORT_ERR(&err, DSORT_EINTERNAL, 0, "%s: %zu values in one reduction", what, n);
        dsort_comm_die(c, &err);
    }
    int rc = root < 0 ? MPI_Allreduce(in, out, (int)n, type, op, comm)
                      : MPI_Reduce(in, out, (int)n, type, op, root, comm);
    dsort_comm_require(c, rc, what);
}

void dsort_agree_bcast(const struct dsort_comm *c, void *buf, size_t bytes, const char *what)
{
    const size_t part = (size_t)1 << 30;
    for (size_t off = 0; off < bytes; off += part) {
        size_t n = bytes - off < part ? bytes - off : part;
        dsort_comm_require(c, MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, 0, c->comm), what);
    }
}

int dsort_agree_code(const struct dsort_comm *c, int code)
{
    dsort_comm_require(c, MPI_Bcast(&code, 1, MPI_INT, 0, c->comm),
                       "sharing rank 0's result (MPI_Bcast)");
    return code;
}

void dsort_agree_barrier(const struct dsort_comm *c, MPI_Comm comm, const char *what)
{
    dsort_comm_require(c, MPI_Barrier(comm), what);
}

static enum dsort_status no_memory(struct dsort_error *err, size_t bytes)
{
    struct dsort_error e;
    return DSORT_ERR(err ? err : &e, DSORT_ENOMEM, errno,
                     "out of memory (%zu bytes to gather the ranks' figures)", bytes);
}

enum dsort_status dsort_agree_allgather(const struct dsort_comm *c, MPI_Comm comm, const void *mine,
                                        size_t bytes, void **all, struct dsort_error *err)
{
    int n = 0;
    dsort_comm_require(c, MPI_Comm_size(comm, &n), "MPI_Comm_size");
    enum dsort_status st = DSORT_OK;
    *all = NULL;
    /* (counts are int: a total of 2^31 bytes or more is refused alike on every rank) */
    void *buf = bytes <= INT_MAX / (size_t)n ? malloc(bytes * (size_t)n + 1) : NULL;
    if (!buf)
        st = no_memory(err, bytes * (size_t)n);
    if (!dsort_agree_ok(c, comm, buf && mine)) {
        free(buf);
        return st;
    }
    dsort_comm_require(c,
                       MPI_Allgather(mine, (int)bytes, MPI_BYTE, buf, (int)bytes, MPI_BYTE, comm),
                       "gathering the ranks' figures (MPI_Allgather)");
    *all = buf;
    return DSORT_OK;
}

enum dsort_status dsort_agree_gather(const struct dsort_comm *c, const void *mine, size_t bytes,
                                     void **all, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    void *buf = NULL;
    *all = NULL;
    int fits = bytes <= INT_MAX / (size_t)c->size;
    if (c->rank == 0 && !(buf = fits ? malloc(bytes * (size_t)c->size + 1) : NULL))
        st = no_memory(err, bytes * (size_t)c->size);
    /* rank 0's failure is every rank's: none of them enters the gather */
    if (!dsort_agree_ok(c, c->comm, fits && mine && !st)) {
        free(buf);
        return st;
    }
    dsort_comm_require(
        c, MPI_Gather(mine, (int)bytes, MPI_BYTE, buf, (int)bytes, MPI_BYTE, 0, c->comm),
        "gathering the ranks' figures to rank 0 (MPI_Gather)");
    *all = buf;
    return DSORT_OK;
}

/* Rank 0: int counts and displacements from the gathered lengths, into offs (size + 1
 * entries, the total last); 0 if a length says its rank could not take part or the total
 * does not fit an int. */
static int counts(const struct dsort_comm *c, const uint64_t *lens, int *cnt, int *disp,
                  size_t *offs)
{
    uint64_t total = 0;
    for (int r = 0; r < c->size; r++) {
        if (lens[r] == UINT64_MAX || lens[r] > (uint64_t)INT_MAX - total)
            return 0;
        offs[r] = (size_t)total;
        disp[r] = (int)total;
        cnt[r] = (int)lens[r];
        total += lens[r];
    }
    offs[c->size] = (size_t)total;
    return 1;
}

enum dsort_status dsort_agree_gatherv(const struct dsort_comm *c, const void *mine, size_t len,
                                      void **all, size_t **offs, struct dsort_error *err)
{
    *all = NULL;
    *offs = NULL;
    uint64_t mylen = len == SIZE_MAX ? UINT64_MAX : (uint64_t)len;
    void *lens = NULL;
    enum dsort_status st = dsort_agree_gather(c, &mylen, sizeof mylen, &lens, err);
    if (!dsort_agree_ok(c, c->comm, c->rank != 0 || lens)) /* (rank 0 alone has the lengths) */
        return st;
    int *cnt = NULL, *disp = NULL;
    size_t *o = NULL;
    void *buf = NULL;
    int ok = 1;
    if (c->rank == 0) {
        cnt = malloc((size_t)c->size * sizeof *cnt);
        disp = malloc((size_t)c->size * sizeof *disp);
        o = malloc(((size_t)c->size + 1) * sizeof *o);
        if (!cnt || !disp || !o)
            st = no_memory(err, ((size_t)c->size + 1) * sizeof *o);
        else if (!counts(c, lens, cnt, disp, o))
            ok = 0; /* a rank that could not take part, or 2^31 bytes or more */
        else if (!(buf = malloc(o[c->size] + 1)))
            st = no_memory(err, o[c->size]);
        ok = ok && !st;
    }
    if (dsort_agree_ok(c, c->comm, ok && len != SIZE_MAX)) {
        dsort_comm_require(c,
                           MPI_Gatherv(mine, (int)(len == SIZE_MAX ? 0 : len), MPI_BYTE, buf, cnt,
                                       disp, MPI_BYTE, 0, c->comm),
                           "gathering the ranks' blobs to rank 0 (MPI_Gatherv)");
        *all = buf;
        *offs = o;
        buf = NULL;
        o = NULL;
    }
    free(buf);
    free(o);
    free(cnt);
    free(disp);
    free(lens);
    return st;
}
