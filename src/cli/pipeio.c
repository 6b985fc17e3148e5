/* pipeio.c - dsort's standard input and output (pipeio.h). */
#include "pipeio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "agree.h"
#include "cleanup.h"
#include "comm.h"
#include "io.h"
#include "launcher.h"
#include "owner.h"

#define PIPE_CHUNK ((size_t)4 << 20)
#define TAG_PART 7101
/* How long the launcher's forwarding may stand still before the bytes it has not written are
 * called lost (generous: a loaded node's mpirun may be slow to read). */
#define HANDOVER_STALL_S 10.0

/* Rank 0: copy src (an open descriptor, read to its end; named what for messages) to a new
 * file in dir named base.XXXXXX (path), registered for removal on signals. */
static enum dsort_status copy_to_temp(int src, const char *what, const char *dir, const char *base,
                                      char *buf, char *path, size_t len, struct dsort_error *err)
{
    int fd = -1;
    /* An output temp's name (owner.h): the sweep of a later job removes it if this one dies by
     * SIGKILL. */
    enum dsort_status st = dsort_owner_temp_file(path, len, dir, base, &fd, err);
    if (st) {
        snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
                 " (to hold %s: -T or TMPDIR)", what);
        return st;
    }
    if (!(st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err))) {
        for (;;) {
            ssize_t got = read(src, buf, PIPE_CHUNK);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                st = DSORT_ERR(err, DSORT_EIO, errno, "cannot read %s", what);
                break;
            }
            if (got == 0)
                break;
            if (dsort_io_write_all(fd, buf, (size_t)got)) {
                st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s' (the copy of %s)", path,
                               what);
                break;
            }
        }
    }
    if (close(fd) && !st)
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s' (the copy of %s)", path, what);
    if (st) {
        unlink(path);
        dsort_cleanup_forget(path);
        path[0] = '\0';
    }
    return st;
}

/* Rank 0: what becomes of INPUT i: COPY_NONE, COPY_STDIN (the first "-"), COPY_DROP (a later
 * "-": standard input is at its end, as in GNU) or COPY_FILE (dsort_io_unsized). */
enum { COPY_NONE, COPY_STDIN, COPY_DROP, COPY_FILE };
static unsigned char copy_kind(const char *input, int probe, int *seen_stdin)
{
    if (!strcmp(input, "-"))
        return (*seen_stdin)++ ? COPY_DROP : COPY_STDIN;
    if (!probe)
        return COPY_NONE;
    int fd = open(input, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* (a FIFO must not block) */
    struct stat sb;
    int unsized = fd >= 0 && !fstat(fd, &sb) && dsort_io_unsized(fd, &sb);
    if (fd >= 0)
        close(fd);
    return unsized ? COPY_FILE : COPY_NONE; /* (what cannot be opened: the job's open says) */
}

int dsort_pipeio_copy_inputs(const struct dsort_comm *c, const char *dir, char *const *inputs,
                             size_t n, int probe, struct dsort_pipeio_inputs *p)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    memset(p, 0, sizeof *p);
    unsigned char *kind = calloc(n + 1, 1);
    if (!kind)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    int seen = 0;
    for (size_t i = 0; kind && i < n && c->rank == 0; i++)
        kind[i] = copy_kind(inputs[i], probe, &seen);
    if (dsort_comm_agree(c, st, &err)) {
        free(kind);
        return 2;
    }
    dsort_agree_bcast(c, kind, n, "sharing which inputs are read through a copy (MPI_Bcast)");
    size_t copies = 0;
    for (size_t i = 0; i < n; i++)
        copies += kind[i] == COPY_STDIN || kind[i] == COPY_FILE;
    if (!copies) {
        free(kind);
        return 0;
    }
    p->paths = calloc(n + 1, sizeof *p->paths);
    p->shown = calloc(n + 1, sizeof *p->shown);
    p->copies = calloc(copies, sizeof *p->copies);
    char *buf = c->rank == 0 ? malloc(PIPE_CHUNK) : NULL;
    if (!p->paths || !p->shown || !p->copies || (c->rank == 0 && !buf))
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < n && !st; i++) {
        if (kind[i] == COPY_DROP)
            continue;
        p->shown[p->n] = inputs[i];
        p->paths[p->n++] = inputs[i];
        if (kind[i] == COPY_NONE)
            continue;
        char *copy = calloc(1, DSORT_PIPEIO_PATH);
        if (!copy) {
            st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
            break;
        }
        p->copies[p->ncopies++] = p->paths[p->n - 1] = copy;
        if (c->rank != 0)
            continue;
        if (kind[i] == COPY_STDIN) {
            st = copy_to_temp(0, "standard input", dir, "dsort_stdin", buf, copy, DSORT_PIPEIO_PATH,
                              &err);
            continue;
        }
        char what[4200];
        snprintf(what, sizeof what, "'%s'", inputs[i]);
        int fd = open(inputs[i], O_RDONLY | O_CLOEXEC);
        st = fd < 0
                 ? DSORT_ERR(&err, DSORT_EIO, errno, "cannot open '%s'", inputs[i])
                 : copy_to_temp(fd, what, dir, "dsort_input", buf, copy, DSORT_PIPEIO_PATH, &err);
        if (fd >= 0)
            close(fd);
    }
    free(buf);
    free(kind);
    if (dsort_comm_agree(c, st, &err)) {
        dsort_pipeio_uncopy(c, p);
        return 2;
    }
    for (size_t k = 0; k < p->ncopies; k++)
        dsort_agree_bcast(c, p->copies[k], DSORT_PIPEIO_PATH,
                          "sharing the names of the inputs' copies (MPI_Bcast)");
    return 0;
}

