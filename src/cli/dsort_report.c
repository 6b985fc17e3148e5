/* dsort-report - one self-contained HTML page from the --stats file of a dsort run:
 *   dsort-report STATS.json -o report.html
 * Inline SVG and CSS only: the phases of every rank on a timeline, bytes read per device (from
 * the plan), records out per rank (balance), throughput against the data size, and the memory
 * budget and out-of-core figures. No MPI. Errors: one line naming the file, exit 2. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json_min.h"

#define PROG "dsort-report"

/* dsort's phases in its order (src/pipeline/phase.c: dsort_phase_names), with their colours. */
static const char *const known_phases[] = {"sample",   "read",  "sort",  "splitters",
                                           "exchange", "merge", "spill", "final_merge",
                                           "write",    "commit"};
#define NKNOWN (sizeof known_phases / sizeof known_phases[0])
static const char *const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                      "#9c755f", "#bab0ac", "#1b9e77", "#7570b3"};

struct rank {
    const struct dsort_json *obj, *phases;
    long long id;
    const char *host;
};

struct model {
    const struct dsort_json *root;
    struct rank *ranks;
    size_t nranks;
    struct phase {
        const char *name;
        const char *colour;
    } * phase; /* dsort's order first, then others in file order */
    size_t nphases;
    double records, bytes, seconds, balance;
};

