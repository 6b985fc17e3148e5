/* dsort - distributed sort of fixed-size records: mpirun -n N dsort [OPTIONS] INPUT... -o FILE
 *
 * This file holds the command line, the choice of pipeline and the report; the pipelines are
 * in job_mem.c (the data fits the ranks' memory) and job_ext.c (it does not). See job.h and
 * docs/design.md.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "gnuopts.h"
#include "clock.h"
#include "exchange.h"
#include "job.h"
#include "keys.h"
#include "mem.h"
#include "tempdir.h"

#define DEFAULT_BLOCK ((uint64_t)4 << 20)

enum {
    OPT_FORMAT = 256,
    OPT_STATS,
    OPT_CHUNK,
    OPT_HELP,
    OPT_VERSION,
    OPT_VERIFY,
    OPT_NO_DIRECT,
    OPT_BLOCK,
    OPT_OUT_OF_CORE,
    OPT_LOCAL_INPUTS,
    OPT_LOCAL_OUTPUT,
    OPT_PLAN,
    OPT_JSON,
    OPT_STREAMS,
    OPT_BIND,
    OPT_ONE_STREAM,
    OPT_CHECK,
    OPT_PARALLEL,
    OPT_FILES0_FROM
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"output-dir", required_argument, NULL, 'O'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"reverse", no_argument, NULL, 'r'},
    {"unique", no_argument, NULL, 'u'},
    {"stable", no_argument, NULL, 's'},
    {"check", optional_argument, NULL, OPT_CHECK},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"files0-from", required_argument, NULL, OPT_FILES0_FROM},
    DSORT_CLI_KEY_LONG_OPTIONS,
    {"memory", required_argument, NULL, 'S'},
    {"buffer-size", required_argument, NULL, 'S'},
    {"temp-dir", required_argument, NULL, 'T'},
    {"temporary-directory", required_argument, NULL, 'T'},
    {"block-size", required_argument, NULL, OPT_BLOCK},
    {"out-of-core", no_argument, NULL, OPT_OUT_OF_CORE},
    {"local-inputs", no_argument, NULL, OPT_LOCAL_INPUTS},
    {"local-output", no_argument, NULL, OPT_LOCAL_OUTPUT},
    {"plan", no_argument, NULL, OPT_PLAN},
    {"json", no_argument, NULL, OPT_JSON},
    {"streams-per-device", required_argument, NULL, OPT_STREAMS},
    {"bind", no_argument, NULL, OPT_BIND},
    {"one-stream", no_argument, NULL, OPT_ONE_STREAM},
    {"verbose", no_argument, NULL, 'v'},
    {"stats", required_argument, NULL, OPT_STATS},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {"no-direct", no_argument, NULL, OPT_NO_DIRECT},
    {"exchange-chunk", required_argument, NULL, OPT_CHUNK},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0}};

static void usage(void)
{
    printf("Usage: mpirun -n N dsort [OPTION]... INPUT... (-o FILE | -O DIR)\n"
           "       mpirun -n N dsort -c [OPTION]... INPUT...\n"
           "Sort fixed-size binary records (default: gensort's 100-byte records with a\n"
           "10-byte key), or text lines as LC_ALL=C sort does, across the ranks of an MPI job.\n\n"
           "Output:\n"
           "  -o, --output=FILE       write one sorted file (on a file system all ranks see)\n"
           "  -O, --output-dir=DIR    write DIR/part-00000 ... (one per rank, in key order)\n"
           "                          and the manifest DIR/_SUCCESS\n"
           "Records and order:\n"
           "      --format=FMT        gensort (default), fixed:SIZE:KEYOFF:KEYLEN, or lines\n"
           "                          (text lines, ordered as LC_ALL=C sort orders them)\n"
           "  -r, --reverse           descending order\n"
           "  -u, --unique            keep only the first record of each run of equal keys\n"
           "  -s, --stable            equal keys keep their input order (no last-resort\n"
           "                          comparison of whole records)\n"
           "  -c, --check, --check=diagnose-first\n"
           "                          check that the input is sorted; exit 1 if not\n"
           "  -C, --check=quiet, --check=silent\n"
           "                          like -c, but do not report the first disorder\n"
           "      --files0-from=F     read the input names from file F, each ended by NUL\n"
           "                          (instead of INPUT operands)\n"
           "Lines (--format lines), as in GNU sort:\n"
           "  -z, --zero-terminated   lines end with NUL, not newline\n"
           "  -t, --field-separator=SEP  fields are separated by SEP, not by blanks\n"
           "  -k, --key=POS1[,POS2]   a sort key: F[.C][OPTS], OPTS from bdfghiMnrV\n"
           "  -b -d -f -i -n -g -h -V -M  ignore leading blanks, dictionary order, fold case,\n"
           "                          ignore nonprinting, numeric, general numeric, human\n"
           "                          numeric, version, month order (for keys without options)\n"
           "      --sort=WORD         general-numeric (-g), human-numeric (-h), month (-M),\n"
           "                          numeric (-n) or version (-V); random (-R) is refused\n"
           "Resources:\n"
           "  -S, --memory=SIZE       memory budget per rank (K, M, G, T suffixes, or N%%\n"
           "                          of the node's memory shared by its ranks)\n"
           "  -T, --temp-dir=DIR      where to spill sorted runs when the data does not fit\n"
           "                          (repeatable; default $TMPDIR, then /tmp)\n"
           "      --block-size=SIZE   I/O block for spilled runs and merges (default 4M)\n"
           "      --out-of-core       spill runs even when the data would fit in memory\n"
           "      --exchange-chunk=SIZE  largest message of the exchange (default 256M)\n"
           "      --parallel=N        accepted for GNU sort's sake and ignored: dsort's\n"
           "                          parallelism is its ranks (mpirun -n)\n"
           "      --no-direct         write output through the page cache (default: O_DIRECT\n"
           "                          where the file system supports it)\n"
           "Devices:\n"
           "      --plan [--json]     print what dsort would do (devices, reads per rank and\n"
           "                          thread, spill dirs) per node, without sorting\n"
           "      --streams-per-device=N  concurrent readers of one SSD/NVMe (default 4;\n"
           "                          rotational disks and unknown devices get 1)\n"
           "      --bind              bind each rank near its devices' NUMA node (unless\n"
           "                          mpirun or srun bound it already)\n"
           "      --one-stream        read each rank's share with one stream in input order,\n"
           "                          ignoring devices (to measure what device-parallel\n"
           "                          reading gains)\n"
           "Node-local data:\n"
           "      --local-inputs      each node reads the INPUTs it has (same paths, other\n"
           "                          data per node; a directory means its part-* files)\n"
           "      --local-output      -O DIR is on node-local disks: each node writes the\n"
           "                          parts of its ranks to its own DIR\n"
           "Reports:\n"
           "      --verify            checksum input and output and compare them\n"
           "  -v, --verbose           rank 0 prints a summary: phases, throughput, balance\n"
           "      --stats=FILE        write per-rank figures as JSON\n"
           "      --help              display this help and exit\n"
           "      --version           output version information and exit\n\n"
           "Exit status: 0 success, 1 -c found disorder, 2 error.\n");
}

/* Returns -1 to go on, or an exit code. */
static int parse_options(const struct dsort_comm *c, int argc, char **argv,
                         struct dsort_job_options *o, struct dsort_gnuopts *x, char ***temp_store)
{
    memset(x, 0, sizeof *x);
    memset(o, 0, sizeof *o);
    dsort_format_gensort(&o->fmt);
    o->chunk = DSORT_EXCHANGE_CHUNK;
    o->block = DEFAULT_BLOCK;
    o->streams_per_device = 4;
    char **temps = calloc((size_t)argc + 2, sizeof *temps);
    *temp_store = temps;
    if (!temps)
        return dsort_cli_usage_error(c, "out of memory");
    struct dsort_error err = {0};
    int ch;
    opterr = 0;
    static struct dsort_keys keys;
    dsort_keys_init(&keys);
    o->keys = &keys;
    o->eol = '\n';
    int key_opts = 0;
    while ((ch = getopt_long(argc, argv, ":o:O:ruscCvS:T:" DSORT_CLI_KEY_LETTERS, long_opts,
                             NULL)) != -1) {
        int kr = dsort_cli_key_option(c, &keys, ch, optarg, &o->eol);
        if (kr < 0)
            return 2;
        if (kr > 0) {
            key_opts = 1;
            continue;
        }
        switch (ch) {
        case 'o':
            /* GNU sort's rule: a second -o is an error, not a silent choice of the last. */
            if (o->output && strcmp(o->output, optarg))
                return dsort_cli_usage_error(c, "multiple output files specified");
            o->output = optarg;
            break;
        case 'O':
            if (o->output_dir && strcmp(o->output_dir, optarg))
                return dsort_cli_usage_error(c, "multiple output directories specified");
            o->output_dir = optarg;
            break;
        case OPT_FORMAT:
            o->lines = strcmp(optarg, "lines") == 0;
            if (o->lines) {
                /* the inputs are read as bytes; lines are found in them */
                if (dsort_format_parse("fixed:1:0:1", &o->fmt, &err))
                    return dsort_cli_usage_error(c, "%s", err.msg);
                snprintf(o->fmt.name, sizeof o->fmt.name, "lines");
            } else if (dsort_format_parse(optarg, &o->fmt, &err))
                return dsort_cli_usage_error(c, "%s", err.msg);
            break;
        case 'r':
            o->ord.reverse = 1;
            break;
        case 'u':
            o->ord.unique = 1;
            break;
        case 's':
            o->ord.stable = 1;
            break;
        case 'c':
        case 'C':
        case OPT_CHECK: {
            static const char *const words[] = {"quiet", "silent", "diagnose-first", NULL};
            int mode = ch != OPT_CHECK ? ch
                       : optarg        ? dsort_cli_argmatch(c, "--check", optarg, words, "CCc",
                                                            "  - 'quiet', 'silent'\n  - 'diagnose-first'")
                                       : 'c';
            if (!mode)
                return 2;
            if (o->check && x->check_mode != mode)
                return dsort_cli_usage_error(c, "options '-cC' are incompatible");
            o->check = 1;
            x->check_mode = mode;
            break;
        }
        case OPT_PARALLEL:
            if (dsort_gnuopts_parallel(c, optarg))
                return 2;
            x->parallel = optarg;
            break;
        case OPT_FILES0_FROM:
            /* dsort reads no standard input: "-" would be a file named "-" */
            if (!strcmp(optarg, "-"))
                return dsort_cli_usage_error(
                    c, "--files0-from=-: dsort does not read standard input; name a file");
            x->files0_from = optarg; /* as in GNU, the last one counts */
            break;
        case 'S': {
            struct dsort_budget b;
            if (dsort_budget_resolve(optarg, dsort_mem_physical(), c->node_size, &b, &err))
                return dsort_cli_usage_error(c, "%s", err.msg);
            o->memory_text = optarg;
            break;
        }
        case 'T':
            if (!*optarg)
                return dsort_cli_usage_error(c, "empty --temp-dir");
            temps[o->ntemp++] = optarg;
            break;
        case OPT_BLOCK:
            if (dsort_mem_parse_size(optarg, &o->block, &err) || o->block < 4096 ||
                o->block > ((uint64_t)1 << 30))
                return dsort_cli_usage_error(c, "invalid --block-size '%s' (4K to 1G)", optarg);
            break;
        case OPT_OUT_OF_CORE:
            o->force_external = 1;
            break;
        case OPT_LOCAL_INPUTS:
            o->local_inputs = 1;
            break;
        case OPT_LOCAL_OUTPUT:
            o->local_output = 1;
            break;
        case OPT_PLAN:
            o->plan = 1;
            break;
        case OPT_JSON:
            o->plan_json = 1;
            break;
        case OPT_BIND:
            o->bind = 1;
            break;
        case OPT_ONE_STREAM:
            o->one_stream = 1;
            break;
        case OPT_STREAMS: {
            uint64_t v;
            if (dsort_cli_parse_u64(optarg, &v) || v < 1 || v > 1024)
                return dsort_cli_usage_error(c, "invalid --streams-per-device '%s' (1 to 1024)",
                                             optarg);
            o->streams_per_device = (uint32_t)v;
            break;
        }
        case 'v':
            o->verbose = 1;
            break;
        case OPT_STATS:
            o->stats = optarg;
            break;
        case OPT_VERIFY:
            o->verify = 1;
            break;
        case OPT_NO_DIRECT:
            o->no_direct = 1;
            break;
        case OPT_CHUNK:
            if (dsort_mem_parse_size(optarg, &o->chunk, &err) || o->chunk == 0 ||
                o->chunk > (uint64_t)1 << 30)
                return dsort_cli_usage_error(c, "invalid --exchange-chunk '%s' (1 byte to 1G)",
                                             optarg);
            break;
        case OPT_HELP:
            if (c->rank == 0)
                usage();
            return 0;
        case OPT_VERSION:
            if (c->rank == 0)
                printf("dsort %s\n", DSORT_VERSION);
            return 0;
        case ':':
            return dsort_cli_usage_error(c, "option '%s' requires an argument", argv[optind - 1]);
        default:
            return dsort_cli_usage_error(c, "unrecognized option '%s'", argv[optind - 1]);
        }
    }
    if (o->ntemp == 0) {
        const char *t = getenv("TMPDIR");
        temps[o->ntemp++] = (char *)(t && *t ? t : "/tmp");
    }
    o->temp_dirs = temps;
    o->inputs = argv + optind;
    o->ninputs = (size_t)(argc - optind);
    if (x->files0_from && o->ninputs)
        return dsort_cli_usage_error(
            c, "extra operand '%s'\nfile operands cannot be combined with --files0-from",
            argv[optind]);
    if (o->ninputs == 0 && !x->files0_from)
        return dsort_cli_usage_error(c, "no input files");
    if (o->plan_json && !o->plan)
        return dsort_cli_usage_error(c, "--json goes with --plan");
    if (o->check && o->output) /* GNU's words */
        return dsort_cli_usage_error(c, "options '-%co' are incompatible", x->check_mode);
    if (o->check && o->output_dir)
        return dsort_cli_usage_error(c, "-%c does not take an output", x->check_mode);
    if (!o->check && !o->plan && !o->output == !o->output_dir)
        return dsort_cli_usage_error(c, "give exactly one of -o FILE and -O DIR");
    if (o->check && o->local_inputs)
        return dsort_cli_usage_error(c, "-%c does not take --local-inputs (use dsort-validate)",
                                     x->check_mode);
    if (o->local_output && !o->output_dir)
        return dsort_cli_usage_error(c, "--local-output goes with -O DIR");
    if (!o->lines && key_opts)
        return dsort_cli_usage_error(c, "-k, -t, -z and -bdfghiMnV go with --format lines");
    if (o->lines) {
        if (o->check)
            return dsort_cli_usage_error(
                c, "-%c with --format lines is not supported; use dsort-validate --format lines",
                x->check_mode);
        if (o->ord.reverse && dsort_keys_set_global(&keys, 'r', &err))
            return dsort_cli_usage_error(c, "%s", err.msg);
        keys.stable = o->ord.stable;
        keys.unique = o->ord.unique;
        if (dsort_keys_finish(&keys, &err))
            return dsort_cli_usage_error(c, "%s", err.msg);
    }
    /* Last: the only check that reads a file, once every usage error has had its say. */
    if (x->files0_from) {
        int code = dsort_gnuopts_files0(c, x, &o->ninputs);
        if (code >= 0)
            return code;
        o->inputs = x->files0_names;
        /* GNU would overwrite the list; dsort keeps every file it reads, the list too */
        const char *clash = dsort_gnuopts_same_file(x->files0_from, o->output)  ? o->output
                            : dsort_gnuopts_same_file(x->files0_from, o->stats) ? o->stats
                                                                                : NULL;
        if (clash)
            return dsort_cli_usage_error(c, "'%s' is the --files0-from list; write elsewhere",
                                         clash);
    }
    if (x->parallel && o->verbose && c->rank == 0)
        fprintf(stderr,
                "%s: --parallel=%s ignored: dsort's parallelism is its %d rank%s (mpirun -n)\n",
                c->prog, x->parallel, c->size, c->size == 1 ? "" : "s");
    return -1;
}

