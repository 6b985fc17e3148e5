#include "phase.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "blockdev.h"
#include "cleanup.h"
#include "clock.h"

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
