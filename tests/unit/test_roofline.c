/* Unit tests for the roofline of a run (src/roofline.h) on made-up figures whose floors are
 * worked out by hand in the comments. That it agrees with tests/bench/roofline.py on the
 * --stats files of real jobs is tests/unit/roofline_oracle.py's check. No MPI. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "roofline.h"

enum { RD, SORT, EXCH, SPILL, OUT };
#define E6 1e6

static void near(double got, double want)
{
    if (fabs(got - want) > 1e-9 * fmax(1, fabs(want))) {
        print_error("got %.12g, want %.12g\n", got, want);
        fail();
    }
}

static int res_index(const struct dsort_roofline *rl, const char *name)
{
    for (size_t i = 0; i < rl->nres; i++)
        if (strcmp(rl->res[i].name, name) == 0)
            return (int)i;
    print_error("no resource '%s'\n", name);
    fail();
    return -1;
}

static void rates(struct dsort_roofline_rates *r, const char *s, const char *shared)
{
    struct dsort_error err = {0};
    memset(r, 0, sizeof *r);
    assert_int_equal(dsort_roofline_rates_parse(r, s, &err), DSORT_OK);
    assert_int_equal(dsort_roofline_shared_parse(r, shared, &err), DSORT_OK);
}

static void test_groups(void **state)
{
    (void)state;
    assert_int_equal(dsort_roofline_group_of("sample"), RD);
    assert_int_equal(dsort_roofline_group_of("read"), RD);
    assert_int_equal(dsort_roofline_group_of("splitters"), SORT);
    assert_int_equal(dsort_roofline_group_of("exchange"), EXCH);
    assert_int_equal(dsort_roofline_group_of("spill"), SPILL);
    assert_int_equal(dsort_roofline_group_of("merge"), OUT);
    assert_int_equal(dsort_roofline_group_of("final_merge"), OUT);
    assert_int_equal(dsort_roofline_group_of("commit"), OUT);
    assert_int_equal(dsort_roofline_group_of("nap"), -1);
}

static void test_rates_parse(void **state)
{
    (void)state;
    struct dsort_roofline_rates r;
    rates(&r, " net=250, *.read=200\tcpu=1e2 net=125", "vda, sdb");
    assert_int_equal(r.n, 3); /* net given twice: the later one */
    near(dsort_roofline_rate(&r, "net"), 125 * E6);
    near(dsort_roofline_rate(&r, "*.read"), 200 * E6);
    near(dsort_roofline_rate(&r, "cpu"), 100 * E6);
    assert_true(dsort_roofline_rate(&r, "*.write") == 0);
    assert_int_equal(r.nshared, 2);
    assert_string_equal(r.shared[1], "sdb");
    const char *bad[] = {
        "net",     "net=0",
        "net=-1",  "net=abc",
        "net=inf", "net=nan",
        "net=5x",  "a234567890123456789012345678901234567890123456789012345678901234=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct dsort_error err = {0};
        memset(&r, 0, sizeof r);
        assert_int_equal(dsort_roofline_rates_parse(&r, bad[i], &err), DSORT_EINVAL);
        assert_non_null(strstr(err.msg, "rate"));
    }
    memset(&r, 0, sizeof r);
    struct dsort_error err = {0};
    assert_int_equal(dsort_roofline_rates_parse(&r, NULL, &err), DSORT_OK);
    assert_int_equal(dsort_roofline_rates_parse(&r, " ,, ", &err), DSORT_OK);
    assert_int_equal(r.n, 0);
}

