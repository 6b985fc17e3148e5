/* libdsort's file sort (dsort_file.h): a command line made from struct dsort_file_job, run by
 * the program's own body (dsort_run.h) over a duplicate of the caller's communicator, with
 * the lines it would print caught by a hook (comm.h) and agreed into the caller's errinfo.
 */
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "comm.h"
#include "dsort.h"
#include "dsort_file.h"
#include "dsort_run.h"

#define DSORT_EXPORT __attribute__((visibility("default")))

/* The command line being made: argv and the strings it owns. */
struct cmdline {
    char **argv;
    int argc, cap;
    int failed; /* out of memory */
};

static void add(struct cmdline *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct cmdline *l, const char *fmt, ...)
{
    if (l->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0 ||
        (l->argc + 2 > l->cap &&
         !(l->argv = realloc(l->argv, (size_t)(l->cap = 2 * l->cap + 16) * sizeof *l->argv)))) {
        free(n < 0 ? NULL : s);
        l->failed = 1;
        return;
    }
    l->argv[l->argc++] = s;
    l->argv[l->argc] = NULL;
}

static void cmdline_free(struct cmdline *l)
{
    for (int i = 0; l->argv && i < l->argc; i++)
        free(l->argv[i]);
    free(l->argv);
}

/* The options a library call may not pass: each prints to stdout or standard error by
 * nature, or wants the program's signal handlers. An abbreviation getopt would take for one
 * of them ("--he") is refused too. */
static const char *refused_option(const char *opt)
{
    static const char *const no[] = {"help",       "version", "check",       "debug",
                                     "plan",       "json",    "files0-from", "checkpoint",
                                     "stop-after", "resume",  NULL};
    if (strncmp(opt, "--", 2) || !opt[2])
        return "not a long option (--NAME or --NAME=VALUE)";
    size_t len = strcspn(opt + 2, "=");
    for (size_t i = 0; no[i]; i++)
        if (len && !strncmp(opt + 2, no[i], len))
            return "not for the library (it prints, reads its own list, or keeps a checkpoint, "
                   "which wants the program's signal handlers and messages)";
    return NULL;
}

/* Local: the job's own checks. */
static enum dsort_status check_job(const struct dsort_file_job *j, struct dsort_error *err)
{
    if (!j)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "the job is NULL");
    if (!j->inputs || !j->ninputs)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "no inputs");
    for (size_t i = 0; i < j->ninputs; i++)
        if (!j->inputs[i] || !strcmp(j->inputs[i], "-"))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "input %zu is %s: name a file", i,
                             j->inputs[i] ? "standard input" : "NULL");
    if (!j->output == !j->output_dir)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "give one of output and output_dir");
    if (j->flags & ~(unsigned)(DSORT_REVERSE | DSORT_STABLE | DSORT_UNIQUE))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "unknown flags 0x%x", j->flags);
    for (size_t i = 0; i < j->ntemp; i++)
        if (!j->temp_dirs || !j->temp_dirs[i])
            return DSORT_ERR(err, DSORT_EINVAL, 0, "temp directory %zu is NULL", i);
    for (size_t i = 0; j->options && j->options[i]; i++) {
        const char *why = refused_option(j->options[i]);
        if (why)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "option '%s': %s", j->options[i], why);
    }
    return DSORT_OK;
}

/* The command line of a checked job: the options, then "--" and the inputs. */
static void make_cmdline(const struct dsort_file_job *j, struct cmdline *l)
{
    add(l, "libdsort");
    if (j->format)
        add(l, "--format=%s", j->format);
    /* one --key a part, empty ones too (the program refuses them, as dsort_sort does) */
    for (const char *k = j->keys; k && *j->keys; k += strcspn(k, ",") + 1) {
        int n = (int)strcspn(k, ",");
        add(l, "--key=%.*s", n, k);
        if (!k[n])
            break;
    }
    for (size_t i = 0; i < j->ntemp; i++)
        add(l, "--temporary-directory=%s", j->temp_dirs[i]);
    if (j->memory)
        add(l, "--buffer-size=%s", j->memory);
    if (j->flags & DSORT_REVERSE)
        add(l, "--reverse");
    if (j->flags & DSORT_STABLE)
        add(l, "--stable");
    if (j->flags & DSORT_UNIQUE)
        add(l, "--unique");
    for (size_t i = 0; j->options && j->options[i]; i++)
        add(l, "%s", j->options[i]);
    if (j->output)
        add(l, "--output=%s", j->output);
    else
        add(l, "--output-dir=%s", j->output_dir);
    add(l, "--");
    for (size_t i = 0; i < j->ninputs; i++)
        add(l, "%s", j->inputs[i]);
}

/* What the hook caught on this rank: the first error line, and the caller's log. */
struct caught {
    int have;
    int st;
    char line[1024];
    const struct dsort_file_job *job;
};

