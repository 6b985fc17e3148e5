#include "job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "budget.h"
#include "checksum.h"
#include "job_typed.h"
#include "keysort.h"
#include "output.h"
#include "recfmt.h"
#include "splitters.h"

void dsort_job_put_bytes(unsigned char *out, const unsigned char *in, size_t len, int flip)
{
    if (flip)
        for (size_t b = 0; b < len; b++)
            out[b] = (unsigned char)~in[b];
    else
        memcpy(out, in, len);
}

void dsort_job_put_be64(unsigned char *out, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        out[b] = (unsigned char)(v >> (56 - 8 * b));
}

uint64_t dsort_job_get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
        v = v << 8 | p[b];
    return v;
}

void dsort_job_sample_positions(uint64_t g0, uint64_t n, uint64_t ns, uint64_t *at)
{
    uint64_t state = g0;
    for (uint64_t k = 0; k < ns; k++) {
        /* the point (k + u) n / ns, u = h / 2^32 in [0, 1): a record's chance is its overlap
         * with stretch k, 1/(n/ns) summed over the stretches (stretches of whole records, 2
         * and 3 long, gave the records of the longer ones less: 1.1x at 7 ranks, periodic) */
        const uint64_t h = dsort_splitmix64(&state);
        const unsigned __int128 num = (((unsigned __int128)k << 32) + (h & 0xffffffffu)) * n;
        at[k] = (uint64_t)(num / ((unsigned __int128)ns << 32));
    }
}

enum dsort_status dsort_job_sample_keys(const struct dsort_job_options *o,
                                        const struct dsort_inputs *in, uint64_t first, uint64_t g0,
                                        const uint64_t *at, uint64_t ns,
                                        const struct dsort_recfmt_ctx *fx, unsigned char *keys,
                                        struct dsort_error *err)
{
    unsigned char *rec = malloc(fx->rec_in ? fx->rec_in : 1);
    if (!rec)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (uint64_t k = 0; k < ns; k++)
        dsort_inputs_advise(in, first + at[k], 1);
    enum dsort_status st = DSORT_OK;
    for (uint64_t k = 0; !st && k < ns; k++)
        if (!(st = dsort_job_read_one(o, in, first + at[k], rec, err)))
            dsort_recfmt_fixed.sample_key(fx, rec, fx->rec_in, g0 + at[k], keys + k * fx->ks);
    free(rec);
    return st;
}

uint64_t dsort_job_mem_needed(const struct dsort_format *fmt, uint64_t n, int p)
{
    /* A and B hold the share (the copying path: W, with a sixteenth more for its sampled
     * splitters' imbalance); 16-byte sort entries; their scratch lives in B unless records
     * are shorter than entries; the exact splitters' state (O(p^2) composite keys, at most
     * key + whole record + 16 bytes each); 16 MiB for everything else. */
    const uint64_t rs = fmt->rec_size, ent = sizeof(struct dsort_sortent);
    return n * (2 * rs + ent + (rs < ent ? ent : 0)) + n * rs / 16 +
           dsort_splitters_memory(p, fmt->rec_size + fmt->key_len + 16) + ((uint64_t)16 << 20);
}

enum dsort_status dsort_job_share(const struct dsort_comm *c, const struct dsort_job_options *o,
                                  const struct dsort_inputs *in, struct dsort_share *sh,
                                  struct dsort_error *err)
{
    if (o->stdin_rank0) { /* rank 0 alone has the input (standard input's copy) */
        sh->first = sh->g0 = 0;
        sh->n = c->rank == 0 ? in->total_records : 0;
        return DSORT_OK;
    }
    if (!o->local_inputs) {
        dsort_io_split(in->total_records, c->rank, c->size, &sh->first, &sh->n);
        sh->g0 = sh->first;
        return DSORT_OK;
    }
    dsort_io_split(in->total_records, c->node_rank, c->node_size, &sh->first, &sh->n);
    /* The records of the nodes before ours come first: (node index, records) from every
     * node's first rank. */
    uint64_t mine[2] = {(uint64_t)c->node_index, c->node_rank == 0 ? in->total_records : 0};
    void *got = NULL;
    sh->g0 = sh->first;
    enum dsort_status st =
        dsort_comm_agree(c, dsort_agree_allgather(c, c->comm, mine, sizeof mine, &got, err), err);
    if (st)
        return st;
    const uint64_t *all = got;
    for (int r = 0; r < c->size; r++)
        if (all[2 * r] < (uint64_t)c->node_index)
            sh->g0 += all[2 * r + 1];
    free(got);
    return DSORT_OK;
}

enum dsort_status dsort_job_output_open(const struct dsort_comm *c,
                                        const struct dsort_job_options *o, uint64_t share,
                                        struct dsort_output *out, struct dsort_error *err)
{
    enum dsort_status st =
        dsort_output_open(c, out,
                          o->output         ? DSORT_OUTPUT_FILE
                          : o->local_output ? DSORT_OUTPUT_LOCAL_DIR
                                            : DSORT_OUTPUT_DIR,
                          o->output ? o->output : o->output_dir, share, !o->no_direct, err);
    out->narrow = o->typed; /* an output sink narrows widened records (job_typed.h) */
    return st;
}

void dsort_job_name(const struct dsort_comm *c, char *job, size_t len)
{
    if (c->rank == 0)
        dsort_tempdirs_job_name(job, len);
    dsort_agree_bcast(c, job, len, "sharing the job's name (MPI_Bcast)");
}

int dsort_job_env_flag(const char *name)
{
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

enum dsort_status dsort_job_alloc_error(struct dsort_error *err, int errnum, const char *what,
                                        uint64_t bytes)
{
    char lim[200];
    dsort_budget_limits_text(lim, sizeof lim);
    if (!lim[0])
        return DSORT_ERR(err, DSORT_ENOMEM, errnum, "cannot allocate %" PRIu64 " bytes of %s",
                         bytes, what);
    /* The budget was sized to fit the limit when it was resolved (the default leaves room
     * for threads and the MPI library, but a limit just above the start-up use leaves too
     * little for any budget); something else took the room since. */
    return DSORT_ERR(err, DSORT_ENOMEM, 0,
                     "cannot allocate %" PRIu64 " bytes of %s: %s; raise the limit, or give "
                     "a smaller -S",
                     bytes, what, lim);
}

void dsort_job_sum_records(int valsort, const unsigned char *recs, uint64_t n, size_t rec_size,
                           struct dsort_sum128 *sum, struct dsort_sum128 *con)
{
    if (valsort)
        dsort_checksum_records(sum, recs, n, rec_size);
    dsort_checksum_records_c(con, recs, n, rec_size);
}

void dsort_job_run_key(const struct dsort_cmp *c, const unsigned char *rec, uint64_t g0, uint64_t i,
                       unsigned char *out)
{
    dsort_job_put_bytes(out, rec + c->key_off, c->key_len, c->reverse);
    out += c->key_len;
    dsort_job_put_bytes(out, rec + c->tie_off, c->tie_len, c->tie_reverse);
    out += c->tie_len;
    dsort_job_put_be64(out, g0);
    dsort_job_put_be64(out + 8, i);
}
