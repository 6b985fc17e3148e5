#include "cli.h"
#include "keys.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "cleanup.h"

static struct dsort_comm *started; /* for dsort_cli_finish */

/* The launcher that started this process, as its tasks' environment tells (read before
 * MPI_Init, which may set variables of its own). */
static struct dsort_cli_launch launch;

/* Variables that mean "this process is task RANK of the SIZE tasks of one launch", in order of
 * precedence: an MPI launcher's own first (mpirun inside a Slurm step leaves the step's
 * variables in its ranks' environment), Slurm's step last. An allocation's variables
 * (SLURM_NTASKS, SLURM_JOB_NUM_NODES, SLURM_NPROCS) are also set in an salloc shell and in a
 * batch script, where a singleton is right, so they do not count. */
static const struct {
    const char *size, *rank, *name;
} launch_vars[] = {
    {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "mpirun"},   /* Open MPI's mpirun, orted */
    {"MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK", "mpirun_rsh"}, /* MVAPICH2 */
    {"PMI_SIZE", "PMI_RANK", "mpiexec"}, /* MPICH's Hydra, Intel MPI; srun --mpi=pmi2 */
    {"JSM_NAMESPACE_SIZE", "JSM_NAMESPACE_RANK", "jsrun"}, /* IBM LSF */
    {"SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "srun"}, /* a task of a step (not an allocation) */
};

/* A positive count from the environment, or 0 (unset or not a number). */
static long env_count(const char *name)
{
    const char *s = getenv(name);
    if (!s || *s < '0' || *s > '9')
        return 0;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    return errno || *end || v <= 0 ? 0 : v;
}

static void launch_detect(struct dsort_cli_launch *l)
{
    memset(l, 0, sizeof *l);
    for (size_t i = 0; i < sizeof launch_vars / sizeof launch_vars[0]; i++) {
        long n = env_count(launch_vars[i].size);
        /* a step's task has both; the rank alone (or the size alone) is no launch of ours */
        if (!n || !getenv(launch_vars[i].rank))
            continue;
        l->name = launch_vars[i].name;
        l->var = launch_vars[i].size;
        l->tasks = n;
        l->task = env_count(launch_vars[i].rank); /* 0 for "0" too */
        /* PMI_SIZE: Hydra's tasks also have MPI_LOCALNRANKS; srun --mpi=pmi2's have a step */
        if (!strcmp(l->var, "PMI_SIZE") && !getenv("MPI_LOCALNRANKS") &&
            getenv("SLURM_STEP_NUM_TASKS"))
            l->name = "srun";
        return;
    }
}

const struct dsort_cli_launch *dsort_cli_launcher(void)
{
    return launch.name ? &launch : NULL;
}

/* A launcher started N > 1 tasks but MPI made each a singleton (no working process manager
 * interface: srun without --mpi=pmix, or a launcher of another MPI): every task would sort the
 * whole input alone and write the same output. Refuse before anything is touched. */
static void refuse_singletons(const struct dsort_comm *c)
{
    if (c->size != 1 || launch.tasks <= 1)
        return;
    if (!strcmp(launch.name, "srun"))
        dsort_comm_print(c,
                         "started as 1 rank but srun started %ld tasks: use srun --mpi=pmix or "
                         "mpirun (this is task %ld; %s=%ld: each task would do the whole job "
                         "alone)",
                         launch.tasks, launch.task, launch.var, launch.tasks);
    else
        dsort_comm_print(c,
                         "started as 1 rank but %s started %ld tasks: use the %s of the MPI that "
                         "%s is built with (this is task %ld; %s=%ld: each task would do the "
                         "whole job alone)",
                         launch.name, launch.tasks, launch.name, c->prog, launch.task, launch.var,
                         launch.tasks);
    exit(dsort_cli_finish(2));
}

/* Open MPI's TCP transport moves a large message by its put protocol by default; on the TCP
 * test bed that carried half the link's rate each way when both ends of a link sent at once,
 * as every exchange does (116 against 60 MB/s each way on a 1 Gbit/s link, 234 against 119 on
 * 2 Gbit/s: docs/performance.md; open-mpi/ompi#8983 discusses the put path). Its send
 * protocol is asked for instead (the default flags without put), unless the flags were chosen
 * (mpirun --mca btl_tcp_flags and the environment reach the ranks as this variable). Other
 * transports, and other MPIs, do not read it. */
static void tcp_send_protocol(void)
{
    if (!getenv("OMPI_MCA_btl_tcp_flags"))
        setenv("OMPI_MCA_btl_tcp_flags", "send,inplace,need-ack,need-csum,hetero-rdma", 0);
}

void dsort_cli_start(int *argc, char ***argv, struct dsort_comm *c, const char *prog)
{
    dsort_cleanup_remember_ignored();
    launch_detect(&launch);
    tcp_send_protocol();
    /* MPI_Init starts threads of its own (Open MPI's progress and PMIx threads) that may take
     * a handled signal: the handler passes it on to the main thread (cleanup.h). Blocking the
     * signals in those threads instead made Open MPI 4.1 crash at start-up under srun. */
    /* A file size limit (ulimit -f) below what MPI_Init writes (Open MPI's shared-memory
     * segment, 4 MiB at 2 ranks) raised SIGXFSZ there, before any handler, and killed every
     * rank without a word (exit 153). Ignored meanwhile, the write fails instead (Open MPI
     * goes on without that segment), and the limit is named where dsort's own writes meet it. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, xfsz;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGXFSZ, &ign, &xfsz);
    /* FUNNELED: helper threads (the output writer, read-ahead, the copying path's merge) run
     * beside the main thread's MPI calls, and only the main thread calls MPI. */
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    sigaction(SIGXFSZ, &xfsz, NULL);
    dsort_cleanup_install();
    dsort_comm_init(c, MPI_COMM_WORLD, prog);
    dsort_cleanup_usr1_speaker(c->rank == 0); /* the job's one line on a SIGUSR1 it goes on from */
    started = c;
    refuse_singletons(c);
}

int dsort_cli_finish(int code)
{
    dsort_cleanup_run();
    /* No rank leaves before every rank has said what it had to say and removed its temp files:
     * mpirun ends the others a moment after the first rank that exits non-zero, and a line not
     * yet written then is lost. Every rank reaches this (MPI_Finalize would wait for them too).
     * Then, with the space of the temp files free again, an error line that a full file system
     * may have swallowed is said again. */
    if (started)
        dsort_agree_barrier(started, started->comm, "leaving together (MPI_Barrier)");
    dsort_comm_say_again();
    /* The error is reported; mpirun may now SIGTERM ranks still finishing: no more lines. */
    if (code)
        dsort_cleanup_set_prefix(NULL);
    if (started)
        dsort_comm_destroy(started);
    MPI_Finalize();
    return code;
}

/* The last usage error's text on this rank, for dsort_cli_agree_usage. */
static char usage_text[1024];

void dsort_cli_usage_forget(void)
{
    usage_text[0] = '\0';
}

int dsort_cli_usage_error(const struct dsort_comm *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(usage_text, sizeof usage_text, fmt, ap);
    va_end(ap);
    if (c->say && c->rank == 0) /* a caller that prints nothing itself (comm.h) */
        dsort_comm_print_error(c, DSORT_EINVAL, "%s", usage_text);
    else if (c->rank == 0) {
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", c->prog);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry '%s --help' for more information.\n", c->prog);
        va_end(ap);
    }
    return 2;
}

