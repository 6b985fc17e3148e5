/* output_stage.c - the output's stage: rank 0 (or each node's first rank) checks the target and
 * creates the temp file or staging directory (output_stage.h; output.h has the contract). */
#include "output_stage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cleanup.h"
#include "io.h"
#include "owner.h"
#include "tempdir.h"

static void split_path(const char *path, char *dir, char *base, size_t len)
{
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s", path);
    snprintf(b, sizeof b, "%s", path);
    snprintf(dir, len, "%s", dirname(a));
    snprintf(base, len, "%s", basename(b));
}

/* 1 if dir is an empty directory, 0 if not empty, -1 (errno set) on error. With mount_root,
 * the lost+found that mkfs puts at a file system's root does not count. */
static int dir_is_empty(const char *dir, int mount_root)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            !(mount_root && !strcmp(e->d_name, "lost+found"))) {
            empty = 0;
            break;
        }
    closedir(d);
    return empty;
}

/* Resolve the chain of symbolic links at path into out (at most 40, as the kernel allows).
 * A dangling link resolves to the name it points to (which will be created). */
static enum dsort_status resolve_links(const char *path, char *out, size_t len,
                                       struct dsort_error *err)
{
    char cur[4096], link[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hop = 0;; hop++) {
        struct stat sb;
        if (dsort_io_names_descriptor(cur))
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "output '%s' names an open file descriptor ('%s'), which dsort would "
                             "replace by a new file (what it held before would be lost): leave "
                             "out -o to write standard output",
                             path, cur);
        if (lstat(cur, &sb) || !S_ISLNK(sb.st_mode))
            break;
        if (hop == 40)
            return DSORT_ERR(err, DSORT_EINVAL, ELOOP, "output '%s'", path);
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0)
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot read the link '%s'", cur);
        link[n] = '\0';
        if (link[0] == '/') {
            snprintf(cur, sizeof cur, "%s", link);
        } else {
            char dir[4096], base[4096], next[8300];
            split_path(cur, dir, base, sizeof dir);
            snprintf(next, sizeof next, "%s/%s", dir, link);
            if (strlen(next) >= sizeof cur)
                return DSORT_ERR(err, DSORT_EINVAL, 0, "output path too long: '%s'", path);
            snprintf(cur, sizeof cur, "%s", next);
        }
    }
    if (strlen(cur) >= len)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "output path too long: '%s'", path);
    snprintf(out, len, "%s", cur);
    return DSORT_OK;
}

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m)    ? "directory"
           : S_ISCHR(m)  ? "character device"
           : S_ISBLK(m)  ? "block device"
           : S_ISFIFO(m) ? "FIFO"
           : S_ISSOCK(m) ? "socket"
                         : "special file";
}

/* Is path mounted on (another mount than its directory's, parent)? statx's mount id tells a
 * bind mount of the same file system apart, where st_dev cannot; without it, st_dev. Neither
 * can be renamed over or into: rename fails with EBUSY (or EXDEV) after all the work. */
static int is_mount_point(const char *path, const char *parent)
{
    struct statx a, b;
    if (statx(AT_FDCWD, path, 0, STATX_MNT_ID, &a) || statx(AT_FDCWD, parent, 0, STATX_MNT_ID, &b))
        return 0;
    if (a.stx_mask & b.stx_mask & STATX_MNT_ID)
        return a.stx_mnt_id != b.stx_mnt_id;
    return a.stx_dev_major != b.stx_dev_major || a.stx_dev_minor != b.stx_dev_minor;
}

/* Is sb /dev/null (character device 1:3)? */
static int is_dev_null(const struct stat *sb)
{
    return S_ISCHR(sb->st_mode) && major(sb->st_rdev) == 1 && minor(sb->st_rdev) == 3;
}

/* Remove the output temps that killed jobs left in dir (SIGKILL gives no chance to clean):
 * only those whose owner is provably dead (owner.h, tempdir.h). */
