/* plan.h - which rank reads what from which device, with how many streams, spilling where.
 *
 * One plan covers one node. Input: the node's ranks, the byte ranges each of them reads
 * (file, offset, length, st_dev), the candidate temp dirs, the stream policy, and the node's
 * devices resolved from st_dev (blockdev.h; NUMA from hwtopo.h). Output (struct
 * dsort_plan_node):
 *   - devices: one per physical device. st_devs that share a disk are one device: two
 *     partitions of one disk, or a partition of sda and a dm over sda+sdb, are merged (their
 *     disk sets united). Each device has a stream limit (dsort_plan_streams);
 *   - for each rank, its reads in input order, grouped into one I/O thread per device
 *     ("groups"; dsort_devread_run runs one thread per group);
 *   - the turns that keep every device within its limit across the node's ranks;
 *   - each rank's temp dirs, in order of preference, and a NUMA node to bind near.
 *
 * Stream bound and turns. Every (rank, device) group is one stream. The R ranks that read a
 * device with limit L are ordered as in input->ranks; the p-th of them gets slot p % L and
 * turn p / L. Turn 0 starts at once; a group with turn t > 0 waits until the group of rank
 * wait_for (the reader at position p - L, same slot) has finished the device, and a group
 * passes its turn on to rank pass_to (position p + L) when it has finished (also on error,
 * so that nobody waits forever). At most L groups per device run at any time, and since each
 * chain waits only on earlier positions of one device, the waits cannot form a cycle even
 * when a rank reads several devices (one thread per device waits independently). The
 * program implements the token with whatever it has (an MPI message on the node
 * communicator, tag = device index, is the obvious one) through dsort_devread's hooks.
 * device->rounds = ceil(R / L) says how many turns there are; 1 means nobody waits.
 *
 * Temp dirs. A candidate is best on a device no rank of the node reads, next best on a device
 * other ranks read but this rank does not, worst on a device the rank reads. A rank's
 * temp_dirs are the candidates of the best tier it has, rotated by the rank's position on the
 * node so that ranks spread their spills; the first is "the" spill dir.
 *
 * Zero-length reads are dropped. Reads are kept in input order per rank.
 *
 * Ownership: dsort_plan_build and dsort_plan_unpack allocate a node that
 * dsort_plan_destroy frees (NULL is a no-op); the node copies every string it keeps. The
 * input is only read. All functions are local: the program gathers nodes' plans with MPI
 * (dsort_plan_pack on each node leader, MPI_Gather of the sizes and MPI_Gatherv of the bytes
 * to rank 0, dsort_plan_unpack there). Blobs carry structs in native byte order: every rank of
 * one job must run the same binary on the same architecture.
 */
#ifndef DSORT_PLAN_H
#define DSORT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "blockdev.h"
#include "devread.h"
#include "error.h"

struct dsort_hwtopo;

struct dsort_plan_policy {
    uint32_t ssd_streams;    /* --streams-per-device: limit for non-rotational disks; 0 = 1 */
    uint32_t nodisk_streams; /* limit for st_dev-only devices (tmpfs, NFS, Lustre); 0 = 1 */
};

/* One byte range a rank reads. */
struct dsort_plan_read_in {
    const char *file;
    uint64_t offset, length;
    uint32_t major, minor; /* st_dev of file */
    int32_t rank;          /* the (global) rank that reads it; must be in input->ranks */
};

/* A candidate temp dir (-T), the same list for every rank of the node. */
struct dsort_plan_temp_in {
    const char *path;
    uint32_t major, minor; /* its st_dev */
};

struct dsort_plan_input {
    const char *hostname; /* NULL: gethostname() */
    const int32_t *ranks; /* the node's ranks (global numbers), in node order */
    size_t nranks;
    const struct dsort_plan_read_in *reads;
    size_t nreads;
    const struct dsort_plan_temp_in *temps;
    size_t ntemps;
    /* The node's st_devs, resolved (dsort_blockdev_resolve + dsort_hwtopo_locate). NULL:
     * dsort_plan_build resolves every st_dev it meets under sysfs_root and locates it with hw.
     * A st_dev missing from a non-NULL devs is UNKNOWN ("not resolved"). */
    const struct dsort_blockdev *devs;
    size_t ndevs;
    const char *sysfs_root;        /* for devs == NULL; NULL: see dsort_blockdev_root */
    const struct dsort_hwtopo *hw; /* may be NULL: no NUMA information */
    struct dsort_plan_policy policy;
};

struct dsort_plan_device {
    struct dsort_blockdev dev;      /* the merged device: key, disks, rotational, numa */
    size_t nmembers;                /* the st_devs on it, in order of first use; */
    struct dsort_blockdev *members; /* dev.major:minor is the first one's */
    uint32_t streams;               /* the limit */
    uint32_t readers;               /* ranks of the node that read it */
    uint32_t rounds;                /* ceil(readers / streams), 0 if no readers */
    uint32_t temps;                 /* candidate temp dirs on it */
    uint64_t bytes;                 /* planned bytes read from it */
    /* Measured after a run (dsort_plan_add_stats), for --stats. */
    int32_t has_stats;
    uint64_t stat_bytes;
    double stat_seconds; /* the longest of the ranks' reading times on it */
};

