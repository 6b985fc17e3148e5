/* dsort_run.c - the dsort program's body (dsort_run.h): the checks on what dsort writes and
 * the choice of pipeline, for a command line on a communicator. The command line (options,
 * --help, --version) is dsort_opts.c, the report (-v, --stats) dsort_stats.c, and the pipelines
 * are in job_mem.c (the data fits the ranks' memory) and ooc_sort.c (it does not). See job.h
 * and docs/design.md. main (dsort.c) and libdsort's file sort (dsort_file.c) both call it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agree.h"
#include "check.h"
#include "cli.h"
#include "dsort_opts.h"
#include "dsort_run.h"
#include "dsort_stats.h"
#include "gnuopts.h"
#include "clock.h"
#include "job.h"
#include "job_typed.h"
#include "lines_check.h"
#include "pipeio.h"
#include "progress.h"
#include "recfmt.h"
#include "tempdir.h"
#include "job_plan.h"
#include "job_space.h"
#include "job_ckpt.h"
#include "job_end.h"
#include "job_topo.h"
#include "phase.h"

/* The INPUTs' names for messages, by argument index, when some are read through copies
 * (pipeio.h): -c names standard input "-", as GNU does, and a /proc file by its name. */
static char *const *shown_names;

static int run_check(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_gnuopts *x, const struct dsort_inputs *in)
{
    if (o->lines) /* GNU's message: FILE:LINE: disorder: TEXT */
        return dsort_lines_check(c, in, o->keys, o->eol, x->check_mode == 'C', shown_names);
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
                fprintf(stderr, "%s: %s:record %" PRIu64 ": disorder\n", c->prog,
                        shown_names ? shown_names[in->files[i].arg] : in->files[i].path,
                        g - in->files[i].first);
                break;
            }
    }
    dsort_vsum_destroy(&total);
    return code;
}

/* -c with standard input among the INPUTs: only rank 0 has its copy, so rank 0 checks every
 * input alone (over MPI_COMM_SELF) and tells the others the exit code. */
static int run_check_alone(const struct dsort_comm *c, const struct dsort_job_options *o,
                           const struct dsort_gnuopts *x, const struct dsort_inputs *in)
{
    int code = 0;
    if (c->rank == 0) {
        struct dsort_comm self = *c;
        self.comm = self.node = MPI_COMM_SELF;
        self.size = self.node_size = self.node_count = 1;
        self.node_rank = self.node_index = 0;
        code = run_check(&self, o, x, in);
    }
    return dsort_agree_code(c, code);
}

/* Without --format (gensort's 100-byte records), refuse input that is plainly text lines
 * (dsort_inputs_sniff_text: its first 64 KiB hold no control byte but blanks and line ends,
 * and a newline that ends no record), which would be sorted into spliced lines. Each file is
 * looked at by one rank: of all (shared inputs), of its node (--local-inputs), rank 0
 * (copies). */
static enum dsort_status refuse_text(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_inputs *in, struct dsort_error *err)
{
    for (size_t i = 0; i < in->count; i++) {
        int mine = o->stdin_rank0    ? 1
                   : o->local_inputs ? (int)(i % (size_t)c->node_size) == c->node_rank
                                     : (int)(i % (size_t)c->size) == c->rank;
        int text = 0;
        uint64_t at = 0;
        enum dsort_status st = mine ? dsort_inputs_sniff_text(in, i, &text, &at, err) : DSORT_OK;
        if (st)
            return st;
        if (text)
            return DSORT_ERR(err, DSORT_EFORMAT, 0,
                             "'%s' looks like text lines, not %zu-byte gensort records (the "
                             "newline at byte %" PRIu64 " ends no record): give --format lines "
                             "to sort its lines, or --format gensort to sort it as records all "
                             "the same",
                             shown_names ? shown_names[in->files[i].arg] : in->files[i].path,
                             in->rec_size, at);
    }
    return DSORT_OK;
}

