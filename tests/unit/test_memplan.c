/* Unit tests for the one memory plan (src/engine/memplan.h, issue 26): it reproduces, for both
 * formats at several budgets, the buffer sizes that job_ext.c (plan_memory, block_for,
 * chunk_for, size_plan, fit_block, least_fitting) and job_lines.c (io_block, read_mem,
 * choose_run_block, the arena) computed before they were switched to it. No MPI.
 *
 * The expected rows were printed at ce51767 by a throwaway harness that ran those functions,
 * copied verbatim (struct ext/lx fields turned into variables), with --block-size 8 MiB. With
 * three temp disks a striped run's reader holds three blocks, not two (issue 27, runfile.h):
 * those rows' fitted block is two thirds and their least merging budget 3 MiB, not 2. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "memplan.h"
#include "recfmt.h"

#define BLOCK ((uint64_t)8 << 20)

/* Fixed records: input and in-flight record bytes, the share's records, temp disks, budget
 * -> fits, block before the rounds, chunk, A, B, sort entries, scratch, the block fitted to
 * the rounds, the least budget advised when it does not fit (1 KiB units), the least budget
 * that merges runs of 256 KiB blocks (1 MiB units). */
struct fixed_row {
    size_t rs, irs;
    uint64_t n, disks, budget;
    int fits;
    uint64_t block, chunk;
    size_t abytes, bbytes;
    uint64_t ebytes;
    int scratch;
    uint64_t fitted, least, least_merge;
};
static const struct fixed_row fixed_rows[] = {
    {100, 100, 1000, 1, 65536, 1, 4096, 258, 27412, 25800, 4128, 0, 4096, 0, 4194304},
    {100, 100, 1000, 1, 1048576, 1, 65536, 1311, 139293, 131100, 20976, 0, 65536, 0, 4194304},
    {100, 100, 1000, 1, 8388608, 1, 524288, 10486, 1114137, 1048600, 167776, 0, 524288, 0, 4194304},
    {100, 100, 1000, 1, 104857600, 1, 6553600, 131154, 13935112, 13115400, 2098464, 0, 6553600, 0,
     4194304},
    {100, 100, 1000, 1, 3221225472, 1, 8388608, 167855, 17834593, 16785500, 2685680, 0, 8388608, 0,
     4194304},
    {100, 100, 5000000, 1, 65536, 1, 4096, 258, 27412, 25800, 4128, 0, 4096, 0, 2097152},
    {100, 100, 5000000, 1, 1048576, 1, 65536, 4132, 439025, 413200, 66112, 0, 65536, 0, 2097152},
    {100, 100, 5000000, 1, 8388608, 1, 524288, 33063, 3512943, 3306300, 529008, 0, 262144, 0,
     2097152},
    {100, 100, 5000000, 1, 104857600, 1, 6553600, 413253, 43908131, 41325300, 6612048, 0, 2506752,
     0, 2097152},
    {100, 100, 5000000, 1, 3221225472, 1, 8388608, 5000000, 531250000, 500000000, 80000000, 0,
     8388608, 0, 2097152},
    {100, 108, 5000000, 3, 65536, 1, 4096, 206, 23638, 22248, 3296, 0, 4096, 0, 3145728},
    {100, 108, 5000000, 3, 1048576, 1, 65536, 3304, 379134, 356832, 52864, 0, 65536, 0, 3145728},
    {100, 108, 5000000, 3, 8388608, 1, 524288, 26434, 3033301, 2854872, 422944, 0, 262144, 0,
     3145728},
    {100, 108, 5000000, 3, 104857600, 1, 6553600, 330433, 37917186, 35686764, 5286928, 0, 1167360,
     0, 3145728},
    {100, 108, 5000000, 3, 3221225472, 1, 8388608, 5000000, 573750000, 540000000, 80000000, 0,
     8388608, 0, 3145728},
    {4, 12, 1000, 1, 65536, 0, 0, 0, 0, 0, 0, 0, 0, 93184, 4194304},
    {4, 12, 1000, 1, 1048576, 1, 65536, 11606, 147976, 139272, 185696, 1, 65536, 0, 4194304},
    {4, 12, 1000, 1, 8388608, 1, 524288, 88065, 1122828, 1056780, 1409040, 1, 524288, 0, 4194304},
    {4, 12, 1000, 1, 104857600, 1, 6553600, 1092950, 13935112, 13115400, 17487200, 1, 6553600, 0,
     4194304},
    {4, 12, 1000, 1, 3221225472, 1, 8388608, 1398785, 17834508, 16785420, 22380560, 1, 8388608, 0,
     4194304},
    {4, 12, 5000000, 1, 65536, 0, 0, 0, 0, 0, 0, 0, 0, 93184, 3145728},
    {4, 12, 5000000, 1, 1048576, 1, 65536, 16237, 207021, 194844, 259792, 1, 65536, 0, 3145728},
    {4, 12, 5000000, 1, 8388608, 1, 524288, 130925, 1669293, 1571100, 2094800, 1, 262144, 0,
     3145728},
    {4, 12, 5000000, 1, 104857600, 1, 6553600, 1638253, 20887725, 19659036, 26212048, 1, 3375104, 0,
     3145728},
    {4, 12, 5000000, 1, 3221225472, 1, 8388608, 5000000, 63750000, 60000000, 80000000, 1, 8388608,
     0, 3145728},
};

