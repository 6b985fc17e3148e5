/* dsort_stats.c - dsort's report: the -v summary on standard error and the --stats file (see
 * dsort_stats.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agree.h"
#include "cleanup.h"
#include "cli.h"
#include "dsort_stats.h"
#include "io.h"
#include "jsonstr.h"
#include "mem.h"
#include "owner.h"
#include "statsjson.h"
#include "job_topo.h"

static void json_phases(FILE *f, const char *name, const double *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %.6f", p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

static void json_bytes(FILE *f, const char *name, const uint64_t *v)
{
    fprintf(f, "\"%s\": {", name);
    for (int p = 0; p < PH_COUNT; p++)
        fprintf(f, "%s\"%s\": %" PRIu64, p ? ", " : "", dsort_phase_names[p], v[p]);
    fprintf(f, "}");
}

/* "devices": the watched disks' block-layer counters per phase (the node's, seen from this
 * rank's phases: ranks of one node show the same disks). */
static void json_disks(FILE *f, const struct dsort_job_stats *s)
{
    fprintf(f, ", \"devices\": [");
    for (int i = 0; i < DSORT_JOB_DISKS && s->disk[i][0]; i++) {
        uint64_t rd[PH_COUNT], wr[PH_COUNT];
        double busy[PH_COUNT];
        for (int p = 0; p < PH_COUNT; p++) {
            rd[p] = s->disk_phase[p][i].read;
            wr[p] = s->disk_phase[p][i].written;
            busy[p] = (double)s->disk_phase[p][i].busy_ms / 1000.0;
        }
        fprintf(f, "%s{\"disk\": ", i ? ", " : "");
        dsort_jsonstr_write(f, s->disk[i]);
        fprintf(f, ", ");
        json_bytes(f, "read_bytes", rd);
        fprintf(f, ", ");
        json_bytes(f, "write_bytes", wr);
        fprintf(f, ", ");
        json_phases(f, "busy_seconds", busy);
        dsort_statsjson_disk_totals(f, s, i);
        fprintf(f, "}");
    }
    fprintf(f, "]");
}

/* -v, rank 0: for the first rank of every host, each watched disk that moved data: bytes read
 * and written, and per phase the rates over that rank's phase time and how busy it was. */
static void print_disks(const struct dsort_comm *c, const struct dsort_job_stats *all)
{
    for (int r = 0; r < c->size; r++) {
        int first = 1;
        for (int q = 0; q < r && first; q++)
            first = strcmp(all[q].host, all[r].host) != 0;
        const struct dsort_job_stats *s = &all[r];
        for (int i = 0; first && i < DSORT_JOB_DISKS && s->disk[i][0]; i++) {
            uint64_t rd = 0, wr = 0;
            for (int p = 0; p < PH_COUNT; p++) {
                rd += s->disk_phase[p][i].read;
                wr += s->disk_phase[p][i].written;
            }
            if (!rd && !wr)
                continue;
            char b1[32], b2[32];
            fprintf(stderr, "dsort: disk %s:%s: read %s, wrote %s", s->host, s->disk[i],
                    dsort_mem_format(rd, b1, sizeof b1), dsort_mem_format(wr, b2, sizeof b2));
            for (int p = 0; p < PH_COUNT; p++) {
                const struct dsort_job_disk_phase *d = &s->disk_phase[p][i];
                double busy = s->t[p] > 0 ? (double)d->busy_ms / 1000.0 / s->t[p] * 100.0 : 0;
                /* the phases that moved a MiB or kept the disk busy; a direction from 64 KiB */
                if (s->t[p] <= 0 || (d->read + d->written < ((uint64_t)1 << 20) && busy < 5))
                    continue;
                fprintf(stderr, " | %s", dsort_phase_names[p]);
                if (d->read >= 65536)
                    fprintf(stderr, " r %.1f MB/s", (double)d->read / s->t[p] / 1e6);
                if (d->written >= 65536)
                    fprintf(stderr, " w %.1f MB/s", (double)d->written / s->t[p] / 1e6);
                fprintf(stderr, " busy %.0f%%", busy > 100 ? 100 : busy);
            }
            fprintf(stderr, "\n");
        }
    }
}

