/* owner.h - who made a temp file, and whether that process is provably gone.
 *
 * A dsort process killed by SIGKILL leaves its temp directories (tempdir.h) and output temps
 * behind. A later run may remove them only when it can prove that their owner is dead, so an
 * owner is described precisely: host name, boot (/proc/sys/kernel/random/boot_id), pid
 * namespace (inode of /proc/self/ns/pid: containers that share /tmp and a host name have the
 * same boot id but other pid namespaces), pid and start time (field 22 of /proc/PID/stat, in
 * clock ticks after boot). Pids are reused; a pid with its start time names one process of
 * one boot.
 *
 * The owner is provably dead when host, boot and pid namespace are ours and its pid either
 * does not exist or belongs to a process started at another time. Anything else of another
 * host, boot or namespace cannot be judged. Where /proc does not give all of this (no /proc,
 * or a /proc of another pid namespace), descriptions are incomplete and nothing is ever
 * judged dead: leaving a file is always the safe mistake.
 *
 * Two forms of a description:
 *   - a line of text, for the owner file of a temp directory (dsort_owner_format/_parse):
 *       "dsort-owner/1 host=HOST boot=BOOT_ID pidns=INODE pid=PID start=TICKS\n"
 *   - a short tag in an output temp's name, so that a later run can judge it from the name
 *     alone (dsort_owner_temp_*): "DIR/.BASE.dsort-HASH-PID-START-XXXXXX", HASH being 16 hex
 *     digits of a 64-bit FNV-1a hash of host, boot id and pid namespace, XXXXXX random.
 * All functions are local and reentrant; they read /proc but keep no state.
 */
#ifndef DSORT_OWNER_H
#define DSORT_OWNER_H

#include <stddef.h>

#include "error.h"

#define DSORT_OWNER_HOST_MAX 256
#define DSORT_OWNER_BOOT_MAX 64
#define DSORT_OWNER_TEXT_MAX 512 /* dsort_owner_format never needs more */

struct dsort_owner {
    char host[DSORT_OWNER_HOST_MAX];    /* gethostname; blanks and controls made '_' */
    char boot_id[DSORT_OWNER_BOOT_MAX]; /* "" if unknown */
    unsigned long long pidns;           /* inode of the pid namespace; 0 if unknown */
    long pid;                           /* > 0 */
    unsigned long long start;           /* start time, clock ticks after boot; 0 if unknown */
};

enum dsort_owner_state {
    DSORT_OWNER_ALIVE,  /* still running (or may be: when in doubt on this host, alive) */
    DSORT_OWNER_DEAD,   /* provably gone: what it left may be removed */
    DSORT_OWNER_UNKNOWN /* another host, boot or pid namespace, or we lack /proc: cannot say */
};

/* Describe this process. Always fills *o (host and pid at least); returns DSORT_EIO, with the
 * reason in err (may be NULL), when part of it could not be read: such a description is
 * still fine to write, and is judged UNKNOWN by everybody. */
enum dsort_status dsort_owner_self(struct dsort_owner *o, struct dsort_error *err);

/* Write o as one line of text (with its '\n') into buf. Returns the length of the line, like
 * snprintf; a len of DSORT_OWNER_TEXT_MAX always suffices. */
size_t dsort_owner_format(const struct dsort_owner *o, char *buf, size_t len);

/* Read the text of dsort_owner_format (trailing blanks allowed) into *o. DSORT_EFORMAT, with
 * *o unspecified, for anything else: the old "HOST PID" owner files included. err may be
 * NULL. */
enum dsort_status dsort_owner_parse(const char *text, struct dsort_owner *o,
                                    struct dsort_error *err);

/* Judge o against this process (see above). */
enum dsort_owner_state dsort_owner_judge(const struct dsort_owner *o);

/* The template of an output temp of owner o for the final path DIR/BASE into buf:
 * "DIR/.BASE.dsort-HASH-PID-START-XXXXXX" (dir "" means the current directory: no "DIR/").
 * A BASE so long that the name would pass DIR's NAME_MAX is cut (at a UTF-8 character) to fit.
 * DSORT_EINVAL if it does not fit in len. */
enum dsort_status dsort_owner_temp_name(char *buf, size_t len, const char *dir, const char *base,
                                        const struct dsort_owner *o, struct dsort_error *err);

/* Create an output temp of this process for DIR/BASE: a new regular file (O_RDWR|O_CREAT|
 * O_EXCL|O_CLOEXEC, mode 0600: never through a symlink, never an existing file), its name in
 * path (len bytes), its descriptor in *fd. On failure (DSORT_EINVAL: name too long; DSORT_EIO
 * with errnum) nothing is created and *fd is -1. The caller registers it for cleanup. */
enum dsort_status dsort_owner_temp_file(char *path, size_t len, const char *dir, const char *base,
                                        int *fd, struct dsort_error *err);

/* The same for a staging directory (-O): a new directory, mode 0700 (the caller may chmod it). */
enum dsort_status dsort_owner_temp_dir(char *path, size_t len, const char *dir, const char *base,
                                       struct dsort_error *err);

/* If name (a file name, no directory) has the form of an output temp, judge its owner into
 * *state and return 1; else return 0 (leave the file alone). */
int dsort_owner_temp_judge(const char *name, enum dsort_owner_state *state);

#endif
