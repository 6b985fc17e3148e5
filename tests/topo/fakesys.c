#include "fakesys.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

int fakesys_write(const char *path, const char *text)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (mkdir_p(dir) != 0)
            return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

int fakesys_tmpdir(char *buf, size_t len, const char *tag)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, len, "%s/dsort-test-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    return mkdtemp(buf) ? 0 : -1;
}

int fakesys_remove(const char *dir)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A block directory devdir (relative to root) with a dev file, and the /dev/block link. */
static int blockdir(const char *root, const char *devdir, const char *devnum, const char *rot,
                    int partition)
{
    char p[PATH_MAX], target[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/dev", root, devdir);
    char line[32];
    snprintf(line, sizeof line, "%s\n", devnum);
    if (fakesys_write(p, line) != 0)
        return -1;
    if (partition) {
        snprintf(p, sizeof p, "%s/%s/partition", root, devdir);
        if (fakesys_write(p, "1\n") != 0)
            return -1;
    }
    if (rot) {
        snprintf(p, sizeof p, "%s/%s/queue/rotational", root, devdir);
        if (fakesys_write(p, rot) != 0)
            return -1;
    }
    snprintf(p, sizeof p, "%s/dev/block", root);
    if (mkdir_p(p) != 0)
        return -1;
    snprintf(p, sizeof p, "%s/dev/block/%s", root, devnum);
    snprintf(target, sizeof target, "../../%s", devdir);
    return symlink(target, p);
}

/* slaves/name in devdir, pointing at the absolute path root/target. */
static int slave(const char *root, const char *devdir, const char *name, const char *target)
{
    char p[PATH_MAX], t[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s/slaves", root, devdir);
    if (mkdir_p(p) != 0)
        return -1;
    snprintf(p, sizeof p, "%s/%s/slaves/%s", root, devdir, name);
    snprintf(t, sizeof t, "%s/%s", root, target);
    return symlink(t, p);
}

#define SATA "devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block"
#define VIRTIO "devices/pci0000:00/0000:00:02.0/virtio1/block"
#define NVME "devices/pci0000:00/0000:00:04.0/nvme/nvme0"
#define VIRT "devices/virtual/block"

int fakesys_build(const char *root)
{
    int bad = 0;
    bad |= blockdir(root, SATA "/sda", "8:0", "1\n", 0);
    bad |= blockdir(root, SATA "/sda/sda1", "8:1", NULL, 1);
    bad |= blockdir(root, SATA "/sda/sda2", "8:2", NULL, 1);
    bad |= blockdir(root, SATA "/sdb", "8:16", "1\n", 0);
    bad |= blockdir(root, SATA "/sdb/sdb1", "8:17", NULL, 1);
    bad |= blockdir(root, SATA "/sdc", "8:32", NULL, 0);
    bad |= blockdir(root, SATA "/sdc/sdc1", "8:33", NULL, 1);
    bad |= blockdir(root, VIRTIO "/vda", "254:0", "1\n", 0);
    bad |= blockdir(root, VIRTIO "/vda/vda1", "254:1", NULL, 1);
    bad |= blockdir(root, VIRTIO "/vda/vda2", "254:2", NULL, 1);
    bad |= blockdir(root, NVME "/nvme0n1", "259:1", "0\n", 0);
    bad |= blockdir(root, NVME "/nvme0n1/nvme0n1p2", "259:3", NULL, 1);
    bad |= blockdir(root, VIRT "/loop1", "7:1", "1\n", 0);
    bad |= blockdir(root, VIRT "/loop1/loop1p1", "259:0", NULL, 1);
    bad |= blockdir(root, VIRT "/dm-0", "253:0", "0\n", 0);
    bad |= slave(root, VIRT "/dm-0", "sda", SATA "/sda");
    bad |= slave(root, VIRT "/dm-0", "sdb", SATA "/sdb");
    bad |= blockdir(root, VIRT "/dm-1", "253:1", "0\n", 0);
    bad |= slave(root, VIRT "/dm-1", "dm-0", VIRT "/dm-0");
    bad |= blockdir(root, VIRT "/md0", "9:0", "1\n", 0);
    bad |= slave(root, VIRT "/md0", "sda2", SATA "/sda/sda2");
    bad |= slave(root, VIRT "/md0", "sdb1", SATA "/sdb/sdb1");
    bad |= blockdir(root, VIRT "/dm-9", "253:9", "0\n", 0);
    bad |= slave(root, VIRT "/dm-9", "dm-9", VIRT "/dm-9");
    bad |= blockdir(root, VIRT "/dm-8", "253:8", "0\n", 0);
    bad |= slave(root, VIRT "/dm-8", "ghost", "devices/nowhere/ghost");
    return bad ? -1 : 0;
}
