#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

/* MPI_Op: a[i] += b[i] for arrays of struct dsort_file_sum (the 128-bit sums carry). */
static void add_file_sums(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const struct dsort_file_sum *a = in;
    struct dsort_file_sum *b = inout;
    for (int i = 0; i < *len; i++) {
        b[i].records += a[i].records;
        dsort_sum128_merge(&b[i].sum, &a[i].sum);
    }
}

void dsort_check_sum_files(const struct dsort_comm *c, struct dsort_file_sum *f, size_t n)
{
    MPI_Datatype t;
    MPI_Op op;
    MPI_Type_contiguous((int)(sizeof *f / sizeof(uint64_t)), MPI_UINT64_T, &t);
    MPI_Type_commit(&t);
    MPI_Op_create(add_file_sums, 1, &op);
    /* in pieces: counts are int */
    for (size_t done = 0; done < n;) {
        size_t k = n - done < ((size_t)1 << 20) ? n - done : (size_t)1 << 20;
        MPI_Allreduce(MPI_IN_PLACE, f + done, (int)k, t, op, c->comm);
        done += k;
    }
    MPI_Op_free(&op);
    MPI_Type_free(&t);
}

/* The 128-bit difference a - b (a sum after some records were added, less the sum before). */
static struct dsort_sum128 sum128_sub(struct dsort_sum128 a, struct dsort_sum128 b)
{
    struct dsort_sum128 d = {a.lo - b.lo, a.hi - b.hi - (a.lo < b.lo)};
    return d;
}

/* Add n records at recs, global index g, to s, and each file's part of them to files. */
static void add_by_file(const struct dsort_inputs *in, const struct dsort_format *fmt,
                        const struct dsort_order *ord, struct dsort_vsum *s,
                        struct dsort_file_sum *files, size_t *k, uint64_t g,
                        const unsigned char *recs, size_t n)
{
    while (n > 0) {
        while (*k < in->count && g >= in->files[*k].first + in->files[*k].records)
            (*k)++;
        if (*k == in->count) { /* not reached: the ranges lie in the files */
            dsort_vsum_add(s, fmt, ord, recs, n);
            return;
        }
        uint64_t left = in->files[*k].first + in->files[*k].records - g;
        size_t m = left < n ? (size_t)left : n;
        struct dsort_sum128 before = s->checksum;
        dsort_vsum_add(s, fmt, ord, recs, m);
        struct dsort_sum128 d = sum128_sub(s->checksum, before);
        files[*k].records += m;
        dsort_sum128_merge(&files[*k].sum, &d);
        recs += m * fmt->rec_size;
        g += m;
        n -= m;
    }
}

enum dsort_status dsort_check_inputs(const struct dsort_comm *c, const struct dsort_inputs *in,
                                     const struct dsort_format *fmt, const struct dsort_order *ord,
                                     size_t block, struct dsort_vsum *total,
                                     struct dsort_error *err)
{
    return dsort_check_inputs_files(c, in, fmt, ord, block, total, NULL, err);
}

enum dsort_status dsort_check_inputs_files(const struct dsort_comm *c,
                                           const struct dsort_inputs *in,
                                           const struct dsort_format *fmt,
                                           const struct dsort_order *ord, size_t block,
                                           struct dsort_vsum *total, struct dsort_file_sum *files,
                                           struct dsort_error *err)
{
    const size_t rs = fmt->rec_size;
    size_t per = block / rs ? block / rs : 1;
    uint64_t first, count;
    dsort_io_split(in->total_records, c->rank, c->size, &first, &count);
    if (per > count && count > 0)
        per = (size_t)count;
    struct dsort_vsum mine;
    enum dsort_status st = dsort_vsum_init_ex(&mine, fmt, total->whole, err);
    unsigned char *buf = NULL;
    size_t buflen = per * rs;
    if (!st && !(buf = dsort_mem_alloc(buflen)))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate a %zu-byte read buffer", buflen);
    if (files)
        memset(files, 0, in->count * sizeof *files);
    size_t k = 0;
    for (uint64_t done = 0; !st && done < count;) {
        size_t n = count - done < per ? (size_t)(count - done) : per;
        st = dsort_inputs_read(in, first + done, n, buf, err);
        if (!st && files)
            add_by_file(in, fmt, ord, &mine, files, &k, first + done, buf, n);
        else if (!st)
            dsort_vsum_add(&mine, fmt, ord, buf, n);
        done += n;
    }
    dsort_mem_free(buf, buflen);
    size_t psz = dsort_vsum_packed_size(total->key_len);
    unsigned char *packed = malloc(psz), *all = NULL;
    if (!st && !packed)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if (!st && c->rank == 0 && !(all = malloc(psz * (size_t)c->size)))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    dsort_vsum_pack(&mine, packed);
    MPI_Gather(packed, (int)psz, MPI_BYTE, all, (int)psz, MPI_BYTE, 0, c->comm);
    if (c->rank == 0) {
        for (int r = 0; r < c->size; r++) {
            dsort_vsum_unpack(&mine, all + (size_t)r * psz);
            dsort_vsum_append(total, &mine, ord);
        }
        dsort_vsum_pack(total, packed);
    }
    MPI_Bcast(packed, (int)psz, MPI_BYTE, 0, c->comm);
    dsort_vsum_unpack(total, packed);
    if (files)
        dsort_check_sum_files(c, files, in->count);
out:
    dsort_vsum_destroy(&mine);
    free(packed);
    free(all);
    return st;
}

