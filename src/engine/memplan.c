/* The one memory plan of the out-of-core sort (memplan.h). */
#include "memplan.h"

#include "recfmt.h"
#include "runfile.h"
#include "runmerge.h"

void dsort_memplan_compute(const struct dsort_memplan_in *in, struct dsort_memplan *p)
{
    *p = (struct dsort_memplan){0};
    in->fmt->plan(in, p); /* the format's memory need */
    if (p->fits && in->fit_runs) {
        /* 2 reads + 2 writes at small budgets: the final merge reads every run at once when
         * its read buffers (two or three blocks a run, runfile.h) fit, so the run files are
         * written in blocks small enough for the runs expected (one a round, and a margin for
         * the waves of skewed input), down to DSORT_MEMPLAN_MIN_RUN_BLOCK. */
        uint64_t runs = in->rounds + in->rounds / 4 + 1;
        uint64_t fit = p->merge_mem / (dsort_runreader_bufs(in->temp_disks) * runs) / 4096 * 4096;
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
    return in->fmt->rounds(in, p, in_memory);
}

uint64_t dsort_memplan_arena(const struct dsort_memplan *p, int in_memory)
{
    uint64_t size = in_memory ? (p->need > 65536 ? p->need : 65536) : p->third;
    return (size + 15) / 16 * 16;
}

int dsort_memplan_reads_fit(const struct dsort_memplan_in *in, size_t abytes, size_t bbytes,
                            size_t cbytes, uint64_t block)
{
    const size_t len[3] = {abytes, bbytes, cbytes};
    return dsort_runmerge_region_mem(in->rec, (size_t)block, in->temp_disks, len, 3) >=
           2 * (uint64_t)dsort_runreader_buf_len(in->rec, (size_t)block, in->temp_disks);
}

/* Does budget give a plan (that reads runs of run_block, unless 0)? */
static int budget_fits(const struct dsort_memplan_in *in, uint64_t budget, uint64_t run_block)
{
    struct dsort_memplan_in at = *in;
    struct dsort_memplan p;
    at.budget = budget;
    at.fit_runs = 0;
    dsort_memplan_compute(&at, &p);
    return p.fits &&
           (!run_block || dsort_memplan_reads_fit(in, p.abytes, p.bbytes, p.cbytes, run_block));
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