static void usage(void)
{
    printf("Usage: " PROG " STATS.json -o REPORT.html\n"
           "Write one self-contained HTML page (inline SVG and CSS, nothing loaded from the\n"
           "network) from the file that `dsort --stats STATS.json` wrote: a timeline of the\n"
           "phases per rank, bytes read per device, records out per rank (balance), throughput\n"
           "and the memory budget, runs and merge passes.\n\n"
           "  -o, --output=FILE  the page to write (replaced atomically)\n"
           "      --help         display this help and exit\n"
           "      --version      output version information and exit\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
    va_end(ap);
    return 2;
}

static int file_error(const char *file, const char *cause)
{
    fprintf(stderr, PROG ": %s: %s\n", file, cause);
    return 2;
}

/* ---- reading and checking the stats file ---- */

/* Add phase name to m unless it is there. */
static int add_phase(struct model *m, const char *name, size_t colour)
{
    for (size_t i = 0; i < m->nphases; i++)
        if (strcmp(m->phase[i].name, name) == 0)
            return 0;
    struct phase *p = realloc(m->phase, (m->nphases + 1) * sizeof *p);
    if (!p)
        return -1;
    m->phase = p;
    p[m->nphases].name = name;
    p[m->nphases++].colour = colours[colour];
    return 0;
}

__attribute__((format(printf, 3, 4))) static int bad(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Check the fields the page needs and fill m; -1 with why set if one is missing or wrong. */
static int load_model(const struct dsort_json *root, struct model *m, char *why, size_t n)
{
    static const char *const top[] = {"records", "bytes", "seconds", "balance"};
    double *topv[] = {&m->records, &m->bytes, &m->seconds, &m->balance};
    const struct dsort_json *v, *pr;
    m->root = root;
    if (root->type != DSORT_JSON_OBJECT)
        return bad(why, n, "not a dsort --stats file (not a JSON object)");
    for (size_t i = 0; i < 4; i++) {
        if (!(v = dsort_json_require(root, "", top[i], DSORT_JSON_NUMBER, why, n)))
            return -1;
        *topv[i] = v->number;
    }
    if (!(pr = dsort_json_require(root, "", "per_rank", DSORT_JSON_ARRAY, why, n)))
        return -1;
    if (pr->count == 0)
        return bad(why, n, "field 'per_rank' is empty");
    if (!(m->ranks = calloc(pr->count, sizeof *m->ranks)))
        return bad(why, n, "out of memory");
    m->nranks = pr->count;
    for (size_t i = 0; i < pr->count; i++) {
        struct rank *r = &m->ranks[i];
        char ctx[48];
        snprintf(ctx, sizeof ctx, "per_rank[%zu].", i);
        r->obj = &pr->items[i];
        if (r->obj->type != DSORT_JSON_OBJECT)
            return bad(why, n, "field 'per_rank[%zu]' is not an object", i);
        if (!dsort_json_require(r->obj, ctx, "records_out", DSORT_JSON_NUMBER, why, n) ||
            !(v = dsort_json_require(r->obj, ctx, "rank", DSORT_JSON_NUMBER, why, n)) ||
            !(r->phases = dsort_json_require(r->obj, ctx, "phases", DSORT_JSON_OBJECT, why, n)))
            return -1;
        if (v->number < 0 || v->number > 1e9 || v->number != (double)(long long)v->number)
            return bad(why, n, "field '%srank' is not a rank number", ctx);
        r->id = (long long)v->number;
        r->host = dsort_json_string(r->obj, "host") ? dsort_json_string(r->obj, "host") : "";
        for (size_t k = 0; k < r->phases->count; k++)
            if (r->phases->items[k].type != DSORT_JSON_NUMBER || r->phases->items[k].number < 0)
                return bad(why, n, "field '%sphases.%s' is not a number of seconds", ctx,
                           r->phases->keys[k]);
    }
    /* The phases: dsort's order first, then any others in the order the file names them. */
    for (size_t k = 0; k < NKNOWN; k++)
        for (size_t i = 0; i < m->nranks; i++)
            if (dsort_json_get(m->ranks[i].phases, known_phases[k])) {
                if (add_phase(m, known_phases[k], k))
                    return bad(why, n, "out of memory");
                break;
            }
    for (size_t i = 0; i < m->nranks; i++)
        for (size_t k = 0; k < m->ranks[i].phases->count; k++) {
            const char *name = m->ranks[i].phases->keys[k];
            if (add_phase(m, name, NKNOWN + m->nphases % 2))
                return bad(why, n, "out of memory");
        }
    return 0;
}

#define num dsort_json_number
#define str dsort_json_string

/* The seconds of a phase on rank r (checked by load_model: numbers, not negative). */
#define seconds_of(r, phase) num((r)->phases, phase, 0)

/* ---- writing HTML ---- */

/* s as HTML text or attribute value: & < > " ' escaped, control characters as U+FFFD, and the
 * ':' of "://" as a reference, so that no text from the file forms a URL. (The JSON reader has
 * made s valid UTF-8.) */
static void esc(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        if ((*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f)
            fputs("&#xfffd;", f);
        else if (strchr("&<>\"'", *p) || (*p == ':' && p[1] == '/' && p[2] == '/'))
            fprintf(f, "&#%d;", *p);
        else
            putc(*p, f);
}

/* pre, then s escaped, then post. */
static void put(FILE *f, const char *pre, const char *s, const char *post)
{
    fputs(pre, f);
    esc(f, s);
    fputs(post, f);
}

static const char *fmt_bytes(double b, char *buf, size_t n)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t u = 0;
    while (b >= 1024 && u + 1 < sizeof unit / sizeof unit[0]) {
        b /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

/* A round step for about 5 ticks up to max. */
static double tick_step(double max)
{
    double p = 1e-6;
    while (p * 10 <= max / 5)
        p *= 10;
    return max / 5 >= 5 * p ? 5 * p : max / 5 >= 2 * p ? 2 * p : p;
}

#define SVG_W 1000

static void svg_open(FILE *f, int h, const char *label)
{
    fprintf(f,
            "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"%s\">\n",
            SVG_W, h, SVG_W, h, label);
}

static void svg_axis(FILE *f, int x0, int w, int y0, int y1, double max, const char *unit)
{
    double step = tick_step(max);
    for (int i = 0; i * step <= max * 1.0001; i++) {
        double x = x0 + i * step / max * w;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g%s</text>\n",
                x, y0, x, y1, x, y1 + 14, i * step, unit);
    }
}

static void section_timeline(FILE *f, const struct model *m)
{
    const int lw = 80, pw = SVG_W - lw - 90, row = 24, gap = 8, top = 8;
    double max = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        double t = 0;
        for (size_t k = 0; k < m->nphases; k++)
            t += seconds_of(&m->ranks[i], m->phase[k].name);
        max = t > max ? t : max;
    }
    max = max > 0 ? max : 1;
    int h = top + (int)m->nranks * (row + gap) + 24;
    fprintf(f, "<h2>Timeline per rank</h2>\n<p>Each bar is one phase; its width is its seconds "
               "on that rank (phases in dsort's order).</p>\n");
    svg_open(f, h, "phases per rank");
    svg_axis(f, lw, pw, top - 4, h - 22, max, " s");
    for (size_t i = 0; i < m->nranks; i++) {
        const struct rank *r = &m->ranks[i];
        int y = top + (int)i * (row + gap);
        double x = lw, total = 0;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">rank %lld</text>\n", lw - 8,
                y + row / 2 + 4, r->id);
        for (size_t k = 0; k < m->nphases; k++) {
            double s = seconds_of(r, m->phase[k].name), w = s / max * pw;
            total += s;
            if (w <= 0)
                continue;
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\">"
                    "<title>rank %lld (",
                    x, y, w, row, m->phase[k].colour, r->id);
            put(f, "", r->host, "): ");
            put(f, "", m->phase[k].name, "");
            fprintf(f, " %.3f s</title></rect>\n", s);
            x += w;
        }
        fprintf(f, "<text x=\"%.1f\" y=\"%d\">%.3f s</text>\n", x + 6, y + row / 2 + 4, total);
    }
    fprintf(f, "</svg>\n<div class=\"legend\">");
    for (size_t k = 0; k < m->nphases; k++) {
        double slow = 0;
        for (size_t i = 0; i < m->nranks; i++) {
            double s = seconds_of(&m->ranks[i], m->phase[k].name);
            slow = s > slow ? s : slow;
        }
        fprintf(f, "<span%s><i style=\"background:%s\"></i>", slow > 0 ? "" : " class=\"dim\"",
                m->phase[k].colour);
        put(f, "", m->phase[k].name, "");
        fprintf(f, " %.3f s</span> ", slow);
    }
    fprintf(f, "</div>\n<p class=\"note\">Seconds in the legend: the slowest rank's.</p>\n");
}

