/* The program's use of the topology layer: the node's plan, device-parallel reading with
 * stream limits, --plan output, binding, and per-device figures for --stats.
 *
 * Every rank of a node builds the same plan locally: the node's ranks come from one
 * Allgather on the node communicator, and every rank's share of the input is a pure function
 * of the input sizes (job.h), so no plan needs to be sent around except to print it.
 * Stream limits across the ranks of a node are kept with devread.h's tokens (per-user flock
 * files in /dev/shm): a rank's reading thread for a device takes the token of its slot
 * (plan.h), so at most `streams` ranks read one device at a time, a rank that dies releases
 * its token, and a holder that shows no sign of life (stopped) is passed after a bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agree.h"
#include "clock.h"
#include "job.h"
#include "job_topo.h"
#include "phase.h"
#include "hwtopo.h"
#include "plan.h"
#include "planjson.h"

struct dsort_job_topo {
    struct dsort_hwtopo *hw;
    struct dsort_plan_node *node;
    const struct dsort_plan_rank *me;
    const char **file_key; /* per input file: its device key in the plan */
    size_t nfiles;
    double *dev_seconds; /* per plan device: this rank's reading */
    uint64_t *dev_bytes;
    char note[400];       /* what discovery could not tell, for -v */
    char token_note[400]; /* the first read without its turn on a device, for -v */
    int one_stream;       /* --one-stream: every read in one thread, no device turns */
};

struct reads_ctx {
    struct dsort_plan_read_in *out;
    size_t n;
    int32_t rank;
};

static enum dsort_status add_read(void *ctx, const struct dsort_input_segment *seg)
{
    struct reads_ctx *r = ctx;
    r->out[r->n++] =
        (struct dsort_plan_read_in){seg->file->path,       seg->offset,           seg->length,
                                    major(seg->file->dev), minor(seg->file->dev), r->rank};
    return DSORT_OK;
}

void dsort_job_topo_destroy(struct dsort_job_topo *t)
{
    if (!t)
        return;
    dsort_plan_destroy(t->node);
    dsort_hwtopo_destroy(t->hw);
    free(t->file_key);
    free(t->dev_seconds);
    free(t->dev_bytes);
    free(t);
}

const char *dsort_job_topo_note(const struct dsort_job_topo *t)
{
    return t && t->note[0] ? t->note : NULL;
}

const char *dsort_job_topo_token_note(const struct dsort_job_topo *t)
{
    return t && t->token_note[0] ? t->token_note : NULL;
}

/* Watch, per phase (job.h), the disks under the plan's devices (inputs and temp dirs) and
 * under the output's directory. */
static void watch_disks(const struct dsort_plan_node *node, const struct dsort_job_options *o)
{
    const char *names[DSORT_JOB_DISKS];
    size_t n = 0;
    static struct dsort_blockdev out; /* its names outlive the call: watch copies them anyway */
    for (size_t d = 0; d < node->ndevices; d++)
        for (uint32_t k = 0; k < node->devices[d].dev.ndisks && n < DSORT_JOB_DISKS; k++)
            names[n++] = node->devices[d].dev.disks[k];
    const char *target = o->output ? o->output : o->output_dir;
    if (target && n < DSORT_JOB_DISKS) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", target);
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == dir)
            dir[1] = '\0';
        else
            *slash = '\0';
        struct stat sb;
        if (!stat(dir, &sb) &&
            !dsort_blockdev_resolve(NULL, major(sb.st_dev), minor(sb.st_dev), &out, NULL))
            for (uint32_t k = 0; k < out.ndisks && n < DSORT_JOB_DISKS; k++)
                names[n++] = out.disks[k];
    }
    dsort_job_watch_disks(names, n);
}

/* Every node rank's reads into reads: its share is a function of the sizes (see
 * dsort_job_share). Returns how many. */
