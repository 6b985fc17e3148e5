/* pipeio.c - dsort's standard input and output (pipeio.h). */
#include "pipeio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "comm.h"
#include "owner.h"

#define PIPE_CHUNK ((size_t)4 << 20)
#define TAG_PART 7101

/* Write all of buf to fd (restarting after EINTR and short writes). */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

int dsort_pipeio_spool(const struct dsort_comm *c, const char *dir, char *path, size_t len)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    if (c->rank == 0) {
        int fd = -1;
        char *buf = malloc(PIPE_CHUNK);
        /* An output temp's name (owner.h): the sweep of a later job removes it if this one
         * dies by SIGKILL. */
        if (!buf)
            st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
        else if ((st = dsort_owner_temp_file(path, len, dir, "dsort_stdin", &fd, &err)))
            snprintf(err.msg + strlen(err.msg), sizeof err.msg - strlen(err.msg),
                     " (to hold standard input: -T or TMPDIR)");
        else if (!(st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, &err))) {
            for (;;) {
                ssize_t got = read(0, buf, PIPE_CHUNK);
                if (got < 0 && errno == EINTR)
                    continue;
                if (got < 0) {
                    st = DSORT_ERR(&err, DSORT_EIO, errno, "cannot read standard input");
                    break;
                }
                if (got == 0)
                    break;
                if (write_all(fd, buf, (size_t)got)) {
                    st = DSORT_ERR(&err, DSORT_EIO, errno,
                                   "cannot write '%s' (standard input's copy)", path);
                    break;
                }
            }
        }
        if (fd >= 0 && close(fd) && !st)
            st = DSORT_ERR(&err, DSORT_EIO, errno, "cannot write '%s' (standard input's copy)",
                           path);
        if (st && fd >= 0) {
            unlink(path);
            dsort_cleanup_forget(path);
        }
        free(buf);
    }
    if (dsort_comm_agree(c, st, &err))
        return 2;
    dsort_comm_require(c, MPI_Bcast(path, (int)len, MPI_CHAR, 0, c->comm),
                       "sharing the name of standard input's copy (MPI_Bcast)");
    return 0;
}

void dsort_pipeio_unspool(const struct dsort_comm *c, const char *path)
{
    if (c->rank != 0 || !path[0])
        return;
    unlink(path);
    dsort_cleanup_forget(path);
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
    dsort_comm_require(c, MPI_Bcast(path, (int)len, MPI_CHAR, 0, c->comm),
                       "sharing the name of the output's parts (MPI_Bcast)");
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

/* Rank 0: its own part, then each other rank's from MPI, to standard output. */
/* Rank 0: n bytes of the output to standard output, or through --debug's annotation. */
static int out_bytes(struct dsort_debugout *dbg, const char *buf, size_t n)
{
    return dbg ? dsort_debugout_write(dbg, buf, n) : write_all(1, buf, n);
}

static enum dsort_status write_parts(const struct dsort_comm *c, const char *part, char *buf,
                                     struct dsort_debugout *dbg, struct dsort_error *err)
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
        if (out_bytes(dbg, buf, (size_t)got))
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
            if (!st && out_bytes(dbg, buf, n))
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

int dsort_pipeio_emit(const struct dsort_comm *c, const char *path, struct dsort_debugout *dbg)
{
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
            c->rank == 0 ? write_parts(c, part, buf, dbg, &err) : send_part(c, part, buf, &err);
        if (!mine && c->rank == 0 && dbg && dsort_debugout_finish(dbg))
            mine = DSORT_ERR(&err, DSORT_EIO, errno, "cannot write standard output");
        if (mine && c->rank != 0) /* rank 0 adds its own words */
            dsort_comm_print(c, "%s", err.msg);
        st = mine;
    }
    free(buf);
    unlink(part);
    dsort_cleanup_forget(part);
    MPI_Barrier(c->node); /* every part of this node read */
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
    int code = st && c->rank == 0 ? 2 : 0;
    MPI_Bcast(&code, 1, MPI_INT, 0, c->comm);
    return code;
}
