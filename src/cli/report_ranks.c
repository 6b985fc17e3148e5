/* report_ranks.c - figures per rank, drawn one row per rank or, at many ranks, the largest
 * ranks named and percentile rows (report_pick): peak memory against the budget, bytes sent
 * and received, records out (balance); then throughput and the out-of-core table. See
 * report.h. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define num dsort_json_number
#define str dsort_json_string
#define LW 230
#define PW (REPORT_SVG_W - LW - 260)
#define ROW 18
#define GAP 6
#define TOP_NAMED 4 /* at many ranks: the largest this many named */

typedef void draw_row(FILE *f, const struct report_model *m, const struct report_rank *r, int y,
                      double max);

/* Rows of ranks picked by key[] (report_pick), each drawn by row; max: the scale's end. */
static void chart(FILE *f, const struct report_model *m, const double *key, draw_row *row,
                  double max, const char *label)
{
    size_t *rows = malloc((m->nranks + 8) * sizeof *rows);
    int *lab = malloc((m->nranks + 8) * sizeof *lab);
    size_t n = rows && lab ? report_pick(key, m->nranks, TOP_NAMED, rows, lab) : 0;
    int h = (int)n * (ROW + GAP) + 4;
    report_svg_open(f, h, label);
    for (size_t i = 0; i < n; i++) {
        int y = 2 + (int)i * (ROW + GAP);
        report_row_label(f, &m->ranks[rows[i]], lab[i], LW - 8, y + ROW / 2 + 4);
        row(f, m, &m->ranks[rows[i]], y, max);
    }
    fprintf(f, "</svg>\n");
    free(rows);
    free(lab);
}

static void bar(FILE *f, double x, int y, double w, int h, const char *fill, const char *extra)
{
    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"%s/>", x, y,
            w > 0 ? w : 0, h, fill, extra);
}

static void many_note(FILE *f, const struct report_model *m, const char *what)
{
    if (m->nranks <= REPORT_ALL_RANKS)
        return;
    fputs(" Of the ", f);
    report_num(f, "span", "%.0f", (double)m->nranks, "count(per_rank)");
    fprintf(f, " ranks: those with the most %s, then the percentiles.", what);
}

/* Peak RSS as a share of the budget: the pale bar is the budget. */
static void memory_row(FILE *f, const struct report_model *m, const struct report_rank *r, int y,
                       double max)
{
    (void)m, (void)max;
    double rss = num(r->obj, "rss_peak_kb", 0) * 1024, b = num(r->obj, "memory_budget", 0);
    double share = b > 0 ? rss / b : 0;
    bar(f, LW, y + 2, PW, ROW - 4, "#e8e8e8", "");
    bar(f, LW, y + 2, (share > 1.1 ? 1.1 : share) * PW, ROW - 4, share > 1 ? "#c00" : "#59a14f",
        "");
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"budget\"/>", LW + PW, y,
            LW + PW, y + ROW);
    /* the text after the longest bar (past the budget, cut at 110%) */
    fprintf(f, "<text x=\"%d\" y=\"%d\">", LW + PW * 11 / 10 + 8, y + ROW / 2 + 4);
    report_bytes(f, "tspan", rss, "per_rank[%zu].rss_peak_kb*1024", r->index);
    fputs(" of ", f);
    report_bytes(f, "tspan", b, "per_rank[%zu].memory_budget", r->index);
    fputs(" (", f);
    report_num(f, "tspan", "%.1f%%", share * 100,
               "per_rank[%zu].rss_peak_kb*1024/per_rank[%zu].memory_budget*100", r->index,
               r->index);
    fputs(")</text>\n", f);
}

void report_memory(FILE *f, const struct report_model *m)
{
    double *key = malloc(m->nranks * sizeof *key);
    if (!key)
        return;
    for (size_t i = 0; i < m->nranks; i++) {
        double b = num(m->ranks[i].obj, "memory_budget", 0);
        key[i] = b > 0 ? num(m->ranks[i].obj, "rss_peak_kb", 0) * 1024 / b : 0;
    }
    fprintf(f, "<h2>Memory: peak resident set against the budget</h2>\n<p>Each rank's peak "
               "resident set (VmHWM; a mapped input's pages count, and are the node's page "
               "cache, shared) as a share of its memory budget (the pale bar, ending at the red "
               "line).");
    many_note(f, m, "memory for their budget");
    fprintf(f, "</p>\n");
    chart(f, m, key, memory_row, 0, "peak memory per rank");
    free(key);
}

static void network_row(FILE *f, const struct report_model *m, const struct report_rank *r, int y,
                        double max)
{
    (void)m;
    double s = num(r->obj, "bytes_sent", 0), v = num(r->obj, "bytes_received", 0);
    bar(f, LW, y + 1, max > 0 ? s / max * PW : 0, ROW / 2 - 1, "#4e79a7", "");
    bar(f, LW, y + ROW / 2, max > 0 ? v / max * PW : 0, ROW / 2 - 1, "#f28e2b", "");
    fprintf(f, "<text x=\"%d\" y=\"%d\">sent ", LW + PW + 8, y + ROW / 2 + 4);
    report_bytes(f, "tspan", s, "per_rank[%zu].bytes_sent", r->index);
    fputs(", received ", f);
    report_bytes(f, "tspan", v, "per_rank[%zu].bytes_received", r->index);
    fputs("</text>\n", f);
}