static void sweep_dead_temps(const char *dir)
{
    struct dsort_sweep_report rep;
    dsort_outtemps_sweep(dir, &rep);
}

/* Is this extended attribute one that a replacement keeps? The user's own (user.*) and the
 * access ACL (system.posix_acl_access): what cp -a and editors keep. Not security.* (set by
 * the security policy for the new file) nor trusted.* (privileged). */
static int kept_xattr(const char *name)
{
    return !strncmp(name, "user.", 5) || !strcmp(name, "system.posix_acl_access");
}

/* Copy the kept extended attributes of from (an -o FILE being replaced) onto fd (its temp),
 * after its mode: an ACL set later wins over the mode's group bits, as on the old file. Best
 * effort: an attribute that cannot be read or set (a file system without them, EPERM) is named
 * in a warning and the job goes on; the data is what the user asked for. */
static void copy_xattrs(const struct dsort_comm *c, const char *from, int fd, const char *final)
{
    ssize_t len = listxattr(from, NULL, 0);
    if (len <= 0)
        return;
    char *names = malloc((size_t)len + 1), *val = NULL;
    size_t cap = 0;
    if (!names || (len = listxattr(from, names, (size_t)len)) < 0) {
        free(names);
        return;
    }
    for (char *n = names; n < names + len; n += strlen(n) + 1) {
        if (!kept_xattr(n))
            continue;
        ssize_t v = getxattr(from, n, NULL, 0);
        if (v >= 0 && (size_t)v + 1 > cap) {
            free(val);
            cap = (size_t)v + 1;
            val = malloc(cap);
        }
        if (v < 0 || !val || (v = getxattr(from, n, val, cap)) < 0 ||
            fsetxattr(fd, n, val, (size_t)v, 0))
            dsort_comm_print(c, "warning: the new '%s' lacks the old one's attribute %s: %s", final,
                             n, strerror(errno ? errno : ENOMEM));
    }
    free(val);
    free(names);
}

/* The final name itself must fit (the temp names are cut to fit): else the rename at the very
 * end would fail after all the work. */
static enum dsort_status check_name_max(const struct dsort_output *o, const char *dir,
                                        const char *base, struct dsort_error *err)
{
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max > 0 && strlen(base) > (size_t)name_max)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "output '%s': its name is %zu bytes, more than the %ld that '%s' allows",
                         o->final, strlen(base), name_max, dir);
    return DSORT_OK;
}

/* -o FILE, an existing target: refuse what cannot be replaced by a rename. */
static enum dsort_status check_file_target(const struct dsort_output *o, const char *dir,
                                           const struct stat *sb, struct dsort_error *err)
{
    if (!S_ISREG(sb->st_mode))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "output '%s' is a %s; dsort replaces only regular files (or writes "
                         "through to /dev/null)",
                         o->final, kind_name(sb->st_mode));
    /* A file mounted on (mount --bind) cannot be replaced by a rename; written in place, a
     * failed job would leave it half written. Refused before any work. */
    if (is_mount_point(o->target, dir))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "output '%s' is a mount point (a file mounted on with mount --bind): "
                         "dsort replaces a file by renaming a new one over it, which a mount "
                         "point refuses; write another name and copy it there",
                         o->final);
    return DSORT_OK;
}

/* -o FILE: the temp file beside the target, with the replaced file's mode, owner and kept
 * attributes, sized (and its space reserved) to total bytes. */