/* Two nodes n1, n2, one rank each, each with its own disk sda.
 *   rank 0: read 1.0 s, sort 0.5, exchange 2.0, output 1.5; sda read 200 MB in read, wrote
 *           100 MB in output; sent 500 MB, received 300 MB; read 200 MB of records.
 *   rank 1: read 1.2 s, sort 0.4, exchange 1.0, output 1.0; sda read 100 MB, wrote 100 MB;
 *           sent 300 MB, received 500 MB; read 100 MB.
 * Rates net=250 sda.read=200 *.write=50 cpu=100: sda.read names the disk, so its writes take
 * no rate from *.write (the disk's own key wins whole, as in roofline.py).
 *   disk n1:sda read  200 MB / 200 MB/s = 1.0 s (read)     disk n1:sda write  no rate
 *   disk n2:sda read  100 MB / 200 MB/s = 0.5 s (read)     disk n2:sda write  no rate
 *   network  one rank a node, exact: max(500, 300, 300, 500) MB = 500 MB / 250 = 2.0 s
 *   cpu      n1 200 MB over min(1 core, 1 rank) = 200 MB / 100 MB/s = 2.0 s (sort)
 * Groups (the slowest rank): read 1.2 s, floor 1.0 (n1's reads): 1.2x; sort 0.5 s, cpu 2.0:
 * 0.25x; exchange 2.0 s, network 2.0: 1.0x; spill no time, no floor: no row; output 1.5 s, no
 * floor (writes have no rate): a row without a resource. Serial floor 1 + 2 + 2 = 5 s. The
 * job (6 s): network and cpu both 2.0 s, the first listed wins: network, 3.0x; serial 1.2x. */
static void test_two_nodes(void **state)
{
    (void)state;
    struct dsort_roofline_disk d[2] = {
        {.name = "sda", .read = {200 * E6}, .written = {[OUT] = 100 * E6}},
        {.name = "sda", .read = {100 * E6}, .written = {[OUT] = 100 * E6}},
    };
    struct dsort_roofline_rank k[2] = {
        {.host = "n1",
         .seconds = {1.0, 0.5, 2.0, 0, 1.5},
         .disk = &d[0],
         .ndisks = 1,
         .bytes_sent = 500 * E6,
         .bytes_received = 300 * E6,
         .bytes_read = 200 * E6},
        {.host = "n2",
         .seconds = {1.2, 0.4, 1.0, 0, 1.0},
         .disk = &d[1],
         .ndisks = 1,
         .bytes_sent = 300 * E6,
         .bytes_received = 500 * E6,
         .bytes_read = 100 * E6},
    };
    struct dsort_roofline_input in = {.rank = k, .nranks = 2, .seconds = 6.0};
    struct dsort_roofline_rates r;
    rates(&r, "net=250 sda.read=200 *.write=50 cpu=100", NULL);
    struct dsort_roofline rl;
    struct dsort_error err = {0};
    assert_int_equal(dsort_roofline_compute(&in, &r, &rl, &err), DSORT_OK);
    assert_int_equal(rl.nres, 6);
    assert_string_equal(rl.res[0].name, "disk n1:sda read");
    assert_string_equal(rl.res[1].name, "disk n1:sda write");
    assert_string_equal(rl.res[4].name, "network");
    assert_string_equal(rl.res[5].name, "cpu");
    near(dsort_roofline_floor(&rl, 0, -1), 1.0);
    near(dsort_roofline_floor(&rl, 1, -1), -1);
    near(dsort_roofline_floor(&rl, res_index(&rl, "disk n2:sda read"), -1), 0.5);
    near(dsort_roofline_floor(&rl, 4, EXCH), 2.0);
    near(dsort_roofline_floor(&rl, 5, SORT), 2.0);
    assert_false(rl.res[4].estimated);
    assert_int_equal(rl.nrows, 4);
    int want_group[4] = {RD, SORT, EXCH, OUT}, want_res[4] = {0, 5, 4, -1};
    double want_s[4] = {1.2, 0.5, 2.0, 1.5}, want_f[4] = {1.0, 2.0, 2.0, -1};
    double want_x[4] = {1.2, 0.25, 1.0, -1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rl.row[i].group, want_group[i]);
        assert_int_equal(rl.row[i].busiest, want_res[i]);
        near(rl.row[i].seconds, want_s[i]);
        near(rl.row[i].floor, want_f[i]);
        near(rl.row[i].ratio, want_x[i]);
    }
    assert_int_equal(rl.busiest, 4);
    near(rl.floor, 2.0);
    near(rl.ratio, 3.0);
    near(rl.serial_floor, 5.0);
    near(rl.serial_ratio, 1.2);
    dsort_roofline_free(&rl);
}