/* One labelled horizontal bar of a bar chart (lw: label width, pw: plot width). */
static void hbar(FILE *f, int lw, int pw, int y, int row, double v, double max, const char *fill,
                 const char *label, const char *value)
{
    double w = max > 0 && v > 0 ? v / max * pw : 0;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", lw - 8, y + row / 2 + 4);
    put(f, "", label, "</text>");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>", lw, y, w, row,
            fill);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", lw + w + 6, y + row / 2 + 4, value);
}

/* s cut to fit buf[n] ("..." at the end when cut), not inside a UTF-8 sequence. */
static const char *clip(const char *s, char *buf, size_t n)
{
    size_t len = strlen(s);
    if (len < n)
        return s;
    for (len = n - 4; len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80;)
        len--;
    snprintf(buf, n, "%.*s...", (int)len, s);
    return buf;
}

static void section_devices(FILE *f, const struct model *m)
{
    const struct dsort_json *nodes =
        dsort_json_get_type(dsort_json_get(m->root, "plan"), "nodes", DSORT_JSON_ARRAY);
    size_t ndev = 0;
    double max = 0;
    for (size_t i = 0; nodes && i < nodes->count; i++) {
        const struct dsort_json *d =
            dsort_json_get_type(&nodes->items[i], "devices", DSORT_JSON_ARRAY);
        for (size_t k = 0; d && k < d->count; k++) {
            double b = num(&d->items[k], "read_bytes", num(&d->items[k], "bytes", 0));
            max = b > max ? b : max;
            ndev++;
        }
    }
    fprintf(f, "<h2>Bytes per device</h2>\n");
    if (ndev == 0) {
        fprintf(f, "<p class=\"note\">No plan with devices in this file: bytes per device are "
                   "not known.</p>\n");
        return;
    }
    fprintf(f, "<p>Bytes read from each device of each node (measured when the file has it, "
               "else planned).</p>\n");
    const int lw = 200, pw = SVG_W - lw - 260, row = 20, gap = 8;
    int h = (int)ndev * (row + gap) + 8, y = 4;
    svg_open(f, h, "bytes per device");
    for (size_t i = 0; i < nodes->count; i++) {
        const char *host = str(&nodes->items[i], "hostname");
        const struct dsort_json *d =
            dsort_json_get_type(&nodes->items[i], "devices", DSORT_JSON_ARRAY);
        for (size_t k = 0; d && k < d->count; k++, y += row + gap) {
            const struct dsort_json *dev = &d->items[k];
            int measured = dsort_json_get_type(dev, "read_bytes", DSORT_JSON_NUMBER) != NULL;
            double b = num(dev, measured ? "read_bytes" : "bytes", 0);
            double s = num(dev, "read_seconds", 0);
            char label[160], value[96], hb[32], c1[64], c2[64];
            snprintf(label, sizeof label, "%s%s%s", clip(host ? host : "", c1, sizeof c1),
                     host ? ": " : "",
                     clip(str(dev, "key") ? str(dev, "key") : "?", c2, sizeof c2));
            if (measured && s > 0)
                snprintf(value, sizeof value, "%s read in %.3f s (%.1f MB/s)",
                         fmt_bytes(b, hb, sizeof hb), s, b / s / 1e6);
            else
                snprintf(value, sizeof value, "%s %s", fmt_bytes(b, hb, sizeof hb),
                         measured ? "read" : "planned");
            hbar(f, lw, pw, y, row, b, max, colours[1], label, value);
        }
    }
    fprintf(f, "</svg>\n");
}

