/* dsort_opts.c - dsort's command line: the options, --help and --version (dsort_opts.h). */
#include "dsort_opts.h"

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exchange.h"
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
    OPT_PROGRESS,
    OPT_CHECKPOINT,
    OPT_STOP_AFTER,
    OPT_RESUME,
    OPT_KEEP_CKPT,
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
    OPT_NO_MAP,
    OPT_CHECK,
    OPT_PARALLEL,
    OPT_DEBUG,
    OPT_FILES0_FROM,
    OPT_BATCH_SIZE,
    OPT_COMPRESS,
    OPT_EXCHANGE
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"output-dir", required_argument, NULL, 'O'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"reverse", no_argument, NULL, 'r'},
    {"unique", no_argument, NULL, 'u'},
    {"stable", no_argument, NULL, 's'},
    {"merge", no_argument, NULL, 'm'},
    {"debug", no_argument, NULL, OPT_DEBUG},
    {"check", optional_argument, NULL, OPT_CHECK},
    {"parallel", required_argument, NULL, OPT_PARALLEL},
    {"files0-from", required_argument, NULL, OPT_FILES0_FROM},
    {"batch-size", required_argument, NULL, OPT_BATCH_SIZE},
    {"compress-program", required_argument, NULL, OPT_COMPRESS},
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
    {"no-map", no_argument, NULL, OPT_NO_MAP},
    {"verbose", no_argument, NULL, 'v'},
    {"stats", required_argument, NULL, OPT_STATS},
    {"verify", no_argument, NULL, OPT_VERIFY},
    {"progress", optional_argument, NULL, OPT_PROGRESS},
    {"checkpoint", no_argument, NULL, OPT_CHECKPOINT},
    {"stop-after", required_argument, NULL, OPT_STOP_AFTER},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"keep-checkpoint", required_argument, NULL, OPT_KEEP_CKPT},
    {"no-direct", no_argument, NULL, OPT_NO_DIRECT},
    {"exchange-chunk", required_argument, NULL, OPT_CHUNK},
    {"exchange", required_argument, NULL, OPT_EXCHANGE},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0}};

static void usage(void)
{
    printf("Usage: mpirun -n N dsort [OPTION]... [INPUT]... [-o FILE | -O DIR]\n"
           "       mpirun -n N dsort -c [OPTION]... INPUT...\n"
           "Sort fixed-size binary records (default: gensort's 100-byte records with a\n"
           "10-byte key), or text lines as LC_ALL=C sort does, across the ranks of an MPI job.\n\n"
           "With no INPUT, or INPUT -, read standard input (rank 0 copies it to the first\n"
           "temp dir and reads it alone); with neither -o nor -O, write standard output\n"
           "(the ranks' parts go to rank 0 through MPI). For pipelines of modest size.\n"
           "mpirun and srun forward standard output without reporting their own write\n"
           "errors (a full disk): rank 0 checks the file mpirun writes where it can, else\n"
           "says how many records and bytes it handed over. Use -o for output you keep.\n\n"
           "Output:\n"
           "  -o, --output=FILE       write one sorted file (on a file system all ranks see);\n"
           "                          FILE may be an input (sorted in place)\n"
           "  -O, --output-dir=DIR    write DIR/part-00000 ... (one per rank, in key order)\n"
           "                          and the manifest DIR/_SUCCESS\n"
           "Records and order:\n"
           "      --format=FMT        gensort (default), fixed:SIZE:KEYOFF:KEYLEN, or lines\n"
           "                          (text lines, ordered as LC_ALL=C sort orders them)\n"
           "  -r, --reverse           descending order\n"
           "  -u, --unique            keep only the first record of each run of equal keys\n"
           "  -s, --stable            equal keys keep their input order (no last-resort\n"
           "                          comparison of whole records)\n"
           "  -m, --merge             accepted: dsort sorts anyway, so sorted inputs give\n"
           "                          sort -m's output (unsorted ones are sorted too)\n"
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
           "      --debug             annotate the part of each line used to sort (to\n"
           "                          standard output; as GNU sort --debug)\n"
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
           "      --exchange=WAY      auto (default), direct (every rank to every rank) or\n"
           "                          node (two-level: one message per pair of nodes); auto\n"
           "                          takes node only for many ranks and small messages\n"
           "      --parallel=N        accepted for GNU sort's sake and ignored: dsort's\n"
           "                          parallelism is its ranks (mpirun -n)\n"
           "      --batch-size=NMERGE, --compress-program=PROG\n"
           "                          accepted for GNU sort's sake and ignored (see dsort(1))\n"
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
           "      --no-map            in memory, copy the input into memory instead of\n"
           "                          reading it through a mapping (to measure the mapping)\n"
           "Node-local data:\n"
           "      --local-inputs      each node reads the INPUTs it has (same paths, other\n"
           "                          data per node; a directory means its part-* files)\n"
           "      --local-output      -O DIR is on node-local disks: each node writes the\n"
           "                          parts of its ranks to its own DIR\n"
           "Reports:\n"
           "      --verify            checksum input and output and compare them\n"
           "  -v, --verbose           rank 0 prints a summary: phases, throughput, balance\n"
           "      --stats=FILE        write per-rank figures as JSON\n"
           "Stop and resume (out of core):\n"
           "      --checkpoint        keep a checkpoint of every round: SIGUSR1 stops the\n"
           "                          job at the end of a round (exit status 3), SIGTERM\n"
           "                          at once; both keep the runs of the rounds done\n"
           "      --stop-after=N      stop so after round N (for tests and planned stops)\n"
           "      --resume            finish a stopped job: the same command and --resume\n"
           "                          (--checkpoint too)\n"
           "      --keep-checkpoint=T keep dead jobs' checkpoints in -T dirs for T (s, m, h\n"
           "                          or d; default 7d), then the sweep removes them\n"
           "      --progress[=SECS]   rank 0 shows how far the job is: percent of all\n"
           "                          ranks' work, rate and ETA, redrawn on a terminal,\n"
           "                          else a line every SECS seconds (default 5)\n"
           "      --help              display this help and exit\n"
           "      --version           output version information and exit\n\n"
           "Exit status: 0 success, 1 -c found disorder, 2 error, 3 stopped with a\n"
           "checkpoint (--resume finishes it).\n");
}

