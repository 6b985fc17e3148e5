/* --progress (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree.h"
#include "clock.h"

static struct {
    int on, rank0, tty;
    double interval, t0, last;
    uint64_t total; /* bytes of work of all ranks (input bytes x passes) */
    uint64_t passes;
    uint64_t done; /* the last figure of all ranks */
    double share;  /* all ranks' input bytes over rank 0's (for local estimates) */
    int last_pct;  /* the last percentage printed */
    char phase[24];
} P;

/* Is stderr a terminal? mpirun forwards the ranks' output through pipes, so rank 0's stderr
 * is a terminal when its own is, or when the launcher's that started it (its parent: mpirun
 * on the node where it runs) is. */
static int on_terminal(void)
{
    if (isatty(STDERR_FILENO))
        return 1;
    char link[64], target[64];
    snprintf(link, sizeof link, "/proc/%ld/fd/2", (long)getppid());
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strncmp(target, "/dev/pts/", 9) == 0 || strncmp(target, "/dev/tty", 8) == 0;
}

/* v with a decimal prefix (kB, MB, GB, TB: powers of 1000) and unit, e.g. "412.6 MB/s". */
static void decimal(char *buf, size_t n, double v, const char *unit)
{
    static const char *const pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000.0 && i < 5) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, n, i ? "%.2f %s%s" : "%.0f %s%s", v, pre[i], unit);
}

static void show(const char *phase, uint64_t done, int final)
{
    double now = dsort_clock_now();
    if (done > P.total)
        done = P.total;
    if (!final && done < P.done) /* a local estimate behind the last sum: keep the sum */
        return;
    P.done = done;
    snprintf(P.phase, sizeof P.phase, "%s", phase);
    int pct = P.total ? (int)(100.0 * (double)done / (double)P.total) : 100;
    if (final)
        pct = 100;
    else if (pct > 99)
        pct = 99; /* 100% is the commit's */
    /* a terminal is redrawn at most 4 times a second (or every interval, if shorter); a log
     * gets a line every interval, and only when the percentage moved */
    double every = P.tty && P.interval > 0.25 ? 0.25 : P.interval;
    if (!final && (now - P.last < every || (!P.tty && pct == P.last_pct)))
        return;
    P.last = now;
    P.last_pct = pct;
    /* Shown in the input's bytes (the work over its passes) and in decimal MB/s, the units of
     * -v's totals and of dsort-report, so that the three figures can be compared. */
    double el = now - P.t0, rate = el > 0 ? (double)done / el : 0;
    char d[32], t[32], r[32], eta[32] = "", stamp[32] = "";
    decimal(d, sizeof d, (double)done / (double)P.passes, "B");
    decimal(t, sizeof t, (double)P.total / (double)P.passes, "B");
    decimal(r, sizeof r, rate / (double)P.passes, "B/s");
    if (!final && rate > 0) {
        unsigned s = (unsigned)((double)(P.total - done) / rate + 0.5);
        snprintf(eta, sizeof eta, "  ETA %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
    } else if (final) {
        unsigned s = (unsigned)(el + 0.5);
        snprintf(eta, sizeof eta, "  in %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
    }
    /* Off a terminal (a Slurm log) each line carries the time of day, as mpifileutils' do. */
    if (!P.tty) {
        time_t w = time(NULL);
        struct tm tm;
        if (localtime_r(&w, &tm))
            strftime(stamp, sizeof stamp, "[%Y-%m-%dT%H:%M:%S] ", &tm);
    }
    fprintf(stderr, "%sdsort: %s%3d%% %-12s %s of %s  %s%s%s", P.tty ? "\r" : "", stamp, pct,
            final ? "done" : phase, d, t, r, eta, P.tty ? (final ? "\033[K\n" : "\033[K") : "\n");
    fflush(stderr);
}

void dsort_progress_start(const struct dsort_comm *c, double interval, uint64_t mine, int passes)
{
    memset(&P, 0, sizeof P);
    if (interval < 0)
        return;
    P.on = 1;
    P.rank0 = c->rank == 0;
    P.tty = P.rank0 && on_terminal();
    P.interval = interval;
    P.t0 = P.last = dsort_clock_now();
    uint64_t all = dsort_comm_sum(c, mine);
    P.passes = passes > 0 ? (uint64_t)passes : 1;
    P.total = all * P.passes;
    P.share = mine ? (double)all / (double)mine : (double)c->size;
    P.last_pct = -1;
}

void dsort_progress_step(const struct dsort_comm *c, const char *phase, uint64_t done)
{
    if (!P.on)
        return;
    uint64_t all = 0;
    dsort_agree_reduce(c, c->comm, &done, &all, 1, MPI_UINT64_T, MPI_SUM, 0,
                       "summing the progress on rank 0 (MPI_Reduce)");
    if (P.rank0)
        show(phase, all, 0);
}

void dsort_progress_local(const char *phase, uint64_t done)
{
    if (!P.on || !P.rank0)
        return;
    show(phase, (uint64_t)((double)done * P.share), 0);
}

void dsort_progress_finish(int ok)
{
    if (!P.on || !P.rank0)
        return;
    P.on = 0;
    if (ok)
        show(P.phase, P.total, 1);
    else if (P.tty) /* end the line before what comes after */
        fputc('\n', stderr);
}
