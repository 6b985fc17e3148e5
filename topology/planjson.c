#include "planjson.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "jsonstr.h"

static void key_str(FILE *f, const char *key, const char *value)
{
    fprintf(f, "\"%s\": ", key);
    dsort_jsonstr_write(f, value);
}

static void stdev(FILE *f, uint32_t major, uint32_t minor)
{
    fprintf(f, "\"%u:%u\"", (unsigned)major, (unsigned)minor);
}

static void opt_int(FILE *f, const char *key, int32_t v)
{
    if (v < 0)
        fprintf(f, "\"%s\": null", key);
    else
        fprintf(f, "\"%s\": %d", key, (int)v);
}

static void write_device(FILE *f, const struct dsort_plan_device *d)
{
    const struct dsort_blockdev *b = &d->dev;
    fputs("{", f);
    key_str(f, "key", b->key);
    fputs(", \"st_dev\": ", f);
    stdev(f, b->major, b->minor);
    fputs(", \"st_devs\": [", f);
    for (size_t i = 0; i < d->nmembers; i++) {
        fputs(i ? ", " : "", f);
        stdev(f, d->members[i].major, d->members[i].minor);
    }
    fputs("], \"sysfs\": [", f);
    for (size_t i = 0; i < d->nmembers; i++) {
        fputs(i ? ", " : "", f);
        dsort_jsonstr_write(f, d->members[i].name);
    }
    fputs("], ", f);
    key_str(f, "disk", b->ndisks ? b->key : NULL);
    fputs(", \"disks\": [", f);
    for (uint32_t i = 0; i < b->ndisks; i++) {
        fputs(i ? ", " : "", f);
        dsort_jsonstr_write(f, b->disks[i]);
    }
    fputs("], ", f);
    key_str(f, "kind", dsort_blockdev_kind_name(b->kind));
    fprintf(f, ", \"rotational\": %s, ",
            b->rotational < 0 ? "null"
            : b->rotational   ? "true"
                              : "false");
    opt_int(f, "numa", b->numa);
    fprintf(f,
            ", \"virtual\": %s, \"streams\": %u, \"readers\": %u, \"rounds\": %u, \"temps\": %u, "
            "\"bytes\": %" PRIu64,
            b->is_virtual ? "true" : "false", (unsigned)d->streams, (unsigned)d->readers,
            (unsigned)d->rounds, (unsigned)d->temps, d->bytes);
    if (b->reason[0]) {
        fputs(", ", f);
        key_str(f, "reason", b->reason);
    }
    if (d->has_stats)
        fprintf(f, ", \"read_bytes\": %" PRIu64 ", \"read_seconds\": %.6f", d->stat_bytes,
                d->stat_seconds);
    fputs("}", f);
}

static void write_rank(FILE *f, const struct dsort_plan_node *node,
                       const struct dsort_plan_rank *rk)
{
    fprintf(f, "        {\"rank\": %d, ", (int)rk->rank);
    opt_int(f, "numa", rk->numa);
    fputs(", \"reads\": [", f);
    for (size_t i = 0; i < rk->nreads; i++) {
        const struct dsort_plan_read *r = &node->reads[rk->first_read + i];
        fputs(i ? ",\n" : "\n", f);
        fputs("          {", f);
        key_str(f, "file", r->file);
        fprintf(f, ", \"offset\": %" PRIu64 ", \"length\": %" PRIu64 ", \"st_dev\": ", r->offset,
                r->length);
        stdev(f, r->major, r->minor);
        fputs(", ", f);
        key_str(f, "device", node->devices[r->device].dev.key);
        fprintf(f, ", \"thread\": %u}", (unsigned)r->thread);
    }
    fputs(rk->nreads ? "],\n         \"threads\": [" : "], \"threads\": [", f);
    for (size_t g = 0; g < rk->ngroups; g++) {
        const struct dsort_plan_group *gp = &rk->groups[g];
        fputs(g ? ",\n" : "\n", f);
        fputs("          {", f);
        key_str(f, "device", node->devices[gp->device].dev.key);
        fprintf(f, ", \"slot\": %u, \"turn\": %u, ", (unsigned)gp->slot, (unsigned)gp->turn);
        opt_int(f, "wait_for", gp->wait_for);
        fputs(", ", f);
        opt_int(f, "pass_to", gp->pass_to);
        fprintf(f, ", \"reads\": %u, \"bytes\": %" PRIu64 "}", (unsigned)gp->nreads, gp->bytes);
    }
    fputs("],\n         \"temp_dirs\": [", f);
    for (size_t t = 0; t < rk->ntemp_dirs; t++) {
        fputs(t ? ", " : "", f);
        dsort_jsonstr_write(f, node->temps[rk->temp_dirs[t]].path);
    }
    fputs("]}", f);
}

static void write_node(FILE *f, const struct dsort_plan_node *node)
{
    fputs("    {", f);
    key_str(f, "hostname", node->hostname);
    fprintf(f,
            ", \"cores\": %u, \"pus\": %u, \"numa_nodes\": %u,\n"
            "     \"policy\": {\"ssd_streams\": %u, \"nodisk_streams\": %u},\n"
            "     \"devices\": [",
            (unsigned)node->cores, (unsigned)node->pus, (unsigned)node->numa_nodes,
            (unsigned)(node->policy.ssd_streams ? node->policy.ssd_streams : 1),
            (unsigned)(node->policy.nodisk_streams ? node->policy.nodisk_streams : 1));
    for (size_t i = 0; i < node->ndevices; i++) {
        fputs(i ? ",\n        " : "\n        ", f);
        write_device(f, &node->devices[i]);
    }
    fputs("],\n     \"ranks\": [", f);
    for (size_t i = 0; i < node->nranks; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_rank(f, node, &node->ranks[i]);
    }
    fputs("]}", f);
}

enum dsort_status dsort_planjson_write(FILE *f, const struct dsort_plan_node *const *nodes,
                                       size_t n, struct dsort_error *err)
{
    return dsort_planjson_write_with(f, nodes, n, NULL, NULL, err);
}

enum dsort_status dsort_planjson_write_with(FILE *f, const struct dsort_plan_node *const *nodes,
                                            size_t n, void (*members)(FILE *, const void *),
                                            const void *arg, struct dsort_error *err)
{
    if (!f || (n && !nodes))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_planjson_write: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (!nodes[i])
            return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_planjson_write: node %zu is NULL", i);
    fputs("{\"dsort_plan\": 1,\n", f);
    if (members)
        members(f, arg);
    fputs(" \"nodes\": [", f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", f);
        write_node(f, nodes[i]);
    }
    fputs("]}\n", f);
    if (fflush(f) != 0 || ferror(f))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot write the plan");
    return DSORT_OK;
}
