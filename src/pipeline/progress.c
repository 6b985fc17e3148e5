/* --progress (progress.h). */
#include "progress.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree.h"
#include "cleanup.h"
#include "clock.h"
#include "keysort.h"
#include "lines.h"

static struct {
    int on, rank0, tty;
    double interval, t0, last;
    uint64_t total; /* bytes of work of all ranks (input bytes x passes) */
    uint64_t passes;
    uint64_t done; /* the last figure of all ranks */
    double share;  /* all ranks' input bytes over rank 0's (for local estimates) */
    int last_pct;  /* the last percentage printed */
    char phase[24];
    /* The ETA's measured rates: the pass under way began at pass_t with pass_done0 done;
     * the passes before it took past_t seconds for past_b bytes. */
    uint64_t pass, pass_done0, past_b;
    double pass_t, past_t;
    /* Rank 0's own input bytes and its figure at its last step (for movement inside a pass). */
    uint64_t mine, mine_done;
} P;

/* Windows set by dsort_progress_window for the next read and the next sort. */
static struct {
    int set;
    uint64_t from, to;
    double io;
} Win[2];

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

/* Note that `done` was reached at `now`: a pass that ended meanwhile counts among the measured
 * ones, from the time the pass before ended. */
static void passes_note(uint64_t done, double now)
{
    uint64_t per = P.total / P.passes;
    uint64_t pass = per ? done / per : 0;
    if (pass <= P.pass)
        return;
    P.past_t += now - P.pass_t;
    P.past_b += pass * per - P.pass_done0;
    P.pass = pass;
    P.pass_t = now;
    P.pass_done0 = pass * per;
}

/* Seconds left, from measured rates (< 0: not known yet): the rest of the pass under way at
 * its own rate so far, the passes after it at the rate of those done (this pass's, before any
 * is done). Passes differ (a read from disk, a sort in memory, an exchange over the network),
 * so the rate since the start, as if every pass were alike, is not used. */
static double eta(uint64_t done, double now)
{
    uint64_t per = P.total / P.passes, end = (P.pass + 1) * per;
    if (end > P.total || P.pass + 1 >= P.passes)
        end = P.total;
    double dt = now - P.pass_t, cur = dt > 0 ? (double)(done - P.pass_done0) / dt : 0;
    double past = P.past_t > 0 ? (double)P.past_b / P.past_t : 0;
    if (cur <= 0)
        cur = past;
    if (past <= 0)
        past = cur;
    if (cur <= 0)
        return -1;
    return (double)(end > done ? end - done : 0) / cur + (double)(P.total - end) / past;
}

static void show_line(const char *phase, uint64_t done, int final)
{
    double now = dsort_clock_now();
    if (done > P.total)
        done = P.total;
    if (!final && done < P.done) /* a local estimate behind the last sum: keep the sum */
        return;
    P.done = done;
    passes_note(done, now);
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
    char d[32], t[32], r[32], eta_s[32] = "", stamp[32] = "";
    decimal(d, sizeof d, (double)done / (double)P.passes, "B");
    decimal(t, sizeof t, (double)P.total / (double)P.passes, "B");
    decimal(r, sizeof r, rate / (double)P.passes, "B/s");
    double left = final ? -1 : eta(done, now);
    if (left >= 0) {
        unsigned s = (unsigned)(left + 0.5);
        snprintf(eta_s, sizeof eta_s, "  ETA %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
    } else if (final) {
        unsigned s = (unsigned)(el + 0.5);
        snprintf(eta_s, sizeof eta_s, "  in %u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
    }
    /* Off a terminal (a Slurm log) each line carries the time of day, as mpifileutils' do. */
    if (!P.tty) {
        time_t w = time(NULL);
        struct tm tm;
        if (localtime_r(&w, &tm))
            strftime(stamp, sizeof stamp, "[%Y-%m-%dT%H:%M:%S] ", &tm);
    }
    fprintf(stderr, "%sdsort: %s%3d%% %-12s %s of %s  %s%s%s", P.tty ? "\r" : "", stamp, pct,
            final ? "done" : phase, d, t, r, eta_s, P.tty ? (final ? "\033[K\n" : "\033[K") : "\n");
    fflush(stderr);
}

/* The read's watcher and the thread that reads or sorts both move the line. */
static pthread_mutex_t show_lock = PTHREAD_MUTEX_INITIALIZER;

static void show(const char *phase, uint64_t done, int final)
{
    pthread_mutex_lock(&show_lock);
    show_line(phase, done, final);
    pthread_mutex_unlock(&show_lock);
}

void dsort_progress_start(const struct dsort_comm *c, double interval, uint64_t mine, int passes)
{
    memset(&P, 0, sizeof P);
    memset(Win, 0, sizeof Win);
    if (interval < 0)
        return;
    P.on = 1;
    P.rank0 = c->rank == 0;
    P.tty = P.rank0 && on_terminal();
    P.interval = interval;
    P.t0 = P.last = P.pass_t = dsort_clock_now();
    P.mine = mine;
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
    P.mine_done = done;
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

/* ---- movement inside a pass (in memory: the read, the sort) ---- */

static struct {
    int on;              /* a pass is being watched */
    uint64_t base, span; /* rank 0's figure when it began, and the phase's part of the work */
    double io;           /* the share of the read that the watcher measures */
    char phase[24];
    pthread_t thread; /* the read's watcher */
    int thread_on;
    volatile int stop; /* (set by the main thread, read by the watcher) */
    uint64_t rchar0, file0;
} W;

/* rank 0's figure frac of the way through the pass under way */
static void within(double frac)
{
    if (frac > 1)
        frac = 1;
    dsort_progress_local(W.phase, W.base + (uint64_t)(frac * (double)W.span));
}

static void sort_tick(void *arg, double frac)
{
    (void)arg;
    within(frac);
}

/* The bytes this process has read (rchar: read(2) and pread(2) of every thread) and the mapped
 * file pages it has resident (RssFile, in bytes: a mapped input faulted in). */
static void read_counters(uint64_t *rchar, uint64_t *file)
{
    *rchar = *file = 0;
    char line[256];
    unsigned long long v;
    FILE *f = fopen("/proc/self/io", "re");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "rchar: %llu", &v) == 1)
                *rchar = v;
        fclose(f);
    }
    if ((f = fopen("/proc/self/status", "re"))) {
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "RssFile: %llu", &v) == 1)
                *file = (uint64_t)v * 1024;
        fclose(f);
    }
}