static void section_balance(FILE *f, const struct model *m)
{
    const int lw = 80, pw = SVG_W - lw - 140, row = 20, gap = 8;
    double max = 0, sum = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        double v = num(m->ranks[i].obj, "records_out", 0);
        max = v > max ? v : max;
        sum += v;
    }
    double avg = sum / (double)m->nranks;
    int h = (int)m->nranks * (row + gap) + 26;
    fprintf(f,
            "<h2>Balance per rank</h2>\n<p>Records out per rank; balance (max / average) "
            "<b>%.4f</b>, average %.1f records (dashed line).</p>\n",
            m->balance, avg);
    svg_open(f, h, "records out per rank");
    for (size_t i = 0; i < m->nranks; i++) {
        const struct rank *r = &m->ranks[i];
        char id[32], value[32];
        snprintf(id, sizeof id, "rank %lld", r->id);
        snprintf(value, sizeof value, "%.0f", num(r->obj, "records_out", 0));
        hbar(f, lw, pw, 4 + (int)i * (row + gap), row, num(r->obj, "records_out", 0), max,
             colours[0], id, value);
    }
    if (max > 0)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"0\" x2=\"%.1f\" y2=\"%d\" class=\"avg\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">average</text>\n",
                lw + avg / max * pw, lw + avg / max * pw, h - 18, lw + avg / max * pw, h - 4);
    fprintf(f, "</svg>\n");
}

/* The sum of the numbers in object o; *seen = 1 if it has any. */
static double sum(const struct dsort_json *o, int *seen)
{
    double t = 0;
    for (size_t k = 0; o && o->type == DSORT_JSON_OBJECT && k < o->count; k++, *seen = 1)
        t += o->items[k].type == DSORT_JSON_NUMBER ? o->items[k].number : 0;
    return t;
}

