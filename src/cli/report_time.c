/* report_time.c - where the time went: each rank's phases on the job's clock with the waiting
 * between them (report_timeline), and each phase's spread across ranks (report_phase_bands).
 * See report.h. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

#define LW 230 /* label width */
#define PW (REPORT_SVG_W - LW - 80)
#define ROW 18
#define GAP 6
#define TOP 22 /* the axis's labels above the rows */

static void legend(FILE *f, const struct report_model *m, int waiting)
{
    fprintf(f, "<div class=\"legend\">");
    for (size_t k = 0; k < m->nphases; k++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", m->phase[k].colour);
        report_put(f, "", m->phase[k].name, "</span> ");
    }
    if (waiting)
        fprintf(f,
                "<span><i style=\"background:repeating-linear-gradient(90deg,#999 0 2px,"
                "#fff 2px 4px);height:3px;vertical-align:3px\"></i>outside any phase "
                "(setup, waiting)</span><span><i style=\"background:#555\"></i>several phases (the "
                "rank's spans ran out)</span>");
    fprintf(f, "</div>\n");
}

static double xat(const struct report_model *m, double t)
{
    return LW + t / (m->t_max > 0 ? m->t_max : 1) * PW;
}

/* One rank's row: the waiting line from its start to its end, its phases over it. */
static void rank_row(FILE *f, const struct report_model *m, const struct report_rank *r, int y)
{
    double x = LW;
    if (r->timed)
        fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" class=\"wait\"/>",
                xat(m, r->started), y + ROW / 2, xat(m, r->ended), y + ROW / 2);
    for (size_t k = 0; r->timed && k < r->nsp; k++) {
        const struct report_span *s = &r->sp[k];
        double w = xat(m, s->end) - xat(m, s->start);
        fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
                xat(m, s->start), y + 2, w > 0.5 ? w : 0.5, ROW - 4,
                s->phase >= 0 ? m->phase[s->phase].colour : "#555");
    }
    for (size_t k = 0; !r->timed && k < m->nphases; k++) { /* one after another */
        double w = dsort_json_number(r->phases, m->phase[k].name, 0) / m->t_max * PW;
        if (w > 0)
            fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", x,
                    y + 2, w, ROW - 4, m->phase[k].colour);
        x += w;
    }
    fprintf(f, "\n<text x=\"%.1f\" y=\"%d\">", xat(m, r->ended) + 6, y + ROW / 2 + 4);
    if (r->timed)
        report_num(f, "tspan", "%.3f s", r->ended, "per_rank[%zu].ended", r->index);
    else
        report_num(f, "tspan", "%.3f s", r->ended, "sum(per_rank[%zu].phases.*)", r->index);
    fprintf(f, "</text>\n");
}

void report_timeline(FILE *f, const struct report_model *m)
{
    size_t n = m->nranks, *rows = malloc((n + 8) * sizeof *rows), nrows = 0;
    int *label = malloc((n + 8) * sizeof *label);
    double *ends = malloc(n * sizeof *ends);
    if (rows && label && ends) {
        for (size_t i = 0; i < n; i++) { /* the busiest are the ranks the others wait for */
            const struct report_rank *r = &m->ranks[i];
            ends[i] = r->timed ? 0 : r->ended;
            for (size_t k = 0; k < r->nsp; k++)
                ends[i] += r->sp[k].end - r->sp[k].start;
        }
        nrows = report_pick(ends, n, 8, rows, label);
    }
    fprintf(f, "<h2>Where the time went</h2>\n<p>");
    if (m->timed)
        fprintf(
            f,
            "Each row is a rank on the job's clock (seconds since the first rank "
            "started): its phases as they happened, and dashed where it was in no phase "
            "(setting up, waiting for the other ranks, or between phases). The number is when the "
            "rank finished.");
    else
        fprintf(f, "This file has no real times (a dsort older than the report): each rank's "
                   "phases are drawn one after another from their seconds, without the waiting.");
    if (n > REPORT_ALL_RANKS) {
        fputs(" Of the ", f);
        report_num(f, "span", "%.0f", (double)n, "count(per_rank)");
        fputs(" ranks: those that spent the most time in phases (and so waited least: the "
              "others waited for them) first, then the ranks at the percentiles of that time.",
              f);
    }
    fprintf(f, "</p>\n");
    legend(f, m, m->timed);
    int h = TOP + (int)nrows * (ROW + GAP) + 4;
    report_svg_open(f, h, "phases per rank");
    report_svg_axis(f, LW, PW, 12, TOP - 6, h, m->t_max > 0 ? m->t_max : 1);
    for (size_t i = 0; i < nrows; i++) {
        int y = TOP + (int)i * (ROW + GAP);
        report_row_label(f, &m->ranks[rows[i]], label[i], LW - 8, y + ROW / 2 + 4);
        rank_row(f, m, &m->ranks[rows[i]], y);
    }
    fprintf(f, "</svg>\n");
    free(rows);
    free(label);
    free(ends);
}

