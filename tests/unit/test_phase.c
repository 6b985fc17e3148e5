/* Unit tests for phase.h's real times (issue 29, item 10): the spans of the phases as they
 * happened (a phase resumed within a millisecond is one span; past DSORT_JOB_SPANS the last
 * span takes every later phase, as phase -1, and spans_merged counts them), and the watched
 * disks' job totals from a fake sysfs (DSORT_SYSFS_ROOT) whose counters grow between the
 * watch and the stop. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture.h"
#include "phase.h"

static void phase(struct dsort_job_stats *s, enum dsort_phase ph)
{
    struct dsort_phase_clock pc;
    dsort_job_phase_begin(&pc, ph);
    dsort_job_phase_end(s, ph, &pc);
}

static void test_spans_in_order(void **state)
{
    (void)state;
    static struct dsort_job_stats s;
    memset(&s, 0, sizeof s);
    dsort_job_stats_start(&s);
    assert_true(s.t0 > 0 && s.t0_unix > 1e9);
    phase(&s, PH_READ);
    phase(&s, PH_SORT);
    phase(&s, PH_EXCHANGE); /* twice at once: one span */
    phase(&s, PH_EXCHANGE);
    dsort_job_stats_stop(&s);
    assert_int_equal(s.nspans, 3);
    assert_int_equal(s.spans[0].phase, PH_READ);
    assert_int_equal(s.spans[1].phase, PH_SORT);
    assert_int_equal(s.spans[2].phase, PH_EXCHANGE);
    double t = 0;
    for (int i = 0; i < s.nspans; i++) {
        assert_true(s.spans[i].start >= t && s.spans[i].end >= s.spans[i].start);
        t = s.spans[i].end;
    }
    assert_true(s.t_end >= t);
    assert_int_equal(s.spans_merged, 0);
}

static void test_spans_full(void **state)
{
    (void)state;
    static struct dsort_job_stats s;
    memset(&s, 0, sizeof s);
    dsort_job_stats_start(&s);
    for (int i = 0; i < 70; i++) /* 70 stretches, phases alternating */
        phase(&s, i % 2 ? PH_SPILL : PH_READ);
    assert_int_equal(s.nspans, DSORT_JOB_SPANS);
    assert_int_equal(s.spans[DSORT_JOB_SPANS - 2].phase, PH_READ); /* stretch 63 */
    assert_int_equal(s.spans[DSORT_JOB_SPANS - 1].phase, -1);
    assert_int_equal(s.spans_merged, 70 - DSORT_JOB_SPANS);
    assert_true(s.spans[DSORT_JOB_SPANS - 1].end >= s.spans[DSORT_JOB_SPANS - 2].end);
}

static void put_stat(const char *disk, unsigned long long rd_sectors, unsigned long long wr_sectors,
                     unsigned long long ticks)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/class", dsort_test_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/class/block", dsort_test_dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/class/block/%s", dsort_test_dir, disk);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/class/block/%s/stat", dsort_test_dir, disk);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "10 0 %llu 5 20 0 %llu 7 0 %llu 12\n", rd_sectors, wr_sectors, ticks);
    assert_int_equal(fclose(f), 0);
}

static void test_disk_totals(void **state)
{
    (void)state;
    static struct dsort_job_stats s;
    memset(&s, 0, sizeof s);
    setenv("DSORT_SYSFS_ROOT", dsort_test_dir, 1);
    put_stat("sdz", 100, 200, 1000);
    const char *names[] = {"sdz"};
    dsort_job_stats_start(&s);
    dsort_job_watch_disks(names, 1);
    put_stat("sdz", 100 + 2048, 200 + 4096, 1000 + 1500); /* 1 MiB read, 2 MiB written */
    dsort_job_stats_stop(&s);
    unsetenv("DSORT_SYSFS_ROOT");
    dsort_job_watch_disks(NULL, 0);
    assert_string_equal(s.disk[0], "sdz");
    assert_int_equal(s.disk_total[0].read, 2048 * 512);
    assert_int_equal(s.disk_total[0].written, 4096 * 512);
    assert_int_equal(s.disk_total[0].busy_ms, 1500);
    assert_true(s.disk_seconds >= 0 && s.disk_seconds <= s.t_end);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans_in_order),
        cmocka_unit_test(test_spans_full),
        cmocka_unit_test_setup_teardown(test_disk_totals, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