void dsort_pipeio_uncopy(const struct dsort_comm *c, struct dsort_pipeio_inputs *p)
{
    for (size_t k = 0; k < p->ncopies; k++) {
        if (c->rank == 0 && p->copies[k][0]) {
            unlink(p->copies[k]);
            dsort_cleanup_forget(p->copies[k]);
        }
        free(p->copies[k]);
    }
    free(p->copies);
    free(p->paths);
    free(p->shown);
    memset(p, 0, sizeof *p);
}

void dsort_pipeio_name_copies(const struct dsort_pipeio_inputs *p, char *msg, size_t len)
{
    for (size_t i = 0; i < p->n; i++) {
        if (p->paths[i] == p->shown[i])
            continue;
        char *at = strstr(msg, p->paths[i]);
        if (!at || at == msg || at[-1] != '\'' || at[strlen(p->paths[i])] != '\'')
            continue;
        /* 'COPY' becomes 'INPUT' (copied to 'COPY') */
        char *rest = strdup(at + strlen(p->paths[i]) + 1);
        if (!rest)
            return;
        size_t head = (size_t)(at - msg);
        snprintf(at, len - head, "%s' (copied to '%s')%s", p->shown[i], p->paths[i], rest);
        free(rest);
    }
}

void dsort_pipeio_outdir(const struct dsort_comm *c, const char *dir, char *path, size_t len)
{
    if (c->rank == 0) {
        /* An output temp's name of rank 0 (owner.h), its XXXXXX made random here (the output
         * module creates the directory, on every node): if the job dies by SIGKILL, a later
         * job's sweep on rank 0's node removes it and its parts. */
        struct dsort_owner self;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned r = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16);
        dsort_owner_self(&self, NULL);
        if (dsort_owner_temp_name(path, len, dir, "dsort_stdout", &self, NULL)) {
            snprintf(path, len, "%s/dsort_stdout.%s.%ld.%08x", dir, c->host, (long)getpid(), r);
        } else {
            static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
            char *x = path + strlen(path) - 6;
            for (int i = 0; i < 6; i++, r /= 36)
                x[i] = digits[r % 36];
        }
    }
    dsort_agree_bcast(c, path, len, "sharing the name of the output's parts (MPI_Bcast)");
}

/* Rank r > 0: send the part (its size first, as int64: -1 if it cannot be opened), then its
 * bytes in chunks, then a status (0, or 1 if a read failed: the bytes sent are then zeros). */