static void section_throughput(FILE *f, const struct model *m)
{
    char b1[32];
    double mbs = m->seconds > 0 ? m->bytes / m->seconds / 1e6 : 0, rd = 0, wr = 0;
    int io = 0;
    for (size_t i = 0; i < m->nranks; i++) { /* the per-phase I/O counts of every rank */
        rd += sum(dsort_json_get(m->ranks[i].obj, "io_read_bytes"), &io);
        wr += sum(dsort_json_get(m->ranks[i].obj, "io_write_bytes"), &io);
    }
    fprintf(f,
            "<h2>Throughput</h2>\n<table>\n"
            "<tr><th>records</th><th>bytes</th><th>seconds</th><th>MB/s</th>"
            "<th>MB/s per rank</th><th>records/s</th>%s</tr>\n"
            "<tr><td class=\"n\">%.0f</td><td class=\"n\">%.0f (%s)</td><td class=\"n\">%.3f</td>"
            "<td class=\"n\"><b>%.1f</b></td><td class=\"n\">%.1f</td><td class=\"n\">%.0f</td>",
            io ? "<th>I/O read / data</th><th>I/O written / data</th>" : "", m->records, m->bytes,
            fmt_bytes(m->bytes, b1, sizeof b1), m->seconds, mbs, mbs / (double)m->nranks,
            m->seconds > 0 ? m->records / m->seconds : 0);
    if (io)
        fprintf(f, "<td class=\"n\">%.2f x</td><td class=\"n\">%.2f x</td>",
                m->bytes > 0 ? rd / m->bytes : 0, m->bytes > 0 ? wr / m->bytes : 0);
    fprintf(f, "</tr>\n</table>\n<p class=\"note\">MB/s: bytes of data / wall-clock seconds / "
               "10<sup>6</sup>. I/O: bytes all ranks read and wrote (/proc/self/io) per byte "
               "of data.</p>\n");
}

/* A table cell with the number at key (in bytes, or a count), or "-". */
static void cell(FILE *f, const struct dsort_json *obj, const char *key, int bytes)
{
    char b[32] = "-";
    const struct dsort_json *v = dsort_json_get_type(obj, key, DSORT_JSON_NUMBER);
    if (v && bytes)
        fmt_bytes(v->number, b, sizeof b);
    else if (v)
        snprintf(b, sizeof b, "%.0f", v->number);
    fprintf(f, "<td class=\"n\">%s</td>", b);
}

static void section_memory(FILE *f, const struct model *m)
{
    const struct dsort_json *ooc = dsort_json_get_type(m->root, "out_of_core", DSORT_JSON_BOOL);
    int extra = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        const char *why = str(m->ranks[i].obj, "extra_pass_reason");
        extra |= why && *why;
    }
    fprintf(f, "<h2>Memory</h2>\n<p>Out of core: <b>%s</b>. %s</p>\n",
            !ooc           ? "not known"
            : ooc->boolean ? "yes"
                           : "no (in memory)",
            extra ? "Some ranks took an extra merge pass (last column)."
                  : "No rank took an extra merge pass.");
    fprintf(f,
            "<table>\n<tr><th>rank</th><th>host</th><th>memory budget</th><th>reason</th>"
            "<th>in-memory sort needs</th><th>runs</th><th>merge passes</th><th>fan-in</th>"
            "<th>spilled</th>%s</tr>\n",
            extra ? "<th>extra pass reason</th>" : "");
    for (size_t i = 0; i < m->nranks; i++) {
        const struct dsort_json *r = m->ranks[i].obj;
        fprintf(f, "<tr><td>rank %lld</td>", m->ranks[i].id);
        put(f, "<td>", m->ranks[i].host, "</td>");
        cell(f, r, "memory_budget", 1);
        put(f, "<td>", str(r, "memory_budget_reason") ? str(r, "memory_budget_reason") : "-",
            "</td>");
        cell(f, r, "memory_needed", 1);
        cell(f, r, "runs", 0);
        cell(f, r, "merge_passes", 0);
        cell(f, r, "fan_in", 0);
        cell(f, r, "spill_bytes", 1);
        if (extra)
            put(f, "<td>", str(r, "extra_pass_reason"), "</td>");
        fprintf(f, "</tr>\n");
    }
    fprintf(f, "</table>\n");
}