/* Three ranks, two on node a and one on b, no disks. Sent 90, 60 | 30 MB, received 50, 40 |
 * 90 MB; p = 3. Node a: the part that crosses is (3 - 2) / (3 - 1) = 1/2: out 150 / 2 = 75,
 * in 90 / 2 = 45. Node b: (3 - 1) / 2 = 1: out 30, in 90. Busiest: 90 MB, estimated (a runs
 * two ranks); net=45: 2.0 s. cpu=10: records read a 20 + 20, b 10 MB. With the plan's cores
 * (a: 1 core) node a sorts 40 MB / min(1, 2) = 40 MB on one core: 4.0 s; without them, a's
 * two ranks count: 40 / 2 = 20 MB, b 10 MB: 2.0 s, a tie with the network (the network first).
 * Job 5 s, exchange 3 s, sort 1 s. */
static void test_shared_node(void **state)
{
    (void)state;
    struct dsort_roofline_rank k[3] = {
        {.host = "a",
         .seconds = {[SORT] = 1, [EXCH] = 3},
         .bytes_sent = 90 * E6,
         .bytes_received = 50 * E6,
         .bytes_read = 20 * E6},
        {.host = "a",
         .seconds = {[SORT] = 0.5, [EXCH] = 2},
         .bytes_sent = 60 * E6,
         .bytes_received = 40 * E6,
         .bytes_read = 20 * E6},
        {.host = "b",
         .seconds = {[SORT] = 0.5, [EXCH] = 3},
         .bytes_sent = 30 * E6,
         .bytes_received = 90 * E6,
         .bytes_read = 10 * E6},
    };
    const char *hosts[] = {"b", "a"};
    double cores[] = {8, 1};
    struct dsort_roofline_input in = {.rank = k,
                                      .nranks = 3,
                                      .seconds = 5.0,
                                      .core_host = hosts,
                                      .cores = cores,
                                      .ncore_hosts = 2};
    struct dsort_roofline_rates r;
    rates(&r, "net=45,cpu=10", "");
    struct dsort_roofline rl;
    struct dsort_error err = {0};
    assert_int_equal(dsort_roofline_compute(&in, &r, &rl, &err), DSORT_OK);
    assert_int_equal(rl.nres, 2);
    assert_true(rl.res[0].estimated);
    near(rl.res[0].bytes[EXCH], 90 * E6);
    near(dsort_roofline_floor(&rl, 1, -1), 4.0);
    assert_int_equal(rl.busiest, 1);
    near(rl.ratio, 5.0 / 4.0);
    assert_int_equal(rl.nrows, 2); /* sort 1 s against 4 s, exchange 3 s against 2 s */
    near(rl.row[0].ratio, 0.25);
    near(rl.row[1].ratio, 1.5);
    near(rl.serial_floor, 6.0);
    dsort_roofline_free(&rl);

    in.ncore_hosts = 0;
    assert_int_equal(dsort_roofline_compute(&in, &r, &rl, &err), DSORT_OK);
    near(dsort_roofline_floor(&rl, 1, -1), 2.0);
    assert_int_equal(rl.busiest, 0);
    near(rl.ratio, 2.5);
    dsort_roofline_free(&rl);
}

/* Two nodes that share disk vda (given as shared), no rates. Rank 0 sees vda: 100 MB read in
 * read, 0.1 MB in sort, 100 MB written in spill, 100 MB read in output; over the job 300 MB in
 * 1.5 busy seconds: measured 200 MB/s, one rate for reads and writes. Rank 1's view of vda is
 * not counted again; its disk sdb moved nothing over the job: no rate. Floors: read 0.5 s,
 * sort 0.0005 s (under a millisecond: no busiest resource), spill 0.5, output 0.5; the job
 * 300.1 MB / 200 = 1.5005 s. Network: no rate, no floor. Exchange took no time and has no
 * floor: no row. Times: read 1, sort 0.2, spill 0.75, output 0.5; job 3.001 s: 2.0x. */