/* Summarise one whole file. */
static enum dsort_status check_file(const struct dsort_inputs *in, size_t i,
                                    const struct dsort_format *fmt, const struct dsort_order *ord,
                                    unsigned char *buf, size_t per, struct dsort_vsum *s,
                                    struct dsort_error *err)
{
    const struct dsort_input *f = &in->files[i];
    enum dsort_status st = DSORT_OK;
    for (uint64_t done = 0; !st && done < f->records;) {
        size_t k = f->records - done < per ? (size_t)(f->records - done) : per;
        st = dsort_inputs_read(in, f->first + done, k, buf, err);
        if (!st)
            dsort_vsum_add(s, fmt, ord, buf, k);
        done += k;
    }
    return st;
}

struct entry {
    size_t arg;
    int node, slot; /* owner node, and which of its ranks checks it */
    char name[4096];
};

static int by_arg_name(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->arg != y->arg)
        return x->arg < y->arg ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Every node's list of its files (in, on its first rank), to every rank, sorted by argument
 * and name: *all (nall entries; the caller frees it, NULL on failure). A name found on two
 * nodes is an error. Collective; the status is agreed. */
static enum dsort_status list_files(const struct dsort_comm *c, const struct dsort_inputs *in,
                                    struct entry **all_out, size_t *nall_out,
                                    struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    int mine = c->node_rank == 0 ? (int)in->count : 0, *counts = NULL, *displs = NULL;
    struct entry *local = calloc(in->count + 1, sizeof *local), *all = NULL;
    size_t nall = 0;
    counts = calloc((size_t)c->size, sizeof *counts);
    displs = calloc((size_t)c->size, sizeof *displs);
    if (!local || !counts || !displs)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    for (size_t i = 0; i < in->count; i++) {
        local[i].arg = in->files[i].arg;
        local[i].node = c->node_index;
        snprintf(local[i].name, sizeof local[i].name, "%s", in->files[i].path);
    }
    int bytes = mine * (int)sizeof *local;
    MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, c->comm);
    int sum = 0;
    for (int r = 0; r < c->size; r++) {
        displs[r] = sum;
        sum += counts[r];
    }
    nall = (size_t)sum / sizeof *all;
    all = malloc((size_t)sum + sizeof *all);
    if ((st = dsort_comm_agree(
             c, all ? DSORT_OK : DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory"), err)))
        goto out;
    MPI_Allgatherv(local, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, c->comm);
    qsort(all, nall, sizeof *all, by_arg_name);
    for (size_t i = 1; i < nall && !st; i++)
        if (all[i].arg == all[i - 1].arg && !strcmp(all[i].name, all[i - 1].name))
            st = DSORT_ERR(err, DSORT_EINVAL, 0, "'%s' is on two nodes", all[i].name);
    st = dsort_comm_agree(c, c->rank == 0 ? st : DSORT_OK, err);
out:
    free(local);
    free(counts);
    free(displs);
    if (st) {
        free(all);
        all = NULL;
    }
    *all_out = all;
    *nall_out = nall;
    return st;
}

/* Open the files of paths that this node has (a missing one skipped, a directory expanded),
 * and check that each path exists on some node. Collective; the status is the same on every
 * rank. On failure in is not open. */
static enum dsort_status open_local(const struct dsort_comm *c, char *const *paths, size_t n,
                                    const struct dsort_format *fmt, struct dsort_inputs *in,
                                    struct dsort_error *err)
{
    int *found = calloc(n + 1, sizeof *found), *anywhere = calloc(n + 1, sizeof *anywhere);
    enum dsort_status st =
        !found || !anywhere
            ? DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory")
            : dsort_inputs_open_ex(in, paths, n, fmt,
                                   DSORT_INPUTS_SKIP_MISSING | DSORT_INPUTS_EXPAND_DIRS, found,
                                   err);
    if ((st = dsort_comm_agree(c, st, err))) {
        free(found);
        free(anywhere);
        return st;
    }
    MPI_Allreduce(found, anywhere, (int)n, MPI_INT, MPI_LOR, c->comm);
    for (size_t i = 0; i < n && !st; i++)
        if (!anywhere[i])
            st = DSORT_ERR(err, DSORT_EINVAL, 0, "'%s' exists on no node", paths[i]);
    free(found);
    free(anywhere);
    if (st) /* (st is the same on every rank: anywhere is) */
        dsort_inputs_destroy(in);
    return st;
}

/* Local: summarise the files of all that this rank takes, each into packed (psz bytes a file),
 * through s (re-initialised for each file), reading block bytes at a time. */
static enum dsort_status check_mine(const struct dsort_comm *c, const struct dsort_inputs *in,
                                    const struct entry *all, size_t nall,
                                    const struct dsort_format *fmt, const struct dsort_order *ord,
                                    size_t block, int whole, struct dsort_vsum *s,
                                    unsigned char *packed, size_t psz, struct dsort_error *err)
{
    const size_t rs = fmt->rec_size, per = block / rs ? block / rs : 1;
    unsigned char *buf = dsort_mem_alloc(per * rs);
    enum dsort_status st = buf ? DSORT_OK : DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < nall && !st; i++) {
        if (all[i].node != c->node_index || all[i].slot != c->node_rank)
            continue;
        size_t k = 0;
        while (k < in->count && strcmp(in->files[k].path, all[i].name))
            k++;
        dsort_vsum_destroy(s);
        if (dsort_vsum_init_ex(s, fmt, whole, err)) {
            st = DSORT_ENOMEM;
            break;
        }
        st = check_file(in, k, fmt, ord, buf, per, s, err);
        if (!st)
            dsort_vsum_pack(s, packed + i * psz);
    }
    dsort_mem_free(buf, per * rs);
    return st;
}

/* Each file's summary was packed by exactly one rank, the others left zeros: a sum of the bytes
 * would not do, so rank 0 takes each from its owner into gathered. Collective. */
static void collect_summaries(const struct dsort_comm *c, const struct entry *all, size_t nall,
                              const unsigned char *packed, unsigned char *gathered, size_t psz)
{
    for (size_t i = 0; i < nall; i++) {
        int owner_rank = -1,
            me = (all[i].node == c->node_index && all[i].slot == c->node_rank) ? c->rank : -1;
        MPI_Allreduce(&me, &owner_rank, 1, MPI_INT, MPI_MAX, c->comm);
        if (owner_rank == 0 && c->rank == 0)
            memcpy(gathered + i * psz, packed + i * psz, psz);
        else if (c->rank == 0)
            MPI_Recv(gathered + i * psz, (int)psz, MPI_BYTE, owner_rank, 91, c->comm,
                     MPI_STATUS_IGNORE);
        else if (c->rank == owner_rank)
            MPI_Send(packed + i * psz, (int)psz, MPI_BYTE, 0, 91, c->comm);
    }
}

enum dsort_status dsort_check_local(const struct dsort_comm *c, char *const *paths, size_t n,
                                    const struct dsort_format *fmt, const struct dsort_order *ord,
                                    size_t block, struct dsort_vsum *total, uint64_t *files,
                                    struct dsort_error *err)
{
    struct dsort_inputs in;
    enum dsort_status st = open_local(c, paths, n, fmt, &in, err);
    if (st)
        return st;
    struct entry *all = NULL;
    size_t nall = 0;
    if ((st = list_files(c, &in, &all, &nall, err)))
        goto out;
    /* The node's ranks take its files in turn; each summarises the ones it takes. */
    int next = 0;
    for (size_t i = 0; i < nall; i++)
        if (all[i].node == c->node_index)
            all[i].slot = next++ % c->node_size;
    const size_t psz = dsort_vsum_packed_size(total->key_len);
    unsigned char *packed = calloc(nall + 1, psz), *gathered = NULL;
    struct dsort_vsum s;
    int have_s = !dsort_vsum_init_ex(&s, fmt, total->whole, NULL);
    if (!packed || !have_s)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    else
        st = check_mine(c, &in, all, nall, fmt, ord, block, total->whole, &s, packed, psz, err);
    if (c->rank == 0 && !st && !(gathered = malloc((nall + 1) * psz)))
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out2;
    collect_summaries(c, all, nall, packed, gathered, psz);
    if (c->rank == 0)
        for (size_t i = 0; i < nall; i++) {
            dsort_vsum_unpack(&s, gathered + i * psz);
            dsort_vsum_append(total, &s, ord);
        }
    dsort_vsum_pack(total, packed);
    MPI_Bcast(packed, (int)psz, MPI_BYTE, 0, c->comm);
    dsort_vsum_unpack(total, packed);
    if (files)
        *files = nall;
out2:
    if (have_s)
        dsort_vsum_destroy(&s);
    free(packed);
    free(gathered);
out:
    free(all);
    dsort_inputs_destroy(&in);
    return st;
}
