/* planjson.h - the plans of all nodes as JSON, for `dsort --plan --json` and --stats.
 *
 * Output (one object; fields in this order; more may be added later):
 *   {"dsort_plan": 1, "nodes": [NODE...]}
 *   NODE   = {"hostname", "cores", "pus", "numa_nodes" (0 = unknown),
 *             "policy": {"ssd_streams", "nodisk_streams"} (effective: 0 given = 1), "devices":
 * [DEVICE...], "ranks": [RANK...]} DEVICE = {"key": "sda+sdb" | "vda" | "st_dev:0:45", "st_dev":
 * "MAJ:MIN" (the first st_dev on it), "st_devs": ["MAJ:MIN"...], "sysfs": [sysfs name of each
 * st_dev, "" if none...], "disk": the physical disk's name, or the names joined by '+' when the
 * device spans several disks (dm, md), or null when it has none, "disks": [names...], "kind":
 * "disks" | "none" | "unknown", "rotational": true | false | null, "numa": index | null, "virtual":
 * bool, "streams": the limit, "readers": ranks reading it, "rounds": turns needed, "temps":
 * candidate temp dirs on it, "bytes": planned bytes read,
 *             ["reason": why unknown / notes, only when there is one],
 *             ["read_bytes", "read_seconds": measured, only after dsort_plan_add_stats]}
 *   RANK   = {"rank", "numa": index | null,
 *             "reads": [{"file", "offset", "length", "st_dev", "device": key,
 *                        "thread": index into "threads"}...],
 *             "threads": [{"device": key, "slot", "turn", "wait_for": rank | null,
 *                          "pass_to": rank | null, "reads", "bytes"}...],
 *             "temp_dirs": [paths, preferred first]}
 * Strings are escaped; bytes that are not valid UTF-8 (file names may hold any byte) are
 * written as U+FFFD. One device, read or thread per line, so that the output diffs well.
 *
 * Local; writes only to f (the caller opens and closes it). nodes[i] are only read.
 */
#ifndef DSORT_PLANJSON_H
#define DSORT_PLANJSON_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"
#include "plan.h"

/* Write the nodes' plans to f. DSORT_EIO if writing fails (f is then in an unknown state),
 * DSORT_EINVAL for NULL arguments. */
enum dsort_status dsort_planjson_write(FILE *f, const struct dsort_plan_node *const *nodes,
                                       size_t n, struct dsort_error *err);

/* dsort_planjson_write with more members before "nodes": members(f, arg) writes them, each
 * line starting with a space and the last ending with ",\n" (--plan's "job", "space"). */
enum dsort_status dsort_planjson_write_with(FILE *f, const struct dsort_plan_node *const *nodes,
                                            size_t n, void (*members)(FILE *, const void *),
                                            const void *arg, struct dsort_error *err);

#endif
