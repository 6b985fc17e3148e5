/* dsort-gen - gensort 1.5 compatible record generator, in parallel:
 *   mpirun -n N dsort-gen [-a] [-s] [-b START] [-c] COUNT OUTPUT
 * or, with --format fixed:..., records of typed fields (typedgen.h):
 *   mpirun -n N dsort-gen --format fixed:SIZE:KEYOFF:KEYLEN [--field SPEC]... [--seed N] ...
 * Each rank generates its own slice (the generator skips ahead) and writes it at its offset,
 * so the file is the same whatever N is. Output is committed like dsort's (temp + rename).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "checksum.h"
#include "cli.h"
#include "clock.h"
#include "gensort.h"
#include "io.h"
#include "mem.h"
#include "output.h"
#include "typedgen.h"

#define GEN_BLOCK_RECORDS ((size_t)40000) /* 4 MB blocks */

static void usage(void)
{
    printf("Usage: mpirun -n N dsort-gen [OPTION]... COUNT OUTPUT\n"
           "Generate COUNT gensort records (byte-identical to gensort 1.5) into OUTPUT.\n\n"
           "  -a              ASCII records (printable keys, lines ending in \\r\\n)\n"
           "  -s              skewed keys (gensort's Daytona skew)\n"
           "  -b START        first record number (default 0)\n"
           "  -c              print the checksum of the generated records to stderr\n"
           "      --format=FMT    fixed:SIZE:KEYOFF:KEYLEN: SIZE-byte records of random bytes\n"
           "                  and typed fields instead of gensort's (only SIZE is used)\n"
           "      --field=OFF:TYPE[:LEN][:DIST]...  (with --format) a typed field, TYPE as\n"
           "                  dsort-validate -k; DIST uniform (default), distinct=K, seq,\n"
           "                  nan=P, special=P (P percent NaNs / corner values); repeatable\n"
           "      --seed=N    the seed of --format's records (default 0)\n"
           "      --parts=DIR write DIR/part-NNNNN (one per rank) and DIR/_SUCCESS instead\n"
           "                  of one file; OUTPUT is then omitted\n"
           "      --local-output  DIR is on node-local disks: each node writes the parts of\n"
           "                  its ranks to its own DIR\n"
           "  -v, --verbose   print the time taken\n"
           "      --help      display this help and exit\n"
           "      --version   output version information and exit\n");
}

enum { OPT_PARTS = 256, OPT_HELP, OPT_VERSION, OPT_LOCAL, OPT_FORMAT, OPT_FIELD, OPT_SEED };

/* Write records first..first+n-1 of the generator's sequence to out in blocks, adding them to
 * *sum when sum is not NULL. The generator is gensort's, or tg's when tg is not NULL. */
static enum dsort_status generate(struct dsort_output *out, enum dsort_gensort_kind kind, int skew,
                                  const struct dsort_typedgen *tg, uint64_t first, uint64_t n,
                                  struct dsort_sum128 *sum, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    const size_t rs = tg ? tg->rec_size : DSORT_GENSORT_REC_SIZE;
    size_t blen = GEN_BLOCK_RECORDS * rs;
    unsigned char *buf = dsort_mem_alloc(blen);
    if (!buf)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate %zu bytes", blen);
    struct dsort_gensort g;
    if (!st && !tg && dsort_gensort_init(&g, kind, skew, first))
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "cannot start the generator");
    for (uint64_t done = 0; !st && done < n;) {
        size_t k = n - done < GEN_BLOCK_RECORDS ? (size_t)(n - done) : GEN_BLOCK_RECORDS;
        if (tg)
            dsort_typedgen_fill(tg, first + done, k, buf);
        else
            dsort_gensort_fill(&g, buf, k);
        if (sum)
            dsort_checksum_records(sum, buf, k, rs);
        st = dsort_output_write(out, buf, k * rs, done * rs, err);
        done += k;
    }
    dsort_mem_free(buf, blen);
    return st;
}

