/* The plan of a node as a blob and back (plan.h: dsort_plan_pack, dsort_plan_unpack), for the
 * gather of every node's plan to rank 0. Split from plan.c, which builds and queries plans:
 * nothing here knows how a plan is made, only its structs.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define PLAN_MAGIC 0x4c505344u /* "DSPL" */
#define PLAN_VERSION 1u

struct wbuf {
    unsigned char *p;
    size_t len, cap;
    int oom;
};

static void put(struct wbuf *b, const void *data, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) /* data may be NULL for an empty array */
        memcpy(b->p + b->len, data, n);
    b->len += n;
}

static void put_u64(struct wbuf *b, uint64_t v)
{
    put(b, &v, sizeof v);
}

static void put_str(struct wbuf *b, const char *s)
{
    uint64_t n = strlen(s);
    put_u64(b, n);
    put(b, s, (size_t)n);
}

struct rbuf {
    const unsigned char *p;
    size_t len, at;
    int bad;
};

static void get(struct rbuf *b, void *data, size_t n)
{
    if (b->bad || n > b->len - b->at) {
        b->bad = 1;
        if (n)
            memset(data, 0, n);
        return;
    }
    if (n)
        memcpy(data, b->p + b->at, n);
    b->at += n;
}

static uint64_t get_u64(struct rbuf *b)
{
    uint64_t v;
    get(b, &v, sizeof v);
    return v;
}

static char *get_str(struct rbuf *b)
{
    uint64_t n = get_u64(b);
    if (b->bad || n > b->len - b->at) {
        b->bad = 1;
        return NULL;
    }
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    memcpy(s, b->p + b->at, (size_t)n);
    s[n] = '\0';
    b->at += (size_t)n;
    return s;
}

/* A count read from the blob, checked against the bytes left (each element takes at least
 * min_size bytes) so that a corrupt count cannot make us allocate the moon. */
static size_t get_count(struct rbuf *b, size_t min_size)
{
    uint64_t n = get_u64(b);
    if (b->bad || (min_size && n > (b->len - b->at) / min_size)) {
        b->bad = 1;
        return 0;
    }
    return (size_t)n;
}

enum dsort_status dsort_plan_pack(const struct dsort_plan_node *node, void **blob, size_t *len,
                                  struct dsort_error *err)
{
    struct wbuf b = {0};
    uint32_t head[2] = {PLAN_MAGIC, PLAN_VERSION};
    put(&b, head, sizeof head);
    put_str(&b, node->hostname ? node->hostname : "");
    put(&b, &node->policy, sizeof node->policy);
    uint32_t hw[3] = {node->cores, node->pus, node->numa_nodes};
    put(&b, hw, sizeof hw);
    put_u64(&b, node->ndevices);
    for (size_t i = 0; i < node->ndevices; i++) {
        const struct dsort_plan_device *d = &node->devices[i];
        /* The struct minus its pointer, then the members. */
        struct dsort_plan_device flat = *d;
        flat.members = NULL;
        put(&b, &flat, sizeof flat);
        put(&b, d->members, d->nmembers * sizeof *d->members);
    }
    put_u64(&b, node->nreads);
    for (size_t i = 0; i < node->nreads; i++) {
        struct dsort_plan_read flat = node->reads[i];
        flat.file = NULL;
        put(&b, &flat, sizeof flat);
        put_str(&b, node->reads[i].file);
    }
    put_u64(&b, node->ntemps);
    for (size_t i = 0; i < node->ntemps; i++) {
        struct dsort_plan_temp flat = node->temps[i];
        flat.path = NULL;
        put(&b, &flat, sizeof flat);
        put_str(&b, node->temps[i].path);
    }
    put_u64(&b, node->nranks);
    for (size_t i = 0; i < node->nranks; i++) {
        const struct dsort_plan_rank *rk = &node->ranks[i];
        struct dsort_plan_rank flat = *rk;
        flat.groups = NULL;
        flat.temp_dirs = NULL;
        put(&b, &flat, sizeof flat);
        put(&b, rk->groups, rk->ngroups * sizeof *rk->groups);
        put(&b, rk->temp_dirs, rk->ntemp_dirs * sizeof *rk->temp_dirs);
    }
    if (b.oom) {
        free(b.p);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory packing the plan");
    }
    *blob = b.p;
    *len = b.len;
    return DSORT_OK;
}

