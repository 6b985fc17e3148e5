#include "comm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "io.h"
#include "launcher.h"

/* The communicator whose rank names the fatal line (set by init; one per process). */
static const struct dsort_comm *named;

/* The error handler of dsort's communicators: an MPI call that fails prints the line that
 * names the rank, with MPI's text for the code, removes the temp files and ends the job. A
 * failed call cannot be carried past safely (the other ranks may be waiting in a collective),
 * and MPI_ERRORS_ARE_FATAL would end the job without saying which rank or why. */
static void on_mpi_error(MPI_Comm *comm, int *code, ...)
{
    struct dsort_error err;
    dsort_comm_check(*code, "an MPI call failed", &err);
    if (named)
        dsort_comm_die(named, &err);
    fprintf(stderr, "dsort: %s\n", err.msg);
    MPI_Abort(*comm, 2); /* the communicator that failed: not necessarily the world */
}

void dsort_comm_init(struct dsort_comm *c, MPI_Comm comm, const char *prog)
{
    memset(c, 0, sizeof *c);
    c->comm = comm;
    c->prog = prog;
    c->node = MPI_COMM_NULL;
    if (gethostname(c->host, sizeof c->host - 1))
        snprintf(c->host, sizeof c->host, "unknown");
    /* From here on a failing MPI call ends the job with a line that names this rank. */
    named = c;
    MPI_Errhandler eh;
    dsort_comm_require(c, MPI_Comm_create_errhandler(on_mpi_error, &eh),
                       "creating the MPI error handler");
    dsort_comm_require(c, MPI_Comm_set_errhandler(comm, eh), "setting the MPI error handler");
    dsort_comm_require(c, MPI_Comm_rank(comm, &c->rank), "MPI_Comm_rank");
    dsort_comm_require(c, MPI_Comm_size(comm, &c->size), "MPI_Comm_size");
    MPI_Comm node;
    dsort_comm_require(
        c, MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node),
        "finding the ranks of this node (MPI_Comm_split_type)");
    dsort_comm_require(c, MPI_Comm_set_errhandler(node, eh),
                       "setting the MPI error handler of the node communicator");
    MPI_Errhandler_free(&eh); /* the communicators keep it */
    dsort_comm_require(c, MPI_Comm_rank(node, &c->node_rank), "MPI_Comm_rank (node)");
    dsort_comm_require(c, MPI_Comm_size(node, &c->node_size), "MPI_Comm_size (node)");
    c->node = node;
    /* Nodes are numbered in the order of their lowest rank. */
    int low = c->rank, mylow = 0;
    dsort_comm_require(c, MPI_Allreduce(&low, &mylow, 1, MPI_INT, MPI_MIN, node),
                       "finding the node's lowest rank (MPI_Allreduce)");
    int *lows = malloc((size_t)c->size * sizeof *lows);
    if (!lows) { /* the others would wait in the Allgather for this rank */
        struct dsort_error err;
        DSORT_ERR(&err, DSORT_ENOMEM, 0, "out of memory numbering the nodes");
        dsort_comm_die(c, &err);
    }
    dsort_comm_require(c, MPI_Allgather(&mylow, 1, MPI_INT, lows, 1, MPI_INT, comm),
                       "numbering the nodes (MPI_Allgather)");
    c->node_index = 0;
    c->node_count = 0;
    for (int r = 0; r < c->size; r++)
        if (lows[r] == r) { /* r is a node's lowest rank */
            if (r < mylow)
                c->node_index++;
            c->node_count++;
        }
    free(lows);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s: rank %d/%d (%s): ", prog, c->rank, c->size, c->host);
    dsort_cleanup_set_prefix(prefix);
}

void dsort_comm_destroy(struct dsort_comm *c)
{
    if (named == c)
        named = NULL;
    if (c->node != MPI_COMM_NULL)
        MPI_Comm_free(&c->node); /* a failure here leaves nothing to do */
    c->node = MPI_COMM_NULL;
}

int dsort_comm_all_ok(const struct dsort_comm *c, int ok)
{
    int in = ok ? 1 : 0, out = 0;
    dsort_comm_require(c, MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LAND, c->comm),
                       "agreeing (MPI_Allreduce)");
    return out;
}

/* "prog: rank R/N (host): text\n" into line; returns its length. */
static size_t format_line(const struct dsort_comm *c, char *line, size_t cap, const char *fmt,
                          va_list ap) __attribute__((format(printf, 4, 0)));
