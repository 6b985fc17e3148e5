/* devread.h - read byte ranges from several devices at once: one thread per device.
 *
 * This is the seed patch's idea inside one rank: reads on different physical devices overlap,
 * reads on one device stay sequential. The caller lists its reads, each tagged with a device
 * key (blockdev.h's key, or the plan's device key); requests with equal keys form one group,
 * read in array order by one thread, with large preads (`chunk` bytes per call, at least
 * 1 MiB); all groups run concurrently (a single group runs in the calling thread).
 *
 * Turns across ranks (plan.h): hooks->before is called in a group's thread before its first
 * read (to wait for the token), hooks->after when the group has finished, failed, was
 * cancelled because another group failed, or when before itself failed (to pass the token
 * on). Both are called exactly once for every group, so a rank that fails never leaves the
 * next rank waiting. Hooks of different groups run concurrently in different threads.
 *
 * Errors: the first error (in time) is returned, naming the file and offset ("cannot read
 * 'x' at offset 1048576: Input/output error"; a file shorter than asked is DSORT_EFORMAT,
 * "unexpected end of file"); the other groups stop at their next chunk. Destination bytes
 * of failed or stopped requests are unspecified.
 *
 * A before hook may also let its group read without the turn: it returns DSORT_OK after
 * filling err (a waiting bound passed, a lock file refused). The group then reads, and its
 * stat says so (no_turn = 1, note = err's message), so that the program can tell the user.
 *
 * Stats: one entry per group in order of first appearance: bytes read and seconds spent
 * reading (from the first read to the last, without the time waiting in before).
 *
 * Files: a request with fd >= 0 reads from fd (not closed; pread does not move its offset,
 * so one fd may appear in several groups); with fd < 0 the group opens path read-only
 * (consecutive requests on one path share the open) and closes it. Local; no MPI. The
 * request array and the destinations must stay valid until the call returns.
 */
#ifndef DSORT_DEVREAD_H
#define DSORT_DEVREAD_H

#include <stddef.h>
#include <stdint.h>

#include "blockdev.h"
#include "error.h"

#define DSORT_DEVREAD_MIN_CHUNK ((size_t)1 << 20)     /* 1 MiB */
#define DSORT_DEVREAD_DEFAULT_CHUNK ((size_t)4 << 20) /* 4 MiB */

struct dsort_devread_req {
    const char *path; /* opened when fd < 0; always used in error messages */
    int fd;           /* >= 0: read from it; < 0: open path */
    uint64_t offset;
    size_t length;
    void *dest;      /* length bytes */
    const char *key; /* device key: equal keys share a thread */
};

struct dsort_devread_hooks {
    /* Before the group's first read. A non-OK status (with err filled) fails the group. */
    enum dsort_status (*before)(const char *key, void *arg, struct dsort_error *err);
    /* After the group; ok is 1 if all its requests were read. */
    void (*after)(const char *key, int ok, void *arg);
    void *arg;
    /* After each chunk (one pread, at most `chunk` bytes) is in: its destination and length,
     * in its group's thread (groups call it at once), with chunk_arg; NULL: none. With
     * populate set, each chunk's destination is faulted in (dsort_mem_populate) just before it
     * is read: the kernel's zeroing of a fresh page and the copy into it then meet in the
     * cache, where the hook finds the bytes too. */
    void (*chunk)(void *chunk_arg, unsigned char *dest, size_t len);
    void *chunk_arg;
    int populate;
};

struct dsort_devread_stat {
    char key[DSORT_BLOCKDEV_KEY_MAX];
    uint32_t requests;
    uint64_t bytes;      /* read successfully */
    double seconds;      /* reading */
    double wait_seconds; /* in hooks->before */
    int no_turn;         /* 1: hooks->before let the group read without its turn */
    char note[256];      /* why, when no_turn ("no turn on device sda after 5.0 s: ...") */
};

/* Read all n requests. chunk: bytes per pread (0 = DSORT_DEVREAD_DEFAULT_CHUNK; smaller than
 * DSORT_DEVREAD_MIN_CHUNK is raised to it). hooks may be NULL. If stats is not NULL, *stats
 * receives a malloc'ed array of *nstats entries (also on failure; the caller frees it; NULL if
 * n is 0 or memory ran out). DSORT_EINVAL for a request with no key or no destination. */
