/* device.h - which device a path lives on (thin for now; see docs/design.md).
 *
 * dsort_device_of resolves a path to its st_dev and, for block devices, the kernel's name of
 * the whole disk behind it (a partition resolves to its parent through sysfs). File systems
 * without a block device (tmpfs, NFS, Lustre: major 0) have no disk name. The sysfs root is
 * DSORT_SYSFS_ROOT (default "/sys"), so that tests can point it at a captured tree.
 * dsort_device_cores reports the machine's cores from hwloc. Local.
 */
#ifndef DSORT_DEVICE_H
#define DSORT_DEVICE_H

#include <sys/types.h>

#include "error.h"

struct dsort_device {
    unsigned major, minor; /* st_dev */
    char disk[64];         /* whole-disk sysfs name ("vda"), or "" if none */
    int rotational;        /* 1, 0, or -1 if unknown */
};

enum dsort_status dsort_device_of(const char *path, struct dsort_device *dev,
                                  struct dsort_error *err);

/* Physical cores reported by hwloc, or 0 if hwloc cannot tell. */
int dsort_device_cores(void);

#endif
