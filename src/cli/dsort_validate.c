/* dsort-validate - a distributed valsort:
 *   mpirun -n N dsort-validate [--format FMT] [-r] PATH...
 * PATH is a file, several files in order, or an output directory whose part-* files are
 * taken in name order (io.h's DSORT_INPUTS_EXPAND_DIRS). Prints Records, Checksum and Duplicate
 * keys as valsort does, then SUCCESS or the first unordered record. An output directory must
 * hold its _SUCCESS manifest (manifest.h), and its parts must be the ones listed, with the
 * bytes, records and checksums listed (the per-file figures come from the same read as the
 * order check). Exit 0 sorted, 1 not sorted or not as the manifest says, 2 error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agree.h"
#include "check.h"
#include "cli.h"
#include "io.h"
#include "keys.h"
#include "lines_check.h"
#include "manifest.h"
#include "typedkey.h"

static void usage(void)
{
    printf("Usage: mpirun -n N dsort-validate [OPTION]... PATH...\n"
           "Check that records are in order and print their count, checksum and duplicate\n"
           "keys, as valsort does. PATH is a file, or a directory of part-* files; several\n"
           "PATHs are checked as one sequence, in the order given.\n\n"
           "      --format=FMT   gensort (default), fixed:SIZE:KEYOFF:KEYLEN, or lines\n"
           "  -r, --reverse      expect descending order\n"
           "  -u, --unique       equal keys count as disorder\n"
           "  -k, --key=OFF:TYPE[:LEN][:r]  (fixed formats) a typed key; one or more:\n"
           "                     TYPE u8 i8 u16le u16be i16le i16be u32le ... i64be f32le\n"
           "                     f32be f64le f64be, or bytes with a LEN; :r descending;\n"
           "                     repeat for more keys; they replace the format's key\n"
           "Lines (--format lines): the order of LC_ALL=C sort with the same options:\n"
           "  -s -z -t SEP -k POS1[,POS2] -b -d -f -i -n -g -h -V -M  as in sort; a record\n"
           "                     is a line, its checksum the CRC-32 of the line and its\n"
           "                     terminator\n"
           "Paths:\n"
           "      --local-inputs each node checks the PATHs it has (node-local parts);\n"
           "                     files are taken in (PATH, name) order across nodes\n"
           "                     (fixed-size records only)\n"
           "      --no-manifest  check a directory's part-* files without its _SUCCESS\n"
           "                     manifest (by default a directory must have one, and its\n"
           "                     parts must be those it lists, with their records, bytes\n"
           "                     and checksums)\n"
           "      --help         display this help and exit\n"
           "      --version      output version information and exit\n\n"
           "Exit status: 0 sorted, 1 not sorted (or parts that differ from the manifest),\n"
           "2 error (a directory without _SUCCESS included).\n");
}

/* Print valsort's figures (rank 0), and the differences from the manifests found (bad); the
 * exit code: 0 sorted and as the manifests say, 1 not. */
static int report(const struct dsort_comm *c, const struct dsort_lines_figures *total, long bad,
                  const char *where)
{
    if (c->rank == 0) {
        char hex[33];
        dsort_sum128_hex(&total->checksum, hex);
        if (total->unordered)
            printf("First unordered record is record %" PRIu64 "\n", total->first_unordered);
        if (total->unordered && where && *where)
            printf("%s\n", where);
        printf("Records: %" PRIu64 "\nChecksum: %s\n", total->records, hex);
        if (total->unordered)
            printf("ERROR - there are %" PRIu64 " unordered records\n", total->unordered);
        else
            printf("Duplicate keys: %" PRIu64 "\n", total->duplicates);
        if (bad)
            printf("ERROR - the parts differ from the manifest _SUCCESS (%ld found)\n", bad);
        else if (!total->unordered)
            printf("SUCCESS - all records are in order\n");
        fflush(stdout);
    }
    return total->unordered || bad ? 1 : 0;
}

static void vsum_figures(const struct dsort_vsum *v, struct dsort_lines_figures *f)
{
    f->records = v->records;
    f->unordered = v->unordered;
    f->first_unordered = v->first_unordered;
    f->duplicates = v->duplicates;
    f->checksum = v->checksum;
}

/* The file of the first unordered record and its number there, numbered as dsort -c numbers
 * it (records from 0, "FILE:record N"; lines from 1, "FILE:N", as sort -c), into buf; empty
 * when in order. valsort's line before it counts over all the inputs, from 0. */