enum dsort_status dsort_devread_run(const struct dsort_devread_req *reqs, size_t n, size_t chunk,
                                    const struct dsort_devread_hooks *hooks,
                                    struct dsort_devread_stat **stats, size_t *nstats,
                                    struct dsort_error *err);

/* Stream tokens: the turns on a device across the processes of a node (plan.h's slots).
 *
 * A token is an exclusive flock(2) on a lock file, so a process that dies gives it back:
 *   DIR/.dsort-UID-device-KEY-SLOT.lock
 * DIR is /dev/shm (or /tmp where /dev/shm is not writable), UID the effective uid (users never
 * share a lock), KEY the device key with '/' and ':' made '_'. The file is created mode 0600
 * with O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC; a path that is a symbolic link, not a regular file
 * or owned by another user is refused (never followed, never changed): no token.
 *
 * Waiting is bounded (wait_ms): the token is polled (LOCK_NB, naps of 1-50 ms). A holder shows
 * that it is alive by touching its lock file's mtime when it takes the token and then every
 * min(1 s, wait_ms / 4) (a heartbeat thread of the tokens object). A waiter passes the
 * holder, reading without the token, when it has waited wait_ms and the file has not been
 * touched for wait_ms: a holder that is stopped (SIGSTOP), or a process that holds the lock
 * without the heartbeat. Waiting behind a holder that is reading goes on as long as it reads.
 * A waiter never hangs for good on a holder that does not read; the price of a pass is only
 * that more streams than the limit may read a device for a while.
 *
 * The tokens object is local and thread-safe: its hooks (dsort_devread_tokens_hooks) may run in
 * several reading threads at once. Its before hook never fails a group: when no token can be
 * had it returns DSORT_OK with err filled (see above), so the group reads anyway. */
#define DSORT_DEVREAD_TOKEN_WAIT_MS 5000L /* default bound; DSORT_TOKEN_WAIT_MS overrides */

struct dsort_devread_tokens;

/* The lock file of (key, slot) in dir (NULL: the default dir). DSORT_EINVAL if it does not fit
 * in n bytes. */
enum dsort_status dsort_devread_token_path(const char *dir, const char *key, unsigned slot,
                                           char *buf, size_t n, struct dsort_error *err);

/* Take the token of path, waiting as described above. wait_ms < 0: DSORT_TOKEN_WAIT_MS from
 * the environment if set (milliseconds), else DSORT_DEVREAD_TOKEN_WAIT_MS. DSORT_OK: *fd
 * holds the token (its mtime just touched); give it back with close(*fd). Otherwise *fd = -1
 * and err says why: DSORT_EIO for a lock file that cannot be opened or is refused (symbolic
 * link, not a regular file, another user's), DSORT_EINTR for a holder passed after the bound.
 * Local, thread-safe; this alone keeps no heartbeat (the tokens object does). */
enum dsort_status dsort_devread_token_take(const char *path, long wait_ms, int *fd,
                                           struct dsort_error *err);

/* dir: NULL for the default. wait_ms as for dsort_devread_token_take. slot(key, slot_arg):
 * the slot of a device key (NULL: slot 0 for every key). *out is freed with
 * dsort_devread_tokens_destroy, which gives back every token still held and stops the
 * heartbeat; destroy(NULL) does nothing. DSORT_ENOMEM if out of memory. */
enum dsort_status dsort_devread_tokens_create(const char *dir, long wait_ms,
                                              unsigned (*slot)(const char *key, void *arg),
                                              void *slot_arg, struct dsort_devread_tokens **out,
                                              struct dsort_error *err);
void dsort_devread_tokens_destroy(struct dsort_devread_tokens *t);

/* Hooks for dsort_devread_run: before takes the group's token (or lets the group read without
 * it, with a note), after gives it back. Valid while t lives. */
struct dsort_devread_hooks dsort_devread_tokens_hooks(struct dsort_devread_tokens *t);

#endif
