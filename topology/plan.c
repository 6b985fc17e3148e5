#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwtopo.h"

uint32_t dsort_plan_streams(const struct dsort_plan_policy *policy,
                            const struct dsort_blockdev *dev)
{
    if (dev->kind == DSORT_BLOCKDEV_NODISK)
        return policy->nodisk_streams ? policy->nodisk_streams : 1;
    if (dev->kind == DSORT_BLOCKDEV_DISKS && dev->rotational == 0)
        return policy->ssd_streams ? policy->ssd_streams : 1;
    return 1;
}

void dsort_plan_destroy(struct dsort_plan_node *node)
{
    if (!node)
        return;
    for (size_t i = 0; i < node->ndevices; i++)
        free(node->devices[i].members);
    for (size_t i = 0; i < node->nreads; i++)
        free(node->reads[i].file);
    for (size_t i = 0; i < node->ntemps; i++)
        free(node->temps[i].path);
    for (size_t i = 0; i < node->nranks; i++) {
        free(node->ranks[i].groups);
        free(node->ranks[i].temp_dirs);
    }
    free(node->devices);
    free(node->reads);
    free(node->temps);
    free(node->ranks);
    free(node->hostname);
    free(node);
}

/* ---- building ---------------------------------------------------------------------------- */

/* The device record of st_dev MAJ:MIN: from input->devs, or resolved here when devs is NULL. */
static void lookup_dev(const struct dsort_plan_input *in, uint32_t maj, uint32_t min,
                       struct dsort_blockdev *out)
{
    if (!in->devs) {
        dsort_blockdev_resolve(in->sysfs_root, maj, min, out, NULL);
        dsort_hwtopo_locate(in->hw, out);
        return;
    }
    for (size_t i = 0; i < in->ndevs; i++)
        if (in->devs[i].major == maj && in->devs[i].minor == min) {
            *out = in->devs[i];
            return;
        }
    memset(out, 0, sizeof *out);
    out->major = maj;
    out->minor = min;
    out->kind = maj == 0 ? DSORT_BLOCKDEV_NODISK : DSORT_BLOCKDEV_UNKNOWN;
    out->rotational = -1;
    out->numa = -1;
    snprintf(out->key, sizeof out->key, "st_dev:%u:%u", (unsigned)maj, (unsigned)min);
    if (maj != 0)
        snprintf(out->reason, sizeof out->reason, "st_dev %u:%u was not resolved", (unsigned)maj,
                 (unsigned)min);
}

static int member_of(const struct dsort_plan_device *d, uint32_t maj, uint32_t min)
{
    for (size_t i = 0; i < d->nmembers; i++)
        if (d->members[i].major == maj && d->members[i].minor == min)
            return 1;
    return 0;
}

static int device_of(const struct dsort_plan_node *node, uint32_t maj, uint32_t min)
{
    for (size_t i = 0; i < node->ndevices; i++)
        if (member_of(&node->devices[i], maj, min))
            return (int)i;
    return -1;
}

/* Add st_dev MAJ:MIN to the node's devices, merging devices that come to share a disk. */
static enum dsort_status add_stdev(struct dsort_plan_node *node, const struct dsort_plan_input *in,
                                   uint32_t maj, uint32_t min, size_t cap, struct dsort_error *err)
{
    if (device_of(node, maj, min) >= 0)
        return DSORT_OK;
    struct dsort_blockdev bd;
    lookup_dev(in, maj, min, &bd);
    size_t j = 0;
    while (j < node->ndevices && !dsort_blockdev_overlap(&node->devices[j].dev, &bd))
        j++;
    if (j == node->ndevices) {
        if (node->ndevices == cap)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0, "plan: more devices than st_devs");
        struct dsort_plan_device *d = &node->devices[node->ndevices];
        memset(d, 0, sizeof *d);
        d->dev = bd;
        d->members = malloc(sizeof *d->members);
        if (!d->members)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
        d->members[0] = bd;
        d->nmembers = 1;
        node->ndevices++;
        return DSORT_OK;
    }
    struct dsort_plan_device *d = &node->devices[j];
    struct dsort_blockdev *m = realloc(d->members, (d->nmembers + 1) * sizeof *m);
    if (!m)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
    d->members = m;
    d->members[d->nmembers++] = bd;
    dsort_blockdev_merge(&d->dev, &bd);
    /* The union may now overlap a later device: fold those in, until none is left. */
    for (size_t k = j + 1; k < node->ndevices;) {
        struct dsort_plan_device *o = &node->devices[k];
        if (!dsort_blockdev_overlap(&d->dev, &o->dev)) {
            k++;
            continue;
        }
        m = realloc(d->members, (d->nmembers + o->nmembers) * sizeof *m);
        if (!m)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
        d->members = m;
        memcpy(d->members + d->nmembers, o->members, o->nmembers * sizeof *m);
        d->nmembers += o->nmembers;
        dsort_blockdev_merge(&d->dev, &o->dev);
        free(o->members);
        memmove(o, o + 1, (node->ndevices - k - 1) * sizeof *o);
        node->ndevices--;
        k = j + 1;
    }
    return DSORT_OK;
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static int rank_pos(const struct dsort_plan_input *in, int32_t rank)
{
    for (size_t i = 0; i < in->nranks; i++)
        if (in->ranks[i] == rank)
            return (int)i;
    return -1;
}

