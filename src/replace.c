#include "replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_seen(const struct stat *sb, const struct dsort_replace_seen *seen)
{
    return seen->existed && (uint64_t)sb->st_dev == seen->dev && (uint64_t)sb->st_ino == seen->ino;
}

/* A file system without renameat2's flags (or a kernel without renameat2). */
static int no_flags(int e)
{
    return e == EINVAL || e == ENOSYS || e == EOPNOTSUPP;
}

/* The stat-then-rename fallback: a file put there between the two is not seen. */
static enum dsort_status plain(const char *stage, const char *target, const char *shown,
                               const struct dsort_replace_seen *seen, int *overtaken,
                               struct dsort_error *err)
{
    struct stat sb;
    if (!lstat(target, &sb) && !is_seen(&sb, seen)) {
        *overtaken = seen->existed ? 2 : 1;
        return DSORT_OK;
    }
    if (rename(stage, target))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot rename '%s' to '%s'", stage, shown);
    return DSORT_OK;
}

/* Swap the staged file in; what comes back under the staged name is the old target. Keep the
 * swap if that is the file seen at the start (and drop it), else swap back. *gone: the target
 * vanished before the swap (the user removed it); nothing was done. */
static enum dsort_status exchange(const char *stage, const char *target, const char *shown,
                                  const struct dsort_replace_seen *seen, int *overtaken, int *gone,
                                  struct dsort_error *err)
{
    if (renameat2(AT_FDCWD, stage, AT_FDCWD, target, RENAME_EXCHANGE)) {
        if (errno == ENOENT && !access(stage, F_OK)) {
            *gone = 1;
            return DSORT_OK;
        }
        if (no_flags(errno))
            return plain(stage, target, shown, seen, overtaken, err);
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot rename '%s' to '%s'", stage, shown);
    }
    struct stat sb;
    if (!lstat(stage, &sb) && is_seen(&sb, seen)) {
        if (unlink(stage))
            return DSORT_ERR(err, DSORT_EIO, errno,
                             "cannot remove the replaced old '%s' (now '%s')", shown, stage);
        return DSORT_OK;
    }
    /* Not ours to replace: put the other program's file back. */
    if (renameat2(AT_FDCWD, stage, AT_FDCWD, target, RENAME_EXCHANGE))
        return DSORT_ERR(err, DSORT_EIO, errno,
                         "cannot swap back another program's '%s' (it is now '%s')", shown, stage);
    *overtaken = 2;
    return DSORT_OK;
}

enum dsort_status dsort_replace_commit(const char *stage, const char *target, const char *shown,
                                       const struct dsort_replace_seen *seen, int *overtaken,
                                       struct dsort_error *err)
{
    struct stat sb;
    int gone = 0;
    enum dsort_status st;
    *overtaken = 0;
    /* Seen and still there: swap atomically. Gone: create without replacing, as if never
     * there (nothing of anyone's is replaced). */
    if (seen->existed && !lstat(target, &sb) &&
        ((st = exchange(stage, target, shown, seen, overtaken, &gone, err)) || !gone))
        return st;
    if (!renameat2(AT_FDCWD, stage, AT_FDCWD, target, RENAME_NOREPLACE))
        return DSORT_OK;
    if (errno == EEXIST) {
        *overtaken = seen->existed ? 2 : 1;
        return DSORT_OK;
    }
    if (no_flags(errno))
        return plain(stage, target, shown, seen, overtaken, err);
    return DSORT_ERR(err, DSORT_EIO, errno, "cannot rename '%s' to '%s'", stage, shown);
}
