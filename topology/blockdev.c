#include "blockdev.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* dm over md over partitions is 3 levels; anything deeper than this is a loop in a broken
 * (or fake) tree. */
#define MAX_DEPTH 16

const char *dsort_blockdev_root(const char *root)
{
    if (root && *root)
        return root;
    const char *env = getenv("DSORT_SYSFS_ROOT");
    return env && *env ? env : "/sys";
}

const char *dsort_blockdev_kind_name(int32_t kind)
{
    switch (kind) {
    case DSORT_BLOCKDEV_DISKS:
        return "disks";
    case DSORT_BLOCKDEV_NODISK:
        return "none";
    default:
        return "unknown";
    }
}

static int path_exists(const char *dir, const char *name)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, name) >= sizeof p)
        return 0;
    return access(p, F_OK) == 0;
}

/* Read the first line of dir/name (without the newline). -1 if it cannot be read. */
static int read_line(const char *dir, const char *name, char *buf, size_t len)
{
    char p[PATH_MAX];
    if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, name) >= sizeof p)
        return -1;
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    char *got = fgets(buf, (int)len, f);
    fclose(f);
    if (!got)
        return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Append "; text" to the reason (the first note goes without "; "). */
static void note(struct dsort_blockdev *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void note(struct dsort_blockdev *d, const char *fmt, ...)
{
    size_t used = strlen(d->reason);
    if (used + 3 >= sizeof d->reason)
        return;
    if (used)
        used += (size_t)snprintf(d->reason + used, sizeof d->reason - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason + used, sizeof d->reason - used, fmt, ap);
    va_end(ap);
}

static void make_key(struct dsort_blockdev *d)
{
    if (d->ndisks == 0) {
        snprintf(d->key, sizeof d->key, "st_dev:%u:%u", (unsigned)d->major, (unsigned)d->minor);
        return;
    }
    size_t used = 0;
    d->key[0] = '\0';
    for (uint32_t i = 0; i < d->ndisks && used < sizeof d->key; i++)
        used += (size_t)snprintf(d->key + used, sizeof d->key - used, "%s%s", i ? "+" : "",
                                 d->disks[i]);
}

/* Insert a disk, keeping disks[] sorted and unique (parallel arrays move together). */
static void add_disk(struct dsort_blockdev *d, const char *name, uint32_t maj, uint32_t min,
                     int rot, int virt)
{
    uint32_t at = 0;
    while (at < d->ndisks && strcmp(d->disks[at], name) < 0)
        at++;
    if (at < d->ndisks && strcmp(d->disks[at], name) == 0)
        return;
    if (d->ndisks == DSORT_BLOCKDEV_MAX_DISKS) {
        d->truncated = 1;
        return;
    }
    for (uint32_t i = d->ndisks; i > at; i--) {
        memcpy(d->disks[i], d->disks[i - 1], sizeof d->disks[i]);
        d->disk_major[i] = d->disk_major[i - 1];
        d->disk_minor[i] = d->disk_minor[i - 1];
    }
    snprintf(d->disks[at], sizeof d->disks[at], "%s", name);
    d->disk_major[at] = maj;
    d->disk_minor[at] = min;
    /* Combine rotational: any spinning member makes the set spin; else unknown wins. */
    if (d->ndisks == 0)
        d->rotational = rot;
    else if (d->rotational == 1 || rot == 1)
        d->rotational = 1;
    else if (d->rotational == -1 || rot == -1)
        d->rotational = -1;
    if (d->ndisks == 0)
        d->is_virtual = (uint32_t)virt;
    else
        d->is_virtual = d->is_virtual && virt;
    d->ndisks++;
}

/* Record dir (a resolved sysfs block directory) as a disk. */
static void take_disk(struct dsort_blockdev *d, const char *dir)
{
    char line[64];
    unsigned maj = 0, min = 0;
    if (read_line(dir, "dev", line, sizeof line) == 0 && sscanf(line, "%u:%u", &maj, &min) != 2)
        maj = min = 0;
    int rot = -1;
    if (read_line(dir, "queue/rotational", line, sizeof line) == 0 &&
        (line[0] == '0' || line[0] == '1'))
        rot = line[0] == '1';
    add_disk(d, base_name(dir), maj, min, rot, strstr(dir, "/devices/virtual/") != NULL);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The disks under dir: a partition goes to its parent, a device with slaves to the disks
 * under them. Returns the number of disks found below dir (0 on a dead end). */
static unsigned collect(struct dsort_blockdev *d, const char *path, int depth)
{
    if (depth > MAX_DEPTH) {
        note(d, "slaves nested too deep at '%s'", path);
        return 0;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    if (path_exists(dir, "partition")) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            note(d, "partition '%s' has no parent disk", path);
            return 0;
        }
        *slash = '\0';
    }

    char slaves[PATH_MAX];
    if ((size_t)snprintf(slaves, sizeof slaves, "%s/slaves", dir) >= sizeof slaves)
        return 0;
    DIR *dh = opendir(slaves);
    char *names[64];
    size_t n = 0;
    if (dh) {
        struct dirent *e;
        while ((e = readdir(dh))) {
            if (e->d_name[0] == '.')
                continue;
            if (n == sizeof names / sizeof names[0]) {
                d->truncated = 1; /* more slaves than we follow */
                break;
            }
            names[n] = strdup(e->d_name);
            if (names[n])
                n++;
        }
        closedir(dh);
    }
    if (n == 0) {
        take_disk(d, dir);
        return 1;
    }
    /* Sorted, so that the reason text and truncation do not depend on readdir order. */
    qsort(names, n, sizeof names[0], cmp_str);
    unsigned found = 0;
    for (size_t i = 0; i < n; i++) {
        char link[PATH_MAX], real[PATH_MAX];
        if ((size_t)snprintf(link, sizeof link, "%s/%s", slaves, names[i]) < sizeof link &&
            realpath(link, real))
            found += collect(d, real, depth + 1);
        else
            note(d, "cannot follow slave '%s'", link);
        free(names[i]);
    }
    if (found == 0) {
        /* Slaves we cannot follow: the device itself is the best name we have. */
        take_disk(d, dir);
        return 1;
    }
    return found;
}

static void init(struct dsort_blockdev *d, uint32_t major, uint32_t minor)
{
    memset(d, 0, sizeof *d);
    d->major = major;
    d->minor = minor;
    d->kind = DSORT_BLOCKDEV_UNKNOWN;
    d->rotational = -1;
    d->numa = -1;
}

enum dsort_status dsort_blockdev_resolve(const char *root, uint32_t major, uint32_t minor,
                                         struct dsort_blockdev *out, struct dsort_error *err)
{
    if (!out)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_blockdev_resolve: no result record");
    struct dsort_blockdev *d = out;
    init(d, major, minor);
    if (major == 0) {
        d->kind = DSORT_BLOCKDEV_NODISK;
        make_key(d);
        return DSORT_OK;
    }
    make_key(d); /* the fallback, until disks are found */
    const char *sys = dsort_blockdev_root(root);
    char link[PATH_MAX], real[PATH_MAX];
    snprintf(link, sizeof link, "%s/dev/block", sys);
    struct stat sb;
    if (stat(link, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        snprintf(d->reason, sizeof d->reason,
                 "no sysfs block devices at '%s' (sysfs not mounted? DSORT_SYSFS_ROOT?): "
                 "one device per st_dev",
                 link);
        return DSORT_OK;
    }
    snprintf(link, sizeof link, "%s/dev/block/%u:%u", sys, (unsigned)major, (unsigned)minor);
    if (!realpath(link, real)) {
        snprintf(d->reason, sizeof d->reason, "no sysfs entry '%s': %s", link, strerror(errno));
        return DSORT_OK;
    }
    snprintf(d->name, sizeof d->name, "%s", base_name(real));
    collect(d, real, 0);
    if (d->ndisks == 0) {
        note(d, "no disk found under '%s'", real);
        return DSORT_OK;
    }
    d->kind = DSORT_BLOCKDEV_DISKS;
    if (d->truncated)
        note(d, "%s", "more disks than dsort tracks; the key names the first ones");
    make_key(d);
    return DSORT_OK;
}

enum dsort_status dsort_blockdev_of_path(const char *root, const char *path,
                                         struct dsort_blockdev *out, struct dsort_error *err)
{
    if (!out || !path)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_blockdev_of_path: NULL argument");
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        init(out, 0, 0);
        make_key(out);
        snprintf(out->reason, sizeof out->reason, "cannot stat '%s': %s", path, strerror(e));
        return DSORT_ERR(err, DSORT_EIO, e, "cannot stat '%s'", path);
    }
    return dsort_blockdev_resolve(root, major(sb.st_dev), minor(sb.st_dev), out, err);
}

int dsort_blockdev_same(const struct dsort_blockdev *a, const struct dsort_blockdev *b)
{
    return strcmp(a->key, b->key) == 0;
}

int dsort_blockdev_overlap(const struct dsort_blockdev *a, const struct dsort_blockdev *b)
{
    if (dsort_blockdev_same(a, b))
        return 1;
    for (uint32_t i = 0; i < a->ndisks; i++)
        for (uint32_t j = 0; j < b->ndisks; j++)
            if (strcmp(a->disks[i], b->disks[j]) == 0)
                return 1;
    return 0;
}

void dsort_blockdev_merge(struct dsort_blockdev *a, const struct dsort_blockdev *b)
{
    if (dsort_blockdev_same(a, b))
        return;
    int numa = a->numa == b->numa ? a->numa : -1;
    for (uint32_t j = 0; j < b->ndisks; j++)
        add_disk(a, b->disks[j], b->disk_major[j], b->disk_minor[j], b->rotational,
                 (int)b->is_virtual);
    if (b->truncated)
        a->truncated = 1;
    a->numa = numa;
    if (a->ndisks)
        a->kind = DSORT_BLOCKDEV_DISKS;
    make_key(a);
}
