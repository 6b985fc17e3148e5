#include "job_end.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "cleanup.h"
#include "job.h"
#include "output.h"
#include "phase.h"

enum dsort_status dsort_job_unique_boundary(const struct dsort_comm *c,
                                            const struct dsort_format *fmt,
                                            const unsigned char *first, const unsigned char *last,
                                            uint64_t n, int *drop_first, struct dsort_error *err)
{
    const size_t kl = fmt->key_len, slot = 1 + kl;
    unsigned char *mine = calloc(1, slot);
    void *all = NULL;
    enum dsort_status st = DSORT_OK;
    *drop_first = 0;
    if (!mine)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    else if (n) {
        mine[0] = 1;
        memcpy(mine + 1, dsort_format_key(fmt, last), kl);
    }
    enum dsort_status gst = dsort_agree_allgather(c, c->comm, mine, slot, &all, err);
    if ((st = dsort_comm_agree(c, st ? st : gst, err)))
        goto out;
    for (int r = c->rank - 1; r >= 0 && n; r--) {
        const unsigned char *s = (const unsigned char *)all + (size_t)r * slot;
        if (!s[0])
            continue;
        *drop_first = !memcmp(s + 1, dsort_format_key(fmt, first), kl);
        break;
    }
out:
    free(mine);
    free(all);
    return st;
}

/* Collective: the sums of every rank's a and b (on every rank). Agrees. An Allgather rather
 * than a reduction: the 128-bit carry needs the halves together. */
static enum dsort_status sum_all(const struct dsort_comm *c, const struct dsort_sum128 *a,
                                 const struct dsort_sum128 *b, struct dsort_sum128 *sa,
                                 struct dsort_sum128 *sb, struct dsort_error *err)
{
    uint64_t mine[4] = {a->lo, a->hi, b->lo, b->hi};
    void *all = NULL;
    enum dsort_status st = dsort_agree_allgather(c, c->comm, mine, sizeof mine, &all, err);
    if ((st = dsort_comm_agree(c, st, err)))
        return st;
    *sa = *sb = (struct dsort_sum128){0, 0};
    const uint64_t *v = all;
    for (int r = 0; r < c->size; r++) {
        struct dsort_sum128 x = {v[4 * r], v[4 * r + 1]}, y = {v[4 * r + 2], v[4 * r + 3]};
        dsort_sum128_merge(sa, &x);
        dsort_sum128_merge(sb, &y);
    }
    free(all);
    return DSORT_OK;
}

/* Collective: combine both sides' counts and sums over all ranks; if they differ (with
 * unique_ok, only more written than read counts), DSORT_EINTERNAL with both figures after
 * `what`. Agrees (rank 0 speaks for the verdict every rank computed). */
static enum dsort_status compare_sums(const struct dsort_comm *c, const char *what,
                                      const char *sum_name, int unique_ok,
                                      const struct dsort_sum128 *in_sum, uint64_t n_in,
                                      const struct dsort_sum128 *out_sum, uint64_t n_out,
                                      struct dsort_error *err)
{
    struct dsort_sum128 si, so;
    enum dsort_status st = sum_all(c, in_sum, out_sum, &si, &so, err);
    if (st)
        return st;
    uint64_t nin = dsort_comm_sum(c, n_in), nout = dsort_comm_sum(c, n_out);
    if (unique_ok ? nout > nin : (si.lo != so.lo || si.hi != so.hi || nin != nout)) {
        char h1[33], h2[33];
        dsort_sum128_hex(&si, h1);
        dsort_sum128_hex(&so, h2);
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "%s: read %" PRIu64 " records (%s %s), wrote %" PRIu64
                       " (%s); nothing committed",
                       what, nin, sum_name, h1, nout, h2);
    }
    return dsort_comm_agree(c, c->rank == 0 ? st : DSORT_OK, err);
}

enum dsort_status dsort_job_conserve(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_sum128 *in_sum, uint64_t n_in,
                                     const struct dsort_sum128 *out_sum, uint64_t n_out,
                                     struct dsort_error *err)
{
    return compare_sums(c, "conservation check failed", "CRC32C sum", o->ord.unique, in_sum, n_in,
                        out_sum, n_out, err);
}

enum dsort_status dsort_job_verify(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_sum128 *in_sum, uint64_t n_in,
                                   const struct dsort_sum128 *out_sum, uint64_t n_out,
                                   struct dsort_error *err)
{
    /* -u drops records by design: then there is nothing to compare. */
    if (o->ord.unique)
        return compare_sums(c, "verification failed", "checksum", 1, in_sum, 0, out_sum, 0, err);
    return compare_sums(c, "verification failed", "checksum", 0, in_sum, n_in, out_sum, n_out, err);
}

enum dsort_status dsort_job_blame_input(const struct dsort_inputs *in, enum dsort_status st,
                                        struct dsort_error *err)
{
    struct dsort_error changed = {0};
    /* (DSORT_EIO, an input that cannot be examined, proves nothing: the first finding stays) */
    if (st != DSORT_EINTERNAL || dsort_inputs_check_unchanged(in, &changed) != DSORT_EFORMAT)
        return st;
    *err = changed;
    return changed.status;
}

int dsort_job_finish(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_inputs *in, struct dsort_output *out,
                     const struct dsort_job_sums *s, struct dsort_job_stats *stats,
                     struct dsort_error *err)
{
    dsort_job_note_rss(stats);
    enum dsort_status st = dsort_comm_agree(c, dsort_inputs_check_unchanged(in, err), err);
    if (!st)
        st = dsort_job_conserve(c, o, &s->con_in, s->n_in, &s->con_out, s->n_out, err);
    if (!st && o->verify)
        st = dsort_job_verify(c, o, &s->sum_in, s->n_in, &s->sum_out, s->n_out, err);
    if (st) {
        dsort_output_abandon(out);
        return 2;
    }
    struct dsort_part_info info = {s->n_out, s->bytes_out, s->sum_out, ""};
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_COMMIT);
    st = dsort_output_commit(c, out, &info, err);
    if (!st) /* the output is published: a signal now must not claim otherwise */
        dsort_cleanup_set_committed();
    dsort_job_phase_end(stats, PH_COMMIT, &pc);
    return st ? 2 : 0;
}