/* Where --stats goes. A regular file (or a new name) is written to a hidden temp beside it
 * and renamed over it once complete, as -o is: a full disk leaves the old file whole, never a
 * file cut short. /dev/null is written through. A name of an inherited descriptor that is a regular
 * file (/dev/stdout redirected to a log, or a link to it) is refused: renamed over, the shell's
 * file would be replaced. */
struct stats_file {
    char target[PATH_MAX]; /* the name replaced: a symbolic link's file */
    char temp[PATH_MAX];   /* "" when written through */
};

/* Where the stats file's temp goes: the target (a symbolic link's file) in sf, its directory
 * and base name (PATH_MAX each). Returns 1 if the target exists (its status in *sb), 0 if not. */
static int stats_where(const char *path, struct stats_file *sf, struct stat *sb, char *dir,
                       char *base)
{
    int exists = !stat(path, sb);
    sf->temp[0] = '\0';
    if (exists && realpath(path, sf->target) == NULL)
        exists = 0;
    if (!exists)
        snprintf(sf->target, sizeof sf->target, "%s", path);
    char d[PATH_MAX], b[PATH_MAX];
    snprintf(d, sizeof d, "%s", sf->target);
    snprintf(b, sizeof b, "%s", sf->target);
    snprintf(dir, PATH_MAX, "%s", dirname(d));
    snprintf(base, PATH_MAX, "%s", basename(b));
    return exists;
}

/* Its temp is made beside it and removed at once (or, for /dev/null and the like, it is opened
 * for writing), so that a --stats the job could not write refuses the job in its first second
 * rather than after the whole sort (when the stats would be lost). */
enum dsort_status dsort_stats_probe(const char *path, struct dsort_error *err)
{
    struct stats_file sf;
    struct stat sb;
    char dir[PATH_MAX], base[PATH_MAX];
    int exists = stats_where(path, &sf, &sb, dir, base);
    if (exists && S_ISREG(sb.st_mode) && dsort_io_names_descriptor(path))
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "stats '%s' names an open file descriptor of the file '%s', which dsort "
                         "would replace by a new file (what it held before would be lost): give "
                         "--stats a file name",
                         path, sf.target);
    if (exists && !S_ISREG(sb.st_mode)) {
        int fd = open(sf.target, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return DSORT_ERR(err, DSORT_EIO, errno, "cannot write stats '%s'", path);
        close(fd);
        return DSORT_OK;
    }
    int fd = -1;
    struct dsort_error why = {0};
    if (dsort_owner_temp_file(sf.temp, sizeof sf.temp, dir, base, &fd, &why))
        return DSORT_ERR(err, DSORT_EIO, 0, "cannot write stats '%s': %s", path, why.msg);
    close(fd);
    unlink(sf.temp);
    return DSORT_OK;
}

/* Rank 0: open the stats file's temp; NULL (the error printed) if it cannot be made. */
static FILE *stats_open(const struct dsort_comm *c, const char *path, struct stats_file *sf)
{
    struct stat sb;
    char dir[PATH_MAX], base[PATH_MAX];
    int exists = stats_where(path, sf, &sb, dir, base);
    if (exists && !S_ISREG(sb.st_mode)) {
        FILE *f = fopen(sf->target, "w");
        if (!f)
            dsort_comm_print(c, "cannot write stats '%s': %s", path, strerror(errno));
        return f;
    }
    struct dsort_error err = {0};
    int fd = -1;
    if (dsort_owner_temp_file(sf->temp, sizeof sf->temp, dir, base, &fd, &err) ||
        dsort_cleanup_add(sf->temp, DSORT_CLEANUP_FILE, &err)) {
        if (fd >= 0) {
            close(fd);
            unlink(sf->temp);
        }
        dsort_comm_print(c, "cannot write stats '%s': %s", path, err.msg);
        return NULL;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, exists ? sb.st_mode & 07777 : 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        dsort_comm_print(c, "cannot write stats '%s': %s", path, strerror(errno));
        close(fd);
        unlink(sf->temp);
        dsort_cleanup_forget(sf->temp);
    }
    return f;
}

/* Rank 0: finish the stats file: flush, fsync and rename the temp over it. 0, or 2 with the
 * error printed (and the temp removed; an older file is kept as it was). */