/* A device record from a blob: counts within their arrays, every string terminated, so that
 * nothing reads past the record whatever the blob said. */
static void sanitize(struct dsort_blockdev *d)
{
    if (d->ndisks > DSORT_BLOCKDEV_MAX_DISKS)
        d->ndisks = DSORT_BLOCKDEV_MAX_DISKS;
    d->name[sizeof d->name - 1] = '\0';
    for (size_t i = 0; i < DSORT_BLOCKDEV_MAX_DISKS; i++)
        d->disks[i][sizeof d->disks[i] - 1] = '\0';
    d->key[sizeof d->key - 1] = '\0';
    d->reason[sizeof d->reason - 1] = '\0';
}

/* The devices, each with its members. */
static enum dsort_status unpack_devices(struct rbuf *b, struct dsort_plan_node *node)
{
    size_t n = get_count(b, sizeof(struct dsort_plan_device));
    if (!(node->devices = calloc(n ? n : 1, sizeof *node->devices)))
        return DSORT_ENOMEM;
    while (node->ndevices < n && !b->bad) {
        struct dsort_plan_device *d = &node->devices[node->ndevices++];
        get(b, d, sizeof *d);
        size_t m = d->nmembers;
        d->nmembers = 0;
        d->members = NULL;
        if (b->bad || m > (b->len - b->at) / sizeof *d->members)
            return DSORT_EFORMAT;
        if (!(d->members = malloc((m ? m : 1) * sizeof *d->members)))
            return DSORT_ENOMEM;
        get(b, d->members, m * sizeof *d->members);
        d->nmembers = m;
        sanitize(&d->dev);
        for (size_t i = 0; i < m; i++)
            sanitize(&d->members[i]);
    }
    return DSORT_OK;
}

/* The reads, each with its file's name, then the temp dirs, each with its path. */
static enum dsort_status unpack_reads_temps(struct rbuf *b, struct dsort_plan_node *node)
{
    size_t n = get_count(b, sizeof(struct dsort_plan_read));
    if (!(node->reads = calloc(n ? n : 1, sizeof *node->reads)))
        return DSORT_ENOMEM;
    while (node->nreads < n && !b->bad) {
        struct dsort_plan_read *r = &node->reads[node->nreads++];
        get(b, r, sizeof *r);
        r->file = NULL;
        if (!(r->file = get_str(b)))
            return b->bad ? DSORT_EFORMAT : DSORT_ENOMEM;
    }
    n = get_count(b, sizeof(struct dsort_plan_temp));
    if (!(node->temps = calloc(n ? n : 1, sizeof *node->temps)))
        return DSORT_ENOMEM;
    while (node->ntemps < n && !b->bad) {
        struct dsort_plan_temp *t = &node->temps[node->ntemps++];
        get(b, t, sizeof *t);
        t->path = NULL;
        if (!(t->path = get_str(b)))
            return b->bad ? DSORT_EFORMAT : DSORT_ENOMEM;
    }
    return DSORT_OK;
}

