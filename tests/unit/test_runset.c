/* Unit tests for the engine's planners (src/engine/runset.h, issue 10): the run set (add,
 * drop with the files, smallest first), the merge fan-in (open files, memory, cap), the size
 * of the next extra pass, and the two wave planners of the exchange. No MPI. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "runset.h"

static void make_file(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    close(fd);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Add many runs (the set grows), drop a middle range: its files are gone, the others stay, in
 * order; release removes the rest. */
static void test_add_drop_release(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(dsort_test_mkdtemp(dir, sizeof dir, "runset"), 0);
    struct dsort_runset s;
    dsort_runset_init(&s);
    struct dsort_error err;
    char path[PATH_MAX];
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "%s/run%02d", dir, i);
        make_file(path);
        assert_int_equal(dsort_runset_add(&s, path, (uint64_t)i, (uint64_t)i * 100, &err),
                         DSORT_OK);
    }
    assert_int_equal(s.n, 40);
    assert_true(dsort_runset_records(&s) == 40 * 39 / 2);
    assert_true(dsort_runset_bytes(&s) == 100 * 40 * 39 / 2);
    dsort_runset_drop(&s, 10, 5);
    assert_int_equal(s.n, 35);
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "%s/run%02d", dir, i);
        assert_int_equal(exists(path), i < 10 || i >= 15);
    }
    assert_string_equal(s.runs[10].path + strlen(dir), "/run15");
    assert_true(s.runs[10].records == 15);
    dsort_runset_drop(&s, 30, 100); /* past the end: only what is there */
    assert_int_equal(s.n, 30);
    dsort_runset_drop(&s, 99, 1); /* nothing */
    assert_int_equal(s.n, 30);
    dsort_runset_release(&s);
    assert_int_equal(s.n, 0);
    assert_null(s.runs);
    dsort_runset_release(&s); /* idempotent */
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof path, "%s/run%02d", dir, i);
        assert_false(exists(path));
    }
    assert_int_equal(rmdir(dir), 0); /* nothing else was left */
}

/* Striped runs: every file is listed (dsort_run_files), kept through sorting and copying
 * (add_run), and dropping a run removes all its files; keep leaves them. */
static void test_striped(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    assert_int_equal(dsort_test_mkdtemp(dir, sizeof dir, "runset"), 0);
    struct dsort_runset s, t;
    dsort_runset_init(&s);
    dsort_runset_init(&t);
    struct dsort_error err;
    char names[3][PATH_MAX];
    const char *paths[3], *got[DSORT_RUN_MAX_STRIPES];
    for (int r = 0; r < 4; r++) {
        size_t k = (size_t)(r % 3) + 1; /* 1, 2, 3, 1 files */
        for (size_t i = 0; i < k; i++) {
            snprintf(names[i], sizeof names[i], "%s/run-%d-f%zu", dir, r, i);
            make_file(names[i]);
            paths[i] = names[i];
        }
        assert_int_equal(
            dsort_runset_add_striped(&s, paths, k, 10 - (uint64_t)r, 100 - (uint64_t)r, &err),
            DSORT_OK);
    }
    assert_int_equal(dsort_runset_add_striped(&s, paths, 0, 1, 1, &err), DSORT_EINVAL);
    assert_int_equal(dsort_runset_add_striped(&s, paths, DSORT_RUN_MAX_STRIPES + 1, 1, 1, &err),
                     DSORT_EINVAL);
    dsort_runset_sort_smallest(&s); /* runs 3, 2, 1, 0 */
    assert_int_equal(dsort_run_files(&s.runs[1], got), 3);
    for (size_t i = 0; i < 3; i++) {
        snprintf(names[i], sizeof names[i], "%s/run-2-f%zu", dir, i);
        assert_string_equal(got[i], names[i]);
    }
    assert_int_equal(dsort_runset_add_run(&t, &s.runs[1], &err), DSORT_OK); /* a copy */
    assert_int_equal(dsort_run_files(&t.runs[0], got), 3);
    assert_string_equal(got[2], names[2]);
    dsort_runset_keep(&t); /* frees the copy, leaves the files */
    for (size_t i = 0; i < 3; i++)
        assert_true(exists(names[i]));
    dsort_runset_drop(&s, 1, 1); /* run 2: its three files */
    for (size_t i = 0; i < 3; i++)
        assert_false(exists(names[i]));
    snprintf(names[0], sizeof names[0], "%s/run-1-f1", dir);
    assert_true(exists(names[0]));
    dsort_runset_release(&s);
    assert_false(exists(names[0]));
    assert_int_equal(rmdir(dir), 0); /* every file of every run was removed */
}