/* Sweep dead jobs' temp directories (rank 0 of each node), and say so under -v. */
static void sweep(const struct dsort_comm *c, const struct dsort_job_options *o)
{
    if (c->node_rank != 0)
        return;
    struct dsort_sweep_report rep;
    dsort_tempdirs_sweep(o->temp_dirs, o->ntemp, o->keep_checkpoint, &rep);
    /* and standard input's copies (pipeio.c) that dead jobs left there */
    unsigned copies = 0;
    for (size_t i = 0; i < o->ntemp; i++) {
        struct dsort_sweep_report more;
        dsort_outtemps_sweep(o->temp_dirs[i], &more);
        copies += more.removed;
        rep.unknown += more.unknown;
        rep.unsafe += more.unsafe;
    }
    if (copies)
        dsort_comm_print(c, "removed %u cop%s of standard input left by dead dsort jobs", copies,
                         copies == 1 ? "y" : "ies");
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

/* Do a and b name the same file (the same inode if both exist, else the same canonical
 * name)? */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!stat(a, &sa) && !stat(b, &sb))
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[4096], cb[4096];
    dsort_cli_canonical(a, ca, sizeof ca);
    dsort_cli_canonical(b, cb, sizeof cb);
    return !strcmp(ca, cb);
}

/* Every file dsort writes (--stats, the temp dirs' contents) must be none of the inputs, none
 * of each other, and not inside -O DIR: checked before anything is read, so a careless command
 * line cannot overwrite an input with JSON. The one exception is -o FILE naming an input: GNU
 * sort sorts in place, and so does dsort, safely, because the output replaces FILE by a rename
 * only once every rank has read all of its input and the job has succeeded (dsort_job_finish
 * agrees on that before the commit); a failed run leaves FILE as it was. Not where the identity
 * of the inputs must outlive the job (a checkpoint names them), nor with node-local inputs. */
static enum dsort_status check_written(const struct dsort_job_options *o,
                                       const struct dsort_inputs *in, struct dsort_error *err)
{
    if (o->output && dsort_inputs_contains(in, o->output)) {
        if (o->checkpoint || o->stop_after || o->resume)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "output '%s' is also an input: sorting in place does not go with "
                             "--checkpoint, --stop-after or --resume (the checkpoint names the "
                             "inputs); write to another file",
                             o->output);
        if (o->local_inputs)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "output '%s' is also an input: sorting in place does not go with "
                             "--local-inputs; write to another file",
                             o->output);
    }
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
        if (o->output_dir && dsort_cli_inside(o->stats, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "--stats file '%s' is inside the output directory '%s'", o->stats,
                             o->output_dir);
    }
    for (size_t i = 0; o->output_dir && i < o->ntemp; i++)
        if (dsort_cli_inside(o->temp_dirs[i], o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "temp directory '%s' is inside the output directory '%s'",
                             o->temp_dirs[i], o->output_dir);
    for (size_t i = 0; o->output_dir && i < in->count; i++)
        if (dsort_cli_inside(in->files[i].path, o->output_dir))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "input '%s' is inside the output directory '%s'",
                             in->files[i].path, o->output_dir);
    return DSORT_OK;
}

/* The node's plan, destroyed once the sort no longer needs it. */
static void drop_topo(struct dsort_job_options *o)
{
    dsort_job_topo_destroy(o->topo);
    o->topo = NULL;
}

/* The pipeline, by the format's table (o->recfmt, chosen once with the options): text lines
 * choose between memory and spilling in their part of the out-of-core skeleton; fixed records
 * choose here. Every rank takes the same path: out of core if any rank's share does not fit,
 * on --resume (the job was out of core when it stopped) and for standard input (rank 0 holds
 * all of it; the in-memory pipeline assumes even shares). Collective; the exit code. */