static int stats_close(const struct dsort_comm *c, const char *path, struct stats_file *sf, FILE *f)
{
    int e = 0;
    if (fflush(f) || (sf->temp[0] && fsync(fileno(f))))
        e = errno;
    if (fclose(f) && !e)
        e = errno;
    if (!e && sf->temp[0] && rename(sf->temp, sf->target))
        e = errno;
    if (sf->temp[0]) {
        if (e)
            unlink(sf->temp);
        dsort_cleanup_forget(sf->temp);
    }
    struct dsort_error err = {0};
    if (!e && sf->temp[0] && dsort_io_fsync_parent(sf->target, &err))
        e = err.errnum ? err.errnum : EIO;
    if (!e)
        return 0;
    dsort_comm_print(c, "cannot write stats '%s': %s (the output is committed)", path, strerror(e));
    return 2;
}

/* Rank 0: write the stats file up to (not including) the plan and the closing brace. */
static FILE *write_stats(const struct dsort_comm *c, const struct dsort_job_options *o,
                         const struct dsort_job_stats *all, uint64_t recs, uint64_t bytes,
                         double total_time, double balance, struct stats_file *sf)
{
    FILE *f = stats_open(c, o->stats, sf);
    if (!f)
        return NULL;
    fprintf(f, "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"format\": ", DSORT_VERSION,
            c->size);
    dsort_jsonstr_write(f, o->fmt.name);
    fprintf(f, ",\n");
    fprintf(f,
            "  \"records\": %" PRIu64 ",\n  \"bytes\": %" PRIu64
            ",\n  \"seconds\": %.6f,\n  \"balance\": %.6f,\n  \"out_of_core\": %s,\n"
            "  \"mapped\": %s,\n  \"started_unix\": %.6f,\n  \"per_rank\": [\n",
            recs, bytes, total_time, balance, all[0].external ? "true" : "false",
            all[0].mapped ? "true" : "false", dsort_statsjson_start(all, c->size));
    double start = dsort_statsjson_start(all, c->size);
    for (int r = 0; r < c->size; r++) {
        const struct dsort_job_stats *s = &all[r];
        fprintf(f, "    {\"rank\": %d, \"host\": ", r);
        dsort_jsonstr_write(f, s->host);
        fprintf(f, ", ");
        json_phases(f, "phases", s->t);
        fprintf(f, ", ");
        json_bytes(f, "io_read_bytes", s->io_read);
        fprintf(f, ", ");
        json_bytes(f, "io_write_bytes", s->io_write);
        fprintf(f, ", ");
        json_bytes(f, "page_faults", s->faults);
        fprintf(f, ", ");
        json_phases(f, "cpu_user_seconds", s->cpu_user);
        fprintf(f, ", ");
        json_phases(f, "cpu_sys_seconds", s->cpu_sys);
        fprintf(f, ", \"cpu_user_seconds_all\": %.6f, \"cpu_sys_seconds_all\": %.6f",
                s->cpu_user_all, s->cpu_sys_all);
        json_disks(f, s);
        fprintf(f,
                ", \"records_in\": %" PRIu64 ", \"records_out\": %" PRIu64
                ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                ", \"bytes_sent\": %" PRIu64 ", \"bytes_received\": %" PRIu64
                ", \"memory_budget\": %" PRIu64 ", \"memory_budget_reason\": ",
                s->records_in, s->records_out, s->bytes_read, s->bytes_written, s->bytes_sent,
                s->bytes_received, s->budget);
        dsort_jsonstr_write(f, s->budget_why);
        fprintf(
            f,
            ", \"memory_needed\": %" PRIu64 ", \"runs\": %" PRIu64 ", \"merge_passes\": %" PRIu64
            ", \"spill_bytes\": %" PRIu64 ", \"extra_merge_bytes\": %" PRIu64 ", \"fan_in\": %d"
            ", \"extra_pass_reason\": ",
            s->needed, s->runs, s->merge_passes, s->spill_bytes, s->extra_merge_bytes, s->fan_in);
        dsort_jsonstr_write(f, s->merge_why);
        fprintf(f,
                ", \"splitter_rounds\": %d, \"exchange_rounds\": %d, \"exchanges\": %d"
                ", \"exchanges_by_node\": %d, \"rounds\": %" PRIu64 ", \"rss_peak_kb\": %" PRIu64
                ", \"rss_file_kb\": %" PRIu64,
                s->splitter_rounds, s->exchange_rounds, s->exchange_moves, s->exchange_node,
                s->rounds, s->rss_peak_kb, s->rss_file_kb);
        dsort_statsjson_times(f, s, start);
        fprintf(f, "}%s\n", r + 1 < c->size ? "," : "");
    }
    fprintf(f, "  ],\n  \"plan\": ");
    return f;
}