/* Phase ph on rank r: its first start, its last end and that span's index; 0 if it has none. */
static int phase_on(const struct report_rank *r, int ph, double *start, double *end, size_t *kend)
{
    int seen = 0;
    for (size_t k = 0; k < r->nsp; k++)
        if (r->sp[k].phase == ph) {
            if (!seen || r->sp[k].start < *start)
                *start = r->sp[k].start;
            if (!seen || r->sp[k].end >= *end) {
                *end = r->sp[k].end;
                *kend = k;
            }
            seen = 1;
        }
    return seen;
}

/* One phase's row: first start to last end over the ranks, the 10th..90th percentile of the
 * ends, the median end; the rank that ended last named with its lag behind the median. */
static int band_row(FILE *f, const struct report_model *m, int ph, int y, double *ends, size_t *who,
                    size_t *kend)
{
    size_t n = 0;
    double first = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        double s = 0, e = 0;
        size_t k = 0;
        if (!phase_on(&m->ranks[i], ph, &s, &e, &k))
            continue;
        first = n == 0 || s < first ? s : first;
        ends[n] = e;
        who[n] = i;
        kend[i] = k;
        n++;
    }
    if (n == 0 || !f)
        return n > 0;
    size_t lo = report_pctl_index(ends, n, 10), med = report_pctl_index(ends, n, 50),
           hi = report_pctl_index(ends, n, 90), last = report_pctl_index(ends, n, 100);
    const char *c = m->phase[ph].colour;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", LW - 8, y + ROW / 2 + 4);
    report_put(f, "", m->phase[ph].name, "</text>");
    fprintf(f,
            "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
            "opacity=\".3\"/>",
            xat(m, first), y + 4, xat(m, ends[last]) - xat(m, first) + 0.5, ROW - 8, c);
    fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>",
            xat(m, ends[lo]), y + 1, xat(m, ends[hi]) - xat(m, ends[lo]) + 1.5, ROW - 2, c);
    fprintf(f, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#222\"/>",
            xat(m, ends[med]), y - 1, xat(m, ends[med]), y + ROW + 1);
    const struct report_rank *slow = &m->ranks[who[last]], *mid = &m->ranks[who[med]];
    /* the name after the bar, or before it when the bar ends near the right edge */
    if (xat(m, ends[last]) > LW + PW * 0.75)
        fprintf(f, "\n<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\">last: ", xat(m, first) - 6,
                y + ROW / 2 + 4);
    else
        fprintf(f, "\n<text x=\"%.1f\" y=\"%d\">last: ", xat(m, ends[last]) + 6, y + ROW / 2 + 4);
    report_rank_label(f, "tspan", slow);
    fputs(", +", f);
    report_num(f, "tspan", "%.3f s", ends[last] - ends[med],
               "per_rank[%zu].spans[%zu][2]-per_rank[%zu].spans[%zu][2]", slow->index,
               kend[slow->index], mid->index, kend[mid->index]);
    fprintf(f, "</text>\n");
    return 1;
}

void report_phase_bands(FILE *f, const struct report_model *m)
{
    if (!m->timed)
        return;
    double *ends = malloc(m->nranks * sizeof *ends);
    size_t *who = malloc(m->nranks * sizeof *who), *kend = calloc(m->nranks, sizeof *kend);
    fprintf(f, "<h2>Each phase across ranks</h2>\n<p>A row per phase, on the clock above: pale "
               "from the first rank's start of the phase to the last rank's end of it, solid "
               "where the middle of the ranks ended it (tenth to ninetieth percentile), a "
               "tick at the median end. On the right, the rank that ended it last and how "
               "long after the median: the others wait that long at the next collective.</p>\n");
    int rows = 0, ok = ends && who && kend;
    for (size_t k = 0; ok && k < m->nphases; k++) /* the phases that ran */
        rows += band_row(NULL, m, (int)k, 0, ends, who, kend);
    int h = TOP + rows * (ROW + GAP) + 4;
    report_svg_open(f, h, "phases across ranks");
    report_svg_axis(f, LW, PW, 12, TOP - 6, h, m->t_max > 0 ? m->t_max : 1);
    for (size_t k = 0, y = TOP; ok && k < m->nphases; k++)
        y += band_row(f, m, (int)k, (int)y, ends, who, kend) ? ROW + GAP : 0;
    fprintf(f, "</svg>\n");
    free(ends);
    free(who);
    free(kend);
}
