#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "io.h"
#include "mem.h"
#include "output_stage.h"
#include "replace.h"

/* O_DIRECT transfers: 4 KiB alignment, bounced through an 8 MiB aligned buffer. */
#define DIRECT_ALIGN ((uint64_t)4096)
#define BOUNCE_LEN ((size_t)8 << 20)

static void fix_umask_mode(int fd)
{
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
}

/* A second descriptor with O_DIRECT, where the file system has it: bulk output then skips
 * the page cache, whose fresh pages are the slow path here, and the final fsync is short. */
static void open_direct(struct dsort_output *o)
{
    const char *name = o->mode == DSORT_OUTPUT_FILE ? o->stage : o->part;
    o->dfd = open(name, O_WRONLY | O_DIRECT | O_CLOEXEC);
    if (o->dfd < 0)
        return;
    if (!(o->bounce = dsort_mem_alloc(BOUNCE_LEN))) {
        close(o->dfd);
        o->dfd = -1;
    }
}

/* Does this rank create, publish and remove the stage? */
static int stage_owner(const struct dsort_comm *c, const struct dsort_output *o)
{
    return o->mode == DSORT_OUTPUT_LOCAL_DIR ? c->node_rank == 0 : c->rank == 0;
}

enum dsort_status dsort_output_open(const struct dsort_comm *c, struct dsort_output *o,
                                    enum dsort_output_mode mode, const char *path,
                                    uint64_t my_bytes, int direct, struct dsort_error *err)
{
    memset(o, 0, sizeof *o);
    o->mode = mode;
    o->fd = o->dfd = -1;
    o->nparts = (unsigned)c->size;
    o->bytes = my_bytes;
    enum dsort_status st = DSORT_OK;
    if (snprintf(o->final, sizeof o->final, "%s", path) >= (int)sizeof o->final)
        st = DSORT_ERR(err, DSORT_EINVAL, 0, "output path too long: '%s'", path);
    uint64_t total = 0, before = 0;
    MPI_Allreduce(&my_bytes, &total, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    MPI_Exscan(&my_bytes, &before, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    o->offset = c->rank == 0 ? 0 : before;
    if (stage_owner(c, o) && !st) {
        st = dsort_output_stage_create(c, o, total, err);
        o->owns_stage = o->stage[0] && !st && !o->null_sink;
        if (st && o->stage[0] && !strstr(o->stage, "XXXXXX") && !o->null_sink)
            o->owns_stage = 1; /* created, then failed: abandon removes it */
    }
    if ((st = dsort_comm_agree(c, st, err)))
        goto fail;
    MPI_Bcast(o->stage, (int)sizeof o->stage, MPI_CHAR, 0,
              mode == DSORT_OUTPUT_LOCAL_DIR ? c->node : c->comm);
    if (mode == DSORT_OUTPUT_FILE)
        MPI_Bcast(&o->null_sink, 1, MPI_INT, 0, c->comm);
    if (mode == DSORT_OUTPUT_FILE) {
        o->fd = open(o->stage, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot open output '%s' (temp '%s')", o->final,
                           o->stage);
        else if (c->rank == 0 && !o->keep_mode && !o->null_sink)
            fix_umask_mode(o->fd);
    } else {
        snprintf(o->part, sizeof o->part, "%s/part-%05d", o->stage, c->rank);
        o->fd = open(o->part, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (o->fd < 0)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot create output part '%s'", o->part);
        else
            st = dsort_cleanup_add(o->part, 0, err);
    }
    if (!st && direct && !o->null_sink)
        open_direct(o);
    if ((st = dsort_comm_agree(c, st, err)))
        goto fail;
    return DSORT_OK;
fail:
    dsort_output_abandon(o);
    return st;
}

static void close_direct(struct dsort_output *o)
{
    if (o->dfd >= 0)
        close(o->dfd);
    o->dfd = -1;
    dsort_mem_free(o->bounce, BOUNCE_LEN);
    o->bounce = NULL;
}

/* Write [p, p+len) at file offset at (both 4 KiB aligned) through O_DIRECT. Returns 0, or -1
 * with errno when the file system refuses direct I/O (the caller falls back). */
static int write_direct(struct dsort_output *o, const unsigned char *p, uint64_t len, uint64_t at)
{
    int aligned = ((uintptr_t)p % DIRECT_ALIGN) == 0;
    while (len > 0) {
        size_t n = len < BOUNCE_LEN ? (size_t)len : BOUNCE_LEN;
        const unsigned char *src = p;
        if (!aligned) {
            memcpy(o->bounce, p, n);
            src = o->bounce;
        }
        ssize_t put = pwrite(o->dfd, src, n, (off_t)at);
        if (put < 0 && errno == EINTR)
            continue;
        if (put < 0)
            return -1;
        if (put == 0) /* no progress: an error, never a reason to loop */
            return errno = EIO, -1;
        if ((size_t)put % DIRECT_ALIGN)
            return errno = EIO, -1; /* cannot continue aligned; let the caller finish */
        p += put;
        at += (uint64_t)put;
        len -= (uint64_t)put;
    }
    return 0;
}

enum dsort_status dsort_output_write(struct dsort_output *o, const void *buf, size_t len,
                                     uint64_t off, struct dsort_error *err)
{
    const char *name = o->mode == DSORT_OUTPUT_FILE ? o->final : o->part;
    const unsigned char *p = buf;
    uint64_t at = (o->mode == DSORT_OUTPUT_FILE ? o->offset : 0) + off;
    if (o->dfd >= 0 && len >= 4 * DIRECT_ALIGN) {
        /* Unaligned head and tail go through the page cache (they may share a block with a
         * neighbouring rank's range); the aligned middle goes direct. */
        uint64_t head = (DIRECT_ALIGN - at % DIRECT_ALIGN) % DIRECT_ALIGN;
        uint64_t mid = (len - head) / DIRECT_ALIGN * DIRECT_ALIGN;
        enum dsort_status st = dsort_io_pwrite_full(o->fd, p, (size_t)head, at, name, err);
        if (st)
            return st;
        if (write_direct(o, p + head, mid, at + head)) {
            if (errno != EINVAL)
                return DSORT_ERR(err, DSORT_EIO, errno, "cannot write '%s'", name);
            close_direct(o); /* refused: the buffered path writes everything again */
            return dsort_io_pwrite_full(o->fd, p, len, at, name, err);
        }
        p += head + mid;
        at += head + mid;
        len -= (size_t)(head + mid);
    }
    return dsort_io_pwrite_full(o->fd, p, len, at, name, err);
}

enum dsort_status dsort_output_set_share(const struct dsort_comm *c, struct dsort_output *o,
                                         uint64_t my_bytes, struct dsort_error *err)
{
    uint64_t total = 0, before = 0;
    MPI_Allreduce(&my_bytes, &total, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    MPI_Exscan(&my_bytes, &before, 1, MPI_UINT64_T, MPI_SUM, c->comm);
    o->offset = c->rank == 0 ? 0 : before;
    o->bytes = my_bytes;
    enum dsort_status st = DSORT_OK;
    if (o->mode == DSORT_OUTPUT_FILE && c->rank == 0 && !o->null_sink &&
        ftruncate(o->fd, (off_t)total))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot size output '%s'", o->final);
    return dsort_comm_agree(c, st, err);
}

uint64_t dsort_output_file_offset(const struct dsort_output *o, uint64_t off)
{
    return (o->mode == DSORT_OUTPUT_FILE ? o->offset : 0) + off;
}

/* Remove a staging directory and whatever dsort put in it (parts, manifest): the _SUCCESS
 * marker first, so that a directory half removed never claims to be complete. With keep_dir
 * the directory itself stays (a mount point that was there before the job). */
static void remove_stage_dir(const char *stage, int keep_dir)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/_SUCCESS", stage);
    unlink(path);
    dsort_cleanup_forget(path);
    DIR *d = opendir(stage);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (!strncmp(e->d_name, "part-", 5) || strstr(e->d_name, "_SUCCESS")) {
                snprintf(path, sizeof path, "%s/%s", stage, e->d_name);
                unlink(path);
                dsort_cleanup_forget(path);
            }
        closedir(d);
    }
    if (!keep_dir)
        rmdir(stage);
    dsort_cleanup_forget(stage);
}

void dsort_output_abandon(struct dsort_output *o)
{
    close_direct(o);
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (o->part[0]) {
        unlink(o->part);
        dsort_cleanup_forget(o->part);
        o->part[0] = '\0';
    }
    if (o->renamed) { /* --local-output, failed between the phases: undo the rename */
        remove_stage_dir(o->target, o->inside);
        o->renamed = 0;
    }
    if (o->owns_stage) { /* rank 0 created the stage and removes it */
        if (o->mode == DSORT_OUTPUT_FILE) {
            unlink(o->stage);
            dsort_cleanup_forget(o->stage);
        } else {
            remove_stage_dir(o->stage, 0);
        }
        o->owns_stage = 0;
    }
}

/* The stage owner: write the manifest into the staging directory. */
static enum dsort_status write_manifest(const struct dsort_comm *c, struct dsort_output *o,
                                        const struct dsort_part_info *parts, int publish_it,
                                        struct dsort_error *err)
{
    char path[4200], tmp[4200];
    snprintf(path, sizeof path, "%s/_SUCCESS", o->stage);
    snprintf(tmp, sizeof tmp, "%s/._SUCCESS.tmp", o->stage);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create manifest '%s'", tmp);
    enum dsort_status st = dsort_cleanup_add(tmp, 0, err);
    uint64_t rec = 0, bytes = 0;
    struct dsort_sum128 sum = {0, 0};
    char hex[33];
    fprintf(f, "{\n  \"format_version\": 1,\n  \"node_local\": %s,\n  \"parts\": [\n",
            o->mode == DSORT_OUTPUT_LOCAL_DIR ? "true" : "false");
    for (int r = 0; r < c->size; r++) {
        dsort_sum128_hex(&parts[r].checksum, hex);
        fprintf(
            f,
            "    {\"name\": \"part-%05d\", \"rank\": %d, \"node\": \"%s\", \"records\": %" PRIu64
            ", \"bytes\": %" PRIu64 ", \"checksum\": \"%s\"}%s\n",
            r, r, parts[r].node, parts[r].records, parts[r].bytes, hex, r + 1 < c->size ? "," : "");
        rec += parts[r].records;
        bytes += parts[r].bytes;
        dsort_sum128_merge(&sum, &parts[r].checksum);
    }
    dsort_sum128_hex(&sum, hex);
    fprintf(f,
            "  ],\n  \"total\": {\"parts\": %d, \"records\": %" PRIu64 ", \"bytes\": %" PRIu64
            ", \"checksum\": \"%s\"}\n}\n",
            c->size, rec, bytes, hex);
    if (fflush(f) || fsync(fileno(f)))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write manifest '%s'", tmp);
    if (fclose(f) && !st)
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot write manifest '%s'", tmp);
    if (!publish_it) /* --local-output: renamed to _SUCCESS in the second phase */
        return st;
    if (!st && rename(tmp, path))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot rename manifest to '%s'", path);
    dsort_cleanup_forget(tmp);
    if (st)
        unlink(tmp);
    else
        st = dsort_cleanup_add(path, 0, err);
    return st;
}

/* Take an output directory's names (parts, manifest, the directory) off the cleanup list. */
static void forget_dir(const struct dsort_comm *c, const char *dir)
{
    char path[4200];
    for (int r = 0; r < c->size; r++) {
        snprintf(path, sizeof path, "%s/part-%05d", dir, r);
        dsort_cleanup_forget(path);
    }
    snprintf(path, sizeof path, "%s/_SUCCESS", dir);
    dsort_cleanup_forget(path);
    snprintf(path, sizeof path, "%s/._SUCCESS.tmp", dir);
    dsort_cleanup_forget(path);
    dsort_cleanup_forget(dir);
}

/* publish for a DIR that is a mount point (o->inside): the stage is inside DIR. The manifest is
 * written in the stage, the parts are moved into DIR, then the manifest (as _SUCCESS, or for
 * --local-output as ._SUCCESS.tmp that phase two renames), and the stage is removed. From the
 * first move on, what is in DIR is ours to remove on a failure or a signal (o->renamed). */
static enum dsort_status publish_inside(const struct dsort_comm *c, struct dsort_output *o,
                                        const struct dsort_part_info *parts,
                                        struct dsort_error *err)
{
    const int local = o->mode == DSORT_OUTPUT_LOCAL_DIR;
    enum dsort_status st;
    char from[4200], to[4200], succ[4200];
    snprintf(succ, sizeof succ, "%s/%s", o->target, local ? "._SUCCESS.tmp" : "_SUCCESS");
    if ((st = write_manifest(c, o, parts, 0, err)) || (st = dsort_io_fsync_dir(o->stage, err)) ||
        (st = dsort_cleanup_add_series(o->target, "part-", 5, &o->nparts, err)) ||
        (st = dsort_cleanup_add(succ, DSORT_CLEANUP_FILE, err)))
        return st;
    o->renamed = 1;
    for (int r = 0; r < c->size; r++) { /* --local-output: only this node's are here */
        snprintf(from, sizeof from, "%s/part-%05d", o->stage, r);
        snprintf(to, sizeof to, "%s/part-%05d", o->target, r);
        if (rename(from, to) && !(local && errno == ENOENT))
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot rename '%s' to '%s'", from, to);
    }
    snprintf(from, sizeof from, "%s/._SUCCESS.tmp", o->stage);
    if (rename(from, succ))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot rename manifest to '%s'", succ);
    remove_stage_dir(o->stage, 0);
    forget_dir(c, o->stage);
    o->owns_stage = 0;
    if ((st = dsort_io_fsync_dir(o->target, err)))
        return st;
    if (!local) { /* committed */
        forget_dir(c, o->target);
        o->renamed = 0;
    }
    return DSORT_OK;
}

/* The commit of -o: the stage takes the target's place only if the target is still the file
 * that open saw (or absent, or removed since by the user). Another job that wrote the same -o
 * and committed meanwhile put a new file there: replacing it would throw its output away while
 * both jobs say they succeeded (replace.h: atomic where the file system has renameat2). */
static enum dsort_status commit_file(struct dsort_output *o, struct dsort_error *err)
{
    const struct dsort_replace_seen seen = {o->target_existed, o->target_dev, o->target_ino};
    struct stat ours, now;
    int overtaken;
    if (lstat(o->stage, &ours))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot stat '%s'", o->stage);
    /* A signal's cleanup must not remove the stage's name while it may hold another program's
     * file (between replace.h's two swaps); abandon removes it if it is still ours. */
    dsort_cleanup_forget(o->stage);
    enum dsort_status st =
        dsort_replace_commit(o->stage, o->target, o->final, &seen, &overtaken, err);
    if (st && (lstat(o->stage, &now) || now.st_ino != ours.st_ino || now.st_dev != ours.st_dev))
        o->owns_stage = 0; /* not ours under that name any more: left alone */
    if (st || !overtaken)
        return st;
    return DSORT_ERR(err, DSORT_EIO, 0,
                     "output '%s' was %s by another program while this job ran (another job "
                     "writing the same -o?): not replaced; this job's output is discarded, write "
                     "it to another name",
                     o->final, overtaken == 2 ? "replaced" : "created");
}

static enum dsort_status publish(const struct dsort_comm *c, struct dsort_output *o,
                                 const struct dsort_part_info *parts, struct dsort_error *err)
{
    enum dsort_status st;
    if (o->mode == DSORT_OUTPUT_FILE) {
        if (o->null_sink)
            return DSORT_OK;
        if ((st = commit_file(o, err)))
            return st;
        o->owns_stage = 0;
        return dsort_io_fsync_parent(o->target, err);
    }
    if (o->inside)
        return publish_inside(c, o, parts, err);
    const int local = o->mode == DSORT_OUTPUT_LOCAL_DIR;
    if ((st = write_manifest(c, o, parts, !local, err)) || (st = dsort_io_fsync_dir(o->stage, err)))
        return st;
    char path[4200];
    if (local) {
        /* Phase one of two: the renamed directory has no _SUCCESS yet, and until phase two
         * is agreed it is ours to remove (on errors and on signals). */
        if ((st = dsort_cleanup_add_series(o->target, "part-", 5, &o->nparts, err)) ||
            (st = dsort_cleanup_add(o->target, DSORT_CLEANUP_DIR, err)))
            return st;
        snprintf(path, sizeof path, "%s/._SUCCESS.tmp", o->target);
        if ((st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err)))
            return st;
    }
    if (rename(o->stage, o->target)) {
        /* A directory that open found absent or empty and that now holds files: another job
         * wrote the same -O and committed meanwhile; its output stays. */
        st = errno == ENOTEMPTY || errno == EEXIST
                 ? DSORT_ERR(err, DSORT_EIO, 0,
                             "output directory '%s' was filled by another program while this job "
                             "ran (another job writing the same -O?): not replaced; this job's "
                             "output is discarded, write it to another name",
                             o->final)
                 : DSORT_ERR(err, DSORT_EIO, errno, "cannot rename '%s' to '%s'", o->stage,
                             o->final);
        if (local) {
            dsort_cleanup_forget(o->target);
            dsort_cleanup_forget(path);
        }
        return st;
    }
    forget_dir(c, o->stage); /* the stage's names are gone with the rename */
    o->owns_stage = 0;
    o->renamed = local;
    return dsort_io_fsync_parent(o->target, err);
}

/* --local-output, phase two (a stage owner whose DIR is renamed): _SUCCESS, last of all. */
static enum dsort_status mark_success(struct dsort_output *o, struct dsort_error *err)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/._SUCCESS.tmp", o->target);
    snprintf(path, sizeof path, "%s/_SUCCESS", o->target);
    enum dsort_status st = dsort_cleanup_add(path, DSORT_CLEANUP_FILE, err);
    if (!st && rename(tmp, path))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot rename manifest to '%s'", path);
    return st ? st : dsort_io_fsync_dir(o->target, err);
}