void report_network(FILE *f, const struct report_model *m)
{
    double *key = malloc(m->nranks * sizeof *key), max = 0;
    if (!key)
        return;
    for (size_t i = 0; i < m->nranks; i++) {
        double s = num(m->ranks[i].obj, "bytes_sent", 0),
               v = num(m->ranks[i].obj, "bytes_received", 0);
        key[i] = s + v;
        max = s > max ? s : v > max ? v : max;
    }
    fprintf(f, "<h2>Network: bytes sent and received</h2>\n<p>What each rank sent to others "
               "(<span style=\"color:#4e79a7\">upper bar</span>) and received from them "
               "(<span style=\"color:#f28e2b\">lower bar</span>) in the exchange.");
    many_note(f, m, "traffic");
    fprintf(f, "</p>\n");
    chart(f, m, key, network_row, max, "bytes sent and received per rank");
    free(key);
}

static void balance_row(FILE *f, const struct report_model *m, const struct report_rank *r, int y,
                        double max)
{
    (void)m;
    double v = num(r->obj, "records_out", 0);
    bar(f, LW, y + 2, max > 0 ? v / max * PW : 0, ROW - 4, "#4e79a7", "");
    fprintf(f, "<text x=\"%d\" y=\"%d\">", LW + PW + 8, y + ROW / 2 + 4);
    report_num(f, "tspan", "%.0f", v, "per_rank[%zu].records_out", r->index);
    fputs(" records</text>\n", f);
}

void report_balance(FILE *f, const struct report_model *m)
{
    double *key = malloc(m->nranks * sizeof *key), max = 0;
    if (!key)
        return;
    for (size_t i = 0; i < m->nranks; i++) {
        key[i] = num(m->ranks[i].obj, "records_out", 0);
        max = key[i] > max ? key[i] : max;
    }
    fprintf(f, "<h2>Balance: records out per rank</h2>\n<p>Balance (most records on a rank / "
               "the average): <b>");
    report_num(f, "span", "%.4f", m->balance, "balance");
    fprintf(f, "</b>.");
    many_note(f, m, "records");
    fprintf(f, "</p>\n");
    chart(f, m, key, balance_row, max, "records out per rank");
    free(key);
}

void report_throughput(FILE *f, const struct report_model *m)
{
    double mbs = m->seconds > 0 ? m->bytes / m->seconds / 1e6 : 0, rd = 0, wr = 0, cpu = 0;
    int io = 0, cpus = m->nranks > 0;
    for (size_t i = 0; i < m->nranks; i++) { /* the per-phase read and write calls of each rank */
        const struct dsort_json *r = dsort_json_get(m->ranks[i].obj, "io_read_bytes"),
                                *w = dsort_json_get(m->ranks[i].obj, "io_write_bytes");
        for (size_t k = 0; r && r->type == DSORT_JSON_OBJECT && k < r->count; k++, io = 1)
            rd += r->items[k].number;
        for (size_t k = 0; w && w->type == DSORT_JSON_OBJECT && k < w->count; k++, io = 1)
            wr += w->items[k].number;
        /* the rank's process's CPU (--stats files of older versions have none) */
        const struct dsort_json *u =
            dsort_json_get_type(m->ranks[i].obj, "cpu_user_seconds_all", DSORT_JSON_NUMBER);
        const struct dsort_json *y =
            dsort_json_get_type(m->ranks[i].obj, "cpu_sys_seconds_all", DSORT_JSON_NUMBER);
        cpus &= u && y;
        cpu += u && y ? u->number + y->number : 0;
    }
    fprintf(f,
            "<h2>Throughput</h2>\n<table>\n<tr><th>records</th><th>bytes</th><th>seconds</th>"
            "<th>MB/s</th><th>MB/s per rank</th><th>records/s</th>%s%s</tr>\n<tr>",
            io ? "<th>read calls / data</th><th>write calls / data</th>" : "",
            cpus ? "<th>CPU, all ranks</th><th>cores busy</th>" : "");
    fputs("<td class=\"n\">", f);
    report_num(f, "span", "%.0f", m->records, "records");
    fputs("</td><td class=\"n\">", f);
    report_bytes(f, "span", m->bytes, "bytes");
    fputs("</td><td class=\"n\">", f);
    report_num(f, "span", "%.3f", m->seconds, "seconds");
    fputs("</td><td class=\"n\"><b>", f);
    report_num(f, "span", "%.1f", mbs, "bytes/seconds/1e6");
    fputs("</b></td><td class=\"n\">", f);
    report_num(f, "span", "%.1f", mbs / (double)m->nranks, "bytes/seconds/1e6/count(per_rank)");
    fputs("</td><td class=\"n\">", f);
    report_num(f, "span", "%.0f", m->seconds > 0 ? m->records / m->seconds : 0, "records/seconds");
    fputs("</td>", f);
    if (io) {
        fputs("<td class=\"n\">", f);
        report_num(f, "span", "%.2f x", m->bytes > 0 ? rd / m->bytes : 0,
                   "sum(per_rank[*].io_read_bytes.*)/bytes");
        fputs("</td><td class=\"n\">", f);
        report_num(f, "span", "%.2f x", m->bytes > 0 ? wr / m->bytes : 0,
                   "sum(per_rank[*].io_write_bytes.*)/bytes");
        fputs("</td>", f);
    }
    if (cpus) {
#define CPU_ALL "(sum(per_rank[*].cpu_user_seconds_all)+sum(per_rank[*].cpu_sys_seconds_all))"
        fputs("<td class=\"n\">", f);
        report_num(f, "span", "%.2f s", cpu, CPU_ALL);
        fputs("</td><td class=\"n\">", f);
        report_num(f, "span", "%.2f", m->seconds > 0 ? cpu / m->seconds : 0, CPU_ALL "/seconds");
        fputs("</td>", f);
#undef CPU_ALL
    }
    fprintf(f,
            "</tr>\n</table>\n<p class=\"note\">MB/s: bytes of data per wall-clock second, "
            "a million bytes to the MB. Read and write calls: what all ranks asked of the "
            "kernel (/proc/self/io: the page cache or the disk, not told apart; the disks "
            "are above) per byte of data.%s</p>\n",
            cpus ? " CPU: user and system seconds of all ranks' processes (getrusage); cores "
                   "busy: those over the job's seconds, the cores the job kept busy on average"
                 : "");
}