static void json_phases(FILE *f, const char *name, const double *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %.6f", p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

static void json_bytes(FILE *f, const char *name, const uint64_t *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %" PRIu64, p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

/* Rank 0: write the stats file up to (not including) the plan and the closing brace. */
static FILE *write_stats(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_job_stats *all, uint64_t recs, uint64_t bytes,
                         double total_time, double balance)
{
    FILE *f = fopen(o->stats, "w");
    if (!f) {
        dsort_comm_print(c, "cannot write stats '%s': %s", o->stats, strerror(errno));
        return NULL;
    }
    fprintf(f, "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"format\": \"%s\",\n",
            DSORT_VERSION, c->size, o->fmt.name);
    fprintf(f,
            "  \"records\": %" PRIu64 ",\n  \"bytes\": %" PRIu64
            ",\n  \"seconds\": %.6f,\n  \"balance\": %.6f,\n  \"out_of_core\": %s,\n"
            "  \"per_rank\": [\n",
            recs, bytes, total_time, balance, all[0].external ? "true" : "false");
    for (int r = 0; r < c->size; r++) {
        const struct dsort_job_stats *s = &all[r];
        fprintf(f, "    {\"rank\": %d, \"host\": \"%s\", ", r, s->host);
        json_phases(f, "phases", s->t);
        fprintf(f, ", ");
        json_bytes(f, "io_read_bytes", s->io_read);
        fprintf(f, ", ");
        json_bytes(f, "io_write_bytes", s->io_write);
        fprintf(f, ", ");
        json_bytes(f, "page_faults", s->faults);
        fprintf(f,
                ", \"records_in\": %" PRIu64 ", \"records_out\": %" PRIu64
                ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                ", \"bytes_sent\": %" PRIu64 ", \"bytes_received\": %" PRIu64
                ", \"memory_budget\": %" PRIu64 ", \"memory_budget_reason\": \"%s\""
                ", \"memory_needed\": %" PRIu64 ", \"runs\": %" PRIu64
                ", \"merge_passes\": %" PRIu64 ", \"spill_bytes\": %" PRIu64
                ", \"extra_merge_bytes\": %" PRIu64 ", \"fan_in\": %d"
                ", \"extra_pass_reason\": \"%s\""
                ", \"splitter_rounds\": %d, \"exchange_rounds\": %d}%s\n",
                s->records_in, s->records_out, s->bytes_read, s->bytes_written, s->bytes_sent,
                s->bytes_received, s->budget, s->budget_why, s->needed, s->runs, s->merge_passes,
                s->spill_bytes, s->extra_merge_bytes, s->fan_in, s->merge_why, s->splitter_rounds,
                s->exchange_rounds, r + 1 < c->size ? "," : "");
    }
    fprintf(f, "  ],\n  \"plan\": ");
    return f;
}

static void report(const struct dsort_comm *c, const struct dsort_job_options *o,
                   const struct dsort_job_stats *mine, double total_time)
{
    if (o->verbose && dsort_job_topo_token_note(o->topo)) /* every rank that had one */
        dsort_comm_print(c, "topology: %s", dsort_job_topo_token_note(o->topo));
    struct dsort_job_stats *all = c->rank == 0 ? calloc((size_t)c->size, sizeof *all) : NULL;
    MPI_Gather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0, c->comm);
    if (c->rank != 0 || !all) {
        if (o->stats) /* the plan with its figures: collective */
            dsort_job_topo_write_stats(c, o->topo, NULL);
        return;
    }
    uint64_t recs = 0, maxout = 0, outs = 0, rd = 0, wr = 0;
    double tmax[PH_COUNT] = {0};
    for (int r = 0; r < c->size; r++) {
        recs += all[r].records_in;
        outs += all[r].records_out;
        maxout = all[r].records_out > maxout ? all[r].records_out : maxout;
        for (int p = 0; p < PH_COUNT; p++) {
            tmax[p] = all[r].t[p] > tmax[p] ? all[r].t[p] : tmax[p];
            rd += all[r].io_read[p];
            wr += all[r].io_write[p];
        }
    }
    uint64_t bytes = recs * o->fmt.rec_size;
    if (o->lines) { /* records are lines: count the bytes read */
        bytes = 0;
        for (int r = 0; r < c->size; r++)
            bytes += all[r].bytes_read;
    }
    double avg = c->size ? (double)outs / c->size : 0, balance = avg > 0 ? maxout / avg : 1.0;
    if (o->verbose) {
        char b1[32], b2[32];
        fprintf(stderr, "dsort: %d ranks, format %s, %s\n", c->size, o->fmt.name,
                mine->external ? "out of core" : "in memory");
        fprintf(stderr, "dsort: records %" PRIu64 ", bytes %" PRIu64 " (%s)\n", recs, bytes,
                dsort_mem_format(bytes, b1, sizeof b1));
        fprintf(stderr, "dsort: memory budget per rank %s (%s); in-memory sort needs %s\n",
                dsort_mem_format(mine->budget, b1, sizeof b1), mine->budget_why,
                dsort_mem_format(mine->needed, b2, sizeof b2));
        if (mine->external)
            fprintf(stderr,
                    "dsort: rank 0 spilled %" PRIu64 " runs (%s), fan-in %d, %" PRIu64
                    " extra merge passes\n",
                    mine->runs, dsort_mem_format(mine->spill_bytes, b1, sizeof b1), mine->fan_in,
                    mine->merge_passes);
        if (mine->merge_why[0])
            fprintf(stderr, "dsort: rank 0 took an extra merge pass: %s\n", mine->merge_why);
        fprintf(stderr, "dsort: phase seconds (slowest rank):");
        for (int p = 0; p < PH_COUNT; p++)
            if (tmax[p] > 0)
                fprintf(stderr, " %s %.3f", dsort_phase_names[p], tmax[p]);
        fprintf(stderr, "\ndsort: total %.3f s, %.1f MB/s; I/O %.2f x data read, %.2f x written\n",
                total_time, total_time > 0 ? (double)bytes / total_time / 1e6 : 0.0,
                bytes ? (double)rd / (double)bytes : 0.0, bytes ? (double)wr / (double)bytes : 0.0);
        fprintf(stderr, "dsort: balance max/avg %.4f (max %" PRIu64 " records, avg %.1f)\n",
                balance, maxout, avg);
    }
    if (o->verbose && dsort_job_topo_note(o->topo))
        fprintf(stderr, "dsort: topology: %s\n", dsort_job_topo_note(o->topo));
    if (o->stats) {
        FILE *f = write_stats(c, o, all, recs, bytes, total_time, balance);
        dsort_job_topo_write_stats(c, o->topo, f);
        if (f) {
            fprintf(f, "\n}\n");
            if (fclose(f))
                dsort_comm_print(c, "cannot write stats '%s': %s", o->stats, strerror(errno));
        }
    }
    free(all);
}

static int run_check(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_gnuopts *x, const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    struct dsort_vsum total;
    /* Like sort -c: equal keys must also be in last-resort (whole record) order. */
    enum dsort_status st =
        dsort_vsum_init_ex(&total, &o->fmt, dsort_order_last_resort(&o->ord), &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        return 2;
    st = dsort_check_inputs(c, in, &o->fmt, &o->ord, (size_t)16 << 20, &total, &err);
    int code = st ? 2 : total.unordered ? 1 : 0;
    if (!st && total.unordered && c->rank == 0 && x->check_mode != 'C') {
        /* Name the file and the record within it, as sort -c names file and line. */
        uint64_t g = total.first_unordered;
        for (size_t i = 0; i < in->count; i++)
            if (g < in->files[i].first + in->files[i].records) {
                fprintf(stderr, "%s: %s:record %" PRIu64 ": disorder\n", c->prog, in->files[i].path,
                        g - in->files[i].first);
                break;
            }
    }
    dsort_vsum_destroy(&total);
    return code;
}

/* Sweep dead jobs' temp directories (rank 0 of each node), and say so under -v. */
static void sweep(const struct dsort_comm *c, const struct dsort_job_options *o)
{
    if (c->node_rank != 0)
        return;
    struct dsort_sweep_report rep;
    dsort_tempdirs_sweep(o->temp_dirs, o->ntemp, &rep);
    if (rep.removed)
        dsort_comm_print(c, "removed %u temp director%s left by dead dsort jobs", rep.removed,
                         rep.removed == 1 ? "y" : "ies");
    if (o->verbose && rep.foreign)
        dsort_comm_print(c, "%u dsort temp directories of other hosts left alone", rep.foreign);
    if (o->verbose && rep.unknown + rep.unsafe)
        dsort_comm_print(c,
                         "%u dsort-like temp entries left alone: %u whose owner is not provably "
                         "dead (another boot, container or an old owner file), %u not ours to "
                         "judge (a symbolic link, another user's, or not mode 0700)",
                         rep.unknown + rep.unsafe, rep.unknown, rep.unsafe);
}

/* The canonical name of path (which need not exist): its directory resolved by realpath,
 * then its last component. The path itself if its directory cannot be resolved. */
static void canonical(const char *path, char *buf, size_t len)
{
    char a[4096], b[4096], dir[PATH_MAX];
    snprintf(a, sizeof a, "%s", path);
    snprintf(b, sizeof b, "%s", path);
    const char *base = basename(b);
    if (!realpath(dirname(a), dir) || !strcmp(base, "/") || !strcmp(base, ".") ||
        !strcmp(base, "..")) {
        if (!realpath(path, buf))
            snprintf(buf, len, "%s", path);
        return;
    }
    snprintf(buf, len, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", base);
}

/* Do a and b name the same file (the same inode if both exist, else the same canonical
 * name)? */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!stat(a, &sa) && !stat(b, &sb))
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[4096], cb[4096];
    canonical(a, ca, sizeof ca);
    canonical(b, cb, sizeof cb);
    return !strcmp(ca, cb);
}

/* Is path dir itself or inside it (by canonical names)? */
static int inside(const char *path, const char *dir)
{
    char cp[4096], cd[4096];
    canonical(path, cp, sizeof cp);
    canonical(dir, cd, sizeof cd);
    size_t n = strlen(cd);
    return !strncmp(cp, cd, n) && (cp[n] == '\0' || cp[n] == '/' || !strcmp(cd, "/"));
}

/* Every file dsort writes (the output, --stats, the temp dirs' contents) must be none of the
 * inputs, none of each other, and not inside -O DIR: checked before anything is read, so a
 * careless command line cannot overwrite an input with JSON or a sorted file. */
static enum dsort_status check_written(const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, struct dsort_error *err)
{
    if (o->output && dsort_inputs_contains(in, o->output))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "output '%s' is also an input; write to another file and rename it",
                         o->output);
    if (o->stats) {
        if (dsort_inputs_contains(in, o->stats))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "--stats file '%s' is also an input", o->stats);
        struct stat sb;
        if (!stat(o->stats, &sb) && !S_ISREG(sb.st_mode) &&
            !(S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 1 && minor(sb.st_rdev) == 3))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--stats file '%s' is not a regular file (nor /dev/null)", o->stats);
        if (o->output && same_file(o->stats, o->output))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "--stats file '%s' is also the output",
                             o->stats);
        if (o->output_dir && inside(o->stats, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--stats file '%s' is inside the output directory '%s'", o->stats,
                             o->output_dir);
    }
    for (size_t i = 0; o->output_dir && i < o->ntemp; i++)
        if (inside(o->temp_dirs[i], o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "temp directory '%s' is inside the output directory '%s'",
                             o->temp_dirs[i], o->output_dir);
    for (size_t i = 0; o->output_dir && i < in->count; i++)
        if (inside(in->files[i].path, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "input '%s' is inside the output directory '%s'",
                             in->files[i].path, o->output_dir);
    return DSORT_OK;
}

static int run_sort(const struct dsort_comm *c, struct dsort_job_options *o,
                    const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    struct dsort_job_stats stats;
    memset(&stats, 0, sizeof stats);
    snprintf(stats.host, sizeof stats.host, "%s", c->host);
    double t0 = dsort_clock_now();
    struct dsort_budget b;
    enum dsort_status st =
        dsort_budget_resolve(o->memory_text, dsort_mem_physical(), c->node_size, &b, &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        return 2;
    stats.budget = b.bytes;
    snprintf(stats.budget_why, sizeof stats.budget_why, "%s", b.why);
    struct dsort_share sh;
    if (dsort_job_share(c, o, in, &sh, &err))
        return 2;
    if ((st = dsort_comm_agree(c, dsort_job_topo_create(c, o, in, &o->topo, &err), &err)))
        return 2;
    if (o->plan) {
        int code = dsort_job_topo_print_plan(c, o->topo, o->plan_json);
        dsort_job_topo_destroy(o->topo);
        return code;
    }
    if (o->bind)
        dsort_job_topo_bind(o->topo, c, o->verbose);
    int code;
    sweep(c, o);
    if (o->lines) { /* lines choose between memory and spilling themselves */
        code = dsort_job_sort_lines(c, o, in, &sh, &stats);
    } else {
        stats.needed = dsort_job_mem_needed(&o->fmt, sh.n, c->size);
        /* Every rank takes the same path: out of core if any rank's share does not fit. */
        int fits = stats.needed <= stats.budget && !o->force_external;
        stats.external = !dsort_comm_all_ok(c, fits);
        code = stats.external ? dsort_job_sort_external(c, o, in, &sh, &stats)
                              : dsort_job_sort_memory(c, o, in, &sh, &stats);
    }
    if (code == 0)
        report(c, o, &stats, dsort_clock_now() - t0);
    dsort_job_topo_destroy(o->topo);
    o->topo = NULL;
    return code;
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort");
    struct dsort_job_options o;
    struct dsort_gnuopts x;
    char **temps = NULL;
    int code = parse_options(&c, argc, argv, &o, &x, &temps);
    if (code >= 0) {
        dsort_gnuopts_free(&x);
        free(temps);
        return dsort_cli_finish(code);
    }
    struct dsort_error err = {0};
    struct dsort_inputs in;
    int *found = calloc(o.ninputs + 1, sizeof *found),
        *anywhere = calloc(o.ninputs + 1, sizeof *found);
    enum dsort_status st =
        !found || !anywhere
            ? DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory")
            : dsort_inputs_open_ex(
                  &in, o.inputs, o.ninputs, &o.fmt,
                  o.local_inputs ? DSORT_INPUTS_SKIP_MISSING | DSORT_INPUTS_EXPAND_DIRS : 0, found,
                  &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        free(found);
        free(anywhere);
        dsort_gnuopts_free(&x);
        free(temps);
        return dsort_cli_finish(2);
    }
    /* Node-local inputs: every path must exist on some node. */
    MPI_Allreduce(found, anywhere, (int)o.ninputs, MPI_INT, MPI_LOR, c.comm);
    for (size_t i = 0; i < o.ninputs && !st; i++)
        if (!anywhere[i])
            st = DSORT_ERR(&err, DSORT_EINVAL, 0, "input '%s' exists on no node", o.inputs[i]);
    free(found);
    free(anywhere);
    if (!st && !o.check)
        st = check_written(&o, &in, &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_inputs_destroy(&in);
        dsort_gnuopts_free(&x);
        free(temps);
        return dsort_cli_finish(2);
    }
    code = o.check ? run_check(&c, &o, &x, &in) : run_sort(&c, &o, &in);
    dsort_inputs_destroy(&in);
    dsort_gnuopts_free(&x);
    free(temps);
    return dsort_cli_finish(code);
}