static void where_unordered(const struct dsort_inputs *in, const struct dsort_file_sum *files,
                            const struct dsort_lines_figures *fig, int lines, char *buf, size_t n)
{
    buf[0] = '\0';
    uint64_t g = fig->first_unordered, at = 0;
    for (size_t k = 0; fig->unordered && k < in->count; k++) {
        if (g < at + files[k].records) {
            if (lines)
                snprintf(buf, n, "First unordered line is %s:%" PRIu64 " (as -c says)",
                         in->files[k].path, g - at + 1);
            else
                snprintf(buf, n, "First unordered record is %s:record %" PRIu64 " (as -c says)",
                         in->files[k].path, g - at);
            return;
        }
        at += files[k].records;
    }
}

/* Each directory argument's _SUCCESS manifest (man[i], man_ok[i]) against its part-* files:
 * names and bytes, before anything is read. A directory without one is an error (unless
 * no_manifest). Differences are printed by rank 0 and counted in *bad (rank 0's count, on
 * every rank). Collective; agrees. */
static enum dsort_status read_manifests(const struct dsort_comm *c, char *const *paths, size_t n,
                                        int no_manifest, struct dsort_manifest *man, int *man_ok,
                                        long *bad, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    *bad = 0;
    for (size_t i = 0; i < n && !st && !no_manifest; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) || !S_ISDIR(sb.st_mode))
            continue;
        char why[DSORT_ERROR_MSG_MAX];
        if (dsort_manifest_read(paths[i], &man[i], why, sizeof why)) {
            st = DSORT_ERR(err, DSORT_EINVAL, 0, "%s", why);
            break;
        }
        man_ok[i] = 1;
        long b =
            dsort_manifest_check_files(c->prog, paths[i], &man[i], c->rank == 0 ? stderr : NULL);
        if (b < 0)
            st = DSORT_ERR(err, DSORT_EIO, 0, "cannot check '%s' against its manifest", paths[i]);
        else
            *bad += b;
    }
    dsort_agree_bcast(c, bad, sizeof *bad, "sharing the count of differences (MPI_Bcast)");
    return dsort_comm_agree(c, st, err);
}

/* Each part's records and checksum (files, from the check) against its manifest; rank 0 prints
 * the differences. Returns their number. */
static long check_parts(const struct dsort_comm *c, const struct dsort_inputs *in,
                        const struct dsort_file_sum *files, const struct dsort_manifest *man,
                        const int *man_ok)
{
    long bad = 0;
    for (size_t k = 0; k < in->count; k++) {
        const struct dsort_input *f = &in->files[k];
        if (!man_ok[f->arg])
            continue;
        const char *slash = strrchr(f->path, '/');
        const struct dsort_manifest *m = &man[f->arg];
        size_t i = dsort_manifest_find(m, slash ? slash + 1 : f->path);
        if (i == m->count)
            continue; /* counted by read_manifests */
        const struct dsort_manifest_part *p = &m->parts[i];
        int recs = files[k].records != p->records;
        int sum = files[k].sum.lo != p->checksum.lo || files[k].sum.hi != p->checksum.hi;
        if ((recs || sum) && c->rank == 0) {
            char h1[33], h2[33];
            dsort_sum128_hex(&files[k].sum, h1);
            dsort_sum128_hex(&p->checksum, h2);
            fprintf(stderr,
                    "%s: '%s' has %" PRIu64
                    " records, checksum %s; the manifest _SUCCESS says %" PRIu64
                    " records, checksum %s (%s)\n",
                    c->prog, f->path, files[k].records, h1, p->records, h2,
                    recs ? "not the records the job wrote, or another --format"
                         : "its content changed since the job");
        }
        bad += recs || sum;
    }
    return bad;
}

static int validate_inputs(const struct dsort_comm *cp, char *const *paths, size_t nargs,
                           const struct dsort_format *fmt, const struct dsort_order *ord, int lines,
                           const struct dsort_keys *keys, unsigned char eol,
                           const struct dsort_manifest *man, const int *man_ok);

/* --local-inputs: each node checks the files it has (dsort_check_local). Collective; returns
 * the exit status. */
static int validate_local(const struct dsort_comm *c, char *const *paths, size_t n,
                          const struct dsort_format *fmt, const struct dsort_order *ord)
{
    struct dsort_error err = {0};
    struct dsort_vsum total;
    if (dsort_comm_agree(c, dsort_vsum_init(&total, fmt, &err), &err))
        return 2;
    enum dsort_status st =
        dsort_check_local(c, paths, n, fmt, ord, (size_t)16 << 20, &total, NULL, &err);
    struct dsort_lines_figures fig;
    vsum_figures(&total, &fig);
    int code = st ? 2 : report(c, &fig, 0, NULL);
    dsort_vsum_destroy(&total);
    return code;
}