static size_t node_reads(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_inputs *in, const int32_t *ranks,
                         struct dsort_plan_read_in *reads)
{
    struct reads_ctx rc = {reads, 0, 0};
    for (int k = 0; k < c->node_size; k++) {
        uint64_t first, n;
        if (o->stdin_rank0) { /* see dsort_job_share */
            first = 0;
            n = ranks[k] == 0 ? in->total_records : 0;
        } else if (o->local_inputs)
            dsort_io_split(in->total_records, k, c->node_size, &first, &n);
        else
            dsort_io_split(in->total_records, ranks[k], c->size, &first, &n);
        rc.rank = ranks[k];
        dsort_inputs_segments(in, first, n, add_read, &rc);
    }
    return rc.n;
}

/* The temp dirs with their devices (0:0 for one that cannot be stat'ed). */
static void node_temps(const struct dsort_job_options *o, struct dsort_plan_temp_in *temps)
{
    for (size_t i = 0; i < o->ntemp; i++) {
        struct stat sb;
        temps[i].path = o->temp_dirs[i];
        if (!stat(o->temp_dirs[i], &sb)) {
            temps[i].major = major(sb.st_dev);
            temps[i].minor = minor(sb.st_dev);
        }
    }
}

/* After the plan: each input file's device key, the per-device figures' arrays, and the note
 * of a device of unknown kind. */
static enum dsort_status map_files(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                   struct dsort_error *err)
{
    t->file_key = calloc(in->count + 1, sizeof *t->file_key);
    t->dev_seconds = calloc(t->node->ndevices + 1, sizeof *t->dev_seconds);
    t->dev_bytes = calloc(t->node->ndevices + 1, sizeof *t->dev_bytes);
    if (!t->file_key || !t->dev_seconds || !t->dev_bytes)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    /* Each input file's device: the plan device that holds its st_dev. */
    for (size_t i = 0; i < in->count; i++) {
        uint32_t ma = major(in->files[i].dev), mi = minor(in->files[i].dev);
        for (size_t d = 0; d < t->node->ndevices && !t->file_key[i]; d++) {
            const struct dsort_plan_device *dev = &t->node->devices[d];
            for (size_t m = 0; m < dev->nmembers; m++)
                if (dev->members[m].major == ma && dev->members[m].minor == mi)
                    t->file_key[i] = dev->dev.key;
        }
        if (!t->file_key[i])
            t->file_key[i] = "unplanned"; /* another rank's file only: one thread */
    }
    for (size_t d = 0; d < t->node->ndevices; d++)
        if (t->node->devices[d].dev.kind == DSORT_BLOCKDEV_UNKNOWN && !t->note[0])
            snprintf(t->note, sizeof t->note, "device %s: %s; one device per st_dev assumed",
                     t->node->devices[d].dev.key, t->node->devices[d].dev.reason);
    return DSORT_OK;
}

enum dsort_status dsort_job_topo_create(const struct dsort_comm *c,
                                        const struct dsort_job_options *o,
                                        const struct dsort_inputs *in, struct dsort_job_topo **out,
                                        struct dsort_error *err)
{
    *out = NULL;
    struct dsort_job_topo *t = calloc(1, sizeof *t);
    struct dsort_plan_read_in *reads =
        calloc((in->count + 1) * (size_t)c->node_size, sizeof *reads);
    struct dsort_plan_temp_in *temps = calloc(o->ntemp + 1, sizeof *temps);
    enum dsort_status st = DSORT_OK;
    if (!t || !reads || !temps)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    int32_t mine = c->rank, *ranks = NULL;
    /* Every rank of the node takes part, whatever happened above; the node's ranks, or NULL on
     * all of them when one failed (a rank that did not goes on to the caller's agreement).
     * This is the only collective here: what follows is local to the rank. */
    void *all = NULL;
    enum dsort_status ast =
        dsort_agree_allgather(c, c->node, st ? NULL : &mine, sizeof mine, &all, err);
    ranks = all;
    if (!st)
        st = ast;
    if (st || !ranks) {
        dsort_job_topo_destroy(t);
        t = NULL;
        goto out;
    }
    struct dsort_error herr = {0};
    if (dsort_hwtopo_create(&t->hw, NULL, &herr))
        snprintf(t->note, sizeof t->note, "no hwloc topology (%s); NUMA locality unknown",
                 herr.msg);
    size_t nreads = node_reads(c, o, in, ranks, reads);
    node_temps(o, temps);
    struct dsort_plan_input pin = {.hostname = c->host,
                                   .ranks = ranks,
                                   .nranks = (size_t)c->node_size,
                                   .reads = reads,
                                   .nreads = nreads,
                                   .temps = temps,
                                   .ntemps = o->ntemp,
                                   .hw = t->hw,
                                   .policy = {o->streams_per_device, 0}};
    if ((st = dsort_plan_build(&pin, &t->node, err)))
        goto out;
    t->me = dsort_plan_rank_find(t->node, c->rank);
    t->nfiles = in->count;
    t->one_stream = o->one_stream;
    if ((st = map_files(t, in, err)))
        goto out;
    watch_disks(t->node, o);
out:
    free(ranks);
    free(reads);
    free(temps);
    if (st)
        dsort_job_topo_destroy(t);
    else
        *out = t; /* (NULL after another node rank's failure) */
    return st;
}