static const char style[] =
    "body{font-family:sans-serif;margin:20px 28px;color:#222;max-width:1060px}"
    "h1{font-size:22px;margin:0 0 4px}p{margin:4px 0 8px;font-size:14px}"
    "h2{font-size:17px;margin:26px 0 6px;border-bottom:1px solid #ccc;padding-bottom:3px}"
    ".note{color:#666;font-size:12px}svg{display:block;max-width:100%;height:auto}"
    "svg text{font-size:12px;fill:#222;paint-order:stroke;stroke:#fff;stroke-width:3px;"
    "stroke-linejoin:round}.grid{stroke:#e4e4e4}.avg{stroke:#222;stroke-dasharray:4 3}"
    "table{border-collapse:collapse;font-size:13px}th{background:#f3f3f3}"
    "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left}td.n{text-align:right}"
    "td.n,td:first-child{white-space:nowrap}.legend{font-size:13px;margin:6px 0}"
    ".legend span{margin-right:14px;white-space:nowrap}.dim{opacity:.45}"
    ".legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px}";

static void write_page(FILE *f, const struct model *m, const char *stats)
{
    const char *base = strrchr(stats, '/') ? strrchr(stats, '/') + 1 : stats;
    const struct dsort_json *ooc = dsort_json_get_type(m->root, "out_of_core", DSORT_JSON_BOOL);
    const char *ver = str(m->root, "version"), *format = str(m->root, "format");
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<title>dsort report: ");
    put(f, "", base, "</title>\n<style>");
    put(f, style, "", "</style>\n</head>\n<body>\n<h1>dsort report</h1>\n");
    put(f, "<p>", base, ": dsort ");
    put(f, "", ver ? ver : "?", ", format ");
    put(f, "", format ? format : "?", "");
    fprintf(f, ", %zu ranks, %s; %.0f records in %.3f s.</p>\n", m->nranks,
            !ooc           ? "in memory or out of core"
            : ooc->boolean ? "out of core"
                           : "in memory",
            m->records, m->seconds);
    section_timeline(f, m);
    section_devices(f, m);
    section_balance(f, m);
    section_throughput(f, m);
    section_memory(f, m);
    fprintf(f, "</body>\n</html>\n");
}

/* Write the page to a temp file beside out (mode 0666 less the umask), then rename it over out. */
static int write_atomic(const char *out, const struct model *m, const char *stats, char *why,
                        size_t n)
{
    char tmp[PATH_MAX];
    int fd = -1;
    mode_t mask = umask(0);
    umask(mask);
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", out) >= (int)sizeof tmp)
        errno = ENAMETOOLONG;
    else
        fd = mkstemp(tmp);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(why, n, "cannot create a temp file beside it: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return -1;
    }
    write_page(f, m, stats);
    int failed = fflush(f) || ferror(f) || fchmod(fd, 0666 & ~mask) || fsync(fd), e = errno;
    if (fclose(f) || failed || rename(tmp, out)) {
        snprintf(why, n, "cannot write: %s", strerror(failed ? e : errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL;
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:", opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            out = optarg;
            break;
        case 'h':
            usage();
            return 0;
        case 'V':
            printf(PROG " %s\n", DSORT_VERSION);
            return 0;
        case ':':
            return usage_error("option '%s' requires an argument", argv[optind - 1]);
        default:
            return usage_error("unrecognized option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return usage_error("%s",
                           argc > optind ? "expected one STATS.json file" : "missing STATS.json");
    if (!out || !*out)
        return usage_error("%s", "missing -o REPORT.html");
    const char *stats = argv[optind];
    char why[256];
    struct dsort_json root;
    if (dsort_json_read_file(stats, &root, why, sizeof why))
        return file_error(stats, why);
    struct model m = {0};
    int code = 0;
    struct stat si, so;
    if (load_model(&root, &m, why, sizeof why))
        code = file_error(stats, why);
    else if (stat(stats, &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev &&
             si.st_ino == so.st_ino)
        code = file_error(out, "is the stats file itself; give another -o");
    else if (write_atomic(out, &m, stats, why, sizeof why))
        code = file_error(out, why);
    free(m.ranks);
    free(m.phase);
    dsort_json_free(&root);
    return code;
}