enum { OPT_FORMAT = 256, OPT_HELP, OPT_VERSION, OPT_LOCAL, OPT_NO_MANIFEST };

/* --format lines: the keys finished with the global -r, -s and -u; -1, or the exit status of a
 * usage error. */
static int lines_keys(const struct dsort_comm *c, int local, const struct dsort_order *ord,
                      int stable, struct dsort_keys *keys)
{
    struct dsort_error err = {0};
    if (local)
        return dsort_cli_usage_error(c, "--local-inputs does not take --format lines");
    if (ord->reverse && dsort_keys_set_global(keys, 'r', &err))
        return dsort_cli_usage_error(c, "%s", err.msg);
    keys->stable = stable;
    keys->unique = ord->unique;
    if (dsort_keys_finish(keys, &err))
        return dsort_cli_usage_error(c, "%s", err.msg);
    return -1;
}

/* The options of the command line. */
struct val_args {
    struct dsort_format fmt;
    struct dsort_order ord;
    int local, lines, key_opts, stable, no_manifest;
    struct dsort_keys *keys;
    struct dsort_cli_typed *typed; /* -k OFF:TYPE (zeroed: none) */
    unsigned char eol;
};

/* One option of those that are not keys: -1 to go on, else the exit status (0 after --help or
 * --version, 2 after a usage error). */
static int plain_option(const struct dsort_comm *c, int ch, char **argv, struct val_args *a)
{
    struct dsort_error err = {0};
    switch (ch) {
    case OPT_FORMAT:
        a->lines = strcmp(optarg, "lines") == 0;
        if (dsort_format_parse(a->lines ? "fixed:1:0:1" : optarg, &a->fmt, &err))
            return dsort_cli_usage_error(c, "%s", err.msg);
        return -1;
    case 's':
        a->stable = 1;
        return -1;
    case 'r':
        a->ord.reverse = 1;
        return -1;
    case 'u':
        a->ord.unique = 1;
        return -1;
    case OPT_LOCAL:
        a->local = 1;
        return -1;
    case OPT_NO_MANIFEST:
        a->no_manifest = 1;
        return -1;
    case OPT_HELP:
        if (c->rank == 0)
            usage();
        return 0;
    case OPT_VERSION:
        if (c->rank == 0)
            printf("dsort-validate %s\n", DSORT_VERSION);
        return 0;
    case ':':
        return dsort_cli_usage_error(c, "option '%s' requires an argument", argv[optind - 1]);
    default:
        return dsort_cli_usage_error(c, "unrecognized option '%s'", argv[optind - 1]);
    }
}

/* Parse the options into a and check how they go together: -1 to go on, else the exit status. */
static int parse_options(const struct dsort_comm *c, int argc, char **argv, struct val_args *a)
{
    static const struct option opts[] = {{"format", required_argument, NULL, OPT_FORMAT},
                                         {"local-inputs", no_argument, NULL, OPT_LOCAL},
                                         {"no-manifest", no_argument, NULL, OPT_NO_MANIFEST},
                                         {"reverse", no_argument, NULL, 'r'},
                                         {"unique", no_argument, NULL, 'u'},
                                         {"stable", no_argument, NULL, 's'},
                                         DSORT_CLI_KEY_LONG_OPTIONS,
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {"version", no_argument, NULL, OPT_VERSION},
                                         {NULL, 0, NULL, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":rus" DSORT_CLI_KEY_LETTERS, opts, NULL)) != -1) {
        if (dsort_cli_typed_option(a->typed, ch, optarg))
            continue;
        int kr = dsort_cli_key_option(c, a->keys, ch, optarg, &a->eol);
        if (kr < 0)
            return 2;
        if (kr > 0) {
            a->key_opts = 1;
            continue;
        }
        int pr = plain_option(c, ch, argv, a);
        if (pr >= 0)
            return pr;
    }
    if (optind == argc)
        return dsort_cli_usage_error(c, "no input");
    int tcode = dsort_cli_typed_setup(c, a->typed, a->lines || a->key_opts, &a->fmt);
    if (tcode >= 0)
        return tcode;
    if (!a->lines && (a->key_opts || a->stable))
        return dsort_cli_usage_error(c, "-s, -k, -t, -z and -bdfghiMnV go with --format lines");
    return a->lines ? lines_keys(c, a->local, &a->ord, a->stable, a->keys) : -1;
}