static int sort_job(const struct dsort_comm *c, struct dsort_job_options *o,
                    const struct dsort_inputs *in, const struct dsort_share *sh,
                    struct dsort_job_stats *stats)
{
    if (o->recfmt != &dsort_recfmt_fixed)
        return dsort_job_sort_ooc(c, o, in, sh, stats);
    const struct dsort_format user_fmt = o->fmt; /* typed keys: sorted widened */
    dsort_job_typed_enter(o);
    stats->needed = dsort_job_mem_needed(&o->fmt, sh->n, c->size);
    int fits =
        stats->needed <= stats->budget && !o->force_external && !o->resume && !o->stdin_rank0;
    stats->external = !dsort_comm_all_ok(c, fits);
    if (!stats->external)
        dsort_job_ckpt_note_memory(c, o);
    int code;
    if (stats->external)
        code = dsort_job_sort_ooc(c, o, in, sh, stats);
    else if (dsort_job_map_usable(c, o, in))
        code = dsort_job_sort_mapped(c, o, in, sh, stats);
    else
        code = dsort_job_sort_memory(c, o, in, sh, stats);
    o->fmt = user_fmt;
    return code;
}

/* b: the budget that dsort_opts_parse resolved. */
static int run_sort(const struct dsort_comm *c, struct dsort_job_options *o,
                    const struct dsort_budget *b, const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    struct dsort_job_stats stats;
    memset(&stats, 0, sizeof stats);
    snprintf(stats.host, sizeof stats.host, "%s", c->host);
    double t0 = dsort_clock_now();
    dsort_job_stats_start(&stats);
    enum dsort_status st;
    if (b->note[0] && c->node_rank == 0) /* once a node: the nodes may differ */
        dsort_comm_print(c, "%s", b->note);
    stats.budget = b->bytes;
    snprintf(stats.budget_why, sizeof stats.budget_why, "%s", b->why);
    struct dsort_share sh;
    if (dsort_job_share(c, o, in, &sh, &err))
        return 2;
    if ((st = dsort_comm_agree(c, dsort_job_topo_create(c, o, in, &o->topo, &err), &err)))
        return 2;
    if (o->plan) {
        struct dsort_job_space sp;
        int code = 2;
        if (!dsort_job_space_create(c, o, b, in, &sh, &sp, &err)) {
            code = dsort_job_plan_print(c, o->topo, &sp, o->plan_json);
            dsort_job_space_destroy(&sp);
        }
        dsort_job_topo_destroy(o->topo);
        return code;
    }
    if (o->bind)
        dsort_job_topo_bind(o->topo, c, o->verbose);
    struct dsort_exchange xch;
    if ((st = dsort_comm_agree(
             c, dsort_exchange_open(&xch, c->comm, o->exchange_kind, (size_t)o->chunk, &err),
             &err))) {
        drop_topo(o);
        return 2;
    }
    o->exchange = &xch;
    sweep(c, o);
    /* before any input is read: the output and the spill fit their file systems */
    if (dsort_job_space_preflight(c, o, b, in, &sh)) {
        dsort_exchange_close(&xch);
        o->exchange = NULL;
        drop_topo(o);
        return 2;
    }
    int code = sort_job(c, o, in, &sh, &stats);
    dsort_progress_finish(code == 0);
    stats.exchange_moves = (int)xch.moves;
    stats.exchange_node = (int)xch.node_moves;
    dsort_exchange_close(&xch);
    o->exchange = NULL;
    dsort_job_stats_stop(&stats);
    if (code == 0)
        code = dsort_stats_report(c, o, &stats, dsort_clock_now() - t0);
    drop_topo(o);
    return code;
}

/* Append one word to the shape s at p, its spaces and backslashes escaped (so that "-o 'x -r'"
 * and "-o x -r" differ); returns the new end. */
static char *shape_word(char *s, char *p, const char *w)
{
    if (p != s)
        *p++ = ' ';
    for (; *w; w++) {
        if (*w == ' ' || *w == '\\')
            *p++ = '\\';
        *p++ = *w;
    }
    *p = '\0';
    return p;
}

