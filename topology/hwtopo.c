#include "hwtopo.h"

#include <errno.h>
#include <hwloc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dsort_hwtopo {
    hwloc_topology_t topo;
    unsigned cores, pus, numas;
    size_t nblocks;
    struct dsort_hwtopo_block *blocks;
    char source[PATH_MAX + 32];
};

/* The only NUMA node in the nodeset of obj's first non-I/O ancestor, or -1. */
static int numa_near(hwloc_topology_t topo, hwloc_obj_t obj)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, obj);
    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return -1;
    return hwloc_bitmap_first(anc->nodeset);
}

static enum dsort_status list_blocks(struct dsort_hwtopo *t, struct dsort_error *err)
{
    size_t n = 0;
    for (hwloc_obj_t o = hwloc_get_next_osdev(t->topo, NULL); o;
         o = hwloc_get_next_osdev(t->topo, o))
        if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_BLOCK)
            n++;
    if (n == 0)
        return DSORT_OK;
    t->blocks = calloc(n, sizeof *t->blocks);
    if (!t->blocks)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory listing hwloc block devices");
    for (hwloc_obj_t o = hwloc_get_next_osdev(t->topo, NULL); o;
         o = hwloc_get_next_osdev(t->topo, o)) {
        if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_BLOCK)
            continue;
        struct dsort_hwtopo_block *b = &t->blocks[t->nblocks++];
        snprintf(b->name, sizeof b->name, "%s", o->name ? o->name : "");
        const char *id = hwloc_obj_get_info_by_name(o, "LinuxDeviceID");
        unsigned maj, min;
        if (id && sscanf(id, "%u:%u", &maj, &min) == 2) {
            b->major = maj;
            b->minor = min;
            b->has_devid = 1;
        }
        b->numa = numa_near(t->topo, o);
    }
    return DSORT_OK;
}

static unsigned count_of(hwloc_topology_t topo, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(topo, type);
    return n > 0 ? (unsigned)n : 0;
}

enum dsort_status dsort_hwtopo_create(struct dsort_hwtopo **out, const char *xml_path,
                                      struct dsort_error *err)
{
    if (!out)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_hwtopo_create: no result pointer");
    *out = NULL;
    if (!xml_path) {
        const char *env = getenv("HWLOC_XMLFILE");
        xml_path = env && *env ? env : NULL;
    }
    struct dsort_hwtopo *t = calloc(1, sizeof *t);
    if (!t)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the hwloc topology");
    if (hwloc_topology_init(&t->topo) != 0) {
        free(t);
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "hwloc_topology_init failed");
    }
    enum dsort_status st = DSORT_OK;
    /* hwloc 2 drops I/O objects unless asked; block devices count as important. */
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml_path) {
        snprintf(t->source, sizeof t->source, "XML file '%s'", xml_path);
        if (hwloc_topology_set_xml(t->topo, xml_path) != 0) {
            st = DSORT_ERR(err, DSORT_EIO, errno, "hwloc cannot use XML topology '%s'", xml_path);
            goto fail;
        }
        hwloc_topology_set_flags(t->topo, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM);
    } else {
        snprintf(t->source, sizeof t->source, "this system");
    }
    if (hwloc_topology_load(t->topo) != 0) {
        st = DSORT_ERR(err, DSORT_EIO, errno, "hwloc cannot load the topology of %s", t->source);
        goto fail;
    }
    t->cores = count_of(t->topo, HWLOC_OBJ_CORE);
    t->pus = count_of(t->topo, HWLOC_OBJ_PU);
    t->numas = count_of(t->topo, HWLOC_OBJ_NUMANODE);
    st = list_blocks(t, err);
    if (st)
        goto fail;
    *out = t;
    return DSORT_OK;
fail:
    dsort_hwtopo_destroy(t);
    return st;
}

void dsort_hwtopo_destroy(struct dsort_hwtopo *t)
{
    if (!t)
        return;
    if (t->topo)
        hwloc_topology_destroy(t->topo);
    free(t->blocks);
    free(t);
}

const char *dsort_hwtopo_source(const struct dsort_hwtopo *t)
{
    return t->source;
}

unsigned dsort_hwtopo_cores(const struct dsort_hwtopo *t)
{
    return t->cores;
}

unsigned dsort_hwtopo_pus(const struct dsort_hwtopo *t)
{
    return t->pus;
}

unsigned dsort_hwtopo_numa_count(const struct dsort_hwtopo *t)
{
    return t->numas;
}