static enum dsort_status send_part(const struct dsort_comm *c, const char *part, char *buf,
                                   struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    int fd = open(part, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    int64_t size = -1;
    if (fd < 0 || fstat(fd, &sb))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot open output part '%s'", part);
    else
        size = (int64_t)sb.st_size;
    dsort_comm_require(c, MPI_Send(&size, 1, MPI_INT64_T, 0, TAG_PART, c->comm),
                       "sending an output part to rank 0 (MPI_Send)");
    for (int64_t off = 0; off < size;) {
        size_t n = (uint64_t)(size - off) < PIPE_CHUNK ? (size_t)(size - off) : PIPE_CHUNK;
        ssize_t got = st ? -1 : pread(fd, buf, n, (off_t)off);
        if (got != (ssize_t)n) {
            if (!st)
                st = DSORT_ERR(err, DSORT_EIO, got < 0 ? errno : 0, "cannot read output part '%s'",
                               part);
            memset(buf, 0, n);
        }
        dsort_comm_require(c, MPI_Send(buf, (int)n, MPI_BYTE, 0, TAG_PART, c->comm),
                           "sending an output part to rank 0 (MPI_Send)");
        off += (int64_t)n;
    }
    int failed = st != DSORT_OK;
    dsort_comm_require(c, MPI_Send(&failed, 1, MPI_INT, 0, TAG_PART, c->comm),
                       "sending an output part to rank 0 (MPI_Send)");
    if (fd >= 0)
        close(fd);
    return st;
}

/* What rank 0 hands over to standard output: bytes and records (lines: their terminators). */
struct handed {
    uint64_t bytes, records;
    size_t rec_size; /* 0: text lines ending in eol */
    int eol;
};

/* Rank 0: n bytes of the output to standard output, or through --debug's annotation. */
static int out_bytes(struct dsort_debugout *dbg, struct handed *h, const char *buf, size_t n)
{
    h->bytes += n;
    if (h->rec_size)
        h->records = h->bytes / h->rec_size;
    else
        for (const char *p = buf, *end = buf + n; (p = memchr(p, h->eol, (size_t)(end - p))); p++)
            h->records++;
    return dbg ? dsort_debugout_write(dbg, buf, n) : dsort_io_write_all(1, buf, n);
}

/* Standard output through a launcher (issue 25): mpirun and srun forward a rank's standard
 * output through a pipe or pseudo-terminal and write it to the user's file themselves; when
 * that write fails (a full disk), they drop the bytes and exit 0 without a word. Where the
 * launcher started this rank on its own node (launcher.h) and writes to a regular file, rank 0
 * watches that file's position (/proc/PID/fdinfo/1) until every byte is in, and calls the
 * output short otherwise; where it cannot see the file, it says how much it handed over. */
struct forward {
    const char *launcher; /* NULL: standard output is ours (a file, or no launcher) */
    int watch;            /* the launcher writes to a regular file, whose position we read */
    char fdinfo[64];
    char dest[4096]; /* that file's name */
    uint64_t pos0;
};

/* The file position of the open file that fdinfo (a /proc/PID/fdinfo/FD) describes. */
static int read_pos(const char *fdinfo, uint64_t *pos)
{
    FILE *f = fopen(fdinfo, "re");
    if (!f)
        return -1;
    unsigned long long v = 0;
    int ok = fscanf(f, "pos: %llu", &v) == 1;
    fclose(f);
    *pos = v;
    return ok ? 0 : -1;
}

static void forward_begin(const struct dsort_comm *c, struct dsort_debugout *dbg,
                          struct forward *fw)
{
    memset(fw, 0, sizeof *fw);
    const struct dsort_cli_launch *l = dsort_cli_launcher();
    struct stat sb;
    if ((!l && c->size == 1) || (!fstat(1, &sb) && (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode))))
        return; /* our own writes report their errors */
    fw->launcher = l ? l->name : "the launcher";
    pid_t pid = dsort_launcher_pid();
    if (pid < 0)
        return; /* cannot be seen from here: say what was handed over */
    char fd1[64];
    snprintf(fd1, sizeof fd1, "/proc/%ld/fd/1", (long)pid);
    snprintf(fw->fdinfo, sizeof fw->fdinfo, "/proc/%ld/fdinfo/1", (long)pid);
    ssize_t n = readlink(fd1, fw->dest, sizeof fw->dest - 1);
    fw->dest[n > 0 ? n : 0] = '\0';
    if (n > 0 && (!strncmp(fw->dest, "/dev/pts/", 9) || !strncmp(fw->dest, "/dev/tty", 8))) {
        fw->launcher = NULL; /* a terminal: nothing to lose */
        return;
    }
    /* --debug writes more than the data: its bytes are not counted, so not watched */
    fw->watch = !dbg && !stat(fd1, &sb) && S_ISREG(sb.st_mode) && !read_pos(fw->fdinfo, &fw->pos0);
}

/* After rank 0 handed everything over: the launcher's file grew by all of it, or an error. */
static enum dsort_status forward_end(const struct dsort_comm *c, const struct forward *fw,
                                     const struct handed *h, struct dsort_error *err)
{
    if (!fw->launcher)
        return DSORT_OK;
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%llu", (unsigned long long)h->bytes);
    if (!fw->watch) {
        dsort_comm_print(c,
                         "handed %llu records (%s bytes) to %s for standard output; %s does "
                         "not report errors writing it (a full disk): check that the output has "
                         "%s bytes, or use -o FILE",
                         (unsigned long long)h->records, bytes, fw->launcher, fw->launcher, bytes);
        return DSORT_OK;
    }
    uint64_t pos = fw->pos0, last = pos;
    struct timespec nap = {0, 10 * 1000 * 1000};
    double still = 0;
    /* >=: the launcher's standard error may be the same file, and its lines count too */
    while (pos - fw->pos0 < h->bytes && still < HANDOVER_STALL_S) {
        nanosleep(&nap, NULL);
        if (read_pos(fw->fdinfo, &pos))
            break; /* the launcher is gone: it wrote what it wrote */
        still = pos != last ? 0 : still + 0.01;
        last = pos;
        struct statvfs v; /* standing still on a full file system: it will not move again */
        if (still >= 1.0 && !statvfs(fw->dest, &v) && v.f_bavail == 0)
            break;
    }
    if (pos - fw->pos0 >= h->bytes)
        return DSORT_OK;
    return DSORT_ERR(err, DSORT_EIO, 0,
                     "%s wrote only %llu of the %s bytes of standard output (%llu records) to "
                     "'%s', and did not say why (a full disk?): the output is short; use -o "
                     "FILE to have write errors reported",
                     fw->launcher, (unsigned long long)(pos - fw->pos0), bytes,
                     (unsigned long long)h->records, fw->dest);
}