/* --debug: the notes GNU sort prints about every C-locale ordering and about numbers. */
static void debug_notes(const struct dsort_keys *k)
{
    fprintf(stderr, "dsort: text ordering performed using simple byte comparison\n");
    int numbers = 0;
    for (size_t i = 0; i < k->n; i++)
        numbers |= !!(k->key[i].flags & (DSORT_KEY_NUMERIC | DSORT_KEY_GENERAL | DSORT_KEY_HUMAN));
    if (numbers)
        fprintf(stderr, "dsort: note numbers use '.' as a decimal point in this locale\n");
}

/* The options that shape a job's output, for its checkpoint (--resume must be given the same):
 * the command line without those that only say how to run it (memory, temp dirs, reports,
 * stop and resume, threads, I/O tuning). Inputs are named too; their identity is the
 * checkpoint's own check. Made before getopt permutes argv. A new string (NULL: no memory). */
static char *job_shape(int argc, char **argv)
{
    static const char *const skip_arg[] = {"--stats",
                                           "--keep-checkpoint",
                                           "--memory",
                                           "--buffer-size",
                                           "--temp-dir",
                                           "--temporary-directory",
                                           "--parallel",
                                           "--exchange-chunk",
                                           "--block-size",
                                           "--streams-per-device",
                                           "--stop-after",
                                           "--batch-size",
                                           "--compress-program",
                                           "--exchange"};
    static const char *const skip[] = {"-v",         "--verbose", "--checkpoint", "--resume",
                                       "--progress", "--bind",    "--one-stream", "--no-direct",
                                       "--verify",   "--no-map"};
    size_t len = 1;
    for (int i = 1; i < argc; i++)
        len += 2 * strlen(argv[i]) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return NULL;
    *p = '\0';
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int drop = 0, next = 0;
        if (!strcmp(a, "--")) { /* operands only from here */
            for (; i < argc; i++)
                p = shape_word(s, p, argv[i]);
            break;
        }
        for (size_t k = 0; k < sizeof skip / sizeof skip[0]; k++)
            drop |= !strcmp(a, skip[k]) || (!strncmp(a, skip[k], strlen(skip[k])) &&
                                            a[strlen(skip[k])] == '=' && skip[k][1] == '-');
        for (size_t k = 0; k < sizeof skip_arg / sizeof skip_arg[0]; k++) {
            size_t n = strlen(skip_arg[k]);
            if (!strncmp(a, skip_arg[k], n) && (a[n] == '=' || !a[n])) {
                drop = 1;
                next = !a[n];
            }
        }
        if (!strncmp(a, "-S", 2) || !strncmp(a, "-T", 2)) {
            drop = 1;
            next = !a[2];
        }
        if (drop) {
            i += next;
            continue;
        }
        p = shape_word(s, p, a);
    }
    return s;
}

/* Open the INPUTs (only rank 0 opens standard input's copies cp); under --local-inputs each
 * node opens those it has, and every path must exist on some node. Collective; on failure the
 * error is printed once, the status is the same on every rank, and nothing is left open. */
static enum dsort_status open_inputs(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     struct dsort_pipeio_inputs *cp, struct dsort_inputs *in,
                                     struct dsort_error *err)
{
    int *found = calloc(o->ninputs + 1, sizeof *found),
        *anywhere = calloc(o->ninputs + 1, sizeof *found);
    enum dsort_status st =
        !found || !anywhere
            ? DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory")
            : dsort_inputs_open_ex(
                  in, o->inputs, o->stdin_rank0 && c->rank != 0 ? 0 : o->ninputs, &o->fmt,
                  o->local_inputs ? DSORT_INPUTS_SKIP_MISSING | DSORT_INPUTS_EXPAND_DIRS : 0, found,
                  err);
    if (st && cp->paths)
        dsort_pipeio_name_copies(cp, err->msg, sizeof err->msg);
    if ((st = dsort_comm_agree(c, st, err))) {
        free(found);
        free(anywhere);
        return st;
    }
    /* Node-local inputs: every path must exist on some node. */
    memcpy(anywhere, found, o->ninputs * sizeof *found);
    dsort_agree_any(c, anywhere, o->ninputs);
    for (size_t i = 0; i < o->ninputs && !st; i++)
        if (!anywhere[i])
            st = DSORT_ERR(err, DSORT_EINVAL, 0, "input '%s' exists on no node", o->inputs[i]);
    free(found);
    free(anywhere);
    if (st) { /* the same on every rank (anywhere is): printed once */
        st = dsort_comm_agree(c, st, err);
        dsort_inputs_destroy(in);
    }
    return st;
}