static size_t format_line(const struct dsort_comm *c, char *line, size_t cap, const char *fmt,
                          va_list ap)
{
    int n = snprintf(line, cap - 1, "%s: rank %d/%d (%s): ", c->prog, c->rank, c->size, c->host);
    if (n < 0)
        n = 0;
    if ((size_t)n < cap - 1)
        vsnprintf(line + n, cap - 1 - (size_t)n, fmt, ap);
    size_t len = strlen(line);
    /* One line, whatever the names in it hold: a control character (a file name with a
     * newline, say) is shown as '?', as ls shows it on a terminal. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            line[i] = '?';
    line[len++] = '\n';
    line[len] = '\0';
    return len;
}

static size_t line_of(const struct dsort_comm *c, char *line, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static size_t line_of(const struct dsort_comm *c, char *line, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(c, line, cap, fmt, ap);
    va_end(ap);
    return len;
}

/* A formatted line to the caller's hook (comm.h), or to stderr in one write(2): never
 * interleaved with another rank's line, and out of this process before anything that may end
 * it; whatever stdio holds goes first. */
static void say_line(const struct dsort_comm *c, int is_error, enum dsort_status st,
                     const char *line, size_t len)
{
    if (c->say) {
        c->say(c->say_arg, is_error, st, line, len);
        return;
    }
    fflush(stderr);
    dsort_io_write_all(STDERR_FILENO, line, len);
}

void dsort_comm_print(const struct dsort_comm *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(c, line, sizeof line, fmt, ap);
    va_end(ap);
    say_line(c, 0, DSORT_OK, line, len);
}

void dsort_comm_print_error(const struct dsort_comm *c, enum dsort_status st, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    size_t len = format_line(c, line, sizeof line, fmt, ap);
    va_end(ap);
    say_line(c, 1, st, line, len);
}

/* The error line that ends the job, kept to be said again by dsort_comm_say_again. */
static struct {
    char line[1024];
    size_t len;
    int again;
} said;

/* Does the error say that a file system is full? */
static int no_space(const struct dsort_error *err)
{
    if (!err)
        return 0;
    return err->errnum == ENOSPC || err->errnum == EDQUOT || strstr(err->msg, strerror(ENOSPC)) ||
           strstr(err->msg, strerror(EDQUOT));
}

/* May a line that this process wrote to stderr without error still be lost? Yes when it goes
 * through a launcher (a pipe, socket or pseudo-terminal of mpirun's or srun's) that writes it
 * to a file on a file system with no room: the launcher drops what it cannot write and says
 * nothing. Where that launcher cannot be seen from here (srun's slurmstepd, a remote node's
 * daemon), the answer is yes. */
static int line_may_be_lost(void)
{
    struct stat sb;
    if (isatty(STDERR_FILENO) || (!fstat(STDERR_FILENO, &sb) && S_ISREG(sb.st_mode)))
        return 0; /* a terminal, or a file whose write said whether it found room */
    pid_t pid = dsort_launcher_pid();
    char link[64];
    snprintf(link, sizeof link, "/proc/%ld/fd/%d", (long)pid, STDERR_FILENO);
    if (pid < 0 || stat(link, &sb))
        return 1;
    if (S_ISCHR(sb.st_mode))
        return 0; /* the launcher's terminal (or /dev/null) */
    struct statvfs v;
    if (S_ISREG(sb.st_mode) && !statvfs(link, &v))
        return (unsigned long long)v.f_bavail * v.f_frsize < (1ull << 20);
    return 1;
}

/* Print the error line that ends the job; remember to say it again when it may have been
 * lost on a full file system (see dsort_comm_say_again). */
static void print_error(const struct dsort_comm *c, const char *msg, enum dsort_status st,
                        const struct dsort_error *err)
{
    if (c->say) { /* the hook's owner keeps the line: nothing is said again */
        char line[1024];
        size_t len = line_of(c, line, sizeof line, "%s", msg);
        c->say(c->say_arg, 1, st, line, len);
        return;
    }
    said.len = line_of(c, said.line, sizeof said.line, "%s", msg);
    fflush(stderr);
    int failed = dsort_io_write_all(STDERR_FILENO, said.line, said.len) != 0;
    said.again = failed || (no_space(err) && line_may_be_lost());
}

void dsort_comm_say_again(void)
{
    if (!said.again)
        return;
    said.again = 0;
    static const char note[] = " (said again now that the temp files are removed: the first "
                               "time, the error log's file system may have had no room)\n";
    char line[sizeof said.line + sizeof note];
    size_t len = said.len - 1; /* without its newline */
    memcpy(line, said.line, len);
    memcpy(line + len, note, sizeof note);
    dsort_io_write_all(STDERR_FILENO, line, len + sizeof note - 1);
}

enum dsort_status dsort_comm_agree(const struct dsort_comm *c, enum dsort_status st,
                                   const struct dsort_error *err)
{
    int mine[2] = {st ? c->rank : c->size, (int)st}, low[2];
    /* MINLOC on (rank, status) pairs: the lowest failing rank and its status. */
    dsort_comm_require(c, MPI_Allreduce(mine, low, 1, MPI_2INT, MPI_MINLOC, c->comm),
                       "agreeing on success (MPI_Allreduce)");
    if (low[0] == c->size)
        return DSORT_OK;
    if (low[0] == c->rank) /* before the Bcast: no rank goes on before the line is out */
        print_error(c, err && err->msg[0] ? err->msg : dsort_status_name(st), st, err);
    int status = (int)st;
    dsort_comm_require(c, MPI_Bcast(&status, 1, MPI_INT, low[0], c->comm),
                       "sharing the failing rank's status (MPI_Bcast)");
    return (enum dsort_status)status;
}

_Noreturn void dsort_comm_die(const struct dsort_comm *c, const struct dsort_error *err)
{
    /* The rank that ends the job is the one that says why, before it ends it. */
    print_error(c, err && err->msg[0] ? err->msg : "fatal error",
                err && err->status ? err->status : DSORT_EINTERNAL, err);
    dsort_cleanup_run();
    dsort_comm_say_again();
    MPI_Abort(c->comm, 2);
    _exit(2); /* MPI_Abort does not return; this keeps the promise if it ever does */
}

uint64_t dsort_comm_sum(const struct dsort_comm *c, uint64_t v)
{
    uint64_t out = 0;
    dsort_comm_require(c, MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, c->comm),
                       "summing over the ranks (MPI_Allreduce)");
    return out;
}