static enum dsort_status check_input(const struct dsort_plan_input *in, struct dsort_error *err)
{
    if ((in->nranks && !in->ranks) || (in->nreads && !in->reads) || (in->ntemps && !in->temps) ||
        (in->ndevs && !in->devs))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "plan: NULL array with a non-zero count");
    for (size_t i = 0; i < in->nranks; i++)
        for (size_t j = 0; j < i; j++)
            if (in->ranks[i] == in->ranks[j])
                return DSORT_ERR(err, DSORT_EINVAL, 0, "plan: rank %d is listed twice",
                                 (int)in->ranks[i]);
    for (size_t i = 0; i < in->nreads; i++)
        if (rank_pos(in, in->reads[i].rank) < 0)
            return DSORT_ERR(
                err, DSORT_EINVAL, 0, "plan: '%s' is read by rank %d, which is not on this node",
                in->reads[i].file ? in->reads[i].file : "(null)", (int)in->reads[i].rank);
    return DSORT_OK;
}

/* The reads of every rank, in node order then input order, each given a device and a
 * group (one per device the rank reads). */
static enum dsort_status place_reads(struct dsort_plan_node *node,
                                     const struct dsort_plan_input *in, struct dsort_error *err)
{
    for (size_t r = 0; r < in->nranks; r++) {
        struct dsort_plan_rank *rk = &node->ranks[r];
        rk->rank = in->ranks[r];
        rk->numa = -1;
        rk->first_read = node->nreads;
        size_t mine = 0;
        for (size_t i = 0; i < in->nreads; i++)
            mine += in->reads[i].rank == rk->rank && in->reads[i].length > 0;
        if (mine) {
            rk->groups = calloc(mine, sizeof *rk->groups);
            if (!rk->groups)
                return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
        }
        for (size_t i = 0; i < in->nreads; i++) {
            const struct dsort_plan_read_in *ri = &in->reads[i];
            if (ri->rank != rk->rank || ri->length == 0)
                continue;
            struct dsort_plan_read *rd = &node->reads[node->nreads];
            rd->file = dup_str(ri->file);
            if (!rd->file)
                return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
            node->nreads++;
            rd->offset = ri->offset;
            rd->length = ri->length;
            rd->major = ri->major;
            rd->minor = ri->minor;
            rd->rank = ri->rank;
            rd->device = (uint32_t)device_of(node, ri->major, ri->minor);
            size_t g = 0;
            while (g < rk->ngroups && rk->groups[g].device != rd->device)
                g++;
            if (g == rk->ngroups) {
                rk->groups[g].device = rd->device;
                rk->ngroups++;
            }
            rd->thread = (uint32_t)g;
            rk->groups[g].nreads++;
            rk->groups[g].bytes += rd->length;
            node->devices[rd->device].bytes += rd->length;
            rk->nreads++;
        }
    }
    return DSORT_OK;
}

static struct dsort_plan_group *group_on(struct dsort_plan_rank *rk, uint32_t device)
{
    for (size_t g = 0; g < rk->ngroups; g++)
        if (rk->groups[g].device == device)
            return &rk->groups[g];
    return NULL;
}

/* Slots and turns: the p-th reader of a device with limit L runs in slot p % L after the
 * reader at p - L. order has room for node->nranks entries. */
static void assign_turns(struct dsort_plan_node *node, size_t *order)
{
    for (size_t d = 0; d < node->ndevices; d++) {
        struct dsort_plan_device *dv = &node->devices[d];
        dv->streams = dsort_plan_streams(&node->policy, &dv->dev);
        uint32_t L = dv->streams, p = 0;
        for (size_t r = 0; r < node->nranks; r++) {
            struct dsort_plan_group *g = group_on(&node->ranks[r], (uint32_t)d);
            if (!g)
                continue;
            g->slot = p % L;
            g->turn = p / L;
            g->wait_for = -1;
            g->pass_to = -1;
            order[p++] = r;
        }
        dv->readers = p;
        dv->rounds = (p + L - 1) / L;
        for (uint32_t q = L; q < p; q++) {
            struct dsort_plan_rank *before = &node->ranks[order[q - L]];
            struct dsort_plan_rank *after = &node->ranks[order[q]];
            group_on(after, (uint32_t)d)->wait_for = before->rank;
            group_on(before, (uint32_t)d)->pass_to = after->rank;
        }
    }
}