/* The end of dsort_run: free what the options hold and return code. */
static int finish(struct dsort_gnuopts *x, char **temps, char *shape, int code)
{
    dsort_gnuopts_free(x);
    free(temps);
    free(shape);
    return code;
}

int dsort_run(const struct dsort_comm *comm, int argc, char **argv)
{
    const struct dsort_comm c = *comm; /* a copy: the body below names it c, as main did */
    shown_names = NULL;
    dsort_cli_usage_forget();
    struct dsort_job_options o;
    struct dsort_gnuopts x;
    char **temps = NULL;
    char *shape = job_shape(argc, argv);
    int code = dsort_opts_parse(&c, argc, argv, &o, &x, &temps);
    o.shape = shape ? shape : "";
    if (code >= 0) {
        return finish(&x, temps, shape, code);
    }
    /* Standard input and files whose size is not what they hold (/proc, /sys): rank 0's copies
     * of them, which only rank 0 opens; standard output: parts in a node-local directory that
     * rank 0 writes out at the end (pipeio.h). Not under --local-inputs (each node's own
     * files) nor with a checkpoint (the copies do not outlive the job): the inputs' open
     * refuses such files there. */
    static char outdir[4096];
    struct dsort_pipeio_inputs cp;
    if (dsort_pipeio_copy_inputs(&c, o.temp_dirs[0], o.inputs, o.ninputs,
                                 !o.local_inputs && !o.resume && !o.stop_after && !o.checkpoint,
                                 &cp)) {
        return finish(&x, temps, shape, 2);
    }
    if (cp.paths) {
        o.inputs = cp.paths;
        o.ninputs = cp.n;
        shown_names = cp.shown;
        o.stdin_rank0 = 1;
    }
    if (x.to_stdout) {
        dsort_pipeio_outdir(&c, o.temp_dirs[0], outdir, sizeof outdir);
        o.output_dir = outdir;
        o.local_output = 1;
    }
    struct dsort_error err = {0};
    struct dsort_inputs in;
    enum dsort_status st = open_inputs(&c, &o, &cp, &in, &err);
    if (st) {
        dsort_pipeio_uncopy(&c, &cp);
        return finish(&x, temps, shape, 2);
    }
    if (!st && !o.check)
        st = check_written(&o, &in, &err);
    if (!st && !o.check && o.stats && c.rank == 0)
        st = dsort_stats_probe(o.stats, &err);
    if (!st && !x.format_given)
        st = refuse_text(&c, &o, &in, &err);
    if ((st = dsort_comm_agree(&c, st, &err))) {
        dsort_inputs_destroy(&in);
        dsort_pipeio_uncopy(&c, &cp);
        return finish(&x, temps, shape, 2);
    }
    if (x.debug && c.rank == 0)
        debug_notes(o.keys);
    code = o.check && o.stdin_rank0 ? run_check_alone(&c, &o, &x, &in)
           : o.check                ? run_check(&c, &o, &x, &in)
                                    : run_sort(&c, &o, &x.budget, &in);
    dsort_inputs_destroy(&in);
    dsort_pipeio_uncopy(&c, &cp);
    struct dsort_debugout dbg;
    if (x.debug)
        dsort_debugout_init(&dbg, o.keys, o.eol, 1);
    if (code == 0 && x.to_stdout)
        code = dsort_pipeio_emit(&c, outdir, x.debug && c.rank == 0 ? &dbg : NULL,
                                 o.lines ? 0 : o.fmt.rec_size, o.eol);
    if (x.debug)
        dsort_debugout_free(&dbg);
    return finish(&x, temps, shape, code);
}
