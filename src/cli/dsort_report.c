/* dsort-report - one self-contained HTML page from the --stats file of a dsort run:
 *   dsort-report STATS.json -o report.html
 * Inline SVG and CSS only: where the time went (the phases of each rank on one clock, with the
 * waiting between them; each phase's spread across ranks, the slowest named), the devices as
 * the block layer saw them, memory against the budget, bytes sent and received, balance,
 * throughput and the out-of-core figures (report.h). No MPI. Errors: one line naming the file,
 * exit 2. This file reads the stats and writes the page; the sections are report_*.c. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "json_min.h"
#include "io.h"
#include "report.h"

#define PROG "dsort-report"

/* dsort's phases in its order (src/pipeline/phase.c: dsort_phase_names). */
static const char *const known_phases[] = {"sample",   "read",  "sort",  "splitters",
                                           "exchange", "merge", "spill", "final_merge",
                                           "write",    "commit"};
#define NKNOWN (sizeof known_phases / sizeof known_phases[0])

static void usage(void)
{
    printf("Usage: " PROG " STATS.json -o REPORT.html\n"
           "Write one self-contained HTML page (inline SVG and CSS, nothing loaded from the\n"
           "network) from the file that `dsort --stats STATS.json` wrote: the phases of each\n"
           "rank on one clock with the waiting between them, each phase's spread across ranks\n"
           "(the slowest named), the disks as the block layer saw them, peak memory against\n"
           "the budget, bytes sent and received, balance, throughput and the out-of-core\n"
           "figures. Above 32 ranks, the slowest ranks and percentiles stand for the rest.\n\n"
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

static const char *const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                      "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                      "#9c755f", "#bab0ac", "#1b9e77", "#7570b3"};

const char *report_colour(size_t i)
{
    return colours[i % (sizeof colours / sizeof colours[0])];
}

/* The index of phase name in m, added (colour by slot) unless it is there; -1 if out of memory. */
static int add_phase(struct report_model *m, const char *name, size_t colour)
{
    for (size_t i = 0; i < m->nphases; i++)
        if (strcmp(m->phase[i].name, name) == 0)
            return (int)i;
    struct report_phase *p = realloc(m->phase, (m->nphases + 1) * sizeof *p);
    if (!p)
        return -1;
    m->phase = p;
    p[m->nphases].name = name;
    p[m->nphases].colour = report_colour(colour);
    return (int)m->nphases++;
}

__attribute__((format(printf, 3, 4))) static int bad(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

static int seconds_ok(const struct dsort_json *v)
{
    return v && v->type == DSORT_JSON_NUMBER && v->number >= 0 && v->number < 1e12;
}

/* The real times of rank r (started, ended, spans), when the file has them (dsort after issue
 * 29); r->timed stays 0 for an older file. -1 with why set if they are there but wrong. */
static int load_times(struct report_model *m, struct report_rank *r, const char *ctx, char *why,
                      size_t n)
{
    const struct dsort_json *st = dsort_json_get(r->obj, "started"),
                            *en = dsort_json_get(r->obj, "ended"),
                            *sp = dsort_json_get_type(r->obj, "spans", DSORT_JSON_ARRAY);
    if (!st && !en && !sp)
        return 0;
    if (!seconds_ok(st) || !seconds_ok(en) || !sp || en->number < st->number)
        return bad(why, n, "fields '%sstarted', 'ended' and 'spans' are not real times", ctx);
    r->started = st->number;
    r->ended = en->number;
    if (sp->count && !(r->sp = calloc(sp->count, sizeof *r->sp)))
        return bad(why, n, "out of memory");
    for (size_t k = 0; k < sp->count; k++) {
        const struct dsort_json *e = &sp->items[k];
        if (e->type != DSORT_JSON_ARRAY || e->count != 3 || !seconds_ok(&e->items[1]) ||
            !seconds_ok(&e->items[2]) || e->items[2].number < e->items[1].number ||
            (e->items[0].type != DSORT_JSON_STRING && e->items[0].type != DSORT_JSON_NULL))
            return bad(why, n, "field '%sspans[%zu]' is not [phase, start, end]", ctx, k);
        int ph = -1;
        if (e->items[0].type == DSORT_JSON_STRING &&
            (ph = add_phase(m, e->items[0].string, NKNOWN + m->nphases % 2)) < 0)
            return bad(why, n, "out of memory");
        r->sp[k] = (struct report_span){ph, e->items[1].number, e->items[2].number};
    }
    r->nsp = sp->count;
    r->timed = 1;
    return 0;
}

/* Check rank i's fields and fill m->ranks[i]. */
static int load_rank(struct report_model *m, const struct dsort_json *pr, size_t i, char *why,
                     size_t n)
{
    struct report_rank *r = &m->ranks[i];
    const struct dsort_json *v;
    char ctx[48];
    snprintf(ctx, sizeof ctx, "per_rank[%zu].", i);
    r->obj = &pr->items[i];
    r->index = i;
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
        if (!seconds_ok(&r->phases->items[k]))
            return bad(why, n, "field '%sphases.%s' is not a number of seconds", ctx,
                       r->phases->keys[k]);
    return 0;
}

int report_load(const struct dsort_json *root, struct report_model *m, char *why, size_t n)
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
    for (size_t i = 0; i < pr->count; i++)
        if (load_rank(m, pr, i, why, n))
            return -1;
    /* The phases: dsort's order first, then any others in the order the file names them. */
    for (size_t k = 0; k < NKNOWN; k++)
        for (size_t i = 0; i < m->nranks; i++)
            if (dsort_json_get(m->ranks[i].phases, known_phases[k])) {
                if (add_phase(m, known_phases[k], k) < 0)
                    return bad(why, n, "out of memory");
                break;
            }
    for (size_t i = 0; i < m->nranks; i++)
        for (size_t k = 0; k < m->ranks[i].phases->count; k++)
            if (add_phase(m, m->ranks[i].phases->keys[k], NKNOWN + m->nphases % 2) < 0)
                return bad(why, n, "out of memory");
    m->timed = 1;
    for (size_t i = 0; i < m->nranks; i++) {
        struct report_rank *r = &m->ranks[i];
        char ctx[48];
        snprintf(ctx, sizeof ctx, "per_rank[%zu].", i);
        if (load_times(m, r, ctx, why, n))
            return -1;
        m->timed &= r->timed;
        if (!r->timed) /* an older file: the phases one after another */
            for (size_t k = 0; k < r->phases->count; k++)
                r->ended += r->phases->items[k].number;
        m->t_max = r->ended > m->t_max ? r->ended : m->t_max;
        const char *h = r->host;
        size_t j = 0;
        while (j < i && strcmp(m->ranks[j].host, h) != 0)
            j++;
        m->nhosts += j == i;
    }
    return 0;
}

void report_free(struct report_model *m)
{
    for (size_t i = 0; m->ranks && i < m->nranks; i++)
        free(m->ranks[i].sp);
    free(m->ranks);
    free(m->phase);
}

static const char style[] =
    "body{font-family:sans-serif;margin:20px 28px;color:#222;max-width:1060px}"
    "h1{font-size:22px;margin:0 0 4px}p{margin:4px 0 8px;font-size:14px}"
    "h2{font-size:17px;margin:22px 0 6px;border-bottom:1px solid #ccc;padding-bottom:3px}"
    ".note{color:#666;font-size:12px}svg{display:block;max-width:100%;height:auto}"
    "svg text{font-size:12px;fill:#222;paint-order:stroke;stroke:#fff;stroke-width:3px;"
    "stroke-linejoin:round}.grid{stroke:#e4e4e4}.avg{stroke:#222;stroke-dasharray:4 3}"
    ".wait{stroke:#999;stroke-width:2;stroke-dasharray:2 2}.budget{stroke:#c00;stroke-width:2}"
    "table{border-collapse:collapse;font-size:13px}th{background:#f3f3f3}"
    "th,td{border:1px solid #ccc;padding:2px 8px;text-align:left}td.n{text-align:right}"
    "td.n,td:first-child{white-space:nowrap}.legend{font-size:13px;margin:6px 0}"
    ".legend span{margin-right:14px;white-space:nowrap}.dim{opacity:.45}"
    ".legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px}"
    "h3{font-size:15px;margin:12px 0 "
    "4px}.planned{font-style:italic;color:#666}td.why{white-space:nowrap;font-size:12px}";

#define str dsort_json_string

static void write_page(FILE *f, const struct report_model *m, const char *stats)
{
    const char *base = strrchr(stats, '/') ? strrchr(stats, '/') + 1 : stats;
    const struct dsort_json *ooc = dsort_json_get_type(m->root, "out_of_core", DSORT_JSON_BOOL);
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<title>dsort report: ");
    report_put(f, "", base, "</title>\n<style>");
    report_put(f, style, "", "</style>\n</head>\n<body>\n<h1>dsort report</h1>\n");
    report_put(f, "<p><span data-file=\"\">", base, "</span>: dsort ");
    report_put(f, "<span data-j=\"version\">",
               str(m->root, "version") ? str(m->root, "version") : "", "</span>, format ");
    report_put(f, "<span data-j=\"format\">", str(m->root, "format") ? str(m->root, "format") : "",
               "</span>, ");
    report_num(f, "span", "%.0f", (double)m->nranks, "count(per_rank)");
    fputs(" ranks on ", f);
    report_num(f, "span", "%.0f", (double)m->nhosts, "distinct(per_rank[*].host)");
    fprintf(f, " %s, %s; ", m->nhosts == 1 ? "node" : "nodes",
            !ooc           ? "in memory or out of core"
            : ooc->boolean ? "out of core"
            : dsort_json_get_type(m->root, "mapped", DSORT_JSON_BOOL) &&
                    dsort_json_get_type(m->root, "mapped", DSORT_JSON_BOOL)->boolean
                ? "in memory, input mapped"
                : "in memory");
    report_num(f, "span", "%.0f", m->records, "records");
    fputs(" records (", f);
    report_bytes(f, "span", m->bytes, "bytes");
    fputs(") in ", f);
    report_num(f, "span", "%.3f s", m->seconds, "seconds");
    fputs(", ", f);
    report_num(f, "span", "%.1f MB/s", m->seconds > 0 ? m->bytes / m->seconds / 1e6 : 0,
               "bytes/seconds/1e6");
    fputs(".</p>\n", f);
    report_timeline(f, m);
    report_phase_bands(f, m);
    report_roofline(f, m);
    report_devices(f, m);
    report_memory(f, m);
    report_network(f, m);
    report_balance(f, m);
    report_throughput(f, m);
    report_out_of_core(f, m);
    fprintf(f, "</body>\n</html>\n");
}

/* Write the page to a temp file beside out (mode 0666 less the umask), then rename it over out.
 * A rename would replace the node itself: a link's target is replaced instead (the link stays),
 * /dev/null (1:3) gets nothing, and any other node that is not a regular file (a device, a
 * FIFO) is refused, as dsort -o does. */
static int write_atomic(const char *out, const struct report_model *m, const char *stats, char *why,
                        size_t n)
{
    char tmp[PATH_MAX], real[PATH_MAX];
    int fd = -1;
    struct stat sb;
    if (!stat(out, &sb)) {
        if (S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 && minor(sb.st_rdev) == 3)
            return 0;
        if (!S_ISREG(sb.st_mode)) {
            snprintf(why, n, "is a %s; dsort-report replaces only regular files",
                     S_ISCHR(sb.st_mode)    ? "character device"
                     : S_ISBLK(sb.st_mode)  ? "block device"
                     : S_ISFIFO(sb.st_mode) ? "FIFO"
                     : S_ISDIR(sb.st_mode)  ? "directory"
                                            : "socket");
            return -1;
        }
        if (dsort_io_names_descriptor(out)) { /* a log the shell opened: not to be replaced */
            snprintf(why, n,
                     "names an open file descriptor, which dsort-report would replace by "
                     "a new file: give -o a file name");
            return -1;
        }
        if (realpath(out, real))
            out = real;
    }
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
    struct report_model m = {0};
    int code = 0;
    struct stat si, so;
    if (report_load(&root, &m, why, sizeof why))
        code = file_error(stats, why);
    else if (stat(stats, &si) == 0 && stat(out, &so) == 0 && si.st_dev == so.st_dev &&
             si.st_ino == so.st_ino)
        code = file_error(out, "is the stats file itself; give another -o");
    else if (write_atomic(out, &m, stats, why, sizeof why))
        code = file_error(out, why);
    report_free(&m);
    dsort_json_free(&root);
    return code;
}