/* The ranks, each with its groups and temp dirs. */
static enum dsort_status unpack_ranks(struct rbuf *b, struct dsort_plan_node *node)
{
    size_t n = get_count(b, sizeof(struct dsort_plan_rank));
    if (!(node->ranks = calloc(n ? n : 1, sizeof *node->ranks)))
        return DSORT_ENOMEM;
    while (node->nranks < n && !b->bad) {
        struct dsort_plan_rank *rk = &node->ranks[node->nranks++];
        get(b, rk, sizeof *rk);
        size_t ng = rk->ngroups, nt = rk->ntemp_dirs;
        rk->ngroups = rk->ntemp_dirs = 0;
        rk->groups = NULL;
        rk->temp_dirs = NULL;
        if (b->bad || ng > (b->len - b->at) / sizeof *rk->groups ||
            nt > (b->len - b->at) / sizeof *rk->temp_dirs)
            return DSORT_EFORMAT;
        rk->groups = malloc((ng ? ng : 1) * sizeof *rk->groups);
        rk->temp_dirs = malloc((nt ? nt : 1) * sizeof *rk->temp_dirs);
        if (!rk->groups || !rk->temp_dirs)
            return DSORT_ENOMEM;
        get(b, rk->groups, ng * sizeof *rk->groups);
        get(b, rk->temp_dirs, nt * sizeof *rk->temp_dirs);
        rk->ngroups = ng;
        rk->ntemp_dirs = nt;
    }
    return DSORT_OK;
}

/* Indexes must point inside the arrays, whatever the blob said. */
static enum dsort_status check_indexes(const struct dsort_plan_node *node)
{
    for (size_t i = 0; i < node->nreads; i++)
        if (node->reads[i].device >= node->ndevices)
            return DSORT_EFORMAT;
    for (size_t i = 0; i < node->ntemps; i++)
        if (node->temps[i].device >= node->ndevices)
            return DSORT_EFORMAT;
    for (size_t i = 0; i < node->nranks; i++) {
        const struct dsort_plan_rank *rk = &node->ranks[i];
        if (rk->first_read > node->nreads || rk->nreads > node->nreads - rk->first_read)
            return DSORT_EFORMAT;
        for (size_t g = 0; g < rk->ngroups; g++)
            if (rk->groups[g].device >= node->ndevices)
                return DSORT_EFORMAT;
        for (size_t t = 0; t < rk->ntemp_dirs; t++)
            if (rk->temp_dirs[t] >= node->ntemps)
                return DSORT_EFORMAT;
    }
    return DSORT_OK;
}

static enum dsort_status unpack(struct rbuf *b, struct dsort_plan_node *node)
{
    uint32_t head[2];
    get(b, head, sizeof head);
    if (b->bad || head[0] != PLAN_MAGIC || head[1] != PLAN_VERSION)
        return DSORT_EFORMAT;
    node->hostname = get_str(b);
    get(b, &node->policy, sizeof node->policy);
    uint32_t hw[3];
    get(b, hw, sizeof hw);
    node->cores = hw[0];
    node->pus = hw[1];
    node->numa_nodes = hw[2];
    if (b->bad || !node->hostname)
        return b->bad ? DSORT_EFORMAT : DSORT_ENOMEM;
    enum dsort_status st;
    if ((st = unpack_devices(b, node)) || (st = unpack_reads_temps(b, node)) ||
        (st = unpack_ranks(b, node)))
        return st;
    if (b->bad || b->at != b->len)
        return DSORT_EFORMAT;
    return check_indexes(node);
}

enum dsort_status dsort_plan_unpack(const void *blob, size_t len, struct dsort_plan_node **out,
                                    struct dsort_error *err)
{
    if (!out || (!blob && len))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "dsort_plan_unpack: NULL argument");
    *out = NULL;
    struct dsort_plan_node *node = calloc(1, sizeof *node);
    if (!node)
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "out of memory unpacking a plan");
    struct rbuf b = {blob, len, 0, 0};
    enum dsort_status st = unpack(&b, node);
    if (st) {
        dsort_plan_destroy(node);
        if (st == DSORT_ENOMEM)
            return DSORT_ERR(err, st, 0, "out of memory unpacking a plan");
        return DSORT_ERR(err, st, 0, "corrupt plan blob (%zu bytes, stopped at byte %zu)", len,
                         b.at);
    }
    *out = node;
    return DSORT_OK;
}
