#include "job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>

#include "blockdev.h"
#include "budget.h"
#include "cleanup.h"
#include "clock.h"
#include "keysort.h"
#include "output.h"
#include "runfile.h"
#include "splitters.h"
#include "tempdir.h"

const char *const dsort_phase_names[PH_COUNT] = {"sample",   "read",  "sort",  "splitters",
                                                 "exchange", "merge", "spill", "final_merge",
                                                 "write",    "commit"};

static void proc_io(uint64_t *rchar, uint64_t *wchar)
{
    *rchar = *wchar = 0;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return;
    char name[64];
    unsigned long long v;
    while (fscanf(f, "%63s %llu", name, &v) == 2) {
        if (!strcmp(name, "rchar:"))
            *rchar = v;
        else if (!strcmp(name, "wchar:"))
            *wchar = v;
    }
    fclose(f);
}

static uint64_t page_faults(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru))
        return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

static char watched[DSORT_JOB_DISKS][DSORT_JOB_DISK_NAME];
static size_t nwatched;

void dsort_job_watch_disks(const char *const *names, size_t n)
{
    nwatched = 0;
    for (size_t i = 0; i < n && nwatched < DSORT_JOB_DISKS; i++) {
        int dup = !names[i][0] || strlen(names[i]) >= DSORT_JOB_DISK_NAME ||
                  strchr(names[i], '/') != NULL;
        for (size_t k = 0; k < nwatched && !dup; k++)
            dup = !strcmp(watched[k], names[i]);
        if (!dup)
            snprintf(watched[nwatched++], DSORT_JOB_DISK_NAME, "%s", names[i]);
    }
}

/* The watched disks' counters now (zeros for a disk whose stat file cannot be read). */
static void disk_counters(struct dsort_job_disk_phase *v)
{
    const char *root = dsort_blockdev_root(NULL);
    for (size_t i = 0; i < nwatched; i++) {
        char path[4096];
        unsigned long long f[11] = {0};
        memset(&v[i], 0, sizeof v[i]);
        snprintf(path, sizeof path, "%s/class/block/%s/stat", root, watched[i]);
        FILE *fp = fopen(path, "re");
        if (!fp)
            continue;
        /* reads, merged, sectors, ms; writes, merged, sectors, ms; in flight, io_ticks, ... */
        if (fscanf(fp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1],
                   &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10]) == 11) {
            v[i].read = (uint64_t)f[2] * 512;
            v[i].written = (uint64_t)f[6] * 512;
            v[i].busy_ms = (uint64_t)f[9];
        }
        fclose(fp);
    }
}

void dsort_job_phase_begin(struct dsort_phase_clock *pc, enum dsort_phase ph)
{
    dsort_cleanup_set_phase(dsort_phase_names[ph]);
    pc->t = dsort_clock_now();
    proc_io(&pc->r, &pc->w);
    pc->faults = page_faults();
    disk_counters(pc->disk);
}

void dsort_job_phase_end(struct dsort_job_stats *s, enum dsort_phase ph,
                         const struct dsort_phase_clock *pc)
{
    uint64_t r, w;
    struct dsort_job_disk_phase now[DSORT_JOB_DISKS];
    proc_io(&r, &w);
    disk_counters(now);
    s->t[ph] += dsort_clock_now() - pc->t;
    s->io_read[ph] += r - pc->r;
    s->io_write[ph] += w - pc->w;
    s->faults[ph] += page_faults() - pc->faults;
    for (size_t i = 0; i < nwatched; i++) {
        snprintf(s->disk[i], sizeof s->disk[i], "%s", watched[i]);
        struct dsort_job_disk_phase *d = &s->disk_phase[ph][i];
        /* counters only grow; a smaller one (a disk re-created) counts nothing */
        d->read += now[i].read >= pc->disk[i].read ? now[i].read - pc->disk[i].read : 0;
        d->written +=
            now[i].written >= pc->disk[i].written ? now[i].written - pc->disk[i].written : 0;
        d->busy_ms +=
            now[i].busy_ms >= pc->disk[i].busy_ms ? now[i].busy_ms - pc->disk[i].busy_ms : 0;
    }
}

void dsort_job_put_bytes(unsigned char *out, const unsigned char *in, size_t len, int flip)
{
    if (flip)
        for (size_t b = 0; b < len; b++)
            out[b] = (unsigned char)~in[b];
    else
        memcpy(out, in, len);
}

void dsort_job_put_be64(unsigned char *out, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        out[b] = (unsigned char)(v >> (56 - 8 * b));
}

uint64_t dsort_job_get_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 0; b < 8; b++)
        v = v << 8 | p[b];
    return v;
}

