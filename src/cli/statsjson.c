#include "statsjson.h"

#include <inttypes.h>

double dsort_statsjson_start(const struct dsort_job_stats *all, int n)
{
    double start = n > 0 ? all[0].t0_unix : 0;
    for (int r = 1; r < n; r++)
        start = all[r].t0_unix < start ? all[r].t0_unix : start;
    return start;
}

void dsort_statsjson_times(FILE *f, const struct dsort_job_stats *s, double start)
{
    double off = s->t0_unix - start; /* this rank's start on the job's time line */
    fprintf(f, ", \"started\": %.6f, \"ended\": %.6f, \"spans\": [", off, off + s->t_end);
    for (int i = 0; i < s->nspans; i++) {
        const struct dsort_job_span *sp = &s->spans[i];
        if (sp->phase >= 0 && sp->phase < PH_COUNT)
            fprintf(f, "%s[\"%s\", ", i ? ", " : "", dsort_phase_names[sp->phase]);
        else
            fprintf(f, "%s[null, ", i ? ", " : "");
        fprintf(f, "%.6f, %.6f]", off + sp->start, off + sp->end);
    }
    fprintf(f, "], \"spans_merged\": %d", s->spans_merged);
}

void dsort_statsjson_disk_totals(FILE *f, const struct dsort_job_stats *s, int i)
{
    const struct dsort_job_disk_phase *d = &s->disk_total[i];
    fprintf(f,
            ", \"job_read_bytes\": %" PRIu64 ", \"job_write_bytes\": %" PRIu64
            ", \"job_busy_seconds\": %.3f, \"job_seconds\": %.6f",
            d->read, d->written, (double)d->busy_ms / 1000.0, s->disk_seconds);
}
