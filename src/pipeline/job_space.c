/* The job's space estimate and preflight (job_space.h): each rank describes the paths it will
 * write (file system, free bytes, its need), rank 0 gathers them and adds the needs up per
 * file system, and the job goes on only if every file system holds what it is asked for.
 */
#include "job_space.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agree.h"
#include "job.h"
#include "job_typed.h"
#include "jsonstr.h"
#include "mem.h"
#include "memplan.h"
#include "recfmt.h"
#include "job_topo.h"

/* The margin on a rank's spill: runs carry block headers and checksums, and the splitters
 * leave shares a little uneven. */
#define SPILL_MARGIN(b) ((b) / 32 + ((uint64_t)1 << 20))

static const struct {
    unsigned long magic;
    const char *name;
    int network; /* one file system that every node sees */
} fs_types[] = {
    {0xEF53, "ext4", 0},       {0x01021994, "tmpfs", 0},  {0x58465342, "xfs", 0},
    {0x9123683E, "btrfs", 0},  {0x2FC12FC1, "zfs", 0},    {0x794C7630, "overlay", 0},
    {0x6969, "nfs", 1},        {0x0BD00BD0, "lustre", 1}, {0x47504653, "gpfs", 1},
    {0x19830326, "beegfs", 1}, {0x00C36400, "ceph", 1},   {0xFF534D42, "cifs", 1},
    {0xFE534D42, "smb2", 1},   {0x65735546, "fuse", 0},
};

/* The highest directory above dir (itself included) on dir's file system. */
static void mount_point(const char *dir, dev_t dev, char *out, size_t len)
{
    char cur[PATH_MAX], up[PATH_MAX];
    if (!realpath(dir, cur)) {
        snprintf(out, len, "%s", dir);
        return;
    }
    for (;;) {
        snprintf(up, sizeof up, "%s", cur);
        const char *parent = dirname(up);
        struct stat sb;
        if (!strcmp(parent, cur) || stat(parent, &sb) || sb.st_dev != dev)
            break;
        snprintf(cur, sizeof cur, "%s", parent);
    }
    snprintf(out, len, "%s", cur);
}

/* Describe the file system of directory dir into u (need and kind are the caller's). */
static void probe(const struct dsort_comm *c, const char *dir, struct dsort_job_space_use *u)
{
    snprintf(u->path, sizeof u->path, "%s", dir);
    snprintf(u->host, sizeof u->host, "%s", c->host);
    u->rank = c->rank;
    struct stat sb;
    struct statvfs v;
    struct statfs fs;
    if (stat(dir, &sb) || statvfs(dir, &v) || statfs(dir, &fs)) {
        u->errnum = errno ? errno : EIO;
        snprintf(u->key, sizeof u->key, "%s:?%s", c->host, dir);
        snprintf(u->mount, sizeof u->mount, "%s", dir);
        snprintf(u->fstype, sizeof u->fstype, "?");
        return;
    }
    u->avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    u->writable = access(dir, W_OK | X_OK) == 0;
    if (!u->writable) /* read-only, or not ours: creating files there would fail */
        u->errnum = errno ? errno : EACCES;
    int network = 0;
    snprintf(u->fstype, sizeof u->fstype, "0x%lx", (unsigned long)fs.f_type);
    for (size_t i = 0; i < sizeof fs_types / sizeof fs_types[0]; i++)
        if ((unsigned long)fs.f_type == fs_types[i].magic) {
            snprintf(u->fstype, sizeof u->fstype, "%s", fs_types[i].name);
            network = fs_types[i].network;
        }
    /* A network file system has another st_dev on every node: its type and size name it. */
    if (network)
        snprintf(u->key, sizeof u->key, "net:%s:%" PRIu64 ":%lu", u->fstype, (uint64_t)v.f_blocks,
                 (unsigned long)v.f_frsize);
    else
        snprintf(u->key, sizeof u->key, "%s:%u:%u", c->host, major(sb.st_dev), minor(sb.st_dev));
    mount_point(dir, sb.st_dev, u->mount, sizeof u->mount);
}

/* The directory the output is created in, or 0 when the output needs no space (a device such
 * as /dev/null, a FIFO). */
