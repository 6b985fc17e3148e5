/* blockdev.h - from a file's st_dev to the physical disk(s) behind it, through sysfs.
 *
 * The kernel lists every block device under SYSFS/dev/block/MAJ:MIN, a symlink into
 * SYSFS/devices/.../block/DISK or .../block/DISK/PART. dsort_blockdev_resolve follows it:
 *   - a partition (its directory holds a `partition` file) resolves to its parent disk; this
 *     covers sda1, vda2, nvme0n1p2 (-> nvme0n1) and loop0p1 (-> loop0);
 *   - a device with entries in `slaves/` (device-mapper dm-N, md raid mdN, or a partition of
 *     one) resolves, recursively, to the disks under it: a dm over sda and sdb is {sda, sdb};
 *   - anything else is a disk of its own, including loop devices and zram ("virtual" disks
 *     under SYSFS/devices/virtual/block, which hwloc does not list);
 *   - major 0 (tmpfs, NFS, Lustre, GPFS, overlay, and btrfs, whose st_dev is anonymous) has
 *     no block device: the device is the st_dev itself.
 *
 * The result's key names the device for grouping: the sorted set of disk names joined by '+'
 * ("vda", "sda+sdb"), or "st_dev:MAJ:MIN" when there is no disk or sysfs cannot tell. Files on
 * two partitions of one disk therefore get the same key. Kernel names never hold ':' or '+',
 * so the two forms cannot collide.
 *
 * Discovery never fails the caller: a missing sysfs, a missing entry or an unreadable file
 * gives kind DSORT_BLOCKDEV_UNKNOWN, the st_dev key and a reason the program can print once
 * under -v. Only bad arguments (and, for dsort_blockdev_of_path, a path that cannot be
 * stat'ed) are errors.
 *
 * The sysfs root is the `root` argument when it is non-NULL and non-empty, else the
 * environment variable DSORT_SYSFS_ROOT when set and non-empty, else "/sys" (in the spirit of
 * hwloc's HWLOC_FSROOT), so that tests run against fake trees.
 *
 * struct dsort_blockdev is plain data of fixed size with fixed-width fields: it can be copied,
 * and sent between ranks of one job as a byte blob (same architecture everywhere).
 * All functions are local (no communication), reentrant and thread-safe.
 */
#ifndef DSORT_BLOCKDEV_H
#define DSORT_BLOCKDEV_H

#include <stdint.h>

#include "error.h"

#define DSORT_BLOCKDEV_NAME_MAX 32 /* a kernel block device name, with its NUL */
#define DSORT_BLOCKDEV_MAX_DISKS 8 /* disks kept per device; more set `truncated` */
/* Room for MAX_DISKS names joined by '+', or "st_dev:MAJ:MIN". */
#define DSORT_BLOCKDEV_KEY_MAX (DSORT_BLOCKDEV_MAX_DISKS * DSORT_BLOCKDEV_NAME_MAX)
#define DSORT_BLOCKDEV_REASON_MAX 320

enum dsort_blockdev_kind {
    DSORT_BLOCKDEV_DISKS = 0,  /* resolved: disks[] are the physical disks behind st_dev */
    DSORT_BLOCKDEV_NODISK = 1, /* major 0: no block device; keyed by st_dev */
    DSORT_BLOCKDEV_UNKNOWN = 2 /* sysfs could not tell; keyed by st_dev; reason says why */
};

struct dsort_blockdev {
    uint32_t major, minor; /* the st_dev this was resolved from */
    int32_t kind;          /* enum dsort_blockdev_kind */
    /* queue/rotational of the disks: 1, 0, or -1 unknown. Several disks: 1 if any disk
     * spins (the slowest member bounds the device), else -1 if any is unknown, else 0. */
    int32_t rotational;
    int32_t numa;        /* NUMA node (OS index) near the disks, -1 unknown; see hwtopo.h */
    uint32_t ndisks;     /* entries used in disks[] (0 unless kind is DISKS) */
    uint32_t is_virtual; /* every disk sits under devices/virtual (loop, zram, ...) */
    uint32_t truncated;  /* more than DSORT_BLOCKDEV_MAX_DISKS disks: only the first kept */
    uint32_t disk_major[DSORT_BLOCKDEV_MAX_DISKS]; /* each disk's own dev number (its */
    uint32_t disk_minor[DSORT_BLOCKDEV_MAX_DISKS]; /* `dev` file), 0:0 if unreadable */
    char name[DSORT_BLOCKDEV_NAME_MAX]; /* sysfs name of st_dev itself ("sda1", "dm-0"), or "" */
    char disks[DSORT_BLOCKDEV_MAX_DISKS][DSORT_BLOCKDEV_NAME_MAX]; /* sorted, unique */
    char key[DSORT_BLOCKDEV_KEY_MAX];
    char reason[DSORT_BLOCKDEV_REASON_MAX]; /* why UNKNOWN, or a note; "" otherwise */
};

/* The sysfs root in use for `root` (see above). Never NULL; points into root, the
 * environment or a literal. */
const char *dsort_blockdev_root(const char *root);

/* Resolve st_dev MAJ:MIN under the sysfs root into *out (always fully written, numa = -1).
 * Returns DSORT_OK, also when the answer is UNKNOWN; DSORT_EINVAL if out is NULL. */
enum dsort_status dsort_blockdev_resolve(const char *root, uint32_t major, uint32_t minor,
                                         struct dsort_blockdev *out, struct dsort_error *err);

/* stat(path) and resolve its st_dev. DSORT_EIO (naming path) if stat fails; *out is then
 * the UNKNOWN device 0:0 with the error as reason. */
enum dsort_status dsort_blockdev_of_path(const char *root, const char *path,
                                         struct dsort_blockdev *out, struct dsort_error *err);

/* Do a and b name the same device (equal keys)? */
int dsort_blockdev_same(const struct dsort_blockdev *a, const struct dsort_blockdev *b);

/* Do a and b share a physical disk (or the same key)? A partition of sda and a dm over
 * sda+sdb overlap: streams on one slow down the other. */
int dsort_blockdev_overlap(const struct dsort_blockdev *a, const struct dsort_blockdev *b);

/* Fold b's disks into a (a set union; key, rotational, numa and is_virtual recomputed). Used
 * to merge overlapping devices into one. Keeps a's st_dev and name. */
void dsort_blockdev_merge(struct dsort_blockdev *a, const struct dsort_blockdev *b);

/* "disks", "none" or "unknown". */
const char *dsort_blockdev_kind_name(int32_t kind);

#endif
