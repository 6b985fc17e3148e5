/* memplan.h - the one memory plan of the out-of-core sort: from the budget (agreed over all
 * ranks) and the format's memory need to every buffer size both pipelines use.
 *
 * The format's part is in its table (recfmt.h: plan, rounds; fmt_fixed.c, fmt_lines.c).
 * Fixed records: A and B (a chunk each, A 1/16 more: it receives a round's pieces), with
 * read-ahead (asked for, and the share takes more than one round) C as large as A,
 * 16 bytes of sort entry a record of chunk (and a scratch as large for records shorter than an
 * entry), and the run writer's buffers; in the merge phase A and B hold the run readers. The
 * I/O block starts at --block-size, at most a 16th of the budget, and halves (down to 4 KiB)
 * while the chunk would not hold two blocks.
 * Text lines: thirds of the budget (at least 4 KiB each): the chunk (lines and their
 * 16-byte index entries), the framed send buffer, the receive buffer; the output's block is a
 * quarter of the budget (at most --block-size); the final merge's run readers get half of it;
 * the run writer an eighth (a 16th a block, or less with runs striped over temp disks).
 * Both: once the rounds are known (agreed), the run files' block shrinks so that the final
 * merge can read every run at once (2 reads + 2 writes), but not below 256 KiB.
 *
 * Pure functions: local, no MPI, nothing allocated. The caller agrees the inputs that must be
 * the same on every rank (budget, rounds, most_need, temp_disks for lines).
 */
#ifndef DSORT_MEMPLAN_H
#define DSORT_MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

/* The fewest records a chunk of fixed records holds. */
#define DSORT_MEMPLAN_MIN_CHUNK 16
/* Floor of a run file's block once fitted to the runs: below it the disks seek more than they
 * read (an extra merge pass is cheaper). */
#define DSORT_MEMPLAN_MIN_RUN_BLOCK ((uint64_t)256 << 10)

struct dsort_recfmt;

struct dsort_memplan_in {
    const struct dsort_recfmt *fmt; /* the format (recfmt.h): its memory need */
    uint64_t budget;                /* bytes, the same on every rank (the smallest of all ranks') */
    uint64_t block;                 /* --block-size: the largest I/O block */
    size_t temp_disks; /* temp devices a run is striped over (fixed: the rank's; lines: most) */
    /* fixed records */
    size_t rec;       /* bytes of a record in flight (with its 8-byte tag) */
    size_t rec_in;    /* bytes of a record in the input (scratch below an entry's 16) */
    uint64_t records; /* the rank's share, in records */
    /* text lines */
    uint64_t share_bytes; /* the rank's share, in bytes */
    double avg_line;      /* bytes a line (with its eol) in the samples of all ranks */
    /* both: the runs the final merge will read, to fit the run files' block to them */
    int fit_runs;    /* 0: the block before the rounds are known (or a resumed job's) */
    uint64_t rounds; /* the most rounds of any rank (agreed; dsort_memplan_rounds) */
    int readahead;   /* fixed: a reader thread may read the next chunk during a round */
};

struct dsort_memplan {
    int fits;           /* 0: the budget is too small to sort out of core (fixed records) */
    size_t block;       /* the run files' block */
    uint64_t merge_mem; /* bytes of the final merge's run readers (fixed: A and B) */
    /* fixed records */
    uint64_t chunk;                /* records a round */
    size_t abytes, bbytes, ebytes; /* A (receives a round), B, the sort entries */
    size_t cbytes; /* C, as large as A: the next chunk read ahead (0: no read-ahead) */
    int scratch;   /* a sort scratch of ebytes too (records < 16 bytes) */
    /* text lines */
    uint64_t third;   /* each of chunk, send and receive */
    uint64_t need;    /* the rank's share with its index entries (estimated), one arena */
    int share_fits;   /* the share fits a third: one round, no spill (if every rank's does) */
    size_t out_block; /* the output sink's block */
};

/* Fill *p from *in. Local, pure. */
void dsort_memplan_compute(const struct dsort_memplan_in *in, struct dsort_memplan *p);

/* The rounds this rank's share takes under plan p (agree the most over ranks, then set
 * in->rounds and in->fit_runs and compute again). Lines: 0 when the job sorts in memory
 * (in_memory), else the share's need in thirds. */
uint64_t dsort_memplan_rounds(const struct dsort_memplan_in *in, const struct dsort_memplan *p,
                              int in_memory);

/* Lines: the arena of the first round: the share's need (at least 64 KiB) when the job sorts
 * in memory, else a third; a multiple of 16 bytes. */
uint64_t dsort_memplan_arena(const struct dsort_memplan *p, int in_memory);

/* Fixed records: do A, B and C (abytes, bbytes, cbytes; C may be 0) hold the final merge's
 * two read buffers for runs written in blocks of `block`? (A resumed job's runs keep their
 * own block.) */
int dsort_memplan_reads_fit(const struct dsort_memplan_in *in, size_t abytes, size_t bbytes,
                            size_t cbytes, uint64_t block);

/* Fixed records: the smallest budget, a multiple of unit bytes above lo (a budget known not to
 * fit, or 0), whose plan fits and, with run_block != 0, reads runs written in blocks of
 * run_block; 0 if none up to 1 TiB does. What a refusal advises. */
uint64_t dsort_memplan_least_budget(const struct dsort_memplan_in *in, uint64_t unit, uint64_t lo,
                                    uint64_t run_block);

#endif
