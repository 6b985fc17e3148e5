/* The one memory plan of the out-of-core sort (memplan.h). */
#include "memplan.h"

#include "keysort.h"
#include "lines.h"
#include "runfile.h"
#include "runmerge.h"

/* The bytes a chunk record costs: A and B, a sixteenth of slack in A, its sort entry and, for
 * records shorter than an entry, the sort scratch. */
static uint64_t per_record(const struct dsort_memplan_in *in)
{
    const size_t ent = sizeof(struct dsort_sortent);
    return 2 * in->rec + in->rec / 16 + ent + (in->rec_in < ent ? ent : 0);
}

/* The chunk (records) that budget leaves with I/O blocks of block bytes, or 0 if it does not
 * hold DSORT_MEMPLAN_MIN_CHUNK records and two merge read buffers besides the run writer's
 * buffers (two blocks, or one more than the files of a run striped over several temp devices,
 * runfile.h). */
static uint64_t chunk_for(const struct dsort_memplan_in *in, uint64_t block)
{
    uint64_t writer = dsort_runwriter_buf_len(in->rec, block, in->temp_disks);
    uint64_t chunk = in->budget > writer ? (in->budget - writer) / per_record(in) : 0;
    if (chunk < DSORT_MEMPLAN_MIN_CHUNK ||
        chunk * in->rec < dsort_runreader_buf_len(in->rec, block))
        return 0;
    return chunk;
}

/* The I/O block: --block-size, at most a sixteenth of the budget, and smaller still (down to
 * 4 KiB) while the chunk does not hold two blocks: with records of a few bytes each record
 * costs many times its size, so a sixteenth of the budget is more than the chunk holds.
 * *chunk gets chunk_for's answer for it (0: the budget is too small for any block). */
static uint64_t block_for(const struct dsort_memplan_in *in, uint64_t *chunk)
{
    uint64_t block = in->block < in->budget / 16 ? in->block : in->budget / 16;
    if (block < 4096)
        block = 4096;
    while (!(*chunk = chunk_for(in, block)) && block > 4096)
        block = block / 2 < 4096 ? 4096 : block / 2;
    return block;
}

/* Fixed records: the chunk, the block and buffers A and B; p->fits 0 if the budget is too
 * small to sort out of core. */
static void plan_fixed(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    uint64_t chunk;
    p->block = (size_t)block_for(in, &chunk);
    if (!(p->fits = chunk != 0))
        return;
    /* No bigger than the share, but big enough for two merge read buffers. */
    uint64_t floor_chunk = dsort_runreader_buf_len(in->rec, p->block) / in->rec + 1;
    if (floor_chunk < DSORT_MEMPLAN_MIN_CHUNK)
        floor_chunk = DSORT_MEMPLAN_MIN_CHUNK;
    if (chunk > in->records)
        chunk = in->records > floor_chunk ? in->records : floor_chunk;
    p->chunk = chunk;
    /* A receives a round's pieces: with sampled splitters a rank may get a little more than
     * a chunk, and a second wave (another run) for a few records is a waste. */
    p->bbytes = (size_t)(chunk * in->rec);
    p->abytes = p->bbytes + p->bbytes / 16;
    p->ebytes = (size_t)(chunk * sizeof(struct dsort_sortent));
    p->scratch = in->rec_in < sizeof(struct dsort_sortent);
    p->merge_mem = (uint64_t)p->abytes + p->bbytes;
}