uint64_t dsort_comm_max(const struct dsort_comm *c, uint64_t v)
{
    uint64_t out = 0;
    dsort_comm_require(c, MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MAX, c->comm),
                       "the maximum over the ranks (MPI_Allreduce)");
    return out;
}

/* The standard error classes (MPI 3.1, section 8.4) by name: a message starts with its code's
 * class, which reads the same under every MPI (Open MPI's own text starts with it, MPICH's
 * does not: "Invalid rank, error stack: ..."). */
static const struct {
    int cls;
    const char *name;
} mpi_classes[] = {
    {MPI_ERR_BUFFER, "MPI_ERR_BUFFER"},
    {MPI_ERR_COUNT, "MPI_ERR_COUNT"},
    {MPI_ERR_TYPE, "MPI_ERR_TYPE"},
    {MPI_ERR_TAG, "MPI_ERR_TAG"},
    {MPI_ERR_COMM, "MPI_ERR_COMM"},
    {MPI_ERR_RANK, "MPI_ERR_RANK"},
    {MPI_ERR_REQUEST, "MPI_ERR_REQUEST"},
    {MPI_ERR_ROOT, "MPI_ERR_ROOT"},
    {MPI_ERR_GROUP, "MPI_ERR_GROUP"},
    {MPI_ERR_OP, "MPI_ERR_OP"},
    {MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY"},
    {MPI_ERR_DIMS, "MPI_ERR_DIMS"},
    {MPI_ERR_ARG, "MPI_ERR_ARG"},
    {MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN"},
    {MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE"},
    {MPI_ERR_OTHER, "MPI_ERR_OTHER"},
    {MPI_ERR_INTERN, "MPI_ERR_INTERN"},
    {MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS"},
    {MPI_ERR_PENDING, "MPI_ERR_PENDING"},
    {MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL"},
    {MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM"},
    {MPI_ERR_BASE, "MPI_ERR_BASE"},
    {MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY"},
    {MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE"},
    {MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY"},
    {MPI_ERR_SPAWN, "MPI_ERR_SPAWN"},
    {MPI_ERR_PORT, "MPI_ERR_PORT"},
    {MPI_ERR_SERVICE, "MPI_ERR_SERVICE"},
    {MPI_ERR_NAME, "MPI_ERR_NAME"},
    {MPI_ERR_WIN, "MPI_ERR_WIN"},
    {MPI_ERR_SIZE, "MPI_ERR_SIZE"},
    {MPI_ERR_DISP, "MPI_ERR_DISP"},
    {MPI_ERR_INFO, "MPI_ERR_INFO"},
    {MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE"},
    {MPI_ERR_ASSERT, "MPI_ERR_ASSERT"},
    {MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT"},
    {MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC"},
    {MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE"},
    {MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH"},
    {MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED"},
    {MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR"},
    {MPI_ERR_FILE, "MPI_ERR_FILE"},
    {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME"},
    {MPI_ERR_AMODE, "MPI_ERR_AMODE"},
    {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP"},
    {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION"},
    {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE"},
    {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS"},
    {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE"},
    {MPI_ERR_ACCESS, "MPI_ERR_ACCESS"},
    {MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE"},
    {MPI_ERR_QUOTA, "MPI_ERR_QUOTA"},
    {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY"},
    {MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE"},
    {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP"},
    {MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION"},
    {MPI_ERR_IO, "MPI_ERR_IO"},
};

/* One line of MPI's text for code: its first line, and when that ends an error stack header
 * (MPICH: "Invalid rank, error stack:" and a line per function), the deepest frame's words
 * after its "function(line): " in parentheses ("Invalid rank (Invalid rank has value 9 but
 * must be nonnegative and less than 2)"). */
static void mpi_text(int code, char *out, size_t cap)
{
    char text[MPI_MAX_ERROR_STRING + 1];
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS || len <= 0) {
        snprintf(out, cap, "MPI error %d", code);
        return;
    }
    text[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = '\0';
    char *nl = strchr(text, '\n');
    const char *last = NULL;
    if (nl) {
        *nl = '\0';
        /* the last non-empty line, after its "function(line)...: " */
        for (char *line = nl + 1; *line;) {
            char *end = line + strcspn(line, "\r\n");
            char *next = *end ? end + 1 : end;
            *end = '\0';
            if (*line)
                last = line;
            line = next;
        }
        if (last) {
            const char *words = strstr(last, ": ");
            if (words)
                last = words + 2;
            if (!*last)
                last = NULL;
        }
    }
    static const char stack[] = ", error stack:";
    size_t first = strlen(text), slen = sizeof stack - 1;
    if (first >= slen && !strcmp(text + first - slen, stack))
        text[first - slen] = '\0';
    if (last && strcmp(last, text))
        snprintf(out, cap, "%s (%s)", text, last);
    else
        snprintf(out, cap, "%s", text);
}

enum dsort_status dsort_comm_mpi_error(int code, const char *what, struct dsort_error *err)
{
    char text[MPI_MAX_ERROR_STRING + 64];
    mpi_text(code, text, sizeof text);
    int cls = 0;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS) /* a code the library does not know */
        return DSORT_ERR(err, DSORT_EIO, 0, "%s: %s", what, text);
    const char *name = NULL;
    for (size_t i = 0; i < sizeof mpi_classes / sizeof mpi_classes[0]; i++)
        if (mpi_classes[i].cls == cls) {
            name = mpi_classes[i].name;
            break;
        }
    if (!name) /* a class of the library's own */
        return DSORT_ERR(err, DSORT_EIO, 0, "%s: MPI error class %d: %s", what, cls, text);
    /* Open MPI's text already starts with the class's name: "MPI_ERR_RANK: invalid rank". */
    size_t n = strlen(name);
    if (!strncmp(text, name, n) && (text[n] == ':' || text[n] == '\0'))
        return DSORT_ERR(err, DSORT_EIO, 0, "%s: %s", what, text);
    return DSORT_ERR(err, DSORT_EIO, 0, "%s: %s: %s", what, name, text);
}

enum dsort_status dsort_comm_check(int mpi_rc, const char *what, struct dsort_error *err)
{
    if (mpi_rc == MPI_SUCCESS)
        return DSORT_OK;
    return dsort_comm_mpi_error(mpi_rc, what, err);
}

void dsort_comm_require(const struct dsort_comm *c, int mpi_rc, const char *what)
{
    if (mpi_rc == MPI_SUCCESS)
        return;
    struct dsort_error err;
    dsort_error_clear(&err);
    dsort_comm_check(mpi_rc, what, &err);
    dsort_comm_die(c, &err);
}