struct dsort_plan_read {
    char *file;
    uint64_t offset, length;
    uint32_t major, minor; /* st_dev */
    int32_t rank;
    uint32_t device; /* index into node->devices */
    uint32_t thread; /* index into the rank's groups */
};

struct dsort_plan_temp {
    char *path;
    uint32_t major, minor;
    uint32_t device; /* index into node->devices */
};

/* One I/O thread of a rank: all its reads on one device. */
struct dsort_plan_group {
    uint32_t device;
    uint32_t slot, turn; /* see above */
    int32_t wait_for;    /* rank whose group on this device must finish first, or -1 */
    int32_t pass_to;     /* rank to tell when this group has finished, or -1 */
    uint32_t nreads;
    uint64_t bytes;
};

struct dsort_plan_rank {
    int32_t rank;
    int32_t numa;      /* NUMA node of the devices it reads most bytes from, or -1 */
    size_t first_read; /* its reads are node->reads[first_read .. first_read + nreads) */
    size_t nreads;
    size_t ngroups; /* groups in order of first use */
    struct dsort_plan_group *groups;
    size_t ntemp_dirs;
    uint32_t *temp_dirs; /* indexes into node->temps, preferred first */
};

struct dsort_plan_node {
    char *hostname;
    struct dsort_plan_policy policy;
    uint32_t cores, pus, numa_nodes; /* from hwloc, 0 if unknown */
    size_t ndevices;
    struct dsort_plan_device *devices;
    size_t nreads;
    struct dsort_plan_read *reads; /* grouped by rank, in node order */
    size_t ntemps;
    struct dsort_plan_temp *temps; /* as given */
    size_t nranks;
    struct dsort_plan_rank *ranks; /* in node order */
};

/* The stream limit of a device under a policy: 1 for a rotational disk or one whose
 * rotational flag is unknown (including UNKNOWN devices), policy->ssd_streams for
 * non-rotational disks, policy->nodisk_streams for st_dev-only devices (never 0). */
uint32_t dsort_plan_streams(const struct dsort_plan_policy *policy,
                            const struct dsort_blockdev *dev);

/* Build the plan of one node. DSORT_EINVAL if a read's rank is not in input->ranks, a rank
 * is listed twice or a pointer is NULL with a non-zero count; DSORT_ENOMEM. On failure *out
 * is NULL. */
enum dsort_status dsort_plan_build(const struct dsort_plan_input *input,
                                   struct dsort_plan_node **out, struct dsort_error *err);
void dsort_plan_destroy(struct dsort_plan_node *node);

/* The entry of a rank, or NULL if the rank is not on this node. */
const struct dsort_plan_rank *dsort_plan_rank_find(const struct dsort_plan_node *node,
                                                   int32_t rank);
/* The index of the device with this key, or -1. */
int dsort_plan_device_find(const struct dsort_plan_node *node, const char *key);

/* Verify the bound: on every device at most `streams` groups start without waiting, every
 * wait_for/pass_to pair matches, and turns increase along each chain. DSORT_OK, or
 * DSORT_EINTERNAL naming the device and rank. (dsort_plan_build always produces a plan that
 * passes; the check is for tests and for unpacked plans.) */
enum dsort_status dsort_plan_check(const struct dsort_plan_node *node, struct dsort_error *err);

/* Add one rank's measured reading on the device with this key (dsort_devread stats): bytes
 * add up, seconds keep the maximum. Returns 0, or -1 if no device has this key. */
int dsort_plan_add_stats(struct dsort_plan_node *node, const char *key, uint64_t bytes,
                         double seconds);

/* Fill reqs[0 .. rk->nreads) with rank rk's reads for dsort_devread_run: request i reads
 * node->reads[rk->first_read + i] (by path, fd -1) into base + the sum of the lengths of the
 * reads before it, keyed by its device's key. The requests point into node (paths, keys):
 * node must outlive them. rk must be one of node->ranks. */
void dsort_plan_requests(const struct dsort_plan_node *node, const struct dsort_plan_rank *rk,
                         void *base, struct dsort_devread_req *reqs);

/* Serialise a node into a new malloc'ed blob (*blob, *len; the caller frees it). */
enum dsort_status dsort_plan_pack(const struct dsort_plan_node *node, void **blob, size_t *len,
                                  struct dsort_error *err);
/* Rebuild a node from a blob made by dsort_plan_pack. DSORT_EFORMAT if the blob is
 * truncated or corrupt; *out is then NULL. */
enum dsort_status dsort_plan_unpack(const void *blob, size_t len, struct dsort_plan_node **out,
                                    struct dsort_error *err);

#endif