/* --format, --field and --seed, kept until the record size is known. */
struct typed_args {
    const char *format, *fields[DSORT_TYPEDGEN_MAX + 1];
    size_t nfields;
    uint64_t seed;
};

/* One option of the typed records: -1 not one of them, 0 taken, else an exit status. */
static int typed_option(const struct dsort_comm *c, int ch, struct typed_args *t)
{
    if (ch == OPT_FORMAT) {
        t->format = optarg;
    } else if (ch == OPT_FIELD) {
        if (t->nfields > DSORT_TYPEDGEN_MAX)
            return dsort_cli_usage_error(c, "too many --field options");
        t->fields[t->nfields++] = optarg;
    } else if (ch == OPT_SEED) {
        if (dsort_cli_parse_u64(optarg, &t->seed))
            return dsort_cli_usage_error(c, "invalid seed '%s'", optarg);
    } else {
        return -1;
    }
    return 0;
}

/* The typed generator of t (when t->format), or a usage error (returned as its exit status, 2;
 * every rank parses the same arguments, so all agree). */
static int typed_setup(const struct dsort_comm *c, const struct typed_args *t, int gensort_opts,
                       struct dsort_typedgen *tg, struct dsort_error *err)
{
    struct dsort_format fmt;
    if (!t->format)
        return t->nfields ? dsort_cli_usage_error(c, "--field goes with --format") : 0;
    if (gensort_opts)
        return dsort_cli_usage_error(c, "-a and -s go with gensort records, not --format");
    if (dsort_format_parse(t->format, &fmt, err))
        return dsort_cli_usage_error(c, "%s", err->msg);
    dsort_typedgen_init(tg, fmt.rec_size, t->seed);
    for (size_t i = 0; i < t->nfields; i++)
        if (dsort_typedgen_add(tg, t->fields[i], err))
            return dsort_cli_usage_error(c, "%s", err->msg);
    return 0;
}

/* COUNT and OUTPUT (or --parts' DIR) after the options, or a usage error (its exit status, 2).
 * An empty name would be found only at the commit, after all the work, as a rename to ''. */
static int operands(const struct dsort_comm *c, int argc, char **argv, const char *parts,
                    uint64_t start, uint64_t *count, const char **target)
{
    if (argc - optind != (parts ? 1 : 2))
        return dsort_cli_usage_error(c, parts ? "expected COUNT with --parts"
                                              : "expected COUNT and OUTPUT");
    if (dsort_cli_parse_u64(argv[optind], count))
        return dsort_cli_usage_error(c, "invalid record count '%s'", argv[optind]);
    if (*count > UINT64_MAX - start)
        return dsort_cli_usage_error(c, "START + COUNT overflows");
    *target = parts ? parts : argv[optind + 1];
    if (!**target)
        return dsort_cli_usage_error(c, parts ? "--parts: the directory's name is empty"
                                              : "OUTPUT: the name is empty");
    return 0;
}

/* The options of the command line. */
struct gen_args {
    int ascii, skew, sum, verbose, local;
    uint64_t start;
    const char *parts;
    struct typed_args typed;
};

/* Parse the options into a: -1 to go on, else the exit status (0 after --help or --version,
 * 2 after a usage error). */
