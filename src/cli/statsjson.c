#include "statsjson.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_min.h"
#include "jsonstr.h"

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

/* The rates of rank 0's environment into r; a bad variable ignored and said in warn. */
static void env_rates(struct dsort_roofline_rates *r, char *warn, size_t wn)
{
    struct dsort_error err = {0};
    memset(r, 0, sizeof *r);
    warn[0] = '\0';
    if (dsort_roofline_rates_parse(r, getenv("DSORT_ROOFLINE_RATES"), &err)) {
        snprintf(warn, wn, "DSORT_ROOFLINE_RATES ignored: %s", err.msg);
        r->n = 0;
    }
    if (dsort_roofline_shared_parse(r, getenv("DSORT_ROOFLINE_SHARED"), &err)) {
        snprintf(warn, wn, "DSORT_ROOFLINE_SHARED ignored: %s", err.msg);
        r->nshared = 0;
    }
}

/* The plan's nodes' host names and cores into in (pointers into root, which must outlive in). */
static int plan_cores(const struct dsort_json *root, struct dsort_roofline_input *in,
                      const char ***hosts, double **cores)
{
    const struct dsort_json *nodes = dsort_json_get_type(root, "nodes", DSORT_JSON_ARRAY);
    size_t n = nodes ? nodes->count : 0;
    *hosts = calloc(n + 1, sizeof **hosts);
    *cores = calloc(n + 1, sizeof **cores);
    if (!*hosts || !*cores)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const char *h = dsort_json_string(&nodes->items[i], "hostname");
        if (!h)
            continue;
        (*hosts)[in->ncore_hosts] = h;
        (*cores)[in->ncore_hosts++] = dsort_json_number(&nodes->items[i], "cores", 1);
    }
    in->core_host = *hosts;
    in->cores = *cores;
    return 0;
}

/* Rank s's figures as roofline.h wants them; its disks into d (DSORT_JOB_DISKS). */
static void roof_rank(const struct dsort_job_stats *s, struct dsort_roofline_rank *k,
                      struct dsort_roofline_disk *d)
{
    memset(k, 0, sizeof *k);
    k->host = s->host;
    k->disk = d;
    k->bytes_sent = (double)s->bytes_sent;
    k->bytes_received = (double)s->bytes_received;
    k->bytes_read = (double)s->bytes_read;
    for (int p = 0; p < PH_COUNT; p++) {
        int g = dsort_roofline_group_of(dsort_phase_names[p]);
        if (g >= 0)
            k->seconds[g] += s->t[p];
    }
    for (int i = 0; i < DSORT_JOB_DISKS && s->disk[i][0]; i++, k->ndisks++) {
        struct dsort_roofline_disk *e = &d[i];
        memset(e, 0, sizeof *e);
        e->name = s->disk[i];
        e->job_bytes = (double)s->disk_total[i].read + (double)s->disk_total[i].written;
        e->busy_seconds = (double)s->disk_total[i].busy_ms / 1000.0;
        for (int p = 0; p < PH_COUNT; p++) {
            int g = dsort_roofline_group_of(dsort_phase_names[p]);
            if (g >= 0) {
                e->read[g] += (double)s->disk_phase[p][i].read;
                e->written[g] += (double)s->disk_phase[p][i].written;
            }
        }
    }
}

enum dsort_status dsort_statsjson_roofline(const struct dsort_job_stats *all, int n, double seconds,
                                           const char *plan, size_t plan_len,
                                           struct dsort_roofline *rl,
                                           struct dsort_roofline_rates *r, char *warn, size_t wn)
{
    struct dsort_error err = {0};
    struct dsort_json root = {0};
    struct dsort_json_error jerr;
    const char **hosts = NULL;
    double *cores = NULL;
    struct dsort_roofline_input in = {.nranks = (size_t)n, .seconds = seconds};
    struct dsort_roofline_rank *ranks = calloc((size_t)n + 1, sizeof *ranks);
    struct dsort_roofline_disk *disks = calloc((size_t)n * DSORT_JOB_DISKS + 1, sizeof *disks);
    enum dsort_status st = DSORT_ENOMEM;
    env_rates(r, warn, wn);
    memset(rl, 0, sizeof *rl);
    if (plan && dsort_json_parse(plan, plan_len, &root, &jerr))
        memset(&root, 0, sizeof root); /* no cores: each node's ranks count */
    if (ranks && disks && !plan_cores(&root, &in, &hosts, &cores)) {
        for (int i = 0; i < n; i++)
            roof_rank(&all[i], &ranks[i], &disks[(size_t)i * DSORT_JOB_DISKS]);
        in.rank = ranks;
        st = dsort_roofline_compute(&in, r, rl, &err);
    }
    dsort_json_free(&root);
    free(hosts);
    free(cores);
    free(ranks);
    free(disks);
    return st;
}

void dsort_statsjson_roofline_write(FILE *f, const struct dsort_roofline *rl,
                                    const struct dsort_roofline_rates *r)
{
    fprintf(f, "{\n   \"rates\": {");
    for (size_t i = 0; i < r->n; i++) {
        fprintf(f, "%s", i ? ", " : "");
        dsort_jsonstr_write(f, r->key[i]);
        fprintf(f, ": %.9g", r->rate[i] / 1e6);
    }
    fprintf(f, "}, \"shared_disks\": [");
    for (size_t i = 0; i < r->nshared; i++) {
        fprintf(f, "%s", i ? ", " : "");
        dsort_jsonstr_write(f, r->shared[i]);
    }
    fprintf(f, "],\n");
    dsort_roofline_json(f, rl, "  ");
    fprintf(f, "\n  }");
}
