/* dsort_opts.c - dsort's command line: the options, --help and --version (dsort_opts.h). */
#include "dsort_opts.h"

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exchange.h"
#include "keys.h"
#include "mem.h"
#include "recfmt.h"
#include "tempdir.h"
#include "typedkey.h"

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
    OPT_EXCHANGE,
    OPT_RANDOM_SOURCE
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
    {"random-source", required_argument, NULL, OPT_RANDOM_SOURCE},
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

/* What the option handlers share while argv is read. */
struct parse {
    const struct dsort_comm *c;
    struct dsort_job_options *o;
    struct dsort_gnuopts *x;
    char **temps; /* -T, in order (the array behind o->temp_dirs) */
    char **files; /* the operands, in order (the array behind o->inputs) */
    size_t nfiles;
    int key_opts;   /* some -k, -t, -z or -bdfghiMnV was given */
    int budget_set; /* -S was given (x->budget holds it resolved) */
    int argc;
};

/* A handler's answer for an option that is not one of its own. Otherwise handlers return -1
 * (go on) or an exit code, as dsort_opts_parse does. */
#define NOT_MINE (-2)

static struct dsort_cli_typed typed_keys; /* -k OFF:TYPE (cli.h) */

/* The options that only set one int of struct dsort_job_options to 1. */
static const struct {
    int ch;
    size_t off;
} flag_opts[] = {{'r', offsetof(struct dsort_job_options, ord.reverse)},
                 {'u', offsetof(struct dsort_job_options, ord.unique)},
                 {'s', offsetof(struct dsort_job_options, ord.stable)},
                 {OPT_OUT_OF_CORE, offsetof(struct dsort_job_options, force_external)},
                 {OPT_LOCAL_INPUTS, offsetof(struct dsort_job_options, local_inputs)},
                 {OPT_LOCAL_OUTPUT, offsetof(struct dsort_job_options, local_output)},
                 {OPT_PLAN, offsetof(struct dsort_job_options, plan)},
                 {OPT_JSON, offsetof(struct dsort_job_options, plan_json)},
                 {OPT_BIND, offsetof(struct dsort_job_options, bind)},
                 {OPT_ONE_STREAM, offsetof(struct dsort_job_options, one_stream)},
                 {OPT_NO_MAP, offsetof(struct dsort_job_options, no_map)},
                 {'v', offsetof(struct dsort_job_options, verbose)},
                 {OPT_VERIFY, offsetof(struct dsort_job_options, verify)},
                 {OPT_CHECKPOINT, offsetof(struct dsort_job_options, checkpoint)},
                 {OPT_NO_DIRECT, offsetof(struct dsort_job_options, no_direct)}};

static int opt_flag(struct parse *p, int ch)
{
    for (size_t i = 0; i < sizeof flag_opts / sizeof flag_opts[0]; i++)
        if (flag_opts[i].ch == ch) {
            *(int *)(void *)((char *)p->o + flag_opts[i].off) = 1;
            return -1;
        }
    return NOT_MINE;
}

/* -S, resolved here once (text NULL: the default) into x->budget: the rank's budget (run_sort). */
static int resolve_budget(struct parse *p, const char *text)
{
    struct dsort_error err = {0};
    if (dsort_budget_resolve(text, dsort_mem_physical(), p->c->node_size, &p->x->budget, &err))
        return dsort_cli_usage_error(p->c, "%s", err.msg);
    return -1;
}

/* --format, decided here once: the record format (lines are read as bytes, 1-byte "records",
 * in which the lines are found) and its table (recfmt.h), which the pipelines take from o. */
static int opt_format(struct parse *p, const char *arg)
{
    struct dsort_error err = {0};
    struct dsort_job_options *o = p->o;
    p->x->format_given = 1;
    o->lines = strcmp(arg, "lines") == 0;
    o->recfmt = o->lines ? &dsort_recfmt_lines : &dsort_recfmt_fixed;
    if (dsort_format_parse(o->lines ? "fixed:1:0:1" : arg, &o->fmt, &err))
        return dsort_cli_usage_error(p->c, "%s", err.msg);
    if (o->lines)
        snprintf(o->fmt.name, sizeof o->fmt.name, "lines");
    return -1;
}

