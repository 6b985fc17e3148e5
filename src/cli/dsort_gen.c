/* dsort-gen - gensort 1.5 compatible record generator, in parallel:
 *   mpirun -n N dsort-gen [-a] [-s] [-b START] [-c] COUNT OUTPUT
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

#define GEN_BLOCK_RECORDS ((size_t)40000) /* 4 MB blocks */

static void usage(void)
{
    printf("Usage: mpirun -n N dsort-gen [OPTION]... COUNT OUTPUT\n"
           "Generate COUNT gensort records (byte-identical to gensort 1.5) into OUTPUT.\n\n"
           "  -a              ASCII records (printable keys, lines ending in \\r\\n)\n"
           "  -s              skewed keys (gensort's Daytona skew)\n"
           "  -b START        first record number (default 0)\n"
           "  -c              print the checksum of the generated records to stderr\n"
           "      --parts=DIR write DIR/part-NNNNN (one per rank) and DIR/_SUCCESS instead\n"
           "                  of one file; OUTPUT is then omitted\n"
           "      --local-output  DIR is on node-local disks: each node writes the parts of\n"
           "                  its ranks to its own DIR\n"
           "  -v, --verbose   print the time taken\n"
           "      --help      display this help and exit\n"
           "      --version   output version information and exit\n");
}

enum { OPT_PARTS = 256, OPT_HELP, OPT_VERSION, OPT_LOCAL };

/* Write records first..first+n-1 of the generator's sequence to out in blocks, adding them to
 * *sum when sum is not NULL. */
static enum dsort_status generate(struct dsort_output *out, enum dsort_gensort_kind kind, int skew,
                                  uint64_t first, uint64_t n, struct dsort_sum128 *sum,
                                  struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    size_t blen = GEN_BLOCK_RECORDS * DSORT_GENSORT_REC_SIZE;
    unsigned char *buf = dsort_mem_alloc(blen);
    if (!buf)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate %zu bytes", blen);
    struct dsort_gensort g;
    if (!st && dsort_gensort_init(&g, kind, skew, first))
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "cannot start the generator");
    for (uint64_t done = 0; !st && done < n;) {
        size_t k = n - done < GEN_BLOCK_RECORDS ? (size_t)(n - done) : GEN_BLOCK_RECORDS;
        dsort_gensort_fill(&g, buf, k);
        if (sum)
            dsort_checksum_records(sum, buf, k, DSORT_GENSORT_REC_SIZE);
        st = dsort_output_write(out, buf, k * DSORT_GENSORT_REC_SIZE, done * DSORT_GENSORT_REC_SIZE,
                                err);
        done += k;
    }
    dsort_mem_free(buf, blen);
    return st;
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort-gen");
    static const struct option opts[] = {{"parts", required_argument, NULL, OPT_PARTS},
                                         {"local-output", no_argument, NULL, OPT_LOCAL},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {"version", no_argument, NULL, OPT_VERSION},
                                         {NULL, 0, NULL, 0}};
    int ascii = 0, skew = 0, sum = 0, verbose = 0, local = 0, ch;
    uint64_t start = 0, count = 0;
    const char *parts = NULL;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":asb:cv", opts, NULL)) != -1) {
        switch (ch) {
        case 'a':
            ascii = 1;
            break;
        case 's':
            skew = 1;
            break;
        case 'c':
            sum = 1;
            break;
        case 'v':
            verbose = 1;
            break;
        case 'b':
            if (dsort_cli_parse_u64(optarg, &start))
                return dsort_cli_finish(
                    dsort_cli_usage_error(&c, "invalid starting record '%s'", optarg));
            break;
        case OPT_PARTS:
            parts = optarg;
            break;
        case OPT_LOCAL:
            local = 1;
            break;
        case OPT_HELP:
            if (c.rank == 0)
                usage();
            return dsort_cli_finish(0);
        case OPT_VERSION:
            if (c.rank == 0)
                printf("dsort-gen %s\n", DSORT_VERSION);
            return dsort_cli_finish(0);
        case ':':
            return dsort_cli_finish(
                dsort_cli_usage_error(&c, "option '%s' requires an argument", argv[optind - 1]));
        default:
            return dsort_cli_finish(
                dsort_cli_usage_error(&c, "unrecognized option '%s'", argv[optind - 1]));
        }
    }
    if (local && !parts)
        return dsort_cli_finish(dsort_cli_usage_error(&c, "--local-output goes with --parts"));
    int want = parts ? 1 : 2;
    if (argc - optind != want)
        return dsort_cli_finish(dsort_cli_usage_error(&c, parts ? "expected COUNT with --parts"
                                                                : "expected COUNT and OUTPUT"));
    if (dsort_cli_parse_u64(argv[optind], &count))
        return dsort_cli_finish(
            dsort_cli_usage_error(&c, "invalid record count '%s'", argv[optind]));
    if (count > UINT64_MAX - start)
        return dsort_cli_finish(dsort_cli_usage_error(&c, "START + COUNT overflows"));

    double t0 = dsort_clock_now();
    uint64_t first, n;
    dsort_io_split(count, c.rank, c.size, &first, &n);
    struct dsort_error err = {0};
    struct dsort_output out;
    enum dsort_status st =
        dsort_output_open(&c, &out,
                          !parts  ? DSORT_OUTPUT_FILE
                          : local ? DSORT_OUTPUT_LOCAL_DIR
                                  : DSORT_OUTPUT_DIR,
                          parts ? parts : argv[optind + 1], n * DSORT_GENSORT_REC_SIZE, 0, &err);
    if (st)
        return dsort_cli_finish(2);
    struct dsort_part_info info = {n, n * DSORT_GENSORT_REC_SIZE, {0, 0}, ""};
    st = generate(&out, ascii ? DSORT_GENSORT_ASCII : DSORT_GENSORT_BINARY, skew, start + first, n,
                  sum || parts ? &info.checksum : NULL, &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_output_abandon(&out);
        return dsort_cli_finish(2);
    }
    if (dsort_output_commit(&c, &out, &info, &err))
        return dsort_cli_finish(2);
    void *got = NULL;
    dsort_agree_gather(&c, &info.checksum, sizeof info.checksum, &got, NULL);
    struct dsort_sum128 *all = got; /* (NULL on every rank when rank 0 has no room for it) */
    if (c.rank == 0 && all) {
        struct dsort_sum128 total = {0, 0};
        for (int r = 0; r < c.size; r++)
            dsort_sum128_merge(&total, &all[r]);
        char hex[33];
        dsort_sum128_hex(&total, hex);
        if (sum)
            fprintf(stderr, "%s\n", hex);
        if (verbose)
            fprintf(stderr, "dsort-gen: %" PRIu64 " records in %.3f s on %d ranks\n", count,
                    dsort_clock_now() - t0, c.size);
    }
    free(all);
    return dsort_cli_finish(0);
}