int dsort_cli_agree_usage(const struct dsort_comm *c, int code)
{
    int worst = (int)dsort_comm_max(c, (uint64_t)(code < 0 ? 0 : code + 1)) - 1;
    if (worst < 0)
        return -1;
    /* Rank 0 printed its own error (or its --help); a rank that saw one alone says it here. */
    if (dsort_agree_code(c, code) == worst)
        return worst;
    uint64_t first = dsort_agree_min(c, code == worst ? (uint64_t)c->rank : UINT64_MAX);
    if (first == (uint64_t)c->rank)
        dsort_comm_print_error(c, DSORT_EINVAL, "%s",
                               usage_text[0] ? usage_text
                                             : "the options were refused on this rank");
    return worst;
}

int dsort_cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int dsort_cli_argmatch(const struct dsort_comm *c, const char *option, const char *arg,
                       const char *const *words, const char *values, const char *valid)
{
    size_t len = strlen(arg);
    int value = 0, ambiguous = 0;
    for (size_t i = 0; words[i]; i++) {
        if (!strcmp(words[i], arg))
            return values[i];
        if (!strncmp(words[i], arg, len)) {
            if (value && value != values[i])
                ambiguous = 1;
            value = values[i];
        }
    }
    if (value && !ambiguous)
        return value;
    dsort_cli_usage_error(c, "%s argument '%s' for '%s'\nValid arguments are:\n%s",
                          ambiguous ? "ambiguous" : "invalid", arg, option, valid);
    return 0;
}