/* Smallest first by bytes, then records; equal sizes keep their order (stable). */
static void test_sort_smallest(void **state)
{
    (void)state;
    struct dsort_runset s;
    dsort_runset_init(&s);
    struct dsort_error err;
    const uint64_t bytes[] = {500, 100, 300, 100, 900, 100, 300};
    const uint64_t recs[] = {5, 2, 3, 1, 9, 2, 3};
    for (int i = 0; i < 7; i++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", i);
        assert_int_equal(dsort_runset_add(&s, name, recs[i], bytes[i], &err), DSORT_OK);
    }
    dsort_runset_sort_smallest(&s);
    const char *want[] = {"r3", "r1", "r5", "r2", "r6", "r0", "r4"};
    for (int i = 0; i < 7; i++)
        assert_string_equal(s.runs[i].path, want[i]);
    free(s.runs); /* the names are not files: do not drop them */
}

/* The fan-in is the smaller of the open-file room and the buffers that fit, at least 2, at
 * most cap. */
/* Striped runs (k files each) take k descriptors apiece, and an extra pass's new run k more. */
static void test_fan_in_per_run(void **state)
{
    (void)state;
    struct dsort_fan_in fi;
    /* ulimit -n 56 with 19 open: 29 files; 3 stripes: (29 - 3) / 3 = 8 runs at once */
    dsort_fan_in_plan(56, 19, 60u << 20, 256u << 10, 0, &fi);
    assert_int_equal(fi.f, 29);
    dsort_fan_in_per_run(&fi, 3, 0);
    assert_int_equal(fi.by_files, 8);
    assert_int_equal(fi.f, 8);
    /* one file a run: unchanged */
    dsort_fan_in_plan(56, 19, 60u << 20, 256u << 10, 0, &fi);
    dsort_fan_in_per_run(&fi, 1, 0);
    assert_int_equal(fi.f, 29);
    /* too few descriptors even for one striped run: still 2 */
    dsort_fan_in_plan(32, 19, 60u << 20, 256u << 10, 0, &fi);
    dsort_fan_in_per_run(&fi, 8, 0);
    assert_int_equal(fi.by_files, 0);
    assert_int_equal(fi.f, 2);
    /* memory still bounds it, and so does the cap */
    dsort_fan_in_plan(0, 19, 4u << 20, 1u << 20, 0, &fi);
    dsort_fan_in_per_run(&fi, 3, 0);
    assert_int_equal(fi.f, 4);
    dsort_fan_in_plan(1024, 19, 60u << 20, 256u << 10, 0, &fi);
    dsort_fan_in_per_run(&fi, 3, 16);
    assert_int_equal(fi.f, 16);
}

static void test_fan_in_plan(void **state)
{
    (void)state;
    struct dsort_fan_in fi;
    /* memory-bound: 60 MiB of 2 MiB buffers, 1024 files */
    dsort_fan_in_plan(1024, 20, 60u << 20, 2u << 20, 0, &fi);
    assert_int_equal(fi.f, 30);
    assert_int_equal(fi.by_mem, 30);
    assert_int_equal(fi.by_files, 1024 - 20 - 8);
    /* file-bound: ulimit -n 36 with 20 open leaves 8 */
    dsort_fan_in_plan(36, 20, 60u << 20, 256u << 10, 0, &fi);
    assert_int_equal(fi.f, 8);
    /* nothing left: still 2 (a merge of two is always possible) */
    dsort_fan_in_plan(16, 20, 1u << 20, 1u << 20, 0, &fi);
    assert_int_equal(fi.f, 2);
    /* no limit on files, a cap */
    dsort_fan_in_plan(0, 20, (uint64_t)1 << 40, 4096, 1024, &fi);
    assert_int_equal(fi.f, 1024);
    /* explanations name the limit only when it bites */
    char why[160];
    dsort_fan_in_plan(36, 20, 60u << 20, 256u << 10, 0, &fi);
    dsort_fan_in_explain(&fi, 8, why, sizeof why);
    assert_string_equal(why, "");
    dsort_fan_in_explain(&fi, 19, why, sizeof why);
    assert_non_null(strstr(why, "19 runs"));
    assert_non_null(strstr(why, "ulimit -n 36"));
    dsort_fan_in_plan(1024, 20, 12u << 20, 2u << 20, 0, &fi);
    dsort_fan_in_explain(&fi, 19, why, sizeof why);
    assert_non_null(strstr(why, "merge buffers"));
    assert_non_null(strstr(why, "hold 6"));
}

