/* dsort-validate - a distributed valsort:
 *   mpirun -n N dsort-validate [--format FMT] [-r] PATH...
 * PATH is a file, several files in order, or an output directory whose part-* files are
 * taken in name order (io.h's DSORT_INPUTS_EXPAND_DIRS). Prints Records, Checksum and Duplicate
 * keys as valsort does, then SUCCESS or the first unordered record. Exit 0 sorted, 1 not sorted, 2
 * error.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli.h"
#include "io.h"
#include "keys.h"
#include "lines_check.h"

static void usage(void)
{
    printf("Usage: mpirun -n N dsort-validate [OPTION]... PATH...\n"
           "Check that records are in order and print their count, checksum and duplicate\n"
           "keys, as valsort does. PATH is a file, or a directory of part-* files; several\n"
           "PATHs are checked as one sequence, in the order given.\n\n"
           "      --format=FMT   gensort (default), fixed:SIZE:KEYOFF:KEYLEN, or lines\n"
           "  -r, --reverse      expect descending order\n"
           "  -u, --unique       equal keys count as disorder\n"
           "Lines (--format lines): the order of LC_ALL=C sort with the same options:\n"
           "  -s -z -t SEP -k POS1[,POS2] -b -d -f -i -n -g -h -V -M  as in sort; a record\n"
           "                     is a line, its checksum the CRC-32 of the line and its\n"
           "                     terminator\n"
           "      --local-inputs each node checks the PATHs it has (node-local parts);\n"
           "                     files are taken in (PATH, name) order across nodes\n"
           "      --help         display this help and exit\n"
           "      --version      output version information and exit\n\n"
           "Exit status: 0 sorted, 1 not sorted, 2 error.\n");
}

/* Print valsort's figures (rank 0); the exit code: 0 sorted, 1 not. */
static int report(const struct dsort_comm *c, const struct dsort_vsum *total)
{
    if (c->rank == 0) {
        char hex[33];
        dsort_sum128_hex(&total->checksum, hex);
        if (total->unordered)
            printf("First unordered record is record %" PRIu64 "\n", total->first_unordered);
        printf("Records: %" PRIu64 "\nChecksum: %s\n", total->records, hex);
        if (total->unordered) {
            printf("ERROR - there are %" PRIu64 " unordered records\n", total->unordered);
        } else {
            printf("Duplicate keys: %" PRIu64 "\n", total->duplicates);
            printf("SUCCESS - all records are in order\n");
        }
        fflush(stdout);
    }
    return total->unordered ? 1 : 0;
}

enum { OPT_FORMAT = 256, OPT_HELP, OPT_VERSION, OPT_LOCAL };

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort-validate");
    static const struct option opts[] = {{"format", required_argument, NULL, OPT_FORMAT},
                                         {"local-inputs", no_argument, NULL, OPT_LOCAL},
                                         {"reverse", no_argument, NULL, 'r'},
                                         {"unique", no_argument, NULL, 'u'},
                                         {"stable", no_argument, NULL, 's'},
                                         DSORT_CLI_KEY_LONG_OPTIONS,
                                         {"help", no_argument, NULL, OPT_HELP},
                                         {"version", no_argument, NULL, OPT_VERSION},
                                         {NULL, 0, NULL, 0}};
    struct dsort_format fmt;
    struct dsort_order ord = {0, 0, 0};
    struct dsort_error err = {0};
    dsort_format_gensort(&fmt);
    int ch, local = 0, lines = 0, key_opts = 0, stable = 0;
    static struct dsort_keys keys;
    dsort_keys_init(&keys);
    unsigned char eol = '\n';
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":rus" DSORT_CLI_KEY_LETTERS, opts, NULL)) != -1) {
        int kr = dsort_cli_key_option(&c, &keys, ch, optarg, &eol);
        if (kr < 0)
            return dsort_cli_finish(2);
        if (kr > 0) {
            key_opts = 1;
            continue;
        }
        switch (ch) {
        case OPT_FORMAT:
            lines = strcmp(optarg, "lines") == 0;
            if (dsort_format_parse(lines ? "fixed:1:0:1" : optarg, &fmt, &err))
                return dsort_cli_finish(dsort_cli_usage_error(&c, "%s", err.msg));
            break;
        case 's':
            stable = 1;
            break;
        case 'r':
            ord.reverse = 1;
            break;
        case 'u':
            ord.unique = 1;
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
                printf("dsort-validate %s\n", DSORT_VERSION);
            return dsort_cli_finish(0);
        case ':':
            return dsort_cli_finish(
                dsort_cli_usage_error(&c, "option '%s' requires an argument", argv[optind - 1]));
        default:
            return dsort_cli_finish(
                dsort_cli_usage_error(&c, "unrecognized option '%s'", argv[optind - 1]));
        }
    }
    if (optind == argc)
        return dsort_cli_finish(dsort_cli_usage_error(&c, "no input"));
    if (!lines && (key_opts || stable))
        return dsort_cli_finish(
            dsort_cli_usage_error(&c, "-s, -k, -t, -z and -bdfghiMnV go with --format lines"));
    if (lines) {
        if (local)
            return dsort_cli_finish(
                dsort_cli_usage_error(&c, "--local-inputs does not take --format lines"));
        if (ord.reverse && dsort_keys_set_global(&keys, 'r', &err))
            return dsort_cli_finish(dsort_cli_usage_error(&c, "%s", err.msg));
        keys.stable = stable;
        keys.unique = ord.unique;
        if (dsort_keys_finish(&keys, &err))
            return dsort_cli_finish(dsort_cli_usage_error(&c, "%s", err.msg));
    }
    enum dsort_status st = DSORT_OK;
    if (local) {
        struct dsort_vsum total;
        if ((st = dsort_comm_agree(&c, dsort_vsum_init(&total, &fmt, &err), &err)))
            return dsort_cli_finish(2);
        st = dsort_check_local(&c, argv + optind, (size_t)(argc - optind), &fmt, &ord,
                               (size_t)16 << 20, &total, NULL, &err);
        int code = st ? 2 : report(&c, &total);
        dsort_vsum_destroy(&total);
        return dsort_cli_finish(code);
    }
    /* A directory stands for its part-* files in name order (the output of dsort -O). */
    struct dsort_inputs in = {0};
    st = dsort_inputs_open_ex(&in, argv + optind, (size_t)(argc - optind), &fmt,
                              DSORT_INPUTS_EXPAND_DIRS, NULL, &err);
    for (int i = optind; i < argc && !st; i++) {
        struct stat sb;
        size_t k = 0;
        while (k < in.count && in.files[k].arg != (size_t)(i - optind))
            k++;
        if (k == in.count && !stat(argv[i], &sb) && S_ISDIR(sb.st_mode))
            st = DSORT_ERR(&err, DSORT_EINVAL, 0, "directory '%s' has no part-* files", argv[i]);
    }
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_inputs_destroy(&in);
        return dsort_cli_finish(2);
    }
    if (lines) {
        int code = dsort_lines_validate(&c, &in, &keys, eol);
        dsort_inputs_destroy(&in);
        return dsort_cli_finish(code);
    }
    struct dsort_vsum total;
    st = dsort_vsum_init(&total, &fmt, &err);
    if ((st = dsort_comm_agree(&c, st, &err)))
        return dsort_cli_finish(2);
    st = dsort_check_inputs(&c, &in, &fmt, &ord, (size_t)16 << 20, &total, &err);
    int code = st ? 2 : report(&c, &total);
    dsort_vsum_destroy(&total);
    dsort_inputs_destroy(&in);
    return dsort_cli_finish(code);
}