uint64_t dsort_job_mem_needed(const struct dsort_format *fmt, uint64_t n, int p)
{
    /* A and B hold the share; 16-byte sort entries; their scratch lives in B unless records
     * are shorter than entries; the exact splitters' state (O(p^2) composite keys, at most
     * key + whole record + 16 bytes each); 16 MiB for everything else. */
    const uint64_t rs = fmt->rec_size, ent = sizeof(struct dsort_sortent);
    return n * (2 * rs + ent + (rs < ent ? ent : 0)) +
           dsort_splitters_memory(p, fmt->rec_size + fmt->key_len + 16) + ((uint64_t)16 << 20);
}

enum dsort_status dsort_job_unique_boundary(const struct dsort_comm *c,
                                            const struct dsort_format *fmt,
                                            const unsigned char *first, const unsigned char *last,
                                            uint64_t n, int *drop_first, struct dsort_error *err)
{
    const size_t kl = fmt->key_len, slot = 1 + kl;
    unsigned char *mine = calloc(1, slot), *all = malloc(slot * (size_t)c->size);
    enum dsort_status st = DSORT_OK;
    *drop_first = 0;
    if (!mine || !all)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    if (n) {
        mine[0] = 1;
        memcpy(mine + 1, dsort_format_key(fmt, last), kl);
    }
    MPI_Allgather(mine, (int)slot, MPI_BYTE, all, (int)slot, MPI_BYTE, c->comm);
    for (int r = c->rank - 1; r >= 0 && n; r--) {
        const unsigned char *s = all + (size_t)r * slot;
        if (!s[0])
            continue;
        *drop_first = !memcmp(s + 1, dsort_format_key(fmt, first), kl);
        break;
    }
out:
    free(mine);
    free(all);
    return st;
}

struct dsort_sum128 dsort_job_sum_all(const struct dsort_comm *c, const struct dsort_sum128 *mine)
{
    uint64_t in[2] = {mine->lo, mine->hi}, *all = malloc(2 * sizeof(uint64_t) * (size_t)c->size);
    struct dsort_sum128 total = {0, 0};
    /* An Allgather rather than a reduction: the 128-bit carry needs the halves together. */
    MPI_Allgather(in, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, c->comm);
    for (int r = 0; all && r < c->size; r++) {
        struct dsort_sum128 x = {all[2 * r], all[2 * r + 1]};
        dsort_sum128_merge(&total, &x);
    }
    free(all);
    return total;
}

/* Collective: combine both sides' counts and sums over all ranks; if they differ (with
 * unique_ok, only more written than read counts), DSORT_EINTERNAL with both figures after
 * `what`. Agrees (rank 0 speaks for the verdict every rank computed). */
static enum dsort_status compare_sums(const struct dsort_comm *c, const char *what,
                                      const char *sum_name, int unique_ok,
                                      const struct dsort_sum128 *in_sum, uint64_t n_in,
                                      const struct dsort_sum128 *out_sum, uint64_t n_out,
                                      struct dsort_error *err)
{
    struct dsort_sum128 si = dsort_job_sum_all(c, in_sum), so = dsort_job_sum_all(c, out_sum);
    uint64_t nin = dsort_comm_sum(c, n_in), nout = dsort_comm_sum(c, n_out);
    enum dsort_status st = DSORT_OK;
    if (unique_ok ? nout > nin : (si.lo != so.lo || si.hi != so.hi || nin != nout)) {
        char h1[33], h2[33];
        dsort_sum128_hex(&si, h1);
        dsort_sum128_hex(&so, h2);
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "%s: read %" PRIu64 " records (%s %s), wrote %" PRIu64
                       " (%s); nothing committed",
                       what, nin, sum_name, h1, nout, h2);
    }
    return dsort_comm_agree(c, c->rank == 0 ? st : DSORT_OK, err);
}

enum dsort_status dsort_job_conserve(const struct dsort_comm *c, const struct dsort_job_options *o,
                                     const struct dsort_sum128 *in_sum, uint64_t n_in,
                                     const struct dsort_sum128 *out_sum, uint64_t n_out,
                                     struct dsort_error *err)
{
    return compare_sums(c, "conservation check failed", "CRC32C sum", o->ord.unique, in_sum, n_in,
                        out_sum, n_out, err);
}