static void test_fixed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fixed_rows / sizeof *fixed_rows; i++) {
        const struct fixed_row *r = &fixed_rows[i];
        struct dsort_memplan_in in = {.fmt = &dsort_recfmt_fixed,
                                      .budget = r->budget,
                                      .block = BLOCK,
                                      .temp_disks = r->disks,
                                      .rec = r->irs,
                                      .rec_in = r->rs,
                                      .records = r->n};
        struct dsort_memplan p;
        dsort_memplan_compute(&in, &p);
        assert_int_equal(p.fits, r->fits);
        if (!r->fits) {
            assert_int_equal(dsort_memplan_least_budget(&in, 1024, r->budget, 0), r->least);
        } else {
            assert_int_equal(p.block, r->block);
            assert_int_equal(p.chunk, r->chunk);
            assert_int_equal(p.abytes, r->abytes);
            assert_int_equal(p.bbytes, r->bbytes);
            assert_int_equal(p.ebytes, r->ebytes);
            assert_int_equal(p.scratch, r->scratch);
            assert_int_equal(p.merge_mem, (uint64_t)r->abytes + r->bbytes);
            /* the block fitted to the rounds (agreed over ranks: here the rank's own) */
            in.fit_runs = 1;
            in.rounds = dsort_memplan_rounds(&in, &p, 0);
            dsort_memplan_compute(&in, &p);
            assert_int_equal(p.block, r->fitted);
            assert_int_equal(p.chunk, r->chunk);
            in.fit_runs = 0;
        }
        assert_int_equal(dsort_memplan_least_budget(&in, (uint64_t)1 << 20, 0, 256 << 10),
                         r->least_merge);
    }
}

/* Text lines: the share's bytes, the samples' line length, temp disks (the most of any
 * rank), budget -> in memory (one round), third, output block, the final merge's read
 * memory, the share's need, the run files' block, the first round's arena. */
struct lines_row {
    uint64_t share;
    double avg;
    uint64_t disks, budget;
    int direct;
    uint64_t third, out_block, read_mem, need, run_block, arena;
};
static const struct lines_row lines_rows[] = {
    {0, 0.5, 1, 65536, 1, 21845, 16384, 32768, 4096, 4096, 65536},
    {0, 0.5, 1, 1048576, 1, 349525, 262144, 524288, 4096, 65536, 65536},
    {0, 0.5, 1, 8388608, 1, 2796202, 2097152, 4194304, 4096, 524288, 65536},
    {0, 0.5, 1, 104857600, 1, 34952533, 8388608, 52428800, 4096, 6553600, 65536},
    {0, 0.5, 1, 3221225472, 1, 1073741824, 8388608, 1610612736, 4096, 8388608, 65536},
    {100000, 12, 1, 65536, 0, 21845, 16384, 32768, 249096, 4096, 21856},
    {100000, 12, 1, 1048576, 1, 349525, 262144, 524288, 249096, 65536, 249104},
    {100000, 12, 1, 8388608, 1, 2796202, 2097152, 4194304, 249096, 524288, 249104},
    {100000, 12, 1, 104857600, 1, 34952533, 8388608, 52428800, 249096, 6553600, 249104},
    {100000, 12, 1, 3221225472, 1, 1073741824, 8388608, 1610612736, 249096, 8388608, 249104},
    {100000, 100, 3, 65536, 0, 21845, 16384, 32768, 125895, 4096, 21856},
    {100000, 100, 3, 1048576, 1, 349525, 262144, 524288, 125895, 32768, 125904},
    {100000, 100, 3, 8388608, 1, 2796202, 2097152, 4194304, 125895, 262144, 125904},
    {100000, 100, 3, 104857600, 1, 34952533, 8388608, 52428800, 125895, 3276800, 125904},
    {100000, 100, 3, 3221225472, 1, 1073741824, 8388608, 1610612736, 125895, 8388608, 125904},
    {50000000, 12, 1, 65536, 0, 21845, 16384, 32768, 122504096, 4096, 21856},
    {50000000, 12, 1, 1048576, 0, 349525, 262144, 524288, 122504096, 65536, 349536},
    {50000000, 12, 1, 8388608, 0, 2796202, 2097152, 4194304, 122504096, 262144, 2796208},
    {50000000, 12, 1, 104857600, 0, 34952533, 8388608, 52428800, 122504096, 4366336, 34952544},
    {50000000, 12, 1, 3221225472, 1, 1073741824, 8388608, 1610612736, 122504096, 8388608,
     122504096},
    {50000000, 100, 3, 65536, 0, 21845, 16384, 32768, 60904095, 4096, 21856},
    {50000000, 100, 3, 1048576, 0, 349525, 262144, 524288, 60904095, 32768, 349536},
    {50000000, 100, 3, 8388608, 0, 2796202, 2097152, 4194304, 60904095, 262144, 2796208},
    {50000000, 100, 3, 104857600, 0, 34952533, 8388608, 52428800, 60904095, 3276800, 34952544},
    {50000000, 100, 3, 3221225472, 1, 1073741824, 8388608, 1610612736, 60904095, 8388608, 60904096},
};