/* The real process: what getrlimit says, with /proc/self/fd counted. */
static void test_fan_in_now(void **state)
{
    (void)state;
    struct rlimit old, rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    rl = old;
    rl.rlim_cur = 40;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    struct dsort_fan_in fi;
    dsort_fan_in_now((uint64_t)1 << 30, 4096, 0, &fi);
    assert_true(fi.files_limit == 40);
    assert_true(fi.open_now >= 3);
    assert_true(fi.f >= 2 && fi.f <= 40 - 8 - 3);
    /* open_now is exactly the descriptors open (counted here by probing each one) */
    uint64_t open = 0; /* descriptors above the lowered limit stay open too */
    for (int fd = 0; fd < 65536 && (rlim_t)fd < old.rlim_cur; fd++)
        open += fcntl(fd, F_GETFD) != -1;
    assert_true(fi.open_now == open);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

/* The next extra pass merges just enough of the smallest runs for the rest to fit one merge. */
static void test_fan_in_step(void **state)
{
    (void)state;
    assert_int_equal(dsort_fan_in_step(5, 6), 5);  /* fits: all */
    assert_int_equal(dsort_fan_in_step(7, 6), 2);  /* 2 -> 1, then 6 */
    assert_int_equal(dsort_fan_in_step(19, 6), 6); /* a full merge first */
    assert_int_equal(dsort_fan_in_step(10, 1), 2); /* a fan-in below 2 counts as 2 */
    /* simulate: every step leaves fewer runs, and the last merge is at most f */
    for (size_t f = 2; f < 12; f++)
        for (size_t n = 1; n < 200; n++) {
            size_t runs = n, passes = 0;
            while (runs > f) {
                size_t k = dsort_fan_in_step(runs, f);
                assert_true(k >= 2 && k <= f);
                runs = runs - k + 1;
                passes++;
            }
            assert_true(passes <= n);
        }
}

/* Split pieces (fixed records): sources in order, up to the capacity. */
static void test_waves_allot(void **state)
{
    (void)state;
    uint64_t left[4] = {5, 0, 7, 3}, allot[7];
    assert_true(dsort_waves_allot(left, 4, 10, allot) == 15);
    assert_true(allot[0] == 5 && allot[1] == 0 && allot[2] == 5 && allot[3] == 0);
    left[0] = 0;
    left[2] = 2;
    assert_true(dsort_waves_allot(left, 4, 10, allot) == 5);
    assert_true(allot[0] == 0 && allot[2] == 2 && allot[3] == 3);
    uint64_t none[3] = {0, 0, 0};
    assert_true(dsort_waves_allot(none, 3, 10, allot) == 0);
    /* waves until done: every item once, never more than cap a wave */
    uint64_t l2[7] = {13, 1, 0, 40, 2, 9, 30}, total = 95, got = 0;
    while (dsort_waves_allot(l2, 7, 16, allot)) {
        uint64_t w = 0;
        for (int s = 0; s < 7; s++) {
            assert_true(allot[s] <= l2[s]);
            l2[s] -= allot[s];
            w += allot[s];
        }
        assert_true(w > 0 && w <= 16);
        got += w;
    }
    assert_true(got == total);
}

/* Whole pieces (lines): a new wave when the next piece would pass the cap; a piece larger
 * than the cap has a wave of its own. */
static void test_waves_assign(void **state)
{
    (void)state;
    int w[6];
    uint64_t most = 0;
    const uint64_t c1[6] = {4, 4, 4, 4, 4, 4};
    assert_int_equal(dsort_waves_assign(c1, 6, 8, w, &most), 3);
    assert_int_equal(w[0], 0);
    assert_int_equal(w[1], 0);
    assert_int_equal(w[2], 1);
    assert_int_equal(w[5], 2);
    assert_true(most == 8);
    const uint64_t c2[4] = {1, 30, 1, 0};
    assert_int_equal(dsort_waves_assign(c2, 4, 8, w, &most), 3);
    assert_int_equal(w[0], 0);
    assert_int_equal(w[1], 1);
    assert_int_equal(w[2], 2);
    assert_int_equal(w[3], 2);
    assert_true(most == 30);
    const uint64_t c3[3] = {0, 0, 0};
    assert_int_equal(dsort_waves_assign(c3, 3, 8, w, &most), 1);
    assert_true(most == 0);
    /* an empty piece after a wave past the cap joins it: no wave of nothing (which would
     * cost the lines pipeline its direct write) */
    const uint64_t c4[3] = {5000, 0, 0};
    assert_int_equal(dsort_waves_assign(c4, 3, 1000, w, &most), 1);
    assert_int_equal(w[1], 0);
    assert_int_equal(w[2], 0);
    assert_true(most == 5000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_drop_release), cmocka_unit_test(test_striped),
        cmocka_unit_test(test_sort_smallest),    cmocka_unit_test(test_fan_in_plan),
        cmocka_unit_test(test_fan_in_per_run),   cmocka_unit_test(test_fan_in_now),
        cmocka_unit_test(test_fan_in_step),      cmocka_unit_test(test_waves_allot),
        cmocka_unit_test(test_waves_assign),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