static enum dsort_status create_file_stage(const struct dsort_comm *c, struct dsort_output *o,
                                           const char *dir, const char *base, uint64_t total,
                                           struct dsort_error *err)
{
    enum dsort_status st;
    struct stat sb;
    int exists = !stat(o->target, &sb);
    if (exists && is_dev_null(&sb)) {
        o->null_sink = 1;
        snprintf(o->stage, sizeof o->stage, "%s", o->target);
        return DSORT_OK;
    }
    if (exists && (st = check_file_target(o, dir, &sb, err)))
        return st;
    o->target_existed = exists;
    o->target_dev = exists ? (uint64_t)sb.st_dev : 0;
    o->target_ino = exists ? (uint64_t)sb.st_ino : 0;
    sweep_dead_temps(dir);
    int fd;
    if ((st = dsort_owner_temp_file(o->stage, sizeof o->stage, dir, base, &fd, err)))
        return st == DSORT_EINVAL
                   ? DSORT_ERR(err, st, err->errnum, "output path too long: '%s'", o->final)
                   : DSORT_ERR(err, st, err->errnum, "cannot create output '%s'", o->final);
    st = dsort_cleanup_add(o->stage, 0, err);
    if (exists) { /* the replacement keeps the file's mode and owner */
        o->keep_mode = 1;
        if (fchmod(fd, sb.st_mode & 07777) && !st)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot set the mode of '%s'", o->stage);
        if (fchown(fd, sb.st_uid, sb.st_gid) && errno != EPERM && !st)
            st = DSORT_ERR(err, DSORT_EIO, errno, "cannot set the owner of '%s'", o->stage);
        if (!st)
            copy_xattrs(c, o->target, fd, o->final);
    }
    /* Size it now: a failure to reserve space shows before any sorting is done. */
    if (!st && ftruncate(fd, (off_t)total))
        st = DSORT_ERR(err, DSORT_EIO, errno, "cannot size output '%s'", o->final);
    if (!st) /* fixed records: the size is known (lines learn it later) */
        st = dsort_io_reserve(fd, total, o->final, err);
    close(fd);
    return st;
}

/* -O DIR: the staging directory beside DIR (or inside it, a mount point), which must be absent
 * or empty. */
static enum dsort_status create_dir_stage(struct dsort_output *o, const char *dir, const char *base,
                                          struct dsort_error *err)
{
    enum dsort_status st;
    struct stat sb;
    if (!stat(o->target, &sb)) {
        if (!S_ISDIR(sb.st_mode))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "output '%s' exists and is not a directory",
                             o->final);
        /* A mount point (a scratch disk or burst buffer mounted for the output) cannot be
         * renamed over: the stage goes inside it, on its file system, and the commit moves the
         * parts out of the stage into it, _SUCCESS last. A killed job's stage is swept first. */
        o->inside = is_mount_point(o->target, dir);
        if (o->inside)
            sweep_dead_temps(o->target);
        int e = dir_is_empty(o->target, o->inside);
        if (e < 0)
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot read output directory '%s'", o->final);
        if (!e)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "output directory '%s' exists and is not empty",
                             o->final);
    }
    sweep_dead_temps(dir);
    if ((st = dsort_owner_temp_dir(o->stage, sizeof o->stage, o->inside ? o->target : dir, base,
                                   err)))
        return st == DSORT_EINVAL
                   ? DSORT_ERR(err, st, err->errnum, "output path too long: '%s'", o->final)
                   : DSORT_ERR(err, st, err->errnum, "cannot create output directory '%s'",
                               o->final);
    chmod(o->stage, 0755);
    /* The owner removes every rank's part on a signal, so that it can remove the stage. */
    st = dsort_cleanup_add_series(o->stage, "part-", 5, &o->nparts, err);
    return st ? st : dsort_cleanup_add(o->stage, DSORT_CLEANUP_DIR, err);
}

enum dsort_status dsort_output_stage_create(const struct dsort_comm *c, struct dsort_output *o,
                                            uint64_t total, struct dsort_error *err)
{
    enum dsort_status st = resolve_links(o->final, o->target, sizeof o->target, err);
    if (st)
        return st;
    char dir[4096], base[4096];
    split_path(o->target, dir, base, sizeof dir);
    if ((st = check_name_max(o, dir, base, err)))
        return st;
    if (o->mode == DSORT_OUTPUT_FILE)
        return create_file_stage(c, o, dir, base, total, err);
    return create_dir_stage(o, dir, base, err);
}