static void test_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof lines_rows / sizeof *lines_rows; i++) {
        const struct lines_row *r = &lines_rows[i];
        struct dsort_memplan_in in = {.fmt = &dsort_recfmt_lines,
                                      .budget = r->budget,
                                      .block = BLOCK,
                                      .temp_disks = r->disks,
                                      .share_bytes = r->share,
                                      .avg_line = r->avg};
        struct dsort_memplan p;
        dsort_memplan_compute(&in, &p);
        assert_int_equal(p.share_fits, r->direct);
        assert_int_equal(p.third, r->third);
        assert_int_equal(p.out_block, r->out_block);
        assert_int_equal(p.merge_mem, r->read_mem);
        assert_int_equal(p.need, r->need);
        assert_int_equal(dsort_memplan_arena(&p, r->direct), r->arena);
        in.fit_runs = 1;
        in.rounds = dsort_memplan_rounds(&in, &p, r->direct);
        dsort_memplan_compute(&in, &p);
        assert_int_equal(p.block, r->run_block);
    }
}

/* The plan is a pure function: the same inputs give the same plan, and a bigger budget never
 * gives a smaller chunk or third. */
static void test_monotone(void **state)
{
    (void)state;
    uint64_t last_chunk = 0, last_third = 0;
    for (uint64_t b = 64 << 10; b <= (uint64_t)1 << 32; b *= 2) {
        struct dsort_memplan_in in = {.fmt = &dsort_recfmt_fixed,
                                      .budget = b,
                                      .block = BLOCK,
                                      .temp_disks = 1,
                                      .rec = 100,
                                      .rec_in = 100,
                                      .records = (uint64_t)1 << 40};
        struct dsort_memplan p, q;
        dsort_memplan_compute(&in, &p);
        dsort_memplan_compute(&in, &q);
        assert_memory_equal(&p, &q, sizeof p);
        assert_true(p.chunk >= last_chunk);
        last_chunk = p.chunk;
        in.fmt = &dsort_recfmt_lines;
        dsort_memplan_compute(&in, &p);
        assert_true(p.third >= last_third);
        last_third = p.third;
    }
}

/* Read-ahead (issue 27): asked for, the plan adds C (as large as A) only when the share takes
 * more than one round and the smaller chunk's runs still fit the final merge at once; the
 * buffers with C, the sort entries and the run writer's stay within the budget, and the
 * final merge's memory counts C. Checked against the plan without read-ahead. */
static void test_readahead(void **state)
{
    (void)state;
    int seen_on = 0, seen_off = 0;
    for (uint64_t b = 1 << 20; b <= (uint64_t)1 << 30; b *= 2)
        for (uint64_t n = 1000; n <= 100000000; n *= 10) {
            struct dsort_memplan_in in = {.fmt = &dsort_recfmt_fixed,
                                          .budget = b,
                                          .block = BLOCK,
                                          .temp_disks = 1,
                                          .rec = 108,
                                          .rec_in = 100,
                                          .records = n};
            struct dsort_memplan p, q;
            dsort_memplan_compute(&in, &p);
            in.readahead = 1;
            dsort_memplan_compute(&in, &q);
            assert_int_equal(p.cbytes, 0);
            if (!q.cbytes) { /* as without read-ahead */
                seen_off++;
                assert_memory_equal(&p, &q, sizeof p);
                continue;
            }
            seen_on++;
            assert_true(p.fits && q.fits);
            assert_true(p.chunk < n);
            assert_int_equal(q.cbytes, q.abytes);
            assert_true(q.chunk < p.chunk);
            assert_int_equal(q.merge_mem, (uint64_t)q.abytes + q.bbytes + q.cbytes);
            const uint64_t rounds = (n + q.chunk - 1) / q.chunk;
            assert_true(2 * (rounds + rounds / 4 + 1) * DSORT_MEMPLAN_MIN_RUN_BLOCK <= q.merge_mem);
            const uint64_t used = (uint64_t)q.abytes + q.bbytes + q.cbytes + q.ebytes +
                                  dsort_runwriter_buf_len(in.rec, q.block, 1);
            assert_true(used <= b);
            assert_true(dsort_memplan_reads_fit(&in, q.abytes, q.bbytes, q.cbytes, q.block));
        }
    assert_true(seen_on > 0 && seen_off > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_monotone),
        cmocka_unit_test(test_readahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