/* -c, -C, --check[=WORD]. */
static int opt_check(struct parse *p, int ch, const char *arg)
{
    static const char *const words[] = {"quiet", "silent", "diagnose-first", NULL};
    int mode = ch != OPT_CHECK ? ch
               : arg           ? dsort_cli_argmatch(p->c, "--check", arg, words, "CCc",
                                                    "  - 'quiet', 'silent'\n  - 'diagnose-first'")
                               : 'c';
    if (!mode)
        return 2;
    if (p->o->check && p->x->check_mode != mode)
        return dsort_cli_usage_error(p->c, "options '-cC' are incompatible");
    p->o->check = 1;
    p->x->check_mode = mode;
    return -1;
}

/* The outputs, and GNU sort's options that only the command line deals with. */
static int opt_gnu(struct parse *p, int ch, const char *arg)
{
    struct dsort_job_options *o = p->o;
    struct dsort_gnuopts *x = p->x;
    switch (ch) {
    case 'o':
        /* GNU sort's rule: a second -o is an error, not a silent choice of the last. */
        if (o->output && strcmp(o->output, arg))
            return dsort_cli_usage_error(p->c, "multiple output files specified");
        o->output = arg;
        return -1;
    case 'O':
        if (o->output_dir && strcmp(o->output_dir, arg))
            return dsort_cli_usage_error(p->c, "multiple output directories specified");
        o->output_dir = arg;
        return -1;
    case OPT_DEBUG:
        x->debug = 1;
        return -1;
    case 'm': /* accepted: dsort always sorts, and sorted inputs merge to what sort -m writes */
        return -1;
    case 'c':
    case 'C':
    case OPT_CHECK:
        return opt_check(p, ch, arg);
    case OPT_PARALLEL:
        if (dsort_gnuopts_parallel(p->c, arg))
            return 2;
        x->parallel = arg;
        return -1;
    case OPT_BATCH_SIZE:
        if (dsort_gnuopts_batch_size(p->c, arg))
            return 2;
        x->batch_size = arg;
        return -1;
    case OPT_COMPRESS: /* GNU's check; dsort's spills are not compressed (dsort(1)) */
        if (x->compress && strcmp(x->compress, arg))
            return dsort_cli_usage_error(p->c, "multiple compress programs specified");
        x->compress = arg;
        return -1;
    case OPT_FILES0_FROM:
        x->files0_from = arg; /* as in GNU, the last one counts */
        return -1;
    case OPT_RANDOM_SOURCE:
        x->random_source = arg; /* as in GNU, the last one counts; read only for -R */
        return -1;
    default:
        return NOT_MINE;
    }
}

/* --exchange=WAY. */
static int opt_exchange(struct parse *p, const char *arg)
{
    if (strcmp(arg, "auto") == 0)
        p->o->exchange_kind = DSORT_EXCHANGE_AUTO;
    else if (strcmp(arg, "direct") == 0)
        p->o->exchange_kind = DSORT_EXCHANGE_DIRECT;
    else if (strcmp(arg, "node") == 0)
        p->o->exchange_kind = DSORT_EXCHANGE_NODE;
    else
        return dsort_cli_usage_error(p->c, "invalid --exchange '%s' (auto, direct or node)", arg);
    return -1;
}

/* Memory, temp dirs, I/O and the exchange. */
static int opt_resources(struct parse *p, int ch, char *arg)
{
    struct dsort_error err = {0};
    struct dsort_job_options *o = p->o;
    uint64_t v;
    switch (ch) {
    case 'S':
        p->budget_set = 1;
        return resolve_budget(p, arg);
    case 'T':
        if (!*arg)
            return dsort_cli_usage_error(p->c, "empty --temp-dir");
        p->temps[o->ntemp++] = arg;
        return -1;
    case OPT_BLOCK:
        if (dsort_mem_parse_size(arg, &o->block, &err) || o->block < 4096 ||
            o->block > ((uint64_t)1 << 30))
            return dsort_cli_usage_error(p->c, "invalid --block-size '%s' (4K to 1G)", arg);
        return -1;
    case OPT_STREAMS:
        if (dsort_cli_parse_u64(arg, &v) || v < 1 || v > 1024)
            return dsort_cli_usage_error(p->c, "invalid --streams-per-device '%s' (1 to 1024)",
                                         arg);
        o->streams_per_device = (uint32_t)v;
        return -1;
    case OPT_CHUNK:
        if (dsort_mem_parse_size(arg, &o->chunk, &err) || o->chunk == 0 ||
            o->chunk > (uint64_t)1 << 30)
            return dsort_cli_usage_error(p->c, "invalid --exchange-chunk '%s' (1 byte to 1G)", arg);
        return -1;
    case OPT_EXCHANGE:
        return opt_exchange(p, arg);
    default:
        return NOT_MINE;
    }
}

