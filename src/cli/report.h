/* report.h - dsort-report's model of a --stats file and the HTML it draws from it (local, no
 * MPI). dsort_report.c reads and checks the file (report_load) and writes the page; report_time.c
 * draws where the time went (the timeline of the phases per rank, the phases across ranks);
 * report_res.c the devices; report_ranks.c the figures per rank (memory, network, balance),
 * throughput and out of core; report_roof.c the roofline.
 *
 * Every figure on the page is written by report_num or report_bytes, which wrap it in an element
 * whose data-j attribute is the JSON expression it shows (a path such as
 * "per_rank[3].rss_peak_kb", or arithmetic on paths, with sum(...) over "[*]" and ".*"), so that
 * a test can trace each number back to the file (tests/report/check_page.py). Percentile labels
 * carry data-k, axis ticks class "tick".
 */
#ifndef DSORT_REPORT_H
#define DSORT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "json_min.h"

/* Up to this many ranks, one row per rank; above it, the slowest (or largest) ranks named and
 * percentile rows, so that the page stays short at thousands of ranks. */
#define REPORT_ALL_RANKS 32
#define REPORT_SVG_W 1000

struct report_span { /* one phase stretch (per_rank[i].spans[k]) */
    int phase;       /* index into model.phase, -1: several phases */
    double start, end;
};

struct report_rank {
    const struct dsort_json *obj, *phases;
    long long id;
    size_t index; /* in per_rank */
    const char *host;
    int timed;              /* the file has started, ended and spans for this rank */
    double started, ended;  /* on the job's clock (timed), else 0 and the sum of phases */
    struct report_span *sp; /* timed: its spans */
    size_t nsp;
};

struct report_model {
    const struct dsort_json *root;
    struct report_rank *ranks;
    size_t nranks, nhosts;
    struct report_phase {
        const char *name;
        const char *colour;
    } * phase; /* dsort's order first, then others in file order */
    size_t nphases;
    double records, bytes, seconds, balance;
    double t_max; /* the latest end of any rank */
    int timed;    /* every rank has real times */
};

/* Read the model out of root (a parsed --stats file); -1 with why set if a field the page needs
 * is missing or wrong. Free with report_free. */
int report_load(const struct dsort_json *root, struct report_model *m, char *why, size_t n);
void report_free(struct report_model *m);

/* ---- HTML ---- */
void report_esc(FILE *f, const char *s);                                    /* s as HTML text */
void report_put(FILE *f, const char *pre, const char *s, const char *post); /* pre, esc s, post */
/* A figure: <TAG data-j="PATH">v in fmt</TAG> (TAG: "span" in HTML, "tspan" in SVG text; the
 * path is printf-formatted from pathfmt). */
__attribute__((format(printf, 5, 6))) void report_num(FILE *f, const char *tag, const char *fmt,
                                                      double v, const char *pathfmt, ...);
/* Bytes, in B, KiB, MiB... as report_num. */
__attribute__((format(printf, 4, 5))) void report_bytes(FILE *f, const char *tag, double v,
                                                        const char *pathfmt, ...);
/* "rank N" with N traced to per_rank[r->index].rank. */
void report_rank_label(FILE *f, const char *tag, const struct report_rank *r);
/* An SVG text at x, y (anchored at its end): "rank N (host)", after "pP" for a percentile row
 * (label as report_pick's). */
void report_row_label(FILE *f, const struct report_rank *r, int label, int x, int y);
void report_svg_open(FILE *f, int h, const char *label);
/* Ticks along x from 0 to max (seconds) at x0..x0+w, labels at y_text, grid y0..y1. */
void report_svg_axis(FILE *f, int x0, int w, int y_text, int y0, int y1, double max);
const char *report_colour(size_t i);

/* The rows to show of n values v[] (largest first when many): all (in rank order) when n is
 * at most REPORT_ALL_RANKS, else the `top` largest and the ranks at the 0th, 50th and 90th
 * percentiles. Fills rows[] (indexes) and label[] (a percentile 0..100, -2 for one of the
 * largest, -1 when all ranks are shown); returns how many (at most top + 3; 0 if out of
 * memory). */
size_t report_pick(const double *v, size_t n, size_t top, size_t *rows, int *label);

/* The value at percentile p (0..100) of v[0..n), and the index holding it. */
size_t report_pctl_index(const double *v, size_t n, double p);

/* ---- the sections ---- */
void report_timeline(FILE *f, const struct report_model *m);
void report_phase_bands(FILE *f, const struct report_model *m);
void report_devices(FILE *f, const struct report_model *m);
void report_memory(FILE *f, const struct report_model *m);
void report_network(FILE *f, const struct report_model *m);
void report_balance(FILE *f, const struct report_model *m);
void report_throughput(FILE *f, const struct report_model *m);
void report_out_of_core(FILE *f, const struct report_model *m);
/* report_roof.c: the "roofline" object (a note when the file has none). */
void report_roofline(FILE *f, const struct report_model *m);

#endif