static enum dsort_status write_parts(const struct dsort_comm *c, const char *part, char *buf,
                                     struct dsort_debugout *dbg, struct handed *h,
                                     struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    int fd = open(part, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot open output part '%s'", part);
    for (;;) {
        ssize_t got = st ? 0 : read(fd, buf, PIPE_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot read output part '%s'", part);
        if (got <= 0)
            break;
        if (out_bytes(dbg, h, buf, (size_t)got))
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write standard output");
    }
    if (fd >= 0)
        close(fd);
    for (int r = 1; r < c->size; r++) {
        int64_t size = 0;
        int failed = 0;
        dsort_comm_require(c,
                           MPI_Recv(&size, 1, MPI_INT64_T, r, TAG_PART, c->comm, MPI_STATUS_IGNORE),
                           "receiving an output part (MPI_Recv)");
        for (int64_t off = 0; off < size;) {
            size_t n = (uint64_t)(size - off) < PIPE_CHUNK ? (size_t)(size - off) : PIPE_CHUNK;
            dsort_comm_require(
                c, MPI_Recv(buf, (int)n, MPI_BYTE, r, TAG_PART, c->comm, MPI_STATUS_IGNORE),
                "receiving an output part (MPI_Recv)");
            if (!st && out_bytes(dbg, h, buf, n))
                st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write standard output");
            off += (int64_t)n;
        }
        dsort_comm_require(c,
                           MPI_Recv(&failed, 1, MPI_INT, r, TAG_PART, c->comm, MPI_STATUS_IGNORE),
                           "receiving an output part (MPI_Recv)");
        /* a rank that failed printed why; stop writing what follows */
        if ((failed || size < 0) && !st)
            st = DSORT_ERR(err, DSORT_EIO, 0, "rank %d could not send its part of the output", r);
    }
    return st;
}

int dsort_pipeio_emit(const struct dsort_comm *c, const char *path, struct dsort_debugout *dbg,
                      size_t rec_size, int eol)
{
    struct handed h = {0, 0, rec_size, eol};
    struct forward fw;
    if (c->rank == 0)
        forward_begin(c, dbg, &fw);
    struct dsort_error err = {0};
    char part[4200], succ[4200];
    snprintf(part, sizeof part, "%s/part-%05d", path, c->rank);
    snprintf(succ, sizeof succ, "%s/_SUCCESS", path);
    /* The committed parts are ours to remove again, on signals too. Every rank of the node
     * registers the manifest and the directory: the last to clean up removes them (a reader
     * that exits early makes mpirun end the ranks in any order). */
    enum dsort_status st = dsort_cleanup_add(part, DSORT_CLEANUP_FILE, &err);
    if (!st)
        st = dsort_cleanup_add(succ, DSORT_CLEANUP_FILE, &err);
    if (!st)
        st = dsort_cleanup_add(path, DSORT_CLEANUP_DIR, &err);
    char *buf = malloc(PIPE_CHUNK);
    if (!buf && !st)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status ag = dsort_comm_agree(c, st, &err);
    if (!ag) {
        enum dsort_status mine =
            c->rank == 0 ? write_parts(c, part, buf, dbg, &h, &err) : send_part(c, part, buf, &err);
        if (!mine && c->rank == 0 && dbg && dsort_debugout_finish(dbg))
            mine = DSORT_ERR(&err, DSORT_EIO, errno, "cannot write standard output");
        if (!mine && c->rank == 0)
            mine = forward_end(c, &fw, &h, &err);
        if (mine && c->rank != 0) /* rank 0 adds its own words */
            dsort_comm_print(c, "%s", err.msg);
        st = mine;
    }
    free(buf);
    unlink(part);
    dsort_cleanup_forget(part);
    dsort_agree_barrier(c, c->node, "every part of this node read (MPI_Barrier)");
    if (c->node_rank == 0) {
        unlink(succ);
        rmdir(path);
    }
    dsort_cleanup_forget(succ);
    dsort_cleanup_forget(path);
    if (ag)
        return 2;
    /* rank 0's status says it all: the other ranks' failures reached it */
    if (c->rank == 0 && st)
        dsort_comm_print(c, "%s", err.msg);
    return dsort_agree_code(c, st && c->rank == 0 ? 2 : 0);
}