/* --keep-checkpoint=N[smhd]. */
static int opt_keep(struct parse *p, const char *arg)
{
    char *end = NULL;
    double v = strtod(arg, &end);
    double unit = end && *end == 'd'   ? 86400
                  : end && *end == 'h' ? 3600
                  : end && *end == 'm' ? 60
                                       : 1;
    if (end && (*end == 'd' || *end == 'h' || *end == 'm' || *end == 's'))
        end++;
    if (end == arg || *end || !(v >= 0 && v * unit <= 10.0 * 366 * 86400))
        return dsort_cli_usage_error(
            p->c, "invalid --keep-checkpoint '%s' (a time: N[smhd], at most 10 years)", arg);
    p->o->keep_checkpoint = (uint64_t)(v * unit);
    return -1;
}

/* Reports, stop and resume. */
static int opt_reports(struct parse *p, int ch, const char *arg)
{
    struct dsort_job_options *o = p->o;
    char *end = NULL;
    switch (ch) {
    case OPT_STATS:
        o->stats = arg;
        return -1;
    case OPT_STOP_AFTER:
        if (dsort_cli_parse_u64(arg, &o->stop_after) || o->stop_after < 1)
            return dsort_cli_usage_error(p->c, "invalid --stop-after '%s' (rounds, 1 or more)",
                                         arg);
        return -1;
    case OPT_RESUME:
        o->resume = 1;
        o->checkpoint = 1; /* the checkpoint found stays one until the output is done */
        return -1;
    case OPT_KEEP_CKPT:
        return opt_keep(p, arg);
    case OPT_PROGRESS:
        o->progress = arg ? strtod(arg, &end) : 5.0;
        if (arg && (end == arg || *end || !(o->progress >= 0 && o->progress <= 86400)))
            return dsort_cli_usage_error(p->c, "invalid --progress '%s' (seconds, 0 to 86400)",
                                         arg);
        return -1;
    default:
        return NOT_MINE;
    }
}

/* --progress takes its seconds only after '=' (its argument is optional): "--progress 10", as
 * mpifileutils takes it, would make 10 an input. Said at once when no such file is there. */
static int progress_hint(const struct dsort_comm *c, const char *next)
{
    char *end = NULL;
    struct stat sb;
    if (!next || !*next || (strtod(next, &end), *end) || !stat(next, &sb))
        return 0;
    return dsort_cli_usage_error(c,
                                 "--progress takes its seconds after '=': --progress=%s (with a "
                                 "space, '%s' would be an input, and there is no such file)",
                                 next, next);
}

/* One option from getopt_long: -1 to go on, or an exit code. */
static int opt_one(struct parse *p, int ch, char **argv)
{
    if (dsort_cli_typed_option(&typed_keys, ch, optarg)) /* -k OFF:TYPE, never a GNU KEYDEF */
        return -1;
    int code = dsort_cli_key_option(p->c, p->o->keys, ch, optarg, &p->o->eol);
    if (code < 0)
        return 2;
    if (code > 0) {
        p->key_opts = 1;
        return -1;
    }
    /* argv[argc] is NULL, so argv[optind] may be read at the end too */
    if (ch == OPT_PROGRESS && !optarg && progress_hint(p->c, argv[optind]))
        return 2;
    if ((code = opt_flag(p, ch)) != NOT_MINE || (code = opt_gnu(p, ch, optarg)) != NOT_MINE ||
        (code = opt_resources(p, ch, optarg)) != NOT_MINE ||
        (code = opt_reports(p, ch, optarg)) != NOT_MINE)
        return code;
    switch (ch) {
    case 1: /* an operand, in order: an input, or GNU's obsolete +POS1 [-POS2] key */
        code = dsort_gnuopts_operand(p->c, p->o->keys, argv, p->argc, &optind, &p->x->traditional);
        if (code > 0)
            p->key_opts = 1;
        else if (code == 0)
            p->files[p->nfiles++] = optarg;
        return code < 0 ? 2 : -1;
    case OPT_FORMAT:
        return opt_format(p, optarg);
    case OPT_HELP:
        if (p->c->rank == 0)
            dsort_opts_usage();
        return 0;
    case OPT_VERSION:
        if (p->c->rank == 0)
            printf("dsort %s\n", DSORT_VERSION);
        return 0;
    case ':':
        return dsort_cli_usage_error(p->c, "option '%s' requires an argument", argv[optind - 1]);
    default:
        return dsort_gnuopts_unknown_option(p->c, argv[optind - 1], long_opts);
    }
}