/* Committed: nothing under the final name may be removed from here on. */
static void forget_target(const struct dsort_comm *c, struct dsort_output *o)
{
    forget_dir(c, o->target);
    o->renamed = 0;
}

enum dsort_status dsort_output_commit(const struct dsort_comm *c, struct dsort_output *o,
                                      const struct dsort_part_info *info, struct dsort_error *err)
{
    enum dsort_status st = DSORT_OK;
    const char *name = o->mode == DSORT_OUTPUT_FILE ? o->final : o->part;
    close_direct(o);
    if (!o->null_sink && fsync(o->fd))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot fsync output '%s'", name);
    if (close(o->fd) && !st)
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot close output '%s'", name);
    o->fd = -1;
    struct dsort_part_info *parts = NULL, mine = *info;
    snprintf(mine.node, sizeof mine.node, "%s", c->host);
    if (!(parts = calloc((size_t)c->size, sizeof *parts)) && !st)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto fail;
    /* Every stage owner writes a manifest of all parts: gather them everywhere. */
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, parts, (int)sizeof mine, MPI_BYTE, c->comm);
    /* The parts are in a stage that its owner renames: the other ranks' temp names go away
     * with it, so they stop tracking them now. */
    const int owner = stage_owner(c, o);
    if (!owner && o->part[0])
        dsort_cleanup_forget(o->part);
    if (owner)
        st = publish(c, o, parts, err);
    free(parts);
    if ((st = dsort_comm_agree(c, st, err)))
        goto fail;
    if (o->mode == DSORT_OUTPUT_LOCAL_DIR) {
        /* Every node's DIR is renamed: now, and only now, the _SUCCESS markers. */
        if (owner)
            st = mark_success(o, err);
        if ((st = dsort_comm_agree(c, st, err)))
            goto fail;
        if (owner)
            forget_target(c, o);
    }
    o->part[0] = '\0';
    return DSORT_OK;
fail:
    dsort_output_abandon(o);
    return st;
}