static enum dsort_status place_temps(struct dsort_plan_node *node,
                                     const struct dsort_plan_input *in, struct dsort_error *err)
{
    for (size_t t = 0; t < in->ntemps; t++) {
        struct dsort_plan_temp *tp = &node->temps[t];
        tp->path = dup_str(in->temps[t].path);
        if (!tp->path)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
        node->ntemps++;
        tp->major = in->temps[t].major;
        tp->minor = in->temps[t].minor;
        tp->device = (uint32_t)device_of(node, tp->major, tp->minor);
        node->devices[tp->device].temps++;
    }
    if (node->ntemps == 0)
        return DSORT_OK;
    for (size_t r = 0; r < node->nranks; r++) {
        struct dsort_plan_rank *rk = &node->ranks[r];
        rk->temp_dirs = malloc(node->ntemps * sizeof *rk->temp_dirs);
        if (!rk->temp_dirs)
            return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
        /* Tier 0: a device no rank reads; 1: one this rank does not read; 2: the rest. */
        int best = 2;
        for (size_t t = 0; t < node->ntemps; t++) {
            uint32_t d = node->temps[t].device;
            int tier = node->devices[d].readers == 0 ? 0 : group_on(rk, d) ? 2 : 1;
            best = tier < best ? tier : best;
        }
        size_t k = 0;
        for (size_t t = 0; t < node->ntemps; t++) {
            uint32_t d = node->temps[t].device;
            int tier = node->devices[d].readers == 0 ? 0 : group_on(rk, d) ? 2 : 1;
            if (tier == best)
                rk->temp_dirs[k++] = (uint32_t)t;
        }
        /* Rotate by the rank's position so that the ranks spread their first choices. */
        for (size_t s = 0; s < r % k; s++) {
            uint32_t first = rk->temp_dirs[0];
            memmove(rk->temp_dirs, rk->temp_dirs + 1, (k - 1) * sizeof *rk->temp_dirs);
            rk->temp_dirs[k - 1] = first;
        }
        rk->ntemp_dirs = k;
    }
    return DSORT_OK;
}

/* The NUMA node a rank should sit near: the one behind most of its bytes (known NUMA only). */
static void choose_numa(struct dsort_plan_node *node)
{
    for (size_t r = 0; r < node->nranks; r++) {
        struct dsort_plan_rank *rk = &node->ranks[r];
        uint64_t best_bytes = 0;
        for (size_t g = 0; g < rk->ngroups; g++) {
            int numa = node->devices[rk->groups[g].device].dev.numa;
            if (numa < 0)
                continue;
            uint64_t sum = 0;
            for (size_t h = 0; h < rk->ngroups; h++)
                if (node->devices[rk->groups[h].device].dev.numa == numa)
                    sum += rk->groups[h].bytes;
            if (sum > best_bytes || (sum == best_bytes && numa < rk->numa)) {
                best_bytes = sum;
                rk->numa = numa;
            }
        }
    }
}

static enum dsort_status build(struct dsort_plan_node *node, const struct dsort_plan_input *in,
                               struct dsort_error *err)
{
    char host[256] = "";
    if (in->hostname)
        snprintf(host, sizeof host, "%s", in->hostname);
    else if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown");
    node->hostname = strdup(host);
    node->policy = in->policy;
    if (in->hw) {
        node->cores = dsort_hwtopo_cores(in->hw);
        node->pus = dsort_hwtopo_pus(in->hw);
        node->numa_nodes = dsort_hwtopo_numa_count(in->hw);
    }
    size_t cap = in->nreads + in->ntemps;
    node->devices = calloc(cap ? cap : 1, sizeof *node->devices);
    node->reads = calloc(in->nreads ? in->nreads : 1, sizeof *node->reads);
    node->temps = calloc(in->ntemps ? in->ntemps : 1, sizeof *node->temps);
    node->ranks = calloc(in->nranks ? in->nranks : 1, sizeof *node->ranks);
    if (!node->hostname || !node->devices || !node->reads || !node->temps || !node->ranks)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
    node->nranks = in->nranks;

    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < in->nreads && !st; i++)
        if (in->reads[i].length > 0)
            st = add_stdev(node, in, in->reads[i].major, in->reads[i].minor, cap, err);
    for (size_t i = 0; i < in->ntemps && !st; i++)
        st = add_stdev(node, in, in->temps[i].major, in->temps[i].minor, cap, err);
    if (!st)
        st = place_reads(node, in, err);
    if (st)
        return st;
    size_t *order = malloc((in->nranks ? in->nranks : 1) * sizeof *order);
    if (!order)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
    assign_turns(node, order);
    free(order);
    st = place_temps(node, in, err);
    if (st)
        return st;
    choose_numa(node);
    return DSORT_OK;
}