/* The read's watcher: 5 times a second, the bytes read since the read began (W.io of the
 * read; the read's own word, dsort_progress_within, may be further: the line keeps that). */
static void *watch_read(void *arg)
{
    (void)arg;
    const struct timespec fifth = {0, 200000000};
    while (!W.stop) {
        nanosleep(&fifth, NULL);
        if (W.stop)
            break;
        uint64_t r, m;
        read_counters(&r, &m);
        uint64_t got = r - W.rchar0, mapped = m > W.file0 ? m - W.file0 : 0;
        double io = P.mine ? (double)(got > mapped ? got : mapped) / (double)P.mine : 0;
        within(W.io * (io > 1 ? 1 : io));
    }
    return NULL;
}

void dsort_progress_window(const char *phase, uint64_t from, uint64_t to, double io)
{
    if (!P.on || !P.rank0)
        return;
    int i = !strcmp(phase, "sort");
    if (!i && strcmp(phase, "read"))
        return;
    Win[i].set = 1;
    Win[i].from = from;
    Win[i].to = to > from ? to : from;
    Win[i].io = io;
}

void dsort_progress_within(double frac)
{
    if (W.on)
        within(frac < 0 ? 0 : frac);
}

void dsort_progress_phase_begin(const char *phase)
{
    if (!P.on || !P.rank0 || !P.mine)
        return;
    int read = !strcmp(phase, "read"), sort = !strcmp(phase, "sort");
    if (!read && !sort)
        return;
    /* a window the pipeline set; else, in memory (four passes), the read and the sort are each
     * a pass; elsewhere the line moves only at the steps */
    if (Win[sort].set) {
        W.base = Win[sort].from;
        W.span = Win[sort].to - Win[sort].from;
        W.io = Win[sort].io;
        Win[sort].set = 0;
    } else if (P.passes == 4) {
        W.base = P.mine_done;
        W.span = P.mine;
        W.io = 1;
    } else {
        return;
    }
    W.on = 1;
    snprintf(W.phase, sizeof W.phase, "%s", phase);
    if (sort) {
        dsort_keysort_set_progress(sort_tick, NULL);
        dsort_lines_set_progress(sort_tick, NULL);
        return;
    }
    read_counters(&W.rchar0, &W.file0);
    W.stop = 0;
    if (W.io <= 0)
        return; /* the read says itself how far it is */
    /* the watcher takes no signals (they stay with the threads that handle them) and has a
     * small stack, as every helper thread; without it (a tight ulimit -v or -u) the read's
     * progress moves only between phases */
    W.thread_on = dsort_cleanup_thread_create(&W.thread, watch_read, NULL, "dsort-progress") == 0;
}

void dsort_progress_phase_end(void)
{
    if (!W.on)
        return;
    W.on = 0;
    dsort_keysort_set_progress(NULL, NULL);
    dsort_lines_set_progress(NULL, NULL);
    if (W.thread_on) {
        W.stop = 1;
        pthread_join(W.thread, NULL);
        W.thread_on = 0;
    }
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