static void cell(FILE *f, const struct report_rank *r, const char *key, int bytes)
{
    const struct dsort_json *v = dsort_json_get_type(r->obj, key, DSORT_JSON_NUMBER);
    fputs("<td class=\"n\">", f);
    if (v && bytes)
        report_bytes(f, "span", v->number, "per_rank[%zu].%s", r->index, key);
    else if (v)
        report_num(f, "span", "%.0f", v->number, "per_rank[%zu].%s", r->index, key);
    else
        fputs("-", f);
    fputs("</td>", f);
}

void report_out_of_core(FILE *f, const struct report_model *m)
{
    const struct dsort_json *ooc = dsort_json_get_type(m->root, "out_of_core", DSORT_JSON_BOOL);
    double *key = malloc(m->nranks * sizeof *key);
    size_t *rows = malloc((m->nranks + 8) * sizeof *rows);
    int *lab = malloc((m->nranks + 8) * sizeof *lab), extra = 0;
    size_t n = 0;
    for (size_t i = 0; key && i < m->nranks; i++) {
        const char *why = str(m->ranks[i].obj, "extra_pass_reason");
        extra |= why && *why;
        key[i] = num(m->ranks[i].obj, "spill_bytes", 0);
    }
    if (key && rows && lab) /* in memory, nothing spilled: a few rows say as much */
        n = report_pick(key, m->nranks, ooc && !ooc->boolean ? 1 : TOP_NAMED, rows, lab);
    fprintf(f, "<h2>Budget and out of core</h2>\n<p>Out of core: <b>%s</b>. %s",
            !ooc           ? "not known"
            : ooc->boolean ? "yes"
                           : "no (in memory)",
            extra ? "Some ranks took an extra merge pass (last column)."
                  : "No rank took an extra merge pass.");
    many_note(f, m, "spilled bytes");
    fprintf(f,
            "</p>\n<table>\n<tr><th>rank</th><th>host</th><th>memory budget</th><th>reason</th>"
            "<th>in-memory sort needs</th><th>runs</th><th>merge passes</th><th>fan-in</th>"
            "<th>spilled</th>%s</tr>\n",
            extra ? "<th>extra pass reason</th>" : "");
    for (size_t k = 0; k < n; k++) {
        const struct report_rank *r = &m->ranks[rows[k]];
        fputs("<tr><td>", f);
        if (lab[k] >= 0)
            fprintf(f, "<b data-k=\"\">p%d</b> ", lab[k]);
        report_rank_label(f, "span", r);
        fprintf(f, "</td><td data-j=\"per_rank[%zu].host\">", r->index);
        report_put(f, "", r->host, "</td>");
        cell(f, r, "memory_budget", 1);
        fprintf(f, "<td class=\"why\" data-j=\"per_rank[%zu].memory_budget_reason\">", r->index);
        report_put(f, "", str(r->obj, "memory_budget_reason"), "</td>");
        cell(f, r, "memory_needed", 1);
        cell(f, r, "runs", 0);
        cell(f, r, "merge_passes", 0);
        cell(f, r, "fan_in", 0);
        cell(f, r, "spill_bytes", 1);
        if (extra) {
            fprintf(f, "<td data-j=\"per_rank[%zu].extra_pass_reason\">", r->index);
            report_put(f, "", str(r->obj, "extra_pass_reason"), "</td>");
        }
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
    free(key);
    free(rows);
    free(lab);
}
