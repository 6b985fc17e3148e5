/* hwtopo.h - the machine as hwloc sees it: cores, NUMA nodes, block devices and binding.
 *
 * A struct dsort_hwtopo wraps one loaded hwloc topology with I/O discovery on (hwloc drops
 * I/O objects by default; we keep the important ones, which include Block OS devices). The
 * topology comes from the running machine, or from an XML file (exported with
 * `lstopo --of xml`), given as xml_path or, when xml_path is NULL, by the environment
 * variable HWLOC_XMLFILE. An XML topology is loaded with HWLOC_THISSYSTEM=1 semantics
 * (hwloc's IS_THISSYSTEM flag): it is taken to describe this machine, so binding calls act on
 * the real process. Tests feed XML topologies with several NUMA nodes and added
 *   <object type="OSDev" name="sdb" osdev_type="0">
 *     <info name="LinuxDeviceID" value="8:16"/></object>
 * blocks, which hwloc then lists.
 *
 * Block devices are matched to the disks found through sysfs (blockdev.h) by kernel name, or
 * by hwloc's LinuxDeviceID ("MAJ:MIN") against the disk's dev number. A device's NUMA node is
 * the one NUMA node in the nodeset of its first non-I/O ancestor; when that ancestor spans
 * several NUMA nodes (or none), or hwloc does not list the device (loop, zram, tmpfs, NFS),
 * the NUMA node is unknown (-1). NUMA numbers are hwloc's OS indexes, as numactl uses.
 *
 * Ownership: dsort_hwtopo_create allocates; dsort_hwtopo_destroy frees (NULL is a no-op).
 * Pointers returned by the accessors live as long as the topology. A topology may be read
 * from several threads at once; binding calls act on the whole calling process.
 * All functions are local (no communication).
 */
#ifndef DSORT_HWTOPO_H
#define DSORT_HWTOPO_H

#include <stddef.h>
#include <stdint.h>

#include "blockdev.h"
#include "error.h"

struct dsort_hwtopo; /* opaque */

/* A Block OS device hwloc lists. */
struct dsort_hwtopo_block {
    char name[DSORT_BLOCKDEV_NAME_MAX]; /* kernel name, "sda", "nvme0n1" */
    uint32_t major, minor;              /* hwloc's LinuxDeviceID */
    int32_t has_devid;                  /* 0 if hwloc gave no (parsable) LinuxDeviceID */
    int32_t numa;                       /* NUMA node near it, or -1 */
};

/* Load the topology (see above for xml_path and HWLOC_XMLFILE). On failure *out is NULL and
 * err says why (DSORT_EIO naming the XML file, or DSORT_ENOMEM); the program then carries on
 * without NUMA information. */
enum dsort_status dsort_hwtopo_create(struct dsort_hwtopo **out, const char *xml_path,
                                      struct dsort_error *err);
void dsort_hwtopo_destroy(struct dsort_hwtopo *t);

/* Where the topology came from: "this system" or "XML file 'PATH'". */
const char *dsort_hwtopo_source(const struct dsort_hwtopo *t);

/* Counts: cores (physical), PUs (hardware threads), NUMA nodes. 0 if hwloc cannot tell. */
unsigned dsort_hwtopo_cores(const struct dsort_hwtopo *t);
unsigned dsort_hwtopo_pus(const struct dsort_hwtopo *t);
unsigned dsort_hwtopo_numa_count(const struct dsort_hwtopo *t);
/* The OS index of the i-th NUMA node (logical order), or -1 if i is out of range. */
int dsort_hwtopo_numa_index(const struct dsort_hwtopo *t, unsigned i);

/* The Block OS devices hwloc lists, in hwloc's order. NULL if i is out of range. */
size_t dsort_hwtopo_block_count(const struct dsort_hwtopo *t);
const struct dsort_hwtopo_block *dsort_hwtopo_block_get(const struct dsort_hwtopo *t, size_t i);

/* The NUMA node near the block device called name (may be NULL) or with dev number
 * MAJ:MIN (0:0 to skip), name first. -1 if hwloc does not list it or knows no locality. */
int dsort_hwtopo_numa_of(const struct dsort_hwtopo *t, const char *name, uint32_t major,
                         uint32_t minor);

/* Set dev->numa: the NUMA node near all of dev's disks when they agree, else -1 (also for
 * devices without disks). t may be NULL (no hwloc): numa = -1. */
void dsort_hwtopo_locate(const struct dsort_hwtopo *t, struct dsort_blockdev *dev);

/* The cores (as PUs in list form, "0-3,8-11", as taskset -c and numactl take them) near NUMA
 * node numa (OS index), restricted to the PUs this process may use. DSORT_EINVAL if there is
 * no such node or it has no usable PU (a memory-only node); DSORT_EINVAL also if buf is too
 * small. */
enum dsort_status dsort_hwtopo_numa_cpuset(const struct dsort_hwtopo *t, int numa, char *buf,
                                           size_t len, struct dsort_error *err);

/* Is the process already bound, i.e. is its current CPU binding a strict subset of the PUs it
 * is allowed to use (set by mpirun --bind-to, srun --cpu-bind, taskset)? 1 yes, 0 no, -1
 * cannot tell. If buf is not NULL, the current binding in list form is written there. With an
 * XML topology the comparison is only meaningful when the XML describes this machine. */
int dsort_hwtopo_bound(const struct dsort_hwtopo *t, char *buf, size_t len);

/* Bind the whole process to the cores near NUMA node numa. The program should call this
 * only when dsort_hwtopo_bound says 0, so as not to undo the launcher's binding.
 * DSORT_EINVAL for an unknown or CPU-less node, DSORT_EIO if the kernel refuses. */
enum dsort_status dsort_hwtopo_bind(const struct dsort_hwtopo *t, int numa,
                                    struct dsort_error *err);

#endif
