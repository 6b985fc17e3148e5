/* report_html.c - dsort-report's HTML and SVG pieces that every section uses (report.h):
 * escaped text, numbers traced to the JSON (data-j), rank labels, the SVG frame and axis, and
 * the choice of rows above REPORT_ALL_RANKS ranks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* s as HTML text or attribute value: & < > " ' escaped, control characters as U+FFFD, and the
 * ':' of "://" as a reference, so that no text from the file forms a URL. (The JSON reader has
 * made s valid UTF-8.) */
void report_esc(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
            fputs("&#xfffd;", f);
        else if (strchr("&<>\"'", *p) || (*p == ':' && p[1] == '/' && p[2] == '/'))
            fprintf(f, "&#%d;", *p);
        else
            putc(*p, f);
}

void report_put(FILE *f, const char *pre, const char *s, const char *post)
{
    fputs(pre, f);
    report_esc(f, s);
    fputs(post, f);
}

static void open_traced(FILE *f, const char *tag, const char *pathfmt, va_list ap)
{
    char path[256];
    vsnprintf(path, sizeof path, pathfmt, ap);
    fprintf(f, "<%s data-j=\"", tag);
    report_esc(f, path);
    fputs("\">", f);
}

void report_num(FILE *f, const char *tag, const char *fmt, double v, const char *pathfmt, ...)
{
    va_list ap;
    va_start(ap, pathfmt);
    open_traced(f, tag, pathfmt, ap);
    va_end(ap);
    /* fmt: one double's conversion, a literal at every caller */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    fprintf(f, fmt, v);
#pragma GCC diagnostic pop
    fprintf(f, "</%s>", tag);
}

void report_bytes(FILE *f, const char *tag, double b, const char *pathfmt, ...)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t u = 0;
    va_list ap;
    va_start(ap, pathfmt);
    open_traced(f, tag, pathfmt, ap);
    va_end(ap);
    while (b >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        b /= 1024;
        u++;
    }
    fprintf(f, u ? "%.2f %s</%s>" : "%.0f %s</%s>", b, unit[u], tag);
}

void report_rank_label(FILE *f, const char *tag, const struct report_rank *r)
{
    fputs("rank ", f);
    report_num(f, tag, "%.0f", (double)r->id, "per_rank[%zu].rank", r->index);
}

void report_svg_open(FILE *f, int h, const char *label)
{
    fprintf(f,
            "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"%s\">\n",
            REPORT_SVG_W, h, REPORT_SVG_W, h, label);
}

/* A round step for about 5 ticks up to max. */
static double tick_step(double max)
{
    double p = 1e-6;
    while (p * 10 <= max / 5)
        p *= 10;
    return max / 5 >= 5 * p ? 5 * p : max / 5 >= 2 * p ? 2 * p : p;
}

void report_svg_axis(FILE *f, int x0, int w, int y_text, int y0, int y1, double max)
{
    double step = tick_step(max);
    for (int i = 0; i * step <= max * 1.0001; i++) {
        double x = x0 + i * step / max * w;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">%g s</text>\n",
                x, y0, x, y1, x, y_text, i * step);
    }
}

static const double *sort_by; /* the values order() sorts by (one thread) */

static int by_value(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double x = sort_by[i], y = sort_by[j];
    return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

/* The indexes of v[0..n) in ascending order of value (rank order among equals). NULL if out of
 * memory. */
static size_t *order(const double *v, size_t n)
{
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    for (size_t i = 0; ix && i < n; i++)
        ix[i] = i;
    sort_by = v;
    if (ix)
        qsort(ix, n, sizeof *ix, by_value);
    return ix;
}

size_t report_pctl_index(const double *v, size_t n, double p)
{
    size_t *ix = order(v, n), k = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    size_t r = ix ? ix[k < n ? k : n - 1] : 0;
    free(ix);
    return r;
}

size_t report_pick(const double *v, size_t n, size_t top, size_t *rows, int *label)
{
    static const int pct[] = {90, 50, 0};
    size_t k = 0;
    if (n <= REPORT_ALL_RANKS) {
        for (size_t i = 0; i < n; i++, k++) {
            rows[k] = i;
            label[k] = -1;
        }
        return k;
    }
    size_t *ix = order(v, n);
    if (!ix)
        return 0;
    for (size_t i = 0; i < top && i < n; i++, k++) { /* the largest, largest first */
        rows[k] = ix[n - 1 - i];
        label[k] = -2;
    }
    for (size_t p = 0; p < sizeof pct / sizeof pct[0]; p++, k++) {
        size_t at = (size_t)(pct[p] / 100.0 * (double)(n - 1) + 0.5);
        rows[k] = ix[at];
        label[k] = pct[p];
    }
    free(ix);
    return k;
}

void report_row_label(FILE *f, const struct report_rank *r, int label, int x, int y)
{
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", x, y);
    if (label >= 0)
        fprintf(f, "<tspan data-k=\"\" font-weight=\"bold\">p%d</tspan> ", label);
    report_rank_label(f, "tspan", r);
    fprintf(f, " (<tspan data-j=\"per_rank[%zu].host\">", r->index);
    report_put(f, "", r->host, "</tspan>)</text>");
}
