/* output.h - writing the sorted result and committing it atomically.
 *
 * Nothing appears under the final name until every rank has written and fsynced its share:
 *  - `-o FILE`: rank 0 creates a hidden temp file beside FILE (".FILE.dsort-XXXXXX"), every
 *    rank writes its range at its offset, all fsync and agree, then rank 0 renames the temp
 *    file over FILE and fsyncs the directory.
 *  - `-O DIR`: rank 0 creates a staging directory beside DIR ("DIR.dsort-XXXXXX"), every rank
 *    writes its part-NNNNN there, all fsync and agree, rank 0 writes the _SUCCESS manifest
 *    (JSON: per part records, bytes and checksum; then the totals), fsyncs, and renames the
 *    staging directory to DIR (which must not exist or be empty), then fsyncs the parent.
 *  - `-O DIR` where DIR is a mount point (an empty scratch disk: its lost+found aside): it
 *    cannot be renamed over, so the staging directory is made inside it, and the commit moves
 *    the parts into DIR and then the manifest as _SUCCESS (the mark of a complete output);
 *    `-o FILE` where FILE is mounted on (a bind-mounted file) is refused before any work.
 * A run that fails anywhere before the rename leaves only hidden temp names, and those are
 * registered with the cleanup module, so they are removed on error and on signals.
 *
 * What is replaced: a symbolic link as FILE or DIR is followed (the file it points to is
 * replaced, the link stays); an existing regular FILE keeps its mode and owner (as GNU sort
 * keeps them when it truncates), its user.* extended attributes and its access ACL (copied to
 * the temp file before the rename; one that cannot be copied gets a warning, not an error).
 * Only a regular file or a name that does not exist is replaced by rename: `/dev/null` is
 * written through (every rank writes its range to it, so that benchmarks can discard the
 * output), and any other device, FIFO, socket or directory is refused by open, before any
 * work, with a message naming it; it is never replaced.
 *
 * `--local-output` commits in two phases, so that no node shows a _SUCCESS that the job did
 * not earn: every node's stage is renamed to its DIR, all agree, and only then every node
 * writes its _SUCCESS, last of all; all agree again. On a failure after a rename every node
 * removes what it renamed (_SUCCESS first, then the parts and the directory).
 *
 * open and commit are collective over c->comm and agree internally: they return the same
 * status on every rank (the lowest failing rank has printed the error line). write is local.
 */
#ifndef DSORT_OUTPUT_H
#define DSORT_OUTPUT_H

#include <stdint.h>

#include "checksum.h"
#include "comm.h"
#include "error.h"

struct dsort_typedkey;

/* DSORT_OUTPUT_LOCAL_DIR: like DIR, but DIR is on node-local disks: the first rank of each
 * node creates, stages and renames that node's DIR, which holds the parts of the node's ranks;
 * every node's manifest lists all parts with the node that holds each. */
enum dsort_output_mode { DSORT_OUTPUT_FILE, DSORT_OUTPUT_DIR, DSORT_OUTPUT_LOCAL_DIR };

struct dsort_output {
    enum dsort_output_mode mode;
    char final[4096];  /* the name the user asked for */
    char target[4096]; /* final with its symbolic links resolved: what is replaced */
    char stage[4096];  /* temp file (FILE) or staging directory (DIR) */
    char part[4096];   /* DIR: this rank's part inside stage */
    int fd;
    int dfd;                  /* the same file opened with O_DIRECT, or -1 */
    unsigned char *bounce;    /* aligned buffer for dfd */
    uint64_t offset;          /* FILE: this rank's first byte in the file */
    uint64_t bytes;           /* this rank's share */
    int owns_stage;           /* rank 0: created stage, removes it on failure */
    int null_sink;            /* FILE: the target is /dev/null, written through */
    int keep_mode;            /* FILE: replaces a file whose mode and owner it kept */
    int renamed;              /* LOCAL_DIR: this node's stage is renamed (commit phase 1) */
    int inside;               /* DIR: a mount point; the stage is inside it (no rename of DIR) */
    volatile unsigned nparts; /* part-NNNNN names to remove with the stage */
    /* FILE: the target as open found it (existed, device, inode): a commit that finds another
     * file there was overtaken by another writer (two jobs on one -o) and refuses. */
    int target_existed;
    uint64_t target_dev, target_ino;
    /* Typed keys: the records given to an output sink (outsink.h) are widened (typedkey.h),
     * and the sink narrows them; NULL otherwise. Set by the caller after open. */
    const struct dsort_typedkey *narrow;
};

/* What one rank wrote, for the manifest. */
struct dsort_part_info {
    uint64_t records, bytes;
    struct dsort_sum128 checksum;
    char node[64]; /* filled in by commit */
};

/* Collective: prepare the output; my_bytes is this rank's share. With direct, bulk writes
 * use O_DIRECT where the file system allows it (falling back to buffered writes). */
enum dsort_status dsort_output_open(const struct dsort_comm *c, struct dsort_output *o,
                                    enum dsort_output_mode mode, const char *path,
                                    uint64_t my_bytes, int direct, struct dsort_error *err);

/* Collective: change this rank's share to my_bytes after open (when the output size is known
 * only later, e.g. with -u): recomputes the offsets and resizes the file. Agrees. */
enum dsort_status dsort_output_set_share(const struct dsort_comm *c, struct dsort_output *o,
                                         uint64_t my_bytes, struct dsort_error *err);

/* The absolute file offset of byte off of this rank's share. */
uint64_t dsort_output_file_offset(const struct dsort_output *o, uint64_t off);

/* Local: write len bytes at offset off within this rank's share. */
enum dsort_status dsort_output_write(struct dsort_output *o, const void *buf, size_t len,
                                     uint64_t off, struct dsort_error *err);

/* Collective: fsync, agree, then publish under the final name. `info` describes this rank's
 * share (used for the DIR manifest). On failure the temp names are removed. */
enum dsort_status dsort_output_commit(const struct dsort_comm *c, struct dsort_output *o,
                                      const struct dsort_part_info *info, struct dsort_error *err);

/* Local: give up (close and remove this rank's temp files). Safe to call twice. */
void dsort_output_abandon(struct dsort_output *o);

#endif