/* The temp dirs and the inputs after the options: the defaults ($TMPDIR or /tmp; standard
 * input) and what goes with what. */
static int inputs_after(struct parse *p, int argc, char **argv)
{
    struct dsort_job_options *o = p->o;
    struct dsort_gnuopts *x = p->x;
    if (o->ntemp == 0) {
        const char *t = getenv("TMPDIR");
        p->temps[o->ntemp++] = (char *)(t && *t ? t : "/tmp");
    }
    o->temp_dirs = p->temps;
    for (int i = optind; i < argc; i++) /* after "--", or all after an input when POSIXLY_CORRECT */
        p->files[p->nfiles++] = argv[i];
    o->inputs = p->files;
    o->ninputs = p->nfiles;
    if (x->files0_from && o->ninputs)
        return dsort_cli_usage_error(
            p->c, "extra operand '%s'\nfile operands cannot be combined with --files0-from",
            o->inputs[0]);
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
        return dsort_cli_usage_error(p->c, "--local-inputs does not go with standard input");
    return -1;
}

/* The outputs: empty names, and which outputs go together. */
static int outputs_after(struct parse *p)
{
    const struct dsort_comm *c = p->c;
    struct dsort_job_options *o = p->o;
    struct dsort_gnuopts *x = p->x;
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
        /* dsort-validate --local-inputs checks fixed records only (node-local parts of lines
         * are checked by -c on a path every rank sees). */
        return dsort_cli_usage_error(c,
                                     o->lines ? "-%c does not take --local-inputs (nor does "
                                                "dsort-validate under --format lines)"
                                              : "-%c does not take --local-inputs (use "
                                                "dsort-validate --local-inputs)",
                                     x->check_mode);
    if (o->local_output && !o->output_dir)
        return dsort_cli_usage_error(c, "--local-output goes with -O DIR");
    return -1;
}

/* The modes: checkpoints, --debug and the line options need their kind of job; then the keys
 * are finished (-r, -s and -u apply to them). */
static int modes_after(struct parse *p)
{
    const struct dsort_comm *c = p->c;
    struct dsort_job_options *o = p->o;
    struct dsort_gnuopts *x = p->x;
    struct dsort_error err = {0};
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
    if (!o->lines && p->key_opts)
        return dsort_cli_usage_error(c, "-k, -t, -z and -bdfghiMnRV go with --format lines");
    int code = dsort_cli_typed_setup(c, &typed_keys, o->lines || p->key_opts, &o->fmt);
    if (code >= 0)
        return code;
    if (o->lines) {
        if (o->ord.reverse && dsort_keys_set_global(o->keys, 'r', &err))
            return dsort_cli_usage_error(c, "%s", err.msg);
        o->keys->stable = o->ord.stable;
        o->keys->unique = o->ord.unique;
        if (dsort_keys_finish(o->keys, &err))
            return dsort_cli_usage_error(c, "%s", err.msg);
    }
    return -1;
}