/* The stream-limit token of a device is the one of this rank's slot on it (plan.h). */
static int slot_of(const struct dsort_job_topo *t, const char *key)
{
    if (!t->me)
        return 0;
    for (size_t g = 0; g < t->me->ngroups; g++)
        if (!strcmp(t->node->devices[t->me->groups[g].device].dev.key, key))
            return (int)t->me->groups[g].slot;
    return 0;
}

static unsigned token_slot(const char *key, void *arg)
{
    return (unsigned)slot_of(arg, key);
}

struct req_ctx {
    const struct dsort_job_topo *t;
    struct dsort_devread_req *reqs;
    size_t n;
    unsigned char *dest;
    const unsigned char *pad; /* per file: bytes left after its end in dest (or NULL) */
};

static enum dsort_status add_req(void *ctx, const struct dsort_input_segment *seg)
{
    struct req_ctx *r = ctx;
    r->reqs[r->n++] = (struct dsort_devread_req){
        seg->file->path,     -1,      seg->offset,
        (size_t)seg->length, r->dest, r->t->one_stream ? "one-stream" : r->t->file_key[seg->index]};
    r->dest += seg->length;
    if (r->pad && seg->offset + seg->length == seg->file->size)
        r->dest += r->pad[seg->index];
    return DSORT_OK;
}

/* The reads of dsort_job_topo_read_padded, with each as the devread chunk hook (NULL: none). */
static enum dsort_status topo_read(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                   uint64_t first, uint64_t count, unsigned char *dest,
                                   const unsigned char *pad,
                                   void (*each)(void *arg, unsigned char *piece, size_t len),
                                   void *arg, struct dsort_error *err);

enum dsort_status dsort_job_topo_read(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                      uint64_t first, uint64_t count, unsigned char *dest,
                                      struct dsort_error *err)
{
    return topo_read(t, in, first, count, dest, NULL, NULL, NULL, err);
}

enum dsort_status dsort_job_topo_read_padded(struct dsort_job_topo *t,
                                             const struct dsort_inputs *in, uint64_t first,
                                             uint64_t count, unsigned char *dest,
                                             const unsigned char *pad, struct dsort_error *err)
{
    return topo_read(t, in, first, count, dest, pad, NULL, NULL, err);
}

enum dsort_status dsort_job_topo_read_each(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                           uint64_t first, uint64_t count, unsigned char *dest,
                                           void (*each)(void *arg, unsigned char *piece,
                                                        size_t len),
                                           void *arg, struct dsort_error *err)
{
    return topo_read(t, in, first, count, dest, NULL, each, arg, err);
}

