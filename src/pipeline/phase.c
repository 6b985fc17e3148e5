#include "phase.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "blockdev.h"
#include "cleanup.h"
#include "clock.h"
#include "progress.h"

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

static double tv_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

/* The process's page faults and CPU seconds so far (zeros if getrusage fails). */
static void usage(struct dsort_phase_clock *pc)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru)) {
        pc->faults = 0;
        pc->user = pc->sys = 0;
        return;
    }
    pc->faults = (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
    pc->user = tv_seconds(ru.ru_utime);
    pc->sys = tv_seconds(ru.ru_stime);
}

static char watched[DSORT_JOB_DISKS][DSORT_JOB_DISK_NAME];
static size_t nwatched;
/* The watched disks' counters when they were first watched, and when (the job's disk totals). */
static struct dsort_job_disk_phase watch_start[DSORT_JOB_DISKS];
static double watch_t;

static void disk_counters(struct dsort_job_disk_phase *v);

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
    disk_counters(watch_start);
    watch_t = dsort_clock_now();
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

/* counters only grow; a smaller one (a disk re-created) counts nothing */
static uint64_t grown(uint64_t now, uint64_t then)
{
    return now >= then ? now - then : 0;
}

/* Add [start, end) of phase ph to s's spans: a stretch of the phase the last span holds that
 * starts within a millisecond of its end extends it; once the list is full, the last span
 * takes every later stretch (phase -1: several). */
static void add_span(struct dsort_job_stats *s, enum dsort_phase ph, double start, double end)
{
    struct dsort_job_span *last = s->nspans ? &s->spans[s->nspans - 1] : NULL;
    if (last && s->nspans == DSORT_JOB_SPANS) {
        if (last->phase != (int)ph) {
            last->phase = -1;
            s->spans_merged++;
        }
        last->end = end;
        return;
    }
    if (last && last->phase == (int)ph && start - last->end < 1e-3) {
        last->end = end;
        return;
    }
    s->spans[s->nspans++] = (struct dsort_job_span){start, end, (int)ph};
}

/* The clocks and counters now. */
static void sample(struct dsort_phase_clock *pc)
{
    proc_io(&pc->r, &pc->w);
    disk_counters(pc->disk);
    pc->t = dsort_clock_now();
    usage(pc);
}

/* Phase ph ran from pc to now. */
static void account(struct dsort_job_stats *s, enum dsort_phase ph,
                    const struct dsort_phase_clock *pc, const struct dsort_phase_clock *now)
{
    s->t[ph] += now->t - pc->t;
    add_span(s, ph, pc->t - s->t0, now->t - s->t0);
    s->io_read[ph] += now->r - pc->r;
    s->io_write[ph] += now->w - pc->w;
    s->faults[ph] += now->faults - pc->faults;
    s->cpu_user[ph] += now->user > pc->user ? now->user - pc->user : 0;
    s->cpu_sys[ph] += now->sys > pc->sys ? now->sys - pc->sys : 0;
    for (size_t i = 0; i < nwatched; i++) {
        snprintf(s->disk[i], sizeof s->disk[i], "%s", watched[i]);
        struct dsort_job_disk_phase *d = &s->disk_phase[ph][i];
        d->read += grown(now->disk[i].read, pc->disk[i].read);
        d->written += grown(now->disk[i].written, pc->disk[i].written);
        d->busy_ms += grown(now->disk[i].busy_ms, pc->disk[i].busy_ms);
    }
}

void dsort_job_phase_begin(struct dsort_phase_clock *pc, enum dsort_phase ph)
{
    dsort_cleanup_set_phase(dsort_phase_names[ph]);
    dsort_progress_phase_begin(dsort_phase_names[ph]);
    sample(pc);
}

void dsort_job_phase_end(struct dsort_job_stats *s, enum dsort_phase ph,
                         const struct dsort_phase_clock *pc)
{
    struct dsort_phase_clock now;
    dsort_progress_phase_end();
    sample(&now);
    account(s, ph, pc, &now);
}

void dsort_job_phase_next(struct dsort_job_stats *s, enum dsort_phase from,
                          struct dsort_phase_clock *pc, enum dsort_phase to)
{
    struct dsort_phase_clock now;
    dsort_progress_phase_end();
    sample(&now);
    account(s, from, pc, &now);
    dsort_job_phase_begin(pc, to); /* (the fault shim's phase hook is on begin) */
    *pc = now;
}

void dsort_job_stats_start(struct dsort_job_stats *s)
{
    struct timespec ts;
    s->t0 = dsort_clock_now();
    clock_gettime(CLOCK_REALTIME, &ts);
    s->t0_unix = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dsort_job_stats_stop(struct dsort_job_stats *s)
{
    struct dsort_job_disk_phase now[DSORT_JOB_DISKS];
    double t = dsort_clock_now();
    s->t_end = t - s->t0;
    struct dsort_phase_clock u;
    usage(&u);
    s->cpu_user_all = u.user;
    s->cpu_sys_all = u.sys;
    disk_counters(now);
    s->disk_seconds = nwatched ? t - watch_t : 0;
    for (size_t i = 0; i < nwatched; i++) {
        snprintf(s->disk[i], sizeof s->disk[i], "%s", watched[i]);
        s->disk_total[i].read = grown(now[i].read, watch_start[i].read);
        s->disk_total[i].written = grown(now[i].written, watch_start[i].written);
        s->disk_total[i].busy_ms = grown(now[i].busy_ms, watch_start[i].busy_ms);
    }
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