enum dsort_status dsort_job_verify(const struct dsort_comm *c, const struct dsort_job_options *o,
                                   const struct dsort_sum128 *in_sum, uint64_t n_in,
                                   const struct dsort_sum128 *out_sum, uint64_t n_out,
                                   struct dsort_error *err)
{
    /* -u drops records by design: then there is nothing to compare. */
    if (o->ord.unique)
        return compare_sums(c, "verification failed", "checksum", 1, in_sum, 0, out_sum, 0, err);
    return compare_sums(c, "verification failed", "checksum", 0, in_sum, n_in, out_sum, n_out, err);
}

enum dsort_status dsort_job_share(const struct dsort_comm *c, const struct dsort_job_options *o,
                                  const struct dsort_inputs *in, struct dsort_share *sh,
                                  struct dsort_error *err)
{
    if (o->stdin_rank0) { /* rank 0 alone has the input (standard input's copy) */
        sh->first = sh->g0 = 0;
        sh->n = c->rank == 0 ? in->total_records : 0;
        return DSORT_OK;
    }
    if (!o->local_inputs) {
        dsort_io_split(in->total_records, c->rank, c->size, &sh->first, &sh->n);
        sh->g0 = sh->first;
        return DSORT_OK;
    }
    dsort_io_split(in->total_records, c->node_rank, c->node_size, &sh->first, &sh->n);
    /* The records of the nodes before ours come first: (node index, records) from every
     * node's first rank. */
    uint64_t mine[2] = {(uint64_t)c->node_index, c->node_rank == 0 ? in->total_records : 0};
    uint64_t *all = malloc(2 * sizeof(uint64_t) * (size_t)c->size);
    sh->g0 = sh->first;
    enum dsort_status st = dsort_comm_agree(
        c, all ? DSORT_OK : DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory"), err);
    if (st) {
        free(all);
        return st;
    }
    MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, c->comm);
    for (int r = 0; r < c->size; r++)
        if (all[2 * r] < (uint64_t)c->node_index)
            sh->g0 += all[2 * r + 1];
    free(all);
    return DSORT_OK;
}

/* Does temps[i] name the same directory as an earlier entry (the same path given twice, or a
 * link to it)? GNU sort takes "-T /tmp -T /tmp"; two per-job directories of one name cannot
 * both be made, so the later one is dropped. */
