/* Typed keys in the fixed-record pipelines (job_typed.h). */
#include "job_typed.h"

#include "job.h"
#include "output.h"
#include "job_topo.h"

void dsort_job_typed_enter(struct dsort_job_options *o)
{
    const struct dsort_typedkey *tk = o->fmt.typed;
    if (!tk || o->lines)
        return;
    o->typed = tk;
    o->fmt.rec_size = tk->wide_prefix + tk->rec_size;
    o->fmt.key_off = tk->wide_key_off;
    o->fmt.key_len = tk->norm_len;
    o->fmt.typed = NULL; /* the widened records' key is plain bytes */
    o->no_map = 1;
}

size_t dsort_job_out_rec(const struct dsort_job_options *o)
{
    return o->typed ? o->typed->rec_size : o->fmt.rec_size;
}

enum dsort_status dsort_job_read(const struct dsort_job_options *o, const struct dsort_inputs *in,
                                 uint64_t first, uint64_t n, unsigned char *buf,
                                 struct dsort_sum128 *sum, struct dsort_sum128 *con,
                                 struct dsort_error *err)
{
    /* With typed keys the user's records go to the buffer's tail, are summed there, and are
     * widened in place. */
    const size_t rs = dsort_job_out_rec(o);
    unsigned char *at = o->typed ? buf + n * o->typed->wide_prefix : buf;
    enum dsort_status st = dsort_job_topo_read(o->topo, in, first, n, at, err);
    if (st)
        return st;
    dsort_job_sum_records(o->verify, at, n, rs, sum, con);
    if (o->typed)
        dsort_typedkey_widen_inplace(o->typed, buf, (size_t)n);
    return DSORT_OK;
}

enum dsort_status dsort_job_read_one(const struct dsort_job_options *o,
                                     const struct dsort_inputs *in, uint64_t i, unsigned char *rec,
                                     struct dsort_error *err)
{
    if (!o->typed)
        return dsort_inputs_read(in, i, 1, rec, err);
    enum dsort_status st = dsort_inputs_read(in, i, 1, rec + o->typed->wide_prefix, err);
    if (!st)
        dsort_typedkey_widen_inplace(o->typed, rec, 1);
    return st;
}

enum dsort_status dsort_job_write(const struct dsort_job_options *o, struct dsort_output *out,
                                  unsigned char *buf, uint64_t n, struct dsort_sum128 *sum,
                                  struct dsort_sum128 *con, struct dsort_error *err)
{
    const size_t rs = dsort_job_out_rec(o);
    if (o->typed)
        dsort_typedkey_narrow_inplace(o->typed, buf, (size_t)n);
    dsort_job_sum_records(o->output_dir || o->verify, buf, n, rs, sum, con);
    return dsort_output_write(out, buf, (size_t)(n * rs), 0, err);
}