/* The job's totals over the ranks, as -v and --stats give them. */
struct totals {
    uint64_t recs, outs, maxout, rd, wr, bytes;
    double tmax[PH_COUNT], avg, balance;
    double cpu[PH_COUNT]; /* CPU seconds of all ranks per phase, and of their processes */
    double user, sys;
};

static void sum_up(const struct dsort_comm *c, const struct dsort_job_options *o,
                   const struct dsort_job_stats *all, struct totals *t)
{
    memset(t, 0, sizeof *t);
    for (int r = 0; r < c->size; r++) {
        t->recs += all[r].records_in;
        t->outs += all[r].records_out;
        t->maxout = all[r].records_out > t->maxout ? all[r].records_out : t->maxout;
        for (int p = 0; p < PH_COUNT; p++) {
            t->tmax[p] = all[r].t[p] > t->tmax[p] ? all[r].t[p] : t->tmax[p];
            t->rd += all[r].io_read[p];
            t->wr += all[r].io_write[p];
            t->cpu[p] += all[r].cpu_user[p] + all[r].cpu_sys[p];
        }
        t->user += all[r].cpu_user_all;
        t->sys += all[r].cpu_sys_all;
    }
    t->bytes = t->recs * o->fmt.rec_size;
    if (o->lines) { /* records are lines: count the bytes read */
        t->bytes = 0;
        for (int r = 0; r < c->size; r++)
            t->bytes += all[r].bytes_read;
    }
    t->avg = c->size ? (double)t->outs / c->size : 0;
    t->balance = t->avg > 0 ? t->maxout / t->avg : 1.0;
}

/* -v, rank 0: the summary (the roofline comes last, after the topology's note). */
static void print_summary(const struct dsort_comm *c, const struct dsort_job_options *o,
                          const struct dsort_job_stats *mine, const struct dsort_job_stats *all,
                          const struct totals *t, double total_time)
{
    char b1[32], b2[32];
    fprintf(stderr, "dsort: %d ranks, format %s, %s\n", c->size, o->fmt.name,
            mine->external ? "out of core"
            : mine->mapped ? "in memory, input mapped (records stay in the page cache)"
                           : "in memory");
    fprintf(stderr, "dsort: records %" PRIu64 ", bytes %" PRIu64 " (%s)\n", t->recs, t->bytes,
            dsort_mem_format(t->bytes, b1, sizeof b1));
    fprintf(stderr, "dsort: memory budget per rank %s (%s); in-memory sort needs %s\n",
            dsort_mem_format(mine->budget, b1, sizeof b1), mine->budget_why,
            dsort_mem_format(mine->needed, b2, sizeof b2));
    if (mine->external)
        fprintf(stderr,
                "dsort: rank 0 spilled %" PRIu64 " runs (%s), fan-in %d, %" PRIu64
                " extra merge passes\n",
                mine->runs, dsort_mem_format(mine->spill_bytes, b1, sizeof b1), mine->fan_in,
                mine->merge_passes);
    if (mine->merge_why[0])
        fprintf(stderr, "dsort: rank 0 took an extra merge pass: %s\n", mine->merge_why);
    fprintf(stderr, "dsort: phase seconds (slowest rank):");
    for (int p = 0; p < PH_COUNT; p++)
        if (t->tmax[p] > 0)
            fprintf(stderr, " %s %.3f", dsort_phase_names[p], t->tmax[p]);
    fprintf(stderr, "\ndsort: total %.3f s, %.1f MB/s; I/O %.2f x data read, %.2f x written\n",
            total_time, total_time > 0 ? (double)t->bytes / total_time / 1e6 : 0.0,
            t->bytes ? (double)t->rd / (double)t->bytes : 0.0,
            t->bytes ? (double)t->wr / (double)t->bytes : 0.0);
    /* CPU: with every rank's threads, how many cores the job kept busy in each phase */
    fprintf(stderr, "dsort: CPU seconds (all ranks, user + system):");
    for (int p = 0; p < PH_COUNT; p++)
        if (t->tmax[p] > 0)
            fprintf(stderr, " %s %.3f", dsort_phase_names[p], t->cpu[p]);
    fprintf(stderr, "; the ranks' processes in all %.3f (user %.3f, system %.3f)\n",
            t->user + t->sys, t->user, t->sys);
    fprintf(stderr, "dsort: balance max/avg %.4f (max %" PRIu64 " records, avg %.1f)\n", t->balance,
            t->maxout, t->avg);
    print_disks(c, all);
}