enum dsort_status dsort_plan_build(const struct dsort_plan_input *input,
                                   struct dsort_plan_node **out, struct dsort_error *err)
{
    if (!out || !input)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_plan_build: NULL argument");
    *out = NULL;
    enum dsort_status st = check_input(input, err);
    if (st)
        return st;
    struct dsort_plan_node *node = calloc(1, sizeof *node);
    if (!node)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory for the plan");
    st = build(node, input, err);
    if (st) {
        dsort_plan_destroy(node);
        return st;
    }
    *out = node;
    return DSORT_OK;
}

/* ---- queries ----------------------------------------------------------------------------- */

const struct dsort_plan_rank *dsort_plan_rank_find(const struct dsort_plan_node *node, int32_t rank)
{
    for (size_t i = 0; i < node->nranks; i++)
        if (node->ranks[i].rank == rank)
            return &node->ranks[i];
    return NULL;
}

int dsort_plan_device_find(const struct dsort_plan_node *node, const char *key)
{
    for (size_t i = 0; i < node->ndevices; i++)
        if (strcmp(node->devices[i].dev.key, key) == 0)
            return (int)i;
    return -1;
}

int dsort_plan_add_stats(struct dsort_plan_node *node, const char *key, uint64_t bytes,
                         double seconds)
{
    int d = dsort_plan_device_find(node, key);
    if (d < 0)
        return -1;
    struct dsort_plan_device *dv = &node->devices[d];
    dv->has_stats = 1;
    dv->stat_bytes += bytes;
    if (seconds > dv->stat_seconds)
        dv->stat_seconds = seconds;
    return 0;
}

void dsort_plan_requests(const struct dsort_plan_node *node, const struct dsort_plan_rank *rk,
                         void *base, struct dsort_devread_req *reqs)
{
    unsigned char *dest = base;
    for (size_t i = 0; i < rk->nreads; i++) {
        const struct dsort_plan_read *r = &node->reads[rk->first_read + i];
        reqs[i].path = r->file;
        reqs[i].fd = -1;
        reqs[i].offset = r->offset;
        reqs[i].length = (size_t)r->length;
        reqs[i].dest = dest;
        reqs[i].key = node->devices[r->device].dev.key;
        dest += r->length;
    }
}

static const struct dsort_plan_group *group_of(const struct dsort_plan_node *node, int32_t rank,
                                               uint32_t device)
{
    const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, rank);
    if (!rk)
        return NULL;
    for (size_t g = 0; g < rk->ngroups; g++)
        if (rk->groups[g].device == device)
            return &rk->groups[g];
    return NULL;
}

enum dsort_status dsort_plan_check(const struct dsort_plan_node *node, struct dsort_error *err)
{
    for (size_t d = 0; d < node->ndevices; d++) {
        const struct dsort_plan_device *dv = &node->devices[d];
        uint32_t free_starts = 0, readers = 0;
        for (size_t r = 0; r < node->nranks; r++) {
            const struct dsort_plan_rank *rk = &node->ranks[r];
            for (size_t g = 0; g < rk->ngroups; g++) {
                const struct dsort_plan_group *gp = &rk->groups[g];
                if (gp->device >= node->ndevices)
                    return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                                     "plan: rank %d has a group on device %u of %zu", (int)rk->rank,
                                     (unsigned)gp->device, node->ndevices);
                if (gp->device != d)
                    continue;
                readers++;
                if (gp->wait_for < 0) {
                    free_starts++;
                } else {
                    const struct dsort_plan_group *w = group_of(node, gp->wait_for, gp->device);
                    if (!w || w->pass_to != rk->rank || w->turn >= gp->turn || w->slot != gp->slot)
                        return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                                         "plan: device %s: rank %d waits for rank %d, which does "
                                         "not pass its turn to it",
                                         dv->dev.key, (int)rk->rank, (int)gp->wait_for);
                }
                if (gp->pass_to >= 0) {
                    const struct dsort_plan_group *n = group_of(node, gp->pass_to, gp->device);
                    if (!n || n->wait_for != rk->rank)
                        return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                                         "plan: device %s: rank %d passes its turn to rank %d, "
                                         "which does not wait for it",
                                         dv->dev.key, (int)rk->rank, (int)gp->pass_to);
                }
            }
        }
        if (free_starts > dv->streams)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "plan: device %s: %u ranks read at once, limit %u", dv->dev.key,
                             (unsigned)free_starts, (unsigned)dv->streams);
        if (readers != dv->readers)
            return DSORT_ERR(err, DSORT_EINTERNAL, 0,
                             "plan: device %s: %u readers counted, %u recorded", dv->dev.key,
                             (unsigned)readers, (unsigned)dv->readers);
    }
    return DSORT_OK;
}
