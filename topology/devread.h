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
};

struct dsort_devread_stat {
    char key[DSORT_BLOCKDEV_KEY_MAX];
    uint32_t requests;
    uint64_t bytes;      /* read successfully */
    double seconds;      /* reading */
    double wait_seconds; /* in hooks->before */
};

/* Read all n requests. chunk: bytes per pread (0 = DSORT_DEVREAD_DEFAULT_CHUNK; smaller than
 * DSORT_DEVREAD_MIN_CHUNK is raised to it). hooks may be NULL. If stats is not NULL, *stats
 * receives a malloc'ed array of *nstats entries (also on failure; the caller frees it; NULL if
 * n is 0 or memory ran out). DSORT_EINVAL for a request with no key or no destination. */
enum dsort_status dsort_devread_run(const struct dsort_devread_req *reqs, size_t n, size_t chunk,
                                    const struct dsort_devread_hooks *hooks,
                                    struct dsort_devread_stat **stats, size_t *nstats,
                                    struct dsort_error *err);

#endif