static void test_shared_disk_measured(void **state)
{
    (void)state;
    struct dsort_roofline_disk d0 = {.name = "vda",
                                     .read = {[RD] = 100 * E6, [SORT] = 0.1 * E6, [OUT] = 100 * E6},
                                     .written = {[SPILL] = 100 * E6},
                                     .job_bytes = 300 * E6,
                                     .busy_seconds = 1.5};
    struct dsort_roofline_disk d1[2] = {
        {.name = "vda", .read = {[RD] = 7 * E6}, .job_bytes = 1 * E6, .busy_seconds = 1},
        {.name = "sdb", .written = {[OUT] = 5 * E6}}};
    struct dsort_roofline_rank k[2] = {
        {.host = "n1", .seconds = {1, 0.2, 0, 0.75, 0.5}, .disk = &d0, .ndisks = 1},
        {.host = "n2", .seconds = {0.5, 0.1, 0, 0.5, 0.25}, .disk = d1, .ndisks = 2},
    };
    struct dsort_roofline_input in = {.rank = k, .nranks = 2, .seconds = 3.001};
    struct dsort_roofline_rates r;
    rates(&r, NULL, "vda");
    struct dsort_roofline rl;
    struct dsort_error err = {0};
    assert_int_equal(dsort_roofline_compute(&in, &r, &rl, &err), DSORT_OK);
    assert_int_equal(rl.nres, 3);
    assert_string_equal(rl.res[0].name, "disk vda r+w");
    assert_string_equal(rl.res[0].source, "measured");
    near(rl.res[0].rate, 200 * E6);
    assert_string_equal(rl.res[1].name, "disk n2:sdb r+w");
    assert_string_equal(rl.res[1].source, "none");
    assert_string_equal(rl.res[2].name, "network");
    near(dsort_roofline_floor(&rl, 0, -1), 1.5005);
    assert_int_equal(rl.nrows, 4);
    assert_int_equal(rl.row[1].group, SORT);
    assert_int_equal(rl.row[1].busiest, -1);
    assert_int_equal(rl.row[2].group, SPILL);
    near(rl.row[2].ratio, 1.5);
    near(rl.row[0].ratio, 2.0);
    near(rl.row[3].ratio, 1.0);
    near(rl.ratio, 2.0);
    near(rl.serial_floor, 1.5);
    dsort_roofline_free(&rl);
}

/* A host name with a quote and a backslash is escaped in the JSON; no resource: nulls. */
static void test_json(void **state)
{
    (void)state;
    struct dsort_roofline_disk d = {.name = "sda", .read = {[RD] = 10 * E6}};
    struct dsort_roofline_rank k[2] = {
        {.host = "a\"b\\", .seconds = {[RD] = 1}, .disk = &d, .ndisks = 1},
        {.host = "c", .seconds = {[RD] = 1}}};
    struct dsort_roofline_input in = {.rank = k, .nranks = 2, .seconds = 2};
    struct dsort_roofline_rates r;
    rates(&r, "sda=10", NULL);
    struct dsort_roofline rl;
    struct dsort_error err = {0};
    assert_int_equal(dsort_roofline_compute(&in, &r, &rl, &err), DSORT_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fputc('{', f);
    dsort_roofline_json(f, &rl, "");
    fputs("}\n", f);
    dsort_roofline_print(f, "dsort: ", &rl);
    fclose(f);
    assert_non_null(strstr(buf, "\"disk a\\\"b\\\\:sda r+w\": {\"rate_MBps\": 10, "));
    assert_non_null(strstr(buf, "\"network\": {\"rate_MBps\": null, \"rate_source\": \"none\""));
    assert_non_null(strstr(buf, "\"ratio\": 2,"));
    assert_non_null(strstr(buf, "dsort: roofline: job 2.000 s; busiest disk a\"b\\:sda r+w"));
    free(buf);
    dsort_roofline_free(&rl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_rates_parse),
        cmocka_unit_test(test_two_nodes),
        cmocka_unit_test(test_shared_node),
        cmocka_unit_test(test_shared_disk_measured),
        cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