static int parse_options(const struct dsort_comm *c, int argc, char **argv, struct gen_args *a)
{
    static const struct option opts[] = {{"parts", required_argument, NULL, OPT_PARTS},
                                         {"local-output", no_argument, NULL, OPT_LOCAL},
                                         {"format", required_argument, NULL, OPT_FORMAT},
                                         {"field", required_argument, NULL, OPT_FIELD},
                                         {"seed", required_argument, NULL, OPT_SEED},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {"version", no_argument, NULL, OPT_VERSION},
                                         {NULL, 0, NULL, 0}};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":asb:cv", opts, NULL)) != -1) {
        int tr = typed_option(c, ch, &a->typed);
        if (tr > 0)
            return tr;
        if (tr == 0)
            continue;
        switch (ch) {
        case 'a':
            a->ascii = 1;
            break;
        case 's':
            a->skew = 1;
            break;
        case 'c':
            a->sum = 1;
            break;
        case 'v':
            a->verbose = 1;
            break;
        case 'b':
            if (dsort_cli_parse_u64(optarg, &a->start))
                return dsort_cli_usage_error(c, "invalid starting record '%s'", optarg);
            break;
        case OPT_PARTS:
            a->parts = optarg;
            break;
        case OPT_LOCAL:
            a->local = 1;
            break;
        case OPT_HELP:
            if (c->rank == 0)
                usage();
            return 0;
        case OPT_VERSION:
            if (c->rank == 0)
                printf("dsort-gen %s\n", DSORT_VERSION);
            return 0;
        case ':':
            return dsort_cli_usage_error(c, "option '%s' requires an argument", argv[optind - 1]);
        default:
            return dsort_cli_usage_error(c, "unrecognized option '%s'", argv[optind - 1]);
        }
    }
    return -1;
}

/* Rank 0 prints what -c and -v ask for, from every rank's checksum (gathered: collective). */
static void report(const struct dsort_comm *c, const struct gen_args *a,
                   const struct dsort_part_info *info, uint64_t count, double t0)
{
    void *got = NULL;
    dsort_agree_gather(c, &info->checksum, sizeof info->checksum, &got, NULL);
    struct dsort_sum128 *all = got; /* (NULL on every rank when rank 0 has no room for it) */
    if (c->rank == 0 && all) {
        struct dsort_sum128 total = {0, 0};
        for (int r = 0; r < c->size; r++)
            dsort_sum128_merge(&total, &all[r]);
        char hex[33];
        dsort_sum128_hex(&total, hex);
        if (a->sum)
            fprintf(stderr, "%s\n", hex);
        if (a->verbose)
            fprintf(stderr, "dsort-gen: %" PRIu64 " records in %.3f s on %d ranks\n", count,
                    dsort_clock_now() - t0, c->size);
    }
    free(all);
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort-gen");
    struct gen_args a = {0};
    uint64_t count = 0;
    int pr = parse_options(&c, argc, argv, &a);
    if (pr >= 0)
        return dsort_cli_finish(pr);
    if (a.local && !a.parts)
        return dsort_cli_finish(dsort_cli_usage_error(&c, "--local-output goes with --parts"));
    static struct dsort_typedgen tg;
    struct dsort_error err = {0};
    if (typed_setup(&c, &a.typed, a.ascii || a.skew, &tg, &err))
        return dsort_cli_finish(2);
    const size_t rs = a.typed.format ? tg.rec_size : DSORT_GENSORT_REC_SIZE;
    const char *target = NULL;
    if (operands(&c, argc, argv, a.parts, a.start, &count, &target))
        return dsort_cli_finish(2);

    double t0 = dsort_clock_now();
    uint64_t first, n;
    dsort_io_split(count, c.rank, c.size, &first, &n);
    struct dsort_output out;
    enum dsort_status st = dsort_output_open(&c, &out,
                                             !a.parts  ? DSORT_OUTPUT_FILE
                                             : a.local ? DSORT_OUTPUT_LOCAL_DIR
                                                       : DSORT_OUTPUT_DIR,
                                             target, n * rs, 0, &err);
    if (st)
        return dsort_cli_finish(2);
    struct dsort_part_info info = {n, n * rs, {0, 0}, ""};
    st = generate(&out, a.ascii ? DSORT_GENSORT_ASCII : DSORT_GENSORT_BINARY, a.skew,
                  a.typed.format ? &tg : NULL, a.start + first, n,
                  a.sum || a.parts ? &info.checksum : NULL, &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_output_abandon(&out);
        return dsort_cli_finish(2);
    }
    if (dsort_output_commit(&c, &out, &info, &err))
        return dsort_cli_finish(2);
    report(&c, &a, &info, count, t0);
    return dsort_cli_finish(0);
}