static enum dsort_status topo_read(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                   uint64_t first, uint64_t count, unsigned char *dest,
                                   const unsigned char *pad,
                                   void (*each)(void *arg, unsigned char *piece, size_t len),
                                   void *arg, struct dsort_error *err)
{
    struct dsort_devread_req *reqs = calloc(in->count + 1, sizeof *reqs);
    if (!reqs)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    struct req_ctx rq = {t, reqs, 0, dest, pad};
    dsort_inputs_segments(in, first, count, add_req, &rq);
    size_t n = rq.n;
    struct dsort_devread_tokens *tok = NULL;
    enum dsort_status st = DSORT_OK;
    if (!t->one_stream && (st = dsort_devread_tokens_create(NULL, -1, token_slot, t, &tok, err))) {
        free(reqs);
        return st;
    }
    struct dsort_devread_hooks hooks =
        tok ? dsort_devread_tokens_hooks(tok) : (struct dsort_devread_hooks){0};
    hooks.chunk = each;
    hooks.chunk_arg = arg;
    hooks.populate = each != NULL;
    struct dsort_devread_stat *stats = NULL;
    size_t nstats = 0;
    st = dsort_devread_run(reqs, n, each ? DSORT_DEVREAD_MIN_CHUNK : 0, tok || each ? &hooks : NULL,
                           &stats, &nstats, err);
    for (size_t s = 0; s < nstats; s++) {
        int d = dsort_plan_device_find(t->node, stats[s].key);
        if (d >= 0) {
            t->dev_bytes[d] += stats[s].bytes;
            t->dev_seconds[d] += stats[s].seconds;
        }
        if (stats[s].no_turn && !t->token_note[0])
            snprintf(t->token_note, sizeof t->token_note, "%s", stats[s].note);
    }
    dsort_devread_tokens_destroy(tok);
    free(stats);
    free(reqs);
    return st;
}

enum dsort_status dsort_job_topo_populate(struct dsort_job_topo *t, size_t i,
                                          const struct dsort_input_map *map, uint64_t off,
                                          uint64_t len, struct dsort_error *err)
{
    struct dsort_devread_tokens *tok = NULL;
    enum dsort_status st = DSORT_OK;
    if (t && !t->one_stream &&
        (st = dsort_devread_tokens_create(NULL, -1, token_slot, t, &tok, err)))
        return st;
    const char *key = t && i < t->nfiles ? t->file_key[i] : "unplanned";
    struct dsort_devread_hooks hooks = dsort_devread_tokens_hooks(tok);
    struct dsort_error terr = {0};
    double t0 = dsort_clock_now();
    /* The hook never fails (no turn after the bound: it reads anyway, with terr saying so). */
    if (tok)
        hooks.before(key, hooks.arg, &terr);
    st = dsort_inputs_populate(map, off, len, err);
    if (tok)
        hooks.after(key, st == DSORT_OK, hooks.arg);
    if (t) {
        int d = dsort_plan_device_find(t->node, key);
        if (d >= 0) {
            t->dev_bytes[d] += len;
            t->dev_seconds[d] += dsort_clock_now() - t0;
        }
        if (terr.msg[0] && !t->token_note[0])
            snprintf(t->token_note, sizeof t->token_note, "%s", terr.msg);
    }
    dsort_devread_tokens_destroy(tok);
    return st;
}

int dsort_job_topo_temp_devices(const struct dsort_job_topo *t, char *const *dirs, size_t n,
                                uint64_t *devs)
{
    if (!t || !t->me || !t->node)
        return 0;
    for (size_t i = 0; i < n; i++) {
        devs[i] = UINT64_MAX - i; /* not in the plan: a disk of its own */
        for (size_t k = 0; k < t->me->ntemp_dirs; k++) {
            const struct dsort_plan_temp *tp = &t->node->temps[t->me->temp_dirs[k]];
            if (!strcmp(tp->path, dirs[i]))
                devs[i] = tp->device;
        }
    }
    return 1;
}

void dsort_job_topo_temp_dirs(const struct dsort_job_topo *t, const struct dsort_job_options *o,
                              char **out, size_t *n)
{
    *n = 0;
    if (!t || !t->me) {
        for (size_t i = 0; i < o->ntemp; i++)
            out[(*n)++] = o->temp_dirs[i];
        return;
    }
    /* The plan's order (preferred first). Devices this rank reads are avoided when the node
     * has a temp dir elsewhere: keep only the dirs whose device it does not read, if any. */
    size_t keep = 0;
    for (size_t k = 0; k < t->me->ntemp_dirs; k++) {
        const struct dsort_plan_temp *tp = &t->node->temps[t->me->temp_dirs[k]];
        int reads = 0;
        for (size_t g = 0; g < t->me->ngroups; g++)
            reads |= t->me->groups[g].device == tp->device;
        if (!reads)
            keep++;
    }
    for (size_t k = 0; k < t->me->ntemp_dirs; k++) {
        const struct dsort_plan_temp *tp = &t->node->temps[t->me->temp_dirs[k]];
        int reads = 0;
        for (size_t g = 0; g < t->me->ngroups; g++)
            reads |= t->me->groups[g].device == tp->device;
        if (!keep || !reads)
            out[(*n)++] = tp->path;
    }
}