/* --sort=WORD: the option letter, or 0 after a usage error (printed). */
static int sort_word(const struct dsort_comm *c, const char *arg)
{
    static const char *const words[] = {"general-numeric", "human-numeric", "month", "numeric",
                                        "random",          "version",       NULL};
    return dsort_cli_argmatch(c, "--sort", arg, words, "ghMnRV",
                              "  - 'general-numeric'\n"
                              "  - 'human-numeric'\n"
                              "  - 'month'\n"
                              "  - 'numeric'\n"
                              "  - 'random'\n"
                              "  - 'version'");
}

int dsort_cli_key_option(const struct dsort_comm *c, struct dsort_keys *k, int ch, const char *arg,
                         unsigned char *eol)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    switch (ch) {
    case 'z':
        *eol = '\0';
        return 1;
    case 't':
        st = dsort_keys_set_tab(k, arg, &err);
        break;
    case 'k':
        st = dsort_keys_add(k, arg, &err);
        break;
    case 'b':
    case 'd':
    case 'f':
    case 'i':
    case 'n':
    case 'g':
    case 'h':
    case 'V':
    case 'M':
    case 'R': /* its seed comes later (dsort_keys_set_random_seed) */
        st = dsort_keys_set_global(k, (char)ch, &err);
        break;
    case DSORT_CLI_OPT_SORT: {
        int letter = sort_word(c, arg);
        if (!letter)
            return -1;
        st = dsort_keys_set_global(k, (char)letter, &err);
        break;
    }
    default:
        return 0;
    }
    if (st) {
        dsort_cli_usage_error(c, "%s", err.msg);
        return -1;
    }
    return 1;
}

void dsort_cli_canonical(const char *path, char *buf, size_t len)
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

int dsort_cli_inside(const char *path, const char *dir)
{
    char cp[4096], cd[4096];
    dsort_cli_canonical(path, cp, sizeof cp);
    dsort_cli_canonical(dir, cd, sizeof cd);
    size_t n = strlen(cd);
    return !strncmp(cp, cd, n) && (cp[n] == '\0' || cp[n] == '/' || !strcmp(cd, "/"));
}

int dsort_cli_typed_option(struct dsort_cli_typed *t, int ch, const char *arg)
{
    if (ch != 'k' || !dsort_typedkey_is_spec(arg))
        return 0;
    if (!t->st)
        t->st = dsort_typedkey_add(&t->tk, arg, &t->err);
    return 1;
}

int dsort_cli_typed_setup(const struct dsort_comm *c, struct dsort_cli_typed *t, int lines,
                          struct dsort_format *fmt)
{
    if (t->st)
        return dsort_cli_usage_error(c, "%s", t->err.msg);
    if (!t->tk.count)
        return -1;
    if (lines)
        return dsort_cli_usage_error(c, "typed keys (-k OFF:TYPE) go with a fixed format, not "
                                        "with --format lines or -k POS1[,POS2]");
    if (dsort_typedkey_finish(&t->tk, fmt->rec_size, &t->err))
        return dsort_cli_usage_error(c, "%s", t->err.msg);
    fmt->typed = &t->tk;
    return -1;
}
