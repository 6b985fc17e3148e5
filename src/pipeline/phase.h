/* phase.h - the phase clock and the per-rank figures it fills (struct dsort_job_stats), for
 * -v and --stats. A pipeline brackets each stretch of work with dsort_job_phase_begin and
 * dsort_job_phase_end; begin also names the phase for the signal handler's message (and for
 * the fault shim's phase hook, tests/faults/shim.c). Local; the watched disks are
 * process-wide. The figures are plain data: rank 0 gathers them as a flat struct.
 */
#ifndef DSORT_PHASE_H
#define DSORT_PHASE_H

#include <stddef.h>
#include <stdint.h>

/* The phases mean the same on every path (dsort(1), PHASES; docs/design.md): */
enum dsort_phase {
    PH_SAMPLE,      /* reading the sample for the splitters (out of core; text lines) */
    PH_READ,        /* input bytes into memory (a round's chunk out of core) */
    PH_SORT,        /* sorting in memory (a run, or the share) */
    PH_SPLIT,       /* "splitters": choosing the cuts, on the sorted data */
    PH_EXCHANGE,    /* moving data between the ranks */
    PH_MERGE,       /* a merge whose result is not the output: received pieces into memory, the
                       extra passes over spilled runs, -u's counting or deduplicating pass */
    PH_SPILL,       /* writing a sorted run to a -T dir */
    PH_FINAL_MERGE, /* no longer timed (0 s): the final merge streams into the output, so it
                       is the write phase; the key stays in --stats for old readers */
    PH_WRITE,       /* the output's bytes written, from its first byte to its last, with the final
                       merge that produces them where the two are one loop (mapped, out of core) */
    PH_COMMIT,      /* fsync, rename and the manifest: making the output visible */
    PH_COUNT
};
extern const char *const dsort_phase_names[PH_COUNT];

/* Block devices watched per phase (dsort_job_watch_disks): at most this many disks. */
#define DSORT_JOB_DISKS 6
#define DSORT_JOB_DISK_NAME 32
/* One disk in one phase: the block layer's counters (/sys/class/block/DISK/stat), so the
 * node's other I/O on the disk is included; page-cache hits are not device I/O. */
struct dsort_job_disk_phase {
    uint64_t read, written; /* bytes (sectors x 512) */
    uint64_t busy_ms;       /* io_ticks: milliseconds the disk had I/O in flight */
};

/* The phases as they happened on one rank (the report's timeline): seconds since the rank's
 * start; phase is an enum dsort_phase, or -1 for the last span once the list is full (it then
 * covers every later phase, not told apart). */
#define DSORT_JOB_SPANS 64
struct dsort_job_span {
    double start, end;
    int phase;
};

/* Per-rank figures, gathered to rank 0 as a flat struct. */
struct dsort_job_stats {
    double t[PH_COUNT];
    uint64_t io_read[PH_COUNT], io_write[PH_COUNT]; /* /proc/self/io rchar, wchar per phase */
    uint64_t faults[PH_COUNT]; /* page faults per phase (getrusage: minor + major, all threads):
                                  the cost of touching fresh memory on these machines */
    /* CPU seconds per phase, user and system, of all the process's threads (getrusage): the
     * helper threads' time falls in the phase the main thread is in */
    double cpu_user[PH_COUNT], cpu_sys[PH_COUNT];
    /* and the process's from its start to dsort_job_stats_stop, in phases or not (MPI's start,
     * the agreements between phases) */
    double cpu_user_all, cpu_sys_all;
    uint64_t records_in, records_out, bytes_read, bytes_written, bytes_sent, bytes_received;
    uint64_t budget, needed;
    uint64_t runs, merge_passes, spill_bytes, extra_merge_bytes;
    uint64_t rounds; /* out of core: the rounds done (a resumed job's earlier ones too) */
    int external, splitter_rounds, exchange_rounds, fan_in;
    int mapped; /* in memory, the input read through a mapping (job_map.c) */
    /* peak resident set (VmHWM) and, of what is resident before the commit, the part that is
     * mapped files (RssFile: a mapped input is the page cache, shared by the node's ranks) */
    uint64_t rss_peak_kb, rss_file_kb;
    int exchange_node; /* exchanges that took the node path (of exchange_moves) */
    int exchange_moves;
    char budget_why[200];
    char merge_why[160]; /* why an extra merge pass was needed ("" if none) */
    char host[64];
    /* The watched disks (names, "" past the last) and their counters per phase. */
    char disk[DSORT_JOB_DISKS][DSORT_JOB_DISK_NAME];
    struct dsort_job_disk_phase disk_phase[PH_COUNT][DSORT_JOB_DISKS];
    /* Real times (dsort_job_stats_start, _stop): the rank's start on the monotonic clock and on
     * the real-time clock (so that rank 0 can put all ranks on one time line), and the seconds
     * from its start to the end of its sort. */
    double t0, t0_unix, t_end;
    struct dsort_job_span spans[DSORT_JOB_SPANS];
    int nspans;
    int spans_merged; /* stretches folded into the last span once the list was full */
    /* The watched disks over the whole job: from dsort_job_watch_disks to _stop, and how long
     * that was (so MB/s and busy % cover the waiting between phases too). */
    struct dsort_job_disk_phase disk_total[DSORT_JOB_DISKS];
    double disk_seconds;
};

/* Phase timing: begin snapshots the clock and the I/O counters (and names the phase for the
 * signal handler's message), end adds the deltas; the watched disks' counters too. */
struct dsort_phase_clock {
    double t, user, sys;
    uint64_t r, w, faults;
    struct dsort_job_disk_phase disk[DSORT_JOB_DISKS];
};
/* Local, process-wide: watch these disks (sysfs block names, e.g. "sda", "loop3", "md0"; at
 * most DSORT_JOB_DISKS, duplicates dropped) in every phase from now on. The job's topology
 * calls it with the disks under its inputs, temp dirs and output. */
void dsort_job_watch_disks(const char *const *names, size_t n);
void dsort_job_phase_begin(struct dsort_phase_clock *pc, enum dsort_phase ph);
void dsort_job_phase_end(struct dsort_job_stats *s, enum dsort_phase ph,
                         const struct dsort_phase_clock *pc);
/* Local: end phase from and begin phase to at one reading of the counters, so that what a
 * helper thread reads or writes meanwhile is counted in one of the two (between an end and a
 * begin it was counted in neither). */
void dsort_job_phase_next(struct dsort_job_stats *s, enum dsort_phase from,
                          struct dsort_phase_clock *pc, enum dsort_phase to);

/* Local: start the rank's clocks (t0, t0_unix). */
void dsort_job_stats_start(struct dsort_job_stats *s);
/* Local: the rank's sort has ended: t_end, the process's CPU seconds (cpu_user_all,
 * cpu_sys_all), and the watched disks' counters since they were first watched (disk_total,
 * disk_seconds). */
void dsort_job_stats_stop(struct dsort_job_stats *s);

/* Local: note the resident set in stats (rss_peak_kb, and the largest rss_file_kb seen). */
void dsort_job_note_rss(struct dsort_job_stats *stats);

#endif
