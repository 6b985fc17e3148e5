/* report_res.c - the resources a run used: the devices as the block layer saw them and what
 * dsort read from each (report_devices), peak memory against the budget, bytes sent and
 * received, records out per rank, throughput and the out-of-core figures. See report.h. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define num dsort_json_number
#define str dsort_json_string
#define MAX_DEV_ROWS 8 /* devices shown; the busiest first when there are more */

/* A number cell traced to path. */
__attribute__((format(printf, 4, 5))) static void tdnum(FILE *f, const char *fmt, double v,
                                                        const char *pathfmt, ...)
{
    char path[256];
    va_list ap;
    va_start(ap, pathfmt);
    vsnprintf(path, sizeof path, pathfmt, ap);
    va_end(ap);
    fputs("<td class=\"n\">", f);
    report_num(f, "span", fmt, v, "%s", path);
    fputs("</td>", f);
}

struct devrow {
    size_t rank, dev;
    double busy;
};

static int by_busy(const void *a, const void *b)
{
    double x = ((const struct devrow *)a)->busy, y = ((const struct devrow *)b)->busy;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* One disk of a node, seen from rank i: its traffic over the whole job (or, in an older file,
 * over the rank's phases). */
static void disk_row(FILE *f, const struct report_model *m, size_t i, size_t k)
{
    const struct dsort_json *d =
        &dsort_json_get_type(m->ranks[i].obj, "devices", DSORT_JSON_ARRAY)->items[k];
    int job = dsort_json_get_type(d, "job_seconds", DSORT_JSON_NUMBER) != NULL;
    char p[64], rd[96], wr[96], busy[96], secs[96];
    snprintf(p, sizeof p, "per_rank[%zu].devices[%zu]", i, k);
    if (job) {
        snprintf(rd, sizeof rd, "%s.job_read_bytes", p);
        snprintf(wr, sizeof wr, "%s.job_write_bytes", p);
        snprintf(busy, sizeof busy, "%s.job_busy_seconds", p);
        snprintf(secs, sizeof secs, "%s.job_seconds", p);
    } else {
        snprintf(rd, sizeof rd, "sum(%s.read_bytes.*)", p);
        snprintf(wr, sizeof wr, "sum(%s.write_bytes.*)", p);
        snprintf(busy, sizeof busy, "sum(%s.busy_seconds.*)", p);
        snprintf(secs, sizeof secs, "sum(per_rank[%zu].phases.*)", i);
    }
    double r = 0, w = 0, b = 0, s = m->ranks[i].ended;
    const struct dsort_json *o;
    if (job) {
        r = num(d, "job_read_bytes", 0), w = num(d, "job_write_bytes", 0);
        b = num(d, "job_busy_seconds", 0), s = num(d, "job_seconds", 0);
    } else {
        for (size_t q = 0; (o = dsort_json_get(d, "read_bytes")) && q < o->count; q++)
            r += o->items[q].number;
        for (size_t q = 0; (o = dsort_json_get(d, "write_bytes")) && q < o->count; q++)
            w += o->items[q].number;
        for (size_t q = 0; (o = dsort_json_get(d, "busy_seconds")) && q < o->count; q++)
            b += o->items[q].number;
    }
    fprintf(f, "<tr><td data-j=\"per_rank[%zu].host\">", i);
    report_put(f, "", m->ranks[i].host, "</td>");
    fprintf(f, "<td data-j=\"%s.disk\">", p);
    report_put(f, "", str(d, "disk"), "</td><td class=\"n\">");
    report_bytes(f, "span", r, "%s", rd);
    fputs("</td><td class=\"n\">", f);
    report_bytes(f, "span", w, "%s", wr);
    fputs("</td>", f);
    tdnum(f, "%.1f", s > 0 ? r / s / 1e6 : 0, "%s/%s/1e6", rd, secs);
    tdnum(f, "%.1f", s > 0 ? w / s / 1e6 : 0, "%s/%s/1e6", wr, secs);
    tdnum(f, "%.0f%%", s > 0 ? b / s * 100 : 0, "%s/%s*100", busy, secs);
    tdnum(f, "%.3f", s, "%s", secs);
    fputs("</tr>\n", f);
}

/* The block layer's view: each node's watched disks, from its first rank. */
static void block_layer(FILE *f, const struct report_model *m)
{
    struct devrow *rows = NULL;
    size_t n = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        size_t j = 0;
        while (j < i && strcmp(m->ranks[j].host, m->ranks[i].host) != 0)
            j++;
        const struct dsort_json *d =
            dsort_json_get_type(m->ranks[i].obj, "devices", DSORT_JSON_ARRAY);
        for (size_t k = 0; j == i && d && k < d->count; k++) {
            struct devrow *nr = realloc(rows, (n + 1) * sizeof *rows);
            if (!nr)
                break;
            rows = nr;
            double s = num(&d->items[k], "job_seconds", m->ranks[i].ended);
            rows[n++] =
                (struct devrow){i, k, s > 0 ? num(&d->items[k], "job_busy_seconds", 0) / s : 0};
        }
    }
    fprintf(f, "<h3>Disks, as the block layer counted them</h3>\n");
    if (n == 0) {
        fprintf(f, "<p class=\"note\">No watched disks in this file (no block devices under the "
                   "inputs, temp dirs or output, or a dsort older than the report).</p>\n");
        free(rows);
        return;
    }
    const struct dsort_json *d0 =
        &dsort_json_get_type(m->ranks[rows[0].rank].obj, "devices", DSORT_JSON_ARRAY)
             ->items[rows[0].dev];
    fprintf(f,
            "<p>The sectors each disk read and wrote (its /sys/block stat, so the node's other "
            "I/O on it counts too, and page-cache hits do not), %s; busy: the time it had I/O "
            "in flight.",
            dsort_json_get(d0, "job_seconds") ? "over the whole job, waiting included"
                                              : "during the first rank's phases (the waiting "
                                                "between them not counted)");
    if (n > MAX_DEV_ROWS) {
        qsort(rows, n, sizeof *rows, by_busy);
        fputs(" The busiest disks only.", f);
    }
    fprintf(f, "</p>\n<table "
               "data-source=\"block\">\n<tr><th>node</th><th>disk</th><th>read</th><th>written</th>"
               "<th>read MB/s</th><th>write MB/s</th><th>busy</th><th>seconds</th></tr>\n");
    for (size_t r = 0; r < n && r < MAX_DEV_ROWS; r++)
        disk_row(f, m, rows[r].rank, rows[r].dev);
    fprintf(f, "</table>\n");
    free(rows);
}

/* What dsort read from each device of the plan: through read() or a mapping, so the page
 * cache's bytes as well as the disk's; planned where the file has no measurement. */
static void plan_reads(FILE *f, const struct report_model *m)
{
    const struct dsort_json *nodes =
        dsort_json_get_type(dsort_json_get(m->root, "plan"), "nodes", DSORT_JSON_ARRAY);
    size_t shown = 0, total = 0;
    for (size_t i = 0; nodes && i < nodes->count; i++) {
        const struct dsort_json *d =
            dsort_json_get_type(&nodes->items[i], "devices", DSORT_JSON_ARRAY);
        total += d ? d->count : 0;
    }
    fprintf(f, "<h3>What dsort read from each device</h3>\n");
    if (total == 0) {
        fprintf(f, "<p class=\"note\">No plan with devices in this file.</p>\n");
        return;
    }
    fprintf(f, "<p>Bytes of the inputs that dsort read from files on each device (read calls "
               "or a mapping: from the page cache or the disk, which the table above tells "
               "apart). <span class=\"planned\">Italic: planned</span>, where the file has no "
               "measurement.</p>\n<table "
               "data-source=\"reads\">\n<tr><th>node</th><th>device</th><th>planned</th>"
               "<th>read</th><th>seconds</th><th>MB/s</th></tr>\n");
    for (size_t i = 0; nodes && i < nodes->count; i++) {
        const struct dsort_json *d =
            dsort_json_get_type(&nodes->items[i], "devices", DSORT_JSON_ARRAY);
        for (size_t k = 0; d && k < d->count && shown < MAX_DEV_ROWS; k++, shown++) {
            const struct dsort_json *dev = &d->items[k];
            int got = dsort_json_get_type(dev, "read_bytes", DSORT_JSON_NUMBER) != NULL;
            char p[64];
            snprintf(p, sizeof p, "plan.nodes[%zu].devices[%zu]", i, k);
            fprintf(f, "<tr><td data-j=\"plan.nodes[%zu].hostname\">", i);
            report_put(f, "", str(&nodes->items[i], "hostname"), "</td>");
            fprintf(f, "<td data-j=\"%s.key\">", p);
            report_put(f, "", str(dev, "key"), "</td><td class=\"n planned\">");
            report_bytes(f, "span", num(dev, "bytes", 0), "%s.bytes", p);
            fputs("</td>", f);
            if (got) {
                double b = num(dev, "read_bytes", 0), s = num(dev, "read_seconds", 0);
                fputs("<td class=\"n\">", f);
                report_bytes(f, "span", b, "%s.read_bytes", p);
                fputs("</td>", f);
                tdnum(f, "%.3f", s, "%s.read_seconds", p);
                tdnum(f, "%.1f", s > 0 ? b / s / 1e6 : 0, "%s.read_bytes/%s.read_seconds/1e6", p,
                      p);
            } else {
                fputs("<td>-</td><td>-</td><td>-</td>", f);
            }
            fputs("</tr>\n", f);
        }
    }
    fprintf(f, "</table>\n");
    if (total > shown)
        fprintf(f, "<p class=\"note\">The plan's first devices only.</p>\n");
}

void report_devices(FILE *f, const struct report_model *m)
{
    fprintf(f, "<h2>Devices</h2>\n");
    block_layer(f, m);
    plan_reads(f, m);
}
