#include "device.h"

#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *sysfs_root(void)
{
    const char *r = getenv("DSORT_SYSFS_ROOT");
    return r && *r ? r : "/sys";
}

static int read_int(const char *path, int *v)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fscanf(f, "%d", v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

enum dsort_status dsort_device_of(const char *path, struct dsort_device *dev,
                                  struct dsort_error *err)
{
    memset(dev, 0, sizeof *dev);
    dev->rotational = -1;
    struct stat sb;
    if (stat(path, &sb))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot stat '%s'", path);
    dev->major = major(sb.st_dev);
    dev->minor = minor(sb.st_dev);
    if (dev->major == 0)
        return DSORT_OK; /* no block device behind it */
    char link[PATH_MAX], real[PATH_MAX];
    snprintf(link, sizeof link, "%s/dev/block/%u:%u", sysfs_root(), dev->major, dev->minor);
    if (!realpath(link, real))
        return DSORT_OK; /* no sysfs: st_dev alone identifies the device */
    char probe[PATH_MAX + 16];
    snprintf(probe, sizeof probe, "%s/partition", real);
    if (access(probe, F_OK) == 0) {
        char *slash = strrchr(real, '/');
        if (slash)
            *slash = '\0'; /* a partition's parent directory is its disk */
    }
    const char *name = strrchr(real, '/');
    snprintf(dev->disk, sizeof dev->disk, "%s", name ? name + 1 : real);
    snprintf(probe, sizeof probe, "%s/queue/rotational", real);
    int rot;
    if (read_int(probe, &rot) == 0)
        dev->rotational = rot != 0;
    return DSORT_OK;
}

int dsort_device_cores(void)
{
    hwloc_topology_t t;
    if (hwloc_topology_init(&t))
        return 0;
    int n = 0;
    if (hwloc_topology_load(t) == 0)
        n = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    hwloc_topology_destroy(t);
    return n > 0 ? n : 0;
}
