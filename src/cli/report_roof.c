/* report_roof.c - dsort-report's roofline (report.h): the "roofline" object of the stats file
 * (src/roofline.h: per phase group the busiest resource, its floor and the group's time as a
 * multiple of it; the job's, as if the phases overlapped, and the serial floor), as a table
 * with a bar per group (its time against its floor). Every figure traced to the file. */
#include <stdio.h>

#include "report.h"

/* A string of the file shown as it is: <span data-j="PATH">s</span>; "-" for null. */
static void text(FILE *f, const struct dsort_json *v, const char *key, const char *path)
{
    const char *s = dsort_json_string(v, key);
    if (!s) {
        fputs("-", f);
        return;
    }
    fprintf(f, "<span data-j=\"%s\">", path);
    report_esc(f, s);
    fputs("</span>", f);
}

/* A number of the file, or "-" for null or none. */
static void number(FILE *f, const struct dsort_json *v, const char *key, const char *fmt,
                   const char *path)
{
    const struct dsort_json *n = dsort_json_get_type(v, key, DSORT_JSON_NUMBER);
    if (n)
        report_num(f, "span", fmt, n->number, "%s", path);
    else
        fputs("-", f);
}

/* The bar of one group: its time (full width: the longest of time and floor) and its floor. */
static void bar(FILE *f, const struct dsort_json *g, double scale)
{
    double t = dsort_json_number(g, "seconds", 0), fl = dsort_json_number(g, "floor_seconds", 0);
    fprintf(f,
            "<td><svg width=\"240\" height=\"18\" role=\"img\"><rect x=\"0\" y=\"2\" "
            "width=\"%.1f\" height=\"7\" fill=\"#4e79a7\"/><rect x=\"0\" y=\"10\" width=\"%.1f\" "
            "height=\"7\" fill=\"#bab0ac\"/></svg></td>",
            scale > 0 ? 240 * t / scale : 0, scale > 0 ? 240 * fl / scale : 0);
}

static void row(FILE *f, const struct dsort_json *g, size_t i, double scale)
{
    char p[96];
    fputs("<tr><td>", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].group", i);
    text(f, g, "group", p);
    fputs("</td><td class=\"n\">", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].seconds", i);
    number(f, g, "seconds", "%.3f s", p);
    fputs("</td><td>", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].busiest", i);
    text(f, g, "busiest", p);
    fputs("</td><td class=\"n\">", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].busiest_rate_MBps", i);
    number(f, g, "busiest_rate_MBps", "%.1f MB/s", p);
    if (dsort_json_string(g, "busiest_rate_source")) {
        fputs(" (", f);
        snprintf(p, sizeof p, "roofline.groups[%zu].busiest_rate_source", i);
        text(f, g, "busiest_rate_source", p);
        fputs(")", f);
    }
    fputs("</td><td class=\"n\">", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].floor_seconds", i);
    number(f, g, "floor_seconds", "%.3f s", p);
    fputs("</td><td class=\"n\"><b>", f);
    snprintf(p, sizeof p, "roofline.groups[%zu].ratio", i);
    number(f, g, "ratio", "%.2f x", p);
    fputs("</b></td>", f);
    bar(f, g, scale);
    fputs("</tr>\n", f);
}

/* The job's rows: overlapped (the busiest resource over the job) and serial. */
static void job_rows(FILE *f, const struct dsort_json *rl)
{
    fputs("<tr><td><b>job, phases overlapped</b></td><td class=\"n\">", f);
    number(f, rl, "seconds", "%.3f s", "roofline.seconds");
    fputs("</td><td>", f);
    text(f, rl, "busiest", "roofline.busiest");
    fputs("</td><td></td><td class=\"n\">", f);
    number(f, rl, "floor_seconds", "%.3f s", "roofline.floor_seconds");
    fputs("</td><td class=\"n\"><b>", f);
    number(f, rl, "ratio", "%.2f x", "roofline.ratio");
    fputs("</b></td><td></td></tr>\n<tr><td><b>job, phases in series</b></td><td "
          "class=\"n\">",
          f);
    number(f, rl, "seconds", "%.3f s", "roofline.seconds");
    fputs("</td><td>each group's</td><td></td><td class=\"n\">", f);
    number(f, rl, "serial_floor_seconds", "%.3f s", "roofline.serial_floor_seconds");
    fputs("</td><td class=\"n\"><b>", f);
    number(f, rl, "serial_ratio", "%.2f x", "roofline.serial_ratio");
    fputs("</b></td><td></td></tr>\n", f);
}

void report_roofline(FILE *f, const struct report_model *m)
{
    const struct dsort_json *rl = dsort_json_get_type(m->root, "roofline", DSORT_JSON_OBJECT);
    fputs("<h2>Roofline: each phase group against its busiest resource</h2>\n", f);
    const struct dsort_json *groups =
        rl ? dsort_json_get_type(rl, "groups", DSORT_JSON_ARRAY) : NULL;
    if (!groups) {
        fputs("<p class=\"note\">This file has no roofline (an older dsort wrote it); "
              "tests/bench/roofline.py computes one from it.</p>\n",
              f);
        return;
    }
    double scale = 0;
    for (size_t i = 0; i < groups->count; i++) {
        double t = dsort_json_number(&groups->items[i], "seconds", 0),
               fl = dsort_json_number(&groups->items[i], "floor_seconds", 0);
        scale = t > scale ? t : scale;
        scale = fl > scale ? fl : scale;
    }
    fputs("<div class=\"legend\"><span><i style=\"background:#4e79a7\"></i>the group's time"
          "</span><span><i style=\"background:#bab0ac\"></i>its floor</span></div>\n<table>\n"
          "<tr><th>group</th><th>seconds (slowest rank)</th><th>busiest resource</th>"
          "<th>its rate</th><th>floor</th><th>x floor</th><th>time and floor</th></tr>\n",
          f);
    for (size_t i = 0; i < groups->count; i++)
        row(f, &groups->items[i], i, scale);
    job_rows(f, rl);
    fputs("</table>\n<p class=\"note\">A group's floor: the bytes it moved on its busiest "
          "resource (a disk's reads or writes, the network, the CPU) over that resource's rate, "
          "given in DSORT_ROOFLINE_RATES or, for a disk, measured by the block layer over the "
          "job; x floor is the group's time over it (one: the group ran at the speed of its "
          "busiest resource). The job's floor is that of its busiest resource over the whole "
          "job, as if every phase overlapped; in series, the groups' floors add up. A group "
          "without a resource moved next to nothing on one with a rate (the dsort manual, "
          "ENVIRONMENT).</p>\n",
          f);
}