void dsort_job_topo_bind(const struct dsort_job_topo *t, const struct dsort_comm *c, int verbose)
{
    if (!t || !t->hw || !t->me || t->me->numa < 0)
        return;
    char cur[256];
    int bound = dsort_hwtopo_bound(t->hw, cur, sizeof cur);
    if (bound != 0) {
        if (verbose && c->rank == 0)
            dsort_comm_print(c, "--bind: already bound by the launcher (%s); left as is", cur);
        return;
    }
    struct dsort_error err = {0};
    if (dsort_hwtopo_bind(t->hw, t->me->numa, &err) && verbose)
        dsort_comm_print(c, "--bind: %s", err.msg);
}

/* The node's measured figures per device into its plan on the node's first rank (the
 * slowest rank's seconds, the bytes of all): every rank of the node enters both reductions,
 * or, when any of them has no room for them, none does and the plan goes without figures. */
static void add_node_stats(const struct dsort_comm *c, struct dsort_job_topo *t)
{
    size_t nd = t->node->ndevices;
    double *secs = calloc(nd + 1, sizeof *secs);
    uint64_t *bytes = calloc(nd + 1, sizeof *bytes);
    if (dsort_agree_ok(c, c->node, secs && bytes)) {
        dsort_agree_reduce(c, c->node, t->dev_seconds, secs, nd, MPI_DOUBLE, MPI_MAX, 0,
                           "the node's seconds per device (MPI_Reduce)");
        dsort_agree_reduce(c, c->node, t->dev_bytes, bytes, nd, MPI_UINT64_T, MPI_SUM, 0,
                           "the node's bytes per device (MPI_Reduce)");
        if (c->node_rank == 0)
            for (size_t d = 0; d < nd; d++)
                dsort_plan_add_stats(t->node, t->node->devices[d].dev.key, bytes[d], secs[d]);
    }
    free(secs);
    free(bytes);
}

struct dsort_plan_node **dsort_job_topo_gather(const struct dsort_comm *c, struct dsort_job_topo *t,
                                               int with_stats, size_t *count)
{
    *count = 0;
    if (with_stats)
        add_node_stats(c, t);
    void *blob = NULL;
    size_t len = 0;
    if (c->node_rank == 0 && dsort_plan_pack(t->node, &blob, &len, NULL))
        len = 0;
    void *all = NULL;
    size_t *offs = NULL;
    dsort_agree_gatherv(c, blob, len, &all, &offs, NULL);
    free(blob);
    struct dsort_plan_node **nodes = NULL;
    if (all) {
        nodes = calloc((size_t)c->size, sizeof *nodes);
        for (int r = 0; nodes && r < c->size; r++)
            if (offs[r + 1] > offs[r] &&
                !dsort_plan_unpack((unsigned char *)all + offs[r], offs[r + 1] - offs[r],
                                   &nodes[*count], NULL))
                (*count)++;
    }
    free(all);
    free(offs);
    return nodes;
}

void dsort_job_topo_free_plans(struct dsort_plan_node **nodes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dsort_plan_destroy(nodes[i]);
    free(nodes);
}

void dsort_job_topo_write_stats(const struct dsort_comm *c, struct dsort_job_topo *t, FILE *f)
{
    size_t n = 0;
    struct dsort_plan_node **nodes = dsort_job_topo_gather(c, t, 1, &n);
    if (c->rank == 0 && f)
        dsort_planjson_write(f, (const struct dsort_plan_node *const *)nodes, n, NULL);
    dsort_job_topo_free_plans(nodes, n);
}