int dsort_opts_parse(const struct dsort_comm *c, int argc, char **argv, struct dsort_job_options *o,
                     struct dsort_gnuopts *x, char ***temp_store)
{
    memset(x, 0, sizeof *x);
    memset(o, 0, sizeof *o);
    dsort_format_gensort(&o->fmt);
    o->chunk = DSORT_EXCHANGE_CHUNK;
    o->block = DEFAULT_BLOCK;
    o->progress = -1;
    o->streams_per_device = 4;
    o->keep_checkpoint = DSORT_CHECKPOINT_KEEP;
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
    while ((ch = getopt_long(argc, argv, ":o:O:rusmcCvS:T:" DSORT_CLI_KEY_LETTERS, long_opts,
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
            x->format_given = 1;
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
        case OPT_DEBUG:
            x->debug = 1;
            break;
        case 'm': /* accepted: dsort always sorts, and sorted inputs merge to what sort -m writes */
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
        case OPT_BATCH_SIZE:
            if (dsort_gnuopts_batch_size(c, optarg))
                return 2;
            x->batch_size = optarg;
            break;
        case OPT_COMPRESS: /* GNU's check; dsort's spills are not compressed (dsort(1)) */
            if (x->compress && strcmp(x->compress, optarg))
                return dsort_cli_usage_error(c, "multiple compress programs specified");
            x->compress = optarg;
            break;
        case OPT_FILES0_FROM:
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
        case OPT_NO_MAP:
            o->no_map = 1;
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
        case OPT_CHECKPOINT:
            o->checkpoint = 1;
            break;
        case OPT_STOP_AFTER:
            if (dsort_cli_parse_u64(optarg, &o->stop_after) || o->stop_after < 1)
                return dsort_cli_usage_error(c, "invalid --stop-after '%s' (rounds, 1 or more)",
                                             optarg);
            break;
        case OPT_RESUME:
            o->resume = 1;
            o->checkpoint = 1; /* the checkpoint found stays one until the output is done */
            break;
        case OPT_KEEP_CKPT: {
            char *end = NULL;
            double v = strtod(optarg, &end);
            double unit = end && *end == 'd'   ? 86400
                          : end && *end == 'h' ? 3600
                          : end && *end == 'm' ? 60
                                               : 1;
            if (end && (*end == 'd' || *end == 'h' || *end == 'm' || *end == 's'))
                end++;
            if (end == optarg || *end || !(v >= 0 && v * unit <= 10.0 * 366 * 86400))
                return dsort_cli_usage_error(
                    c, "invalid --keep-checkpoint '%s' (a time: N[smhd], at most 10 years)",
                    optarg);
            o->keep_checkpoint = (uint64_t)(v * unit);
            break;
        }
        case OPT_PROGRESS: {
            char *end = NULL;
            o->progress = optarg ? strtod(optarg, &end) : 5.0;
            if (optarg && (end == optarg || *end || !(o->progress >= 0 && o->progress <= 86400)))
                return dsort_cli_usage_error(c, "invalid --progress '%s' (seconds, 0 to 86400)",
                                             optarg);
            break;
        }
        case OPT_NO_DIRECT:
            o->no_direct = 1;
            break;
        case OPT_CHUNK:
            if (dsort_mem_parse_size(optarg, &o->chunk, &err) || o->chunk == 0 ||
                o->chunk > (uint64_t)1 << 30)
                return dsort_cli_usage_error(c, "invalid --exchange-chunk '%s' (1 byte to 1G)",
                                             optarg);
            break;
        case OPT_EXCHANGE:
            if (strcmp(optarg, "auto") == 0)
                o->exchange_kind = DSORT_EXCHANGE_AUTO;
            else if (strcmp(optarg, "direct") == 0)
                o->exchange_kind = DSORT_EXCHANGE_DIRECT;
            else if (strcmp(optarg, "node") == 0)
                o->exchange_kind = DSORT_EXCHANGE_NODE;
            else
                return dsort_cli_usage_error(c, "invalid --exchange '%s' (auto, direct or node)",
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
    if (o->ninputs == 0 && !x->files0_from) { /* as GNU: no INPUT is standard input */
        static char dash[] = "-";
        static char *std_in[] = {dash, NULL};
        o->inputs = std_in;
        o->ninputs = 1;
    }
    for (size_t i = 0; i < o->ninputs && !x->files0_from; i++)
        if (!strcmp(o->inputs[i], "-"))
            x->from_stdin = 1;
    if (x->from_stdin && o->local_inputs)
        return dsort_cli_usage_error(c, "--local-inputs does not go with standard input");
    /* Empty names: GNU's words for -o ''; found now, not at the commit after all the work. */
    if (o->output && !*o->output)
        return dsort_cli_usage_error(c, "open failed: '': No such file or directory");
    if (o->output_dir && !*o->output_dir)
        return dsort_cli_usage_error(c, "-O: the output directory's name is empty");
    if (o->stats && !*o->stats)
        return dsort_cli_usage_error(c, "--stats: the file's name is empty");
    if (o->plan_json && !o->plan)
        return dsort_cli_usage_error(c, "--json goes with --plan");
    if (o->check && o->output) /* GNU's words */
        return dsort_cli_usage_error(c, "options '-%co' are incompatible", x->check_mode);
    if (o->check && o->output_dir)
        return dsort_cli_usage_error(c, "-%c does not take an output", x->check_mode);
    if (o->output && o->output_dir)
        return dsort_cli_usage_error(c, "give one of -o FILE and -O DIR, or neither "
                                        "(standard output)");
    x->to_stdout = !o->check && !o->plan && !o->output && !o->output_dir;
    if (o->check && o->local_inputs)
        return dsort_cli_usage_error(c, "-%c does not take --local-inputs (use dsort-validate)",
                                     x->check_mode);
    if (o->local_output && !o->output_dir)
        return dsort_cli_usage_error(c, "--local-output goes with -O DIR");
    if ((o->resume || o->stop_after || o->checkpoint) && (x->from_stdin || x->to_stdout))
        return dsort_cli_usage_error(c, "--checkpoint, --stop-after and --resume need named "
                                        "inputs and -o or -O (not standard input or output)");
    if (x->debug && (!o->lines || !x->to_stdout))
        return dsort_cli_usage_error(c, "--debug goes with --format lines and standard output "
                                        "(no -o, -O or -c): the annotated lines are not data");
    if ((o->resume || o->stop_after || o->checkpoint) && o->check)
        return dsort_cli_usage_error(c,
                                     "--checkpoint, --stop-after and --resume are for "
                                     "sorting, not -%c",
                                     x->check_mode);
    if (!o->lines && key_opts)
        return dsort_cli_usage_error(c, "-k, -t, -z and -bdfghiMnV go with --format lines");
    if (o->lines) {
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
    if (x->batch_size && o->verbose && c->rank == 0)
        fprintf(stderr,
                "%s: --batch-size=%s ignored: dsort's merges take as many runs as -S and "
                "--block-size allow\n",
                c->prog, x->batch_size);
    if (x->compress && o->verbose && c->rank == 0)
        fprintf(stderr,
                "%s: --compress-program=%s ignored: dsort does not compress its temporary files "
                "(see dsort(1))\n",
                c->prog, x->compress);
    return -1;
}
