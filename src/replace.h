/* replace.h - commit a finished file under its final name without throwing away a file that
 * another program put there meanwhile (two jobs writing the same -o).
 *
 * The caller remembers what the target was when the job began (absent, or a device and inode)
 * and, at commit, asks for the staged file to take the target's place only if the target is
 * still that. Where the file system has renameat2 (Linux 3.15+: ext4, xfs, btrfs, tmpfs, ...)
 * the check and the rename are one atomic step:
 *   - a target absent at the start is created with RENAME_NOREPLACE: a file that appeared in
 *     the meantime makes it fail with EEXIST, untouched;
 *   - a target that existed is swapped with RENAME_EXCHANGE; if what came back is not the file
 *     seen at the start, it is swapped back, so the other program's file is in place again (it
 *     was under the staged name for the instant between the two swaps, never lost).
 * Elsewhere (EINVAL or ENOSYS: NFS, some FUSE file systems) it falls back to a stat before a
 * plain rename(2), which does not see a file put there in the instant between the two.
 *
 * Local, no MPI; the parent directory's fsync is the caller's. Returns DSORT_OK (committed,
 * or refused: see *overtaken), or DSORT_EIO with errno for a failed system call.
 */
#ifndef DSORT_REPLACE_H
#define DSORT_REPLACE_H

#include <stdint.h>

#include "error.h"

struct dsort_replace_seen {
    int existed;       /* the target existed when the job began */
    uint64_t dev, ino; /* and was this file */
};

/* Move stage to target if target is still what *seen says (or has been removed since: then
 * nothing is replaced). *overtaken: 0 when committed; else another file holds the name and
 * nothing changed on disk: 1 when it appeared where there was none, 2 when it replaced the
 * file seen. shown: the target's name in messages (the name the user gave). */
enum dsort_status dsort_replace_commit(const char *stage, const char *target, const char *shown,
                                       const struct dsort_replace_seen *seen, int *overtaken,
                                       struct dsort_error *err);

#endif