/* --files0-from: read the list (collective), which no output may overwrite. */
static int files0_after(struct parse *p)
{
    struct dsort_job_options *o = p->o;
    struct dsort_gnuopts *x = p->x;
    int code = dsort_gnuopts_files0(p->c, x, &o->ninputs);
    if (code >= 0)
        return code;
    o->inputs = x->files0_names;
    /* GNU would overwrite the list; dsort keeps every file it reads, the list too */
    const char *clash = dsort_gnuopts_same_file(x->files0_from, o->output)  ? o->output
                        : dsort_gnuopts_same_file(x->files0_from, o->stats) ? o->stats
                                                                            : NULL;
    if (clash)
        return dsort_cli_usage_error(p->c, "'%s' is the --files0-from list; write elsewhere",
                                     clash);
    return -1;
}

/* A directory among the INPUTs stands for its parts, checked against its manifest (inputdir.h).
 * Not under --local-inputs: there each node lists the directory as it has it (io.h). */
static int dirs_after(struct parse *p)
{
    struct dsort_job_options *o = p->o;
    struct dsort_inputdir *d = &p->x->dirs;
    const char *in = o->output ? dsort_inputdir_holding(o->inputs, o->ninputs, o->output) : NULL;
    if (in)
        return dsort_cli_usage_error(p->c, "output '%s' is inside input directory '%s'", o->output,
                                     in);
    int code = dsort_inputdir_expand(p->c, o->inputs, o->ninputs, &o->fmt,
                                     o->lines ? 0 : o->fmt.rec_size, d);
    if (code < 0 && d->paths) {
        o->inputs = d->paths;
        o->ninputs = d->n;
    }
    return code;
}

int dsort_opts_parse(const struct dsort_comm *c, int argc, char **argv, struct dsort_job_options *o,
                     struct dsort_gnuopts *x, char ***temp_store)
{
    memset(x, 0, sizeof *x);
    memset(o, 0, sizeof *o);
    dsort_format_gensort(&o->fmt);
    o->recfmt = &dsort_recfmt_fixed;
    o->chunk = DSORT_EXCHANGE_CHUNK;
    o->block = DEFAULT_BLOCK;
    o->progress = -1;
    o->streams_per_device = 4;
    o->keep_checkpoint = DSORT_CHECKPOINT_KEEP;
    /* the -T dirs, then the operands (argc + 2 each) */
    char **temps = calloc(2 * ((size_t)argc + 2), sizeof *temps);
    *temp_store = temps;
    if (!temps)
        return dsort_cli_usage_error(c, "out of memory");
    static struct dsort_keys keys;
    dsort_keys_init(&keys);
    memset(&typed_keys, 0, sizeof typed_keys); /* a second parse (libdsort) starts afresh */
    o->keys = &keys;
    o->eol = '\n';
    struct parse p = {
        .c = c, .o = o, .x = x, .temps = temps, .files = temps + argc + 2, .argc = argc};
    int ch, code = -1;
    opterr = 0;
    /* '-': operands come in order (ch 1), so that +POS keys keep their place among -k keys.
     * POSIXLY_CORRECT: everything after the first input is an input, as GNU's getopt has it. */
    int posix = getenv("POSIXLY_CORRECT") != NULL;
    while (code < 0 && !(posix && p.nfiles) &&
           (ch = getopt_long(argc, argv, "-:o:O:rusmcCvS:T:" DSORT_CLI_KEY_LETTERS, long_opts,
                             NULL)) != -1)
        code = opt_one(&p, ch, argv);
    if (code < 0)
        code = inputs_after(&p, argc, argv);
    if (code < 0)
        code = outputs_after(&p);
    if (o->lines && dsort_keys_random(o->keys)) /* the seed (collective), before modes_after */
        code = dsort_gnuopts_random(c, code, x->random_source,
                                    o->resume || o->stop_after || o->checkpoint, o->keys);
    if (code < 0)
        code = modes_after(&p);
    /* The ranks agree before the steps that read files together (collective) and again at the
     * end: -S N% depends on the node, and so may what a node sees of a list or directory. */
    code = dsort_cli_agree_usage(c, code);
    /* Last: the only checks that read a file, once every usage error has had its say. */
    if (code < 0 && x->files0_from)
        code = files0_after(&p);
    if (code < 0 && !o->local_inputs)
        code = dirs_after(&p);
    if (code < 0 && !p.budget_set)
        code = resolve_budget(&p, NULL);
    code = dsort_cli_agree_usage(c, code);
    if (code < 0)
        dsort_gnuopts_notes(c, o->verbose, x);
    return code;
}