static void free_manifests(struct dsort_manifest *man, int *man_ok, size_t nargs)
{
    for (size_t i = 0; man && i < nargs; i++)
        dsort_manifest_free(&man[i]);
    free(man);
    free(man_ok);
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort-validate");
    static struct dsort_keys keys;
    static struct dsort_cli_typed typed;
    struct val_args a = {.ord = {0, 0, 0}, .keys = &keys, .typed = &typed, .eol = '\n'};
    struct dsort_error err = {0};
    dsort_format_gensort(&a.fmt);
    dsort_keys_init(&keys);
    int pcode = parse_options(&c, argc, argv, &a);
    if (pcode >= 0)
        return dsort_cli_finish(pcode);
    enum dsort_status st = DSORT_OK;
    if (a.local)
        return dsort_cli_finish(
            validate_local(&c, argv + optind, (size_t)(argc - optind), &a.fmt, &a.ord));
    /* A directory stands for its part-* files in name order (the output of dsort -O), and must
     * be a complete output: its _SUCCESS manifest lists every part with its bytes, records and
     * checksum. Names and sizes are compared first; a part cut short would not be read. */
    const size_t nargs = (size_t)(argc - optind);
    struct dsort_manifest *man = calloc(nargs, sizeof *man);
    int *man_ok = calloc(nargs, sizeof *man_ok);
    long bad = 0;
    st = !man || !man_ok ? DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory") : DSORT_OK;
    if (!(st = dsort_comm_agree(&c, st, &err)))
        st = read_manifests(&c, argv + optind, nargs, a.no_manifest, man, man_ok, &bad, &err);
    if (st || bad) {
        if (!st && c.rank == 0)
            printf("ERROR - the parts differ from the manifest _SUCCESS (%ld found)\n", bad);
        free_manifests(man, man_ok, nargs);
        return dsort_cli_finish(st ? 2 : 1);
    }
    int code = validate_inputs(&c, argv + optind, nargs, &a.fmt, &a.ord, a.lines, &keys, a.eol, man,
                               man_ok);
    free_manifests(man, man_ok, nargs);
    return dsort_cli_finish(code);
}

/* The shared layout: open the inputs, check them, compare the parts with their manifests,
 * report. Returns the exit status. */
static int validate_inputs(const struct dsort_comm *cp, char *const *paths, size_t nargs,
                           const struct dsort_format *fmt, const struct dsort_order *ord, int lines,
                           const struct dsort_keys *keys, unsigned char eol,
                           const struct dsort_manifest *man, const int *man_ok)
{
    const struct dsort_comm c = *cp;
    struct dsort_error err = {0};
    struct dsort_inputs in = {0};
    enum dsort_status st =
        dsort_inputs_open_ex(&in, paths, nargs, fmt, DSORT_INPUTS_EXPAND_DIRS, NULL, &err);
    for (size_t i = 0; i < nargs && !st; i++) {
        struct stat sb;
        size_t k = 0;
        while (k < in.count && in.files[k].arg != i)
            k++;
        /* (a manifest of no parts: an empty output of 0 ranks cannot be made) */
        if (k == in.count && !stat(paths[i], &sb) && S_ISDIR(sb.st_mode))
            st = DSORT_ERR(&err, DSORT_EINVAL, 0, "directory '%s' has no part-* files", paths[i]);
    }
    struct dsort_file_sum *files = calloc(in.count + 1, sizeof *files);
    if (!st && !files)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    struct dsort_lines_figures fig;
    int code = 2;
    if ((st = dsort_comm_agree(&c, st, &err)))
        goto out;
    if (lines) {
        code = dsort_lines_validate(&c, &in, keys, eol, &fig, files);
    } else {
        struct dsort_vsum total;
        if ((st = dsort_comm_agree(&c, dsort_vsum_init(&total, fmt, &err), &err)))
            goto out;
        st = dsort_check_inputs_files(&c, &in, fmt, ord, (size_t)16 << 20, &total, files, &err);
        vsum_figures(&total, &fig);
        dsort_vsum_destroy(&total);
        code = st ? 2 : 0;
    }
    if (code != 2) {
        char at[4200];
        where_unordered(&in, files, &fig, lines, at, sizeof at);
        code = report(&c, &fig, check_parts(&c, &in, files, man, man_ok), at);
    }
out:
    free(files);
    dsort_inputs_destroy(&in);
    return code;
}