static int output_dir(const struct dsort_job_options *o, char *dir, size_t len)
{
    const char *path = o->output ? o->output : o->output_dir;
    char buf[PATH_MAX];
    struct stat sb;
    if (!path)
        return 0;
    if (!stat(path, &sb)) {
        if (o->output && !S_ISREG(sb.st_mode))
            return 0;
        if (o->output_dir && S_ISDIR(sb.st_mode)) {
            snprintf(dir, len, "%s", path);
            return 1;
        }
        if (o->output && realpath(path, buf)) /* a link's target is replaced */
            path = buf;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    snprintf(dir, len, "%s", dirname(tmp));
    return 1;
}

/* In memory or out of core, as the pipelines will decide it (sort_job in dsort.c, ooc_lines.c).
 * Collective. */
static void decide(const struct dsort_comm *c, const struct dsort_job_options *o,
                   const struct dsort_budget *b, const struct dsort_inputs *in,
                   const struct dsort_share *sh, struct dsort_job_space *sp)
{
    sp->budget = dsort_agree_min(c, b->bytes);
    int fits;
    if (o->lines) {
        /* the smallest need the share can have: lines so long that their entries weigh
         * nothing (the samples tell the line length later) */
        struct dsort_memplan_in mi = {.fmt = &dsort_recfmt_lines,
                                      .budget = sp->budget,
                                      .block = o->block,
                                      .temp_disks = 1,
                                      .share_bytes = sh->n,
                                      .avg_line = 1e12};
        struct dsort_memplan mp;
        dsort_memplan_compute(&mi, &mp);
        fits = mp.share_fits && !o->force_external && !o->resume;
    } else {
        uint64_t needed = dsort_job_mem_needed(&o->fmt, sh->n, c->size);
        fits = needed <= b->bytes && !o->force_external && !o->resume && !o->stdin_rank0;
    }
    sp->external = !dsort_comm_all_ok(c, fits);
    sp->mapped = !sp->external && !o->lines && dsort_job_map_usable(c, o, in);
}

/* This rank's uses: [0] the output, [1 ..] its -T dirs in the order it spills to them. */
static void describe(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_job_space_rank *me, uint64_t total,
                     struct dsort_job_space_use *uses)
{
    char dir[PATH_MAX];
    int shared = !o->local_output;
    if (output_dir(o, dir, sizeof dir) && (!shared || c->rank == 0)) {
        uses[0].kind = 1;
        probe(c, dir, &uses[0]);
        uses[0].need = shared ? total : me->out;
    }
    size_t n = 0;
    char **temps = dsort_job_temp_order(o, &n);
    if (!temps)
        return;
    /* the runs are striped over the distinct file systems of the dirs (tempdir.h): the
     * first dir of each takes its part */
    dev_t *devs = calloc(n + 1, sizeof *devs);
    int *first = calloc(n + 1, sizeof *first);
    size_t ndev = 0;
    for (size_t i = 0; i < n && devs && first; i++) {
        struct dsort_job_space_use *u = &uses[1 + i];
        u->kind = 2;
        probe(c, temps[i], u);
        struct stat sb;
        if (u->errnum || stat(temps[i], &sb))
            continue;
        size_t k = 0;
        while (k < ndev && devs[k] != sb.st_dev)
            k++;
        if (k == ndev) {
            devs[ndev++] = sb.st_dev;
            first[i] = 1;
        }
    }
    const uint64_t part = ndev ? me->spill / ndev : 0;
    for (size_t i = 0; i < n && part && first; i++)
        if (first[i])
            uses[1 + i].need = part + SPILL_MARGIN(part);
    free(first);
    free(devs);
    free(temps);
}

/* Rank 0: add the uses up per file system. */
static enum dsort_status sum_fs(struct dsort_job_space *sp)
{
    sp->fs = calloc(sp->nuses + 1, sizeof *sp->fs);
    if (!sp->fs)
        return DSORT_ENOMEM;
    for (size_t i = 0; i < sp->nuses; i++) {
        const struct dsort_job_space_use *u = &sp->uses[i];
        if (!u->kind)
            continue;
        size_t f = 0;
        while (f < sp->nfs && strcmp(sp->fs[f].first.key, u->key))
            f++;
        struct dsort_job_space_fs *fs = &sp->fs[f];
        if (f == sp->nfs) {
            sp->nfs++;
            fs->first = *u;
            fs->lo_rank = fs->hi_rank = u->rank;
        }
        if (u->need && (!fs->nranks || fs->hi_rank != u->rank)) { /* uses: in rank order */
            if (!fs->nranks)
                fs->lo_rank = u->rank;
            fs->nranks++;
            fs->hi_rank = u->rank;
        }
        fs->need += u->need;
        fs->output |= u->kind == 1;
        fs->temps += u->kind == 2;
        if (fs->first.avail > u->avail) /* take the least any rank saw */
            fs->first.avail = u->avail;
    }
    return DSORT_OK;
}

enum dsort_status dsort_job_space_create(const struct dsort_comm *c,
                                         const struct dsort_job_options *o,
                                         const struct dsort_budget *b,
                                         const struct dsort_inputs *in,
                                         const struct dsort_share *sh, struct dsort_job_space *sp,
                                         struct dsort_error *err)
{
    memset(sp, 0, sizeof *sp);
    const char *skip = c->rank == 0 ? getenv("DSORT_NO_SPACE_CHECK") : NULL;
    sp->skip = dsort_agree_code(c, skip && *skip && strcmp(skip, "0"));
    /* The job as the pipelines will run it: with typed keys the copying ones hold widened
     * records (job_typed.h); the output has the user's records. */
    struct dsort_job_options wide = *o;
    dsort_job_typed_enter(&wide);
    decide(c, &wide, b, in, sh, sp);
    const uint64_t rs = o->lines ? 1 : in->rec_size;
    const uint64_t eols = o->lines ? in->count : 0; /* a last line without its eol gets one */
    sp->output = dsort_comm_sum(c, sh->n * rs) + eols;
    sp->output_kind = o->output         ? "file"
                      : !o->output_dir  ? "none"
                      : o->local_output ? "node-local dir"
                                        : "dir";
    struct dsort_job_space_rank me = {.rank = c->rank, .budget = b->bytes, .share = sh->n * rs};
    snprintf(me.host, sizeof me.host, "%s", c->host);
    snprintf(me.why, sizeof me.why, "%s", b->why);
    me.spill = sp->external && !o->resume ? sh->n * (o->lines ? 1 : wide.fmt.rec_size) : 0;
    me.out = me.share + (c->rank == 0 ? eols : 0);

    const size_t nuse = 1 + o->ntemp;
    const size_t bytes = sizeof me + nuse * sizeof(struct dsort_job_space_use);
    unsigned char *mine = calloc(1, bytes);
    if (mine) {
        memcpy(mine, &me, sizeof me);
        describe(c, o, &me, sp->output, (struct dsort_job_space_use *)(mine + sizeof me));
    }
    void *all = NULL;
    enum dsort_status st = dsort_agree_gather(c, mine, bytes, &all, err);
    if (!mine)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for the space estimate");
    free(mine);
    if (c->rank == 0 && all) {
        sp->nranks = (size_t)c->size;
        sp->nuses = (size_t)c->size * nuse;
        sp->ranks = calloc(sp->nranks, sizeof *sp->ranks);
        sp->uses = calloc(sp->nuses, sizeof *sp->uses);
        for (size_t r = 0; sp->ranks && sp->uses && r < sp->nranks; r++) {
            const unsigned char *p = (const unsigned char *)all + r * bytes;
            memcpy(&sp->ranks[r], p, sizeof me);
            memcpy(&sp->uses[r * nuse], p + sizeof me, nuse * sizeof *sp->uses);
        }
        if (!sp->ranks || !sp->uses || sum_fs(sp))
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory for the space estimate");
    }
    free(all);
    if ((st = dsort_comm_agree(c, st, err)))
        dsort_job_space_destroy(sp);
    return st;
}

void dsort_job_space_destroy(struct dsort_job_space *sp)
{
    free(sp->ranks);
    free(sp->uses);
    free(sp->fs);
    sp->ranks = NULL;
    sp->uses = NULL;
    sp->fs = NULL;
    sp->nranks = sp->nuses = sp->nfs = 0;
}

/* The first path on fs used as kind (1: the output, 2: a -T dir), or NULL. */
static const char *first_path(const struct dsort_job_space *sp, const struct dsort_job_space_fs *fs,
                              int kind)
{
    for (size_t i = 0; i < sp->nuses; i++)
        if (sp->uses[i].kind == kind && !strcmp(sp->uses[i].key, fs->first.key))
            return sp->uses[i].path;
    return NULL;
}

/* What a file system is used for, for messages: "the output's directory '/o'", "the temp dir
 * '/t'", or both. */
static void fs_role(const struct dsort_job_space *sp, const struct dsort_job_space_fs *fs,
                    char *buf, size_t len)
{
    const char *out = first_path(sp, fs, 1), *temp = first_path(sp, fs, 2);
    int others = 0, n = 0;
    for (size_t i = 0; temp && i < sp->nuses && !others; i++)
        others = sp->uses[i].kind == 2 && !strcmp(sp->uses[i].key, fs->first.key) &&
                 strcmp(sp->uses[i].path, temp);
    if (out)
        n = snprintf(buf, len, "the output's directory '%s'%s", out, temp ? " and " : "");
    if (temp && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "the temp dir '%s'%s", temp,
                 others ? " (and others)" : "");
}

/* Rank 0: the first file system that does not hold its need, as a message for the first rank
 * that writes to it (*who); 0 if every one does. */
static int verdict(const struct dsort_job_space *sp, int32_t *who, char *msg, size_t len)
{
    for (size_t f = 0; f < sp->nfs; f++) {
        const struct dsort_job_space_fs *fs = &sp->fs[f];
        char role[600], ranks[64] = "";
        fs_role(sp, fs, role, sizeof role);
        *who = fs->nranks ? fs->lo_rank : fs->first.rank;
        /* A directory that cannot be written is left to the step that writes it (the
         * output's open, the temp dirs' creation): they say why in their own words. */
        if (fs->first.errnum)
            continue;
        if (fs->need <= fs->first.avail)
            continue;
        if (fs->nranks > 1)
            snprintf(ranks, sizeof ranks, ", %d ranks (%d-%d) together", (int)fs->nranks,
                     (int)fs->lo_rank, (int)fs->hi_rank);
        snprintf(msg, len,
                 "not enough space for %s: file system %s (%s on %s) has %" PRIu64
                 " bytes free, the job needs %" PRIu64
                 " bytes there (%s%s%s%s); DSORT_NO_SPACE_CHECK=1 "
                 "skips this check",
                 role, fs->first.mount, fs->first.fstype, fs->first.host, fs->first.avail, fs->need,
                 fs->output ? "the output" : "", fs->output && fs->temps ? " and " : "",
                 fs->temps ? "the spilled runs" : "", ranks);
        return 1;
    }
    return 0;
}

int dsort_job_space_check(const struct dsort_comm *c, const struct dsort_job_space *sp)
{
    struct {
        int32_t who;
        char msg[DSORT_ERROR_MSG_MAX - 40];
    } v;
    memset(&v, 0, sizeof v);
    v.who = -1;
    if (c->rank == 0 && !sp->skip && !verdict(sp, &v.who, v.msg, sizeof v.msg))
        v.who = -1;
    dsort_agree_bcast(c, &v, sizeof v, "the space check (MPI_Bcast)");
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    if (v.who == c->rank)
        st = DSORT_ERR(&err, DSORT_EIO, 0, "%s", v.msg);
    return dsort_comm_agree(c, st, &err) ? 2 : 0;
}

/* ---- --plan ------------------------------------------------------------------------------ */

static const char *sort_word(const struct dsort_job_space *sp)
{
    return sp->external ? "out_of_core" : "in_memory";
}

static const char *input_word(const struct dsort_job_space *sp)
{
    return sp->external ? "read" : sp->mapped ? "mapped" : "copied";
}

static const char *fs_state(const struct dsort_job_space_fs *fs)
{
    return fs->first.errnum ? "cannot write" : fs->need > fs->first.avail ? "NOT ENOUGH" : "ok";
}

static void print_text(FILE *f, const struct dsort_job_space *sp)
{
    char b1[32], b2[32];
    fprintf(f, "job: %s, input %s; budget %s per rank (the smallest of all ranks')\n",
            sp->external ? "out of core" : "in memory",
            sp->external ? "read in rounds"
            : sp->mapped ? "mapped"
                         : "copied into memory",
            dsort_mem_format(sp->budget, b1, sizeof b1));
    fprintf(f, "output: %s, %" PRIu64 " bytes\n", sp->output_kind, sp->output);
    for (size_t r = 0; r < sp->nranks; r++) {
        const struct dsort_job_space_rank *rk = &sp->ranks[r];
        fprintf(
            f, "  rank %d (%s): budget %s (%s), share %" PRIu64 " bytes, spill %" PRIu64 " bytes\n",
            (int)rk->rank, rk->host, dsort_mem_format(rk->budget, b1, sizeof b1), rk->why,
            rk->share, rk->spill);
    }
    for (size_t i = 0; i < sp->nfs; i++) {
        const struct dsort_job_space_fs *fs = &sp->fs[i];
        char role[600];
        fs_role(sp, fs, role, sizeof role);
        fprintf(f, "space: %s (%s on %s) for %s: needs %s, %s free: %s%s%s\n", fs->first.mount,
                fs->first.fstype, fs->first.host, role, dsort_mem_format(fs->need, b1, sizeof b1),
                dsort_mem_format(fs->first.avail, b2, sizeof b2), fs_state(fs),
                fs->first.errnum ? ": " : "", fs->first.errnum ? strerror(fs->first.errnum) : "");
    }
    if (sp->skip)
        fprintf(f, "space check: off (DSORT_NO_SPACE_CHECK)\n");
}

static void json_fs(FILE *f, const struct dsort_job_space *sp, const struct dsort_job_space_fs *fs)
{
    fputs("    {\"file_system\": ", f);
    dsort_jsonstr_write(f, fs->first.mount);
    fputs(", \"type\": ", f);
    dsort_jsonstr_write(f, fs->first.fstype);
    fputs(", \"host\": ", f);
    dsort_jsonstr_write(f, fs->first.host);
    fputs(", \"key\": ", f);
    dsort_jsonstr_write(f, fs->first.key);
    fputs(", \"paths\": [", f);
    int n = 0;
    for (size_t i = 0; i < sp->nuses; i++) { /* each path once, in order of first use */
        const struct dsort_job_space_use *u = &sp->uses[i];
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = sp->uses[j].kind && !strcmp(sp->uses[j].key, u->key) &&
                   !strcmp(sp->uses[j].path, u->path);
        if (!u->kind || seen || strcmp(u->key, fs->first.key))
            continue;
        fputs(n++ ? ", " : "", f);
        dsort_jsonstr_write(f, u->path);
    }
    fprintf(f,
            "], \"output\": %s, \"temp_dirs\": %d, \"ranks\": %d, \"need\": %" PRIu64
            ", \"free\": %" PRIu64 ", \"ok\": %s, \"error\": ",
            fs->output ? "true" : "false", (int)fs->temps, (int)fs->nranks, fs->need,
            fs->first.avail, !fs->first.errnum && fs->need <= fs->first.avail ? "true" : "false");
    if (fs->first.errnum)
        dsort_jsonstr_write(f, strerror(fs->first.errnum));
    else
        fputs("null", f);
    fputs("}", f);
}

static void print_json(FILE *f, const struct dsort_job_space *sp)
{
    fprintf(f,
            " \"job\": {\"sort\": \"%s\", \"input\": \"%s\", \"spill\": %s, \"budget\": %" PRIu64
            ", \"output\": {\"kind\": \"%s\", \"bytes\": %" PRIu64 "}, \"space_check\": %s},\n",
            sort_word(sp), input_word(sp), sp->external ? "true" : "false", sp->budget,
            sp->output_kind, sp->output, sp->skip ? "false" : "true");
    fputs(" \"budgets\": [", f);
    for (size_t r = 0; r < sp->nranks; r++) {
        const struct dsort_job_space_rank *rk = &sp->ranks[r];
        fprintf(f, "%s    {\"rank\": %d, \"host\": ", r ? ",\n" : "\n", (int)rk->rank);
        dsort_jsonstr_write(f, rk->host);
        fprintf(f, ", \"budget\": %" PRIu64 ", \"budget_from\": ", rk->budget);
        dsort_jsonstr_write(f, rk->why);
        fprintf(f,
                ", \"share_bytes\": %" PRIu64 ", \"spill_bytes\": %" PRIu64
                ", \"output_bytes\": %" PRIu64 "}",
                rk->share, rk->spill, rk->out);
    }
    fputs("],\n \"space\": [", f);
    for (size_t i = 0; i < sp->nfs; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_fs(f, sp, &sp->fs[i]);
    }
    fputs("],\n", f);
}

void dsort_job_space_print(FILE *f, const struct dsort_job_space *sp, int json)
{
    if (json)
        print_json(f, sp);
    else
        print_text(f, sp);
}

int dsort_job_space_preflight(const struct dsort_comm *c, const struct dsort_job_options *o,
                              const struct dsort_budget *b, const struct dsort_inputs *in,
                              const struct dsort_share *sh)
{
    struct dsort_job_space sp;
    struct dsort_error err = {0};
    if (dsort_job_space_create(c, o, b, in, sh, &sp, &err))
        return 2;
    int code = dsort_job_space_check(c, &sp);
    dsort_job_space_destroy(&sp);
    return code;
}