int dsort_hwtopo_numa_index(const struct dsort_hwtopo *t, unsigned i)
{
    hwloc_obj_t o = hwloc_get_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, i);
    return o ? (int)o->os_index : -1;
}

size_t dsort_hwtopo_block_count(const struct dsort_hwtopo *t)
{
    return t->nblocks;
}

const struct dsort_hwtopo_block *dsort_hwtopo_block_get(const struct dsort_hwtopo *t, size_t i)
{
    return i < t->nblocks ? &t->blocks[i] : NULL;
}

int dsort_hwtopo_numa_of(const struct dsort_hwtopo *t, const char *name, uint32_t major,
                         uint32_t minor)
{
    if (!t)
        return -1;
    if (name && *name)
        for (size_t i = 0; i < t->nblocks; i++)
            if (strcmp(t->blocks[i].name, name) == 0)
                return t->blocks[i].numa;
    if (major == 0 && minor == 0)
        return -1;
    for (size_t i = 0; i < t->nblocks; i++)
        if (t->blocks[i].has_devid && t->blocks[i].major == major && t->blocks[i].minor == minor)
            return t->blocks[i].numa;
    return -1;
}

void dsort_hwtopo_locate(const struct dsort_hwtopo *t, struct dsort_blockdev *dev)
{
    dev->numa = -1;
    if (!t || dev->kind != DSORT_BLOCKDEV_DISKS || dev->ndisks == 0)
        return;
    int numa = -1;
    for (uint32_t i = 0; i < dev->ndisks; i++) {
        int n = dsort_hwtopo_numa_of(t, dev->disks[i], dev->disk_major[i], dev->disk_minor[i]);
        if (n < 0 || (i > 0 && n != numa))
            return;
        numa = n;
    }
    dev->numa = numa;
}

/* The usable PUs of NUMA node numa, as a new bitmap in *out that the caller frees. */
static enum dsort_status numa_pus(const struct dsort_hwtopo *t, int numa, hwloc_bitmap_t *out,
                                  struct dsort_error *err)
{
    *out = NULL;
    hwloc_obj_t node =
        numa < 0 ? NULL : hwloc_get_numanode_obj_by_os_index(t->topo, (unsigned)numa);
    if (!node || !node->cpuset)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "no NUMA node %d in the topology of %s", numa,
                         t->source);
    hwloc_bitmap_t set = hwloc_bitmap_dup(node->cpuset);
    if (!set)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for a cpuset");
    hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(t->topo));
    if (hwloc_bitmap_iszero(set)) {
        hwloc_bitmap_free(set);
        return DSORT_ERR(err, DSORT_EINVAL, 0, "NUMA node %d has no cores this process may use",
                         numa);
    }
    *out = set;
    return DSORT_OK;
}

enum dsort_status dsort_hwtopo_numa_cpuset(const struct dsort_hwtopo *t, int numa, char *buf,
                                           size_t len, struct dsort_error *err)
{
    hwloc_bitmap_t set;
    enum dsort_status st = numa_pus(t, numa, &set, err);
    if (st)
        return st;
    int n = hwloc_bitmap_list_snprintf(buf, len, set);
    hwloc_bitmap_free(set);
    if (n < 0 || (size_t)n >= len)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "cpuset of NUMA node %d does not fit %zu bytes",
                         numa, len);
    return DSORT_OK;
}

int dsort_hwtopo_bound(const struct dsort_hwtopo *t, char *buf, size_t len)
{
    if (buf && len)
        buf[0] = '\0';
    hwloc_bitmap_t cur = hwloc_bitmap_alloc();
    if (!cur)
        return -1;
    int r = -1;
    if (hwloc_get_cpubind(t->topo, cur, HWLOC_CPUBIND_PROCESS) == 0) {
        hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(t->topo);
        /* Bound: some allowed PU is outside the current binding. */
        r = !hwloc_bitmap_isincluded(allowed, cur);
        if (buf && len)
            hwloc_bitmap_list_snprintf(buf, len, cur);
    }
    hwloc_bitmap_free(cur);
    return r;
}

enum dsort_status dsort_hwtopo_bind(const struct dsort_hwtopo *t, int numa, struct dsort_error *err)
{
    hwloc_bitmap_t set;
    enum dsort_status st = numa_pus(t, numa, &set, err);
    if (st)
        return st;
    int r = hwloc_set_cpubind(t->topo, set, HWLOC_CPUBIND_PROCESS);
    int e = errno;
    hwloc_bitmap_free(set);
    if (r != 0)
        return DSORT_ERR(err, DSORT_EIO, e, "cannot bind to the cores of NUMA node %d", numa);
    return DSORT_OK;
}
