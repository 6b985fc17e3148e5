/* placeholder: replaced by the out-of-core pipeline */
#include "job.h"
int dsort_job_sort_external(const struct dsort_comm *c, const struct dsort_job_options *o,
                            const struct dsort_inputs *in, struct dsort_job_stats *stats)
{
    (void)o;
    (void)in;
    (void)stats;
    struct dsort_error err = {0};
    DSORT_ERR(&err, DSORT_ENOMEM, 0,
              "the data does not fit in memory and spilling is not built yet");
    dsort_comm_agree(c, c->rank == 0 ? DSORT_ENOMEM : DSORT_OK, &err);
    return 2;
}