/* Rank 0: the --stats file, the plan's JSON text (NULL: null) and the roofline in it. */
static int stats_file(const struct dsort_comm *c, const struct dsort_job_options *o,
                      const struct dsort_job_stats *all, const struct totals *t, double total_time,
                      const char *plan, const struct dsort_roofline *rl,
                      const struct dsort_roofline_rates *rates)
{
    struct stats_file sf;
    FILE *f = write_stats(c, o, all, t->recs, t->bytes, total_time, t->balance, &sf);
    if (!f)
        return 2;
    fprintf(f, "%s", plan ? plan : "null");
    if (rl) {
        fprintf(f, ",\n  \"roofline\": ");
        dsort_statsjson_roofline_write(f, rl, rates);
    }
    fprintf(f, "\n}\n");
    return stats_close(c, o->stats, &sf, f);
}

/* Rank 0 prints and writes; every rank takes part (gathers). Rank 0's exit status. */
static int report_rank0(const struct dsort_comm *c, const struct dsort_job_options *o,
                        const struct dsort_job_stats *mine, double total_time)
{
    int want = o->stats || o->verbose; /* the plan (cores per node) and the roofline */
    if (o->verbose && dsort_job_topo_token_note(o->topo)) /* every rank that had one */
        dsort_comm_print(c, "topology: %s", dsort_job_topo_token_note(o->topo));
    void *got = NULL;
    dsort_agree_gather(c, mine, sizeof *mine, &got, NULL);
    struct dsort_job_stats *all = got;
    if (c->rank != 0 || !all) {
        if (want) /* the plan with its figures: collective */
            dsort_job_topo_write_stats(c, o->topo, NULL);
        if (c->rank == 0 && o->stats)
            dsort_comm_print(c, "cannot write stats '%s': out of memory", o->stats);
        return c->rank == 0 && o->stats ? 2 : 0;
    }
    struct totals t;
    sum_up(c, o, all, &t);
    char *plan = NULL;
    size_t plan_len = 0;
    FILE *pf = want ? open_memstream(&plan, &plan_len) : NULL;
    if (want)
        dsort_job_topo_write_stats(c, o->topo, pf);
    if (pf && fclose(pf)) {
        free(plan);
        plan = NULL;
    }
    struct dsort_roofline rl;
    struct dsort_roofline_rates rates;
    char warn[DSORT_ERROR_MSG_MAX + 64];
    int have_rl = want && !dsort_statsjson_roofline(all, c->size, total_time, plan, plan_len, &rl,
                                                    &rates, warn, sizeof warn);
    if (want && warn[0])
        dsort_comm_print(c, "%s", warn);
    if (o->verbose)
        print_summary(c, o, mine, all, &t, total_time);
    if (o->verbose && dsort_job_topo_note(o->topo))
        fprintf(stderr, "dsort: topology: %s\n", dsort_job_topo_note(o->topo));
    if (o->verbose && have_rl)
        dsort_roofline_print(stderr, "dsort: ", &rl);
    int code = 0;
    if (o->stats)
        code = stats_file(c, o, all, &t, total_time, plan, have_rl ? &rl : NULL, &rates);
    if (have_rl)
        dsort_roofline_free(&rl);
    free(plan);
    free(all);
    return code;
}

int dsort_stats_report(const struct dsort_comm *c, const struct dsort_job_options *o,
                       const struct dsort_job_stats *mine, double total_time)
{
    return dsort_agree_code(c, report_rank0(c, o, mine, total_time));
}