static int temp_seen(char **temps, size_t i)
{
    struct stat a, b;
    if (stat(temps[i], &a))
        return 0; /* creating it will say why it cannot be used */
    for (size_t j = 0; j < i; j++)
        if (!strcmp(temps[j], temps[i]) ||
            (!stat(temps[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino))
            return 1;
    return 0;
}

char **dsort_job_temp_order(const struct dsort_job_options *o, size_t *n)
{
    char **temps = calloc(o->ntemp + 1, sizeof *temps);
    *n = 0;
    if (!temps)
        return NULL;
    /* spill to a device this rank does not read, where the node has one */
    dsort_job_topo_temp_dirs(o->topo, o, temps, n);
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++)
        if (!temp_seen(temps, i))
            temps[kept++] = temps[i];
    /* (temp_seen looks at temps[0..i): each is a kept entry or the same directory as one) */
    *n = kept;
    return temps;
}

enum dsort_status dsort_job_tempdirs(const struct dsort_job_options *o, const char *job, int rank,
                                     struct dsort_tempdirs *td, struct dsort_error *err)
{
    size_t ntemps = 0;
    char **temps = dsort_job_temp_order(o, &ntemps);
    if (!temps)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_tempdirs_create(td, temps, ntemps, job, rank, err);
    if (!st)
        dsort_job_regroup_temps(o, temps, ntemps, td);
    free(temps);
    return st;
}

void dsort_job_regroup_temps(const struct dsort_job_options *o, char *const *temps, size_t n,
                             struct dsort_tempdirs *td)
{
    uint64_t *devs = calloc(n ? n : 1, sizeof *devs);
    if (devs && dsort_job_topo_temp_devices(o->topo, temps, n, devs))
        dsort_tempdirs_regroup(td, devs);
    free(devs); /* (no memory: the st_dev grouping stays, which is correct, only coarser) */
}

size_t dsort_job_temp_disks(const struct dsort_job_options *o)
{
    size_t n = 0, ndev = 1;
    char **temps = dsort_job_temp_order(o, &n);
    uint64_t *devs = calloc(n ? n : 1, sizeof *devs);
    size_t *of = calloc(n ? n : 1, sizeof *of);
    if (temps && devs && of)
        ndev = dsort_job_topo_temp_devices(o->topo, temps, n, devs)
                   ? dsort_tempdirs_group(devs, n, of)
                   : dsort_tempdirs_count_devices(temps, n);
    free(temps);
    free(devs);
    free(of);
    return ndev < 1 ? 1 : ndev > DSORT_RUN_MAX_STRIPES ? DSORT_RUN_MAX_STRIPES : ndev;
}

enum dsort_status dsort_job_output_open(const struct dsort_comm *c,
                                        const struct dsort_job_options *o, uint64_t share,
                                        struct dsort_output *out, struct dsort_error *err)
{
    return dsort_output_open(c, out,
                             o->output         ? DSORT_OUTPUT_FILE
                             : o->local_output ? DSORT_OUTPUT_LOCAL_DIR
                                               : DSORT_OUTPUT_DIR,
                             o->output ? o->output : o->output_dir, share, !o->no_direct, err);
}

void dsort_job_name(const struct dsort_comm *c, char *job, size_t len)
{
    if (c->rank == 0)
        dsort_tempdirs_job_name(job, len);
    dsort_comm_require(c, MPI_Bcast(job, (int)len, MPI_CHAR, 0, c->comm),
                       "sharing the job's name (MPI_Bcast)");
}

enum dsort_status dsort_job_alloc_error(struct dsort_error *err, int errnum, const char *what,
                                        uint64_t bytes)
{
    char lim[200];
    dsort_budget_limits_text(lim, sizeof lim);
    if (!lim[0])
        return DSORT_ERR(err, DSORT_ENOMEM, errnum, "cannot allocate %" PRIu64 " bytes of %s",
                         bytes, what);
    /* The budget was sized to fit the limit when it was resolved; something else took the
     * room since (the MPI library, threads). */
    return DSORT_ERR(err, DSORT_ENOMEM, 0,
                     "cannot allocate %" PRIu64 " bytes of %s: %s; give a smaller -S, or none "
                     "(the default fits the limit)",
                     bytes, what, lim);
}

void dsort_job_sum_records(int valsort, const unsigned char *recs, uint64_t n, size_t rec_size,
                           struct dsort_sum128 *sum, struct dsort_sum128 *con)
{
    if (valsort)
        dsort_checksum_records(sum, recs, n, rec_size);
    dsort_checksum_records_c(con, recs, n, rec_size);
}

void dsort_job_run_key(const struct dsort_cmp *c, const unsigned char *rec, uint64_t g0, uint64_t i,
                       unsigned char *out)
{
    dsort_job_put_bytes(out, rec + c->key_off, c->key_len, c->reverse);
    out += c->key_len;
    dsort_job_put_bytes(out, rec + c->tie_off, c->tie_len, c->tie_reverse);
    out += c->tie_len;
    dsort_job_put_be64(out, g0);
    dsort_job_put_be64(out + 8, i);
}

enum dsort_status dsort_job_blame_input(const struct dsort_inputs *in, enum dsort_status st,
                                        struct dsort_error *err)
{
    struct dsort_error changed = {0};
    /* (DSORT_EIO, an input that cannot be examined, proves nothing: the first finding stays) */
    if (st != DSORT_EINTERNAL || dsort_inputs_check_unchanged(in, &changed) != DSORT_EFORMAT)
        return st;
    *err = changed;
    return changed.status;
}

void dsort_job_note_rss(struct dsort_job_stats *stats)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    char line[256];
    unsigned long long v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmHWM: %llu", &v) == 1)
            stats->rss_peak_kb = v;
        else if (sscanf(line, "RssFile: %llu", &v) == 1 && v > stats->rss_file_kb)
            stats->rss_file_kb = v;
    }
    fclose(f);
}

int dsort_job_finish(const struct dsort_comm *c, const struct dsort_job_options *o,
                     const struct dsort_inputs *in, struct dsort_output *out,
                     const struct dsort_job_sums *s, struct dsort_job_stats *stats,
                     struct dsort_error *err)
{
    dsort_job_note_rss(stats);
    enum dsort_status st = dsort_comm_agree(c, dsort_inputs_check_unchanged(in, err), err);
    if (!st)
        st = dsort_job_conserve(c, o, &s->con_in, s->n_in, &s->con_out, s->n_out, err);
    if (!st && o->verify)
        st = dsort_job_verify(c, o, &s->sum_in, s->n_in, &s->sum_out, s->n_out, err);
    if (st) {
        dsort_output_abandon(out);
        return 2;
    }
    struct dsort_part_info info = {s->n_out, s->bytes_out, s->sum_out, ""};
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, PH_COMMIT);
    st = dsort_output_commit(c, out, &info, err);
    if (!st) /* the output is published: a signal now must not claim otherwise */
        dsort_cleanup_set_prefix(NULL);
    dsort_job_phase_end(stats, PH_COMMIT, &pc);
    return st ? 2 : 0;
}