/* Text lines: the thirds, the blocks and the share's need. */
static void plan_lines(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    const uint64_t budget = in->budget;
    p->fits = 1;
    p->third = budget / 3 < 4096 ? 4096 : budget / 3;
    uint64_t b = budget / 4;
    if (b > in->block)
        b = in->block;
    p->out_block = (size_t)(b < 4096 ? 4096 : b);
    /* Run files are read back with two buffers of a block each (runfile.h): half the budget
     * holds them in the final merge (the output's buffer and the writer's take the rest). */
    p->merge_mem = budget / 2;
    /* The run writer holds two blocks, or k + 1 for runs striped over k temp disks
     * (runfile.h): the block shrinks with k so that the writer takes an eighth of the budget,
     * as two blocks of a 16th did before runs were striped. */
    const uint64_t k = in->temp_disks;
    const uint64_t cap = k > 1 ? budget / (8 * (k + 1)) : budget / 16;
    p->block = (size_t)(in->block < cap ? in->block : cap);
    /* the lines with their entries, estimated from the samples' line length */
    const double avg = in->avg_line > 1 ? in->avg_line : 1;
    const double per = 1.0 + (double)sizeof(struct dsort_line_ent) / avg;
    p->need = (uint64_t)((double)in->share_bytes * per * 1.05) + 4096;
    p->share_fits = p->need <= p->third;
}

void dsort_memplan_compute(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    *p = (struct dsort_memplan){0};
    if (in->rec)
        plan_fixed(in, p);
    else
        plan_lines(in, p);
    if (p->fits && in->fit_runs) {
        /* 2 reads + 2 writes at small budgets: the final merge reads every run at once when
         * its read buffers (two blocks a run) fit, so the run files are written in blocks
         * small enough for the runs expected (one a round, and a margin for the waves of
         * skewed input), down to DSORT_MEMPLAN_MIN_RUN_BLOCK. */
        uint64_t runs = in->rounds + in->rounds / 4 + 1;
        uint64_t fit = p->merge_mem / (2 * runs) / 4096 * 4096;
        if (fit < DSORT_MEMPLAN_MIN_RUN_BLOCK)
            fit = DSORT_MEMPLAN_MIN_RUN_BLOCK;
        if (fit < p->block)
            p->block = (size_t)fit;
    }
    if (p->block < 4096) /* lines' cap at tiny budgets (fixed blocks are at least that) */
        p->block = 4096;
}

uint64_t dsort_memplan_rounds(const struct dsort_memplan_in *in, const struct dsort_memplan *p,
                              int in_memory)
{
    if (in->rec)
        return p->chunk ? (in->records + p->chunk - 1) / p->chunk : 0;
    return in_memory ? 0 : (p->need + p->third - 1) / p->third;
}

uint64_t dsort_memplan_arena(const struct dsort_memplan *p, int in_memory)
{
    uint64_t size = in_memory ? (p->need > 65536 ? p->need : 65536) : p->third;
    return (size + 15) / 16 * 16;
}

int dsort_memplan_reads_fit(const struct dsort_memplan_in *in, size_t abytes, size_t bbytes,
                            uint64_t block)
{
    const size_t len[2] = {abytes, bbytes};
    return dsort_runmerge_region_mem(in->rec, (size_t)block, len, 2) >=
           2 * (uint64_t)dsort_runreader_buf_len(in->rec, (size_t)block);
}

/* Does budget give a plan (that reads runs of run_block, unless 0)? */
static int budget_fits(const struct dsort_memplan_in *in, uint64_t budget, uint64_t run_block)
{
    struct dsort_memplan_in at = *in;
    struct dsort_memplan p;
    at.budget = budget;
    at.fit_runs = 0;
    dsort_memplan_compute(&at, &p);
    return p.fits && (!run_block || dsort_memplan_reads_fit(in, p.abytes, p.bbytes, run_block));
}

uint64_t dsort_memplan_least_budget(const struct dsort_memplan_in *in, uint64_t unit, uint64_t lo,
                                    uint64_t run_block)
{
    const uint64_t cap = ((uint64_t)1 << 40) / unit;
    lo /= unit;
    uint64_t hi = lo ? 2 * lo : 1;
    while (hi < cap && !budget_fits(in, hi * unit, run_block))
        lo = hi, hi *= 2;
    if (!budget_fits(in, hi * unit, run_block))
        return 0;
    while (hi - lo > 1) { /* lo fails (or is 0), hi fits */
        uint64_t mid = lo + (hi - lo) / 2;
        *(budget_fits(in, mid * unit, run_block) ? &hi : &lo) = mid;
    }
    return hi * unit;
}