static void catch_line(void *arg, int error, enum dsort_status st, const char *line, size_t len)
{
    struct caught *k = arg;
    char one[1024];
    snprintf(one, sizeof one, "%.*s", (int)(len && line[len - 1] == '\n' ? len - 1 : len), line);
    if (error && !k->have) {
        k->have = 1;
        k->st = (int)st;
        snprintf(k->line, sizeof k->line, "%s", one);
    }
    if (k->job && k->job->log)
        k->job->log(one, k->job->log_arg);
}

static int public_code(int st)
{
    switch (st) {
    case DSORT_EINVAL:
        return DSORT_ERR_ARG;
    case DSORT_ENOMEM:
        return DSORT_ERR_NOMEM;
    case DSORT_EIO:
    case DSORT_EINTR:
        return DSORT_ERR_IO;
    case DSORT_EFORMAT:
        return DSORT_ERR_DATA;
    default:
        return DSORT_ERR_INTERNAL;
    }
}

/* Collective: the run's exit code and the caught lines into one result on every rank: the
 * lowest rank that caught an error line says it. */
static int agree_result(const struct dsort_comm *c, int code, const struct caught *k,
                        struct dsort_errinfo *err)
{
    int mine[2] = {k->have ? c->rank : c->size, 0}, low[2];
    int worst = (int)dsort_comm_max(c, (uint64_t)code);
    dsort_comm_require(c, MPI_Allreduce(mine, low, 1, MPI_2INT, MPI_MINLOC, c->comm),
                       "agreeing on the error (MPI_Allreduce)");
    struct caught said = *k;
    if (low[0] < c->size)
        dsort_comm_require(
            c, MPI_Bcast(&said, (int)offsetof(struct caught, job), MPI_BYTE, low[0], c->comm),
            "sharing the error (MPI_Bcast)");
    if (!worst)
        return DSORT_SUCCESS;
    int rc = low[0] < c->size ? public_code(said.st) : DSORT_ERR_INTERNAL;
    if (!err)
        return rc;
    err->code = rc;
    err->rank = low[0] < c->size ? low[0] : -1;
    size_t skip = strlen(c->prog) + 2; /* "libdsort: " */
    if (low[0] < c->size)
        snprintf(err->msg, sizeof err->msg, "%s",
                 said.line + (strlen(said.line) >= skip ? skip : 0));
    else
        snprintf(err->msg, sizeof err->msg, "the sort failed (exit code %d) without a message",
                 worst);
    return rc;
}

/* Collective over the library's duplicate dup. */
static int sort_files(MPI_Comm dup, const struct dsort_file_job *job, struct dsort_errinfo *err)
{
    struct dsort_comm c;
    dsort_comm_init(&c, dup, "libdsort");
    struct caught k = {0, 0, "", job};
    c.say = catch_line;
    c.say_arg = &k;
    struct dsort_error e = {0};
    struct cmdline l = {0};
    enum dsort_status st = check_job(job, &e);
    if (!st) {
        make_cmdline(job, &l);
        if (l.failed)
            st = DSORT_ERR(&e, DSORT_ENOMEM, 0, "out of memory for the command line");
    }
    int code = 2;
    if (!dsort_comm_agree(&c, st, &e)) {
        /* getopt's state is process-wide: a fresh scan (optind 0), and the caller's back */
        int saved_ind = optind, saved_err = opterr, saved_opt = optopt;
        char *saved_arg = optarg;
        optind = 0;
        code = dsort_run(&c, l.argc, l.argv);
        optind = saved_ind, opterr = saved_err, optopt = saved_opt, optarg = saved_arg;
    }
    cmdline_free(&l);
    dsort_cleanup_run(); /* what the program's exit removes: this run's temp files */
    int rc = agree_result(&c, code, &k, err);
    dsort_comm_destroy(&c);
    dsort_cleanup_set_prefix(NULL);
    return rc;
}

DSORT_EXPORT int dsort_sort_files(MPI_Comm comm, const struct dsort_file_job *job,
                                  struct dsort_errinfo *err)
{
    if (err)
        *err = (struct dsort_errinfo){DSORT_SUCCESS, -1, ""};
    int init = 0, fin = 1, inter = 0, code = DSORT_ERR_ARG;
    const char *why = NULL;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    MPI_Comm dup = MPI_COMM_NULL;
    if (!init || fin)
        why = "MPI is not initialised, or already finalised";
    else if (comm == MPI_COMM_NULL)
        why = "the communicator is MPI_COMM_NULL";
    else if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        why = "intercommunicators are not supported";
    else if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS) {
        code = DSORT_ERR_MPI;
        why = "MPI_Comm_dup failed";
    } else {
        code = sort_files(dup, job, err);
        MPI_Comm_free(&dup);
    }
    if (why && err)
        *err = (struct dsort_errinfo){code, -1, ""}, snprintf(err->msg, sizeof err->msg, "%s", why);
    return code;
}
