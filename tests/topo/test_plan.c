/* Unit tests for plan.h and planjson.h: stream limits and turns (2 rotational disks and 4
 * ranks, an SSD with --streams-per-device 4, st_dev-only devices), partitions and overlapping
 * dm/md merged into one device, temp dir choice, NUMA hints, pack/unpack (round trip, corrupt
 * blobs, seeded random corruption), JSON content and escaping, stats. Devices come from the
 * fake sysfs tree of fakesys.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockdev.h"
#include "fakesys.h"
#include "plan.h"
#include "planjson.h"

static char root[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    if (fakesys_tmpdir(root, sizeof root, "plan") != 0)
        return -1;
    return fakesys_build(root);
}

static int teardown(void **state)
{
    (void)state;
    return fakesys_remove(root);
}

/* Devices of the fake tree used below, resolved once per test. */
enum { SDA1, SDA2, SDB1, SDC1, VDA1, VDA2, NVME, DM0, TMPFS, TMPFS2, NDEV };
static const uint32_t devnum[NDEV][2] = {{8, 1},   {8, 2},   {8, 17},  {8, 33}, {254, 1},
                                         {254, 2}, {259, 3}, {253, 0}, {0, 50}, {0, 51}};
static struct dsort_blockdev devs[NDEV];

static void resolve_all(void)
{
    for (int i = 0; i < NDEV; i++)
        assert_int_equal(dsort_blockdev_resolve(root, devnum[i][0], devnum[i][1], &devs[i], NULL),
                         DSORT_OK);
}

static struct dsort_plan_read_in rd(const char *file, uint64_t off, uint64_t len, int dev,
                                    int32_t rank)
{
    struct dsort_plan_read_in r = {file, off, len, devnum[dev][0], devnum[dev][1], rank};
    return r;
}

static struct dsort_plan_node *build(const int32_t *ranks, size_t nranks,
                                     const struct dsort_plan_read_in *reads, size_t nreads,
                                     const struct dsort_plan_temp_in *temps, size_t ntemps,
                                     uint32_t ssd)
{
    struct dsort_plan_input in = {0};
    in.hostname = "node07";
    in.ranks = ranks;
    in.nranks = nranks;
    in.reads = reads;
    in.nreads = nreads;
    in.temps = temps;
    in.ntemps = ntemps;
    in.devs = devs;
    in.ndevs = NDEV;
    in.policy.ssd_streams = ssd;
    struct dsort_plan_node *node = NULL;
    struct dsort_error err;
    dsort_error_clear(&err);
    enum dsort_status st = dsort_plan_build(&in, &node, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
    assert_non_null(node);
    st = dsort_plan_check(node, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, DSORT_OK);
    return node;
}

static const struct dsort_plan_group *group(const struct dsort_plan_node *node, int32_t rank,
                                            const char *key)
{
    const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, rank);
    assert_non_null(rk);
    int d = dsort_plan_device_find(node, key);
    assert_true(d >= 0);
    for (size_t g = 0; g < rk->ngroups; g++)
        if (rk->groups[g].device == (uint32_t)d)
            return &rk->groups[g];
    fail_msg("rank %d has no group on %s", (int)rank, key);
    return NULL;
}

static char *json_of(struct dsort_plan_node *const *nodes, size_t n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    struct dsort_error err;
    assert_int_equal(dsort_planjson_write(f, (const struct dsort_plan_node *const *)nodes, n, &err),
                     DSORT_OK);
    fclose(f);
    return buf;
}

/* Two rotational disks, four ranks that each read both: every disk is read by one rank at a
 * time, in rank order, and each rank has one thread per disk. */
static void test_two_rotational_disks_four_ranks(void **state)
{
    (void)state;
    resolve_all();
    const int32_t ranks[4] = {10, 11, 12, 13};
    struct dsort_plan_read_in reads[8];
    for (int r = 0; r < 4; r++) {
        reads[2 * r] = rd("/a/in1", (uint64_t)r * 100, 100, SDA1, ranks[r]);
        reads[2 * r + 1] = rd("/b/in2", (uint64_t)r * 50, 50, SDB1, ranks[r]);
    }
    struct dsort_plan_node *node = build(ranks, 4, reads, 8, NULL, 0, 4);
    assert_string_equal(node->hostname, "node07");
    assert_int_equal(node->ndevices, 2);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(node->devices[d].streams, 1);
        assert_int_equal(node->devices[d].readers, 4);
        assert_int_equal(node->devices[d].rounds, 4);
    }
    assert_int_equal(node->devices[0].bytes, 400);
    assert_int_equal(node->devices[1].bytes, 200);
    for (int r = 0; r < 4; r++) {
        const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, ranks[r]);
        assert_int_equal(rk->ngroups, 2);
        assert_int_equal(rk->nreads, 2);
        const char *keys[2] = {"sda", "sdb"};
        for (int k = 0; k < 2; k++) {
            const struct dsort_plan_group *g = group(node, ranks[r], keys[k]);
            assert_int_equal(g->slot, 0);
            assert_int_equal(g->turn, r);
            assert_int_equal(g->wait_for, r ? ranks[r - 1] : -1);
            assert_int_equal(g->pass_to, r < 3 ? ranks[r + 1] : -1);
        }
        assert_int_equal(node->reads[rk->first_read].rank, ranks[r]);
        assert_int_equal(node->reads[rk->first_read].thread, 0);
        assert_int_equal(node->reads[rk->first_read + 1].thread, 1);
    }
    dsort_plan_destroy(node);

    /* Ranks 10, 11 on sda, 12, 13 on sdb: two turns per disk. */
    struct dsort_plan_read_in split[4] = {rd("/a/x", 0, 10, SDA1, 10), rd("/a/x", 10, 10, SDA2, 11),
                                          rd("/b/y", 0, 10, SDB1, 12),
                                          rd("/b/y", 10, 10, SDB1, 13)};
    node = build(ranks, 4, split, 4, NULL, 0, 4);
    assert_int_equal(node->ndevices, 2); /* sda1 and sda2 are one disk */
    assert_int_equal(node->devices[0].nmembers, 2);
    assert_int_equal(node->devices[0].readers, 2);
    assert_int_equal(node->devices[0].rounds, 2);
    assert_int_equal(group(node, 11, "sda")->wait_for, 10);
    assert_int_equal(group(node, 12, "sdb")->wait_for, -1);
    assert_int_equal(group(node, 12, "sdb")->pass_to, 13);
    dsort_plan_destroy(node);
}

/* An SSD with --streams-per-device 4: four ranks read at once, the fifth and sixth wait for
 * the first and second. */
static void test_ssd_streams(void **state)
{
    (void)state;
    resolve_all();
    const int32_t ranks[6] = {0, 1, 2, 3, 4, 5};
    struct dsort_plan_read_in reads[6];
    for (int r = 0; r < 6; r++)
        reads[r] = rd("/nvme/in", (uint64_t)r << 20, 1 << 20, NVME, r);
    struct dsort_plan_node *node = build(ranks, 4, reads, 4, NULL, 0, 4);
    assert_int_equal(node->devices[0].streams, 4);
    assert_int_equal(node->devices[0].rounds, 1);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(group(node, r, "nvme0n1")->slot, r);
        assert_int_equal(group(node, r, "nvme0n1")->wait_for, -1);
        assert_int_equal(group(node, r, "nvme0n1")->pass_to, -1);
    }
    dsort_plan_destroy(node);

    node = build(ranks, 6, reads, 6, NULL, 0, 4);
    assert_int_equal(node->devices[0].readers, 6);
    assert_int_equal(node->devices[0].rounds, 2);
    int slots[6] = {0, 1, 2, 3, 0, 1}, turns[6] = {0, 0, 0, 0, 1, 1};
    int waits[6] = {-1, -1, -1, -1, 0, 1}, passes[6] = {4, 5, -1, -1, -1, -1};
    for (int r = 0; r < 6; r++) {
        const struct dsort_plan_group *g = group(node, r, "nvme0n1");
        assert_int_equal(g->slot, slots[r]);
        assert_int_equal(g->turn, turns[r]);
        assert_int_equal(g->wait_for, waits[r]);
        assert_int_equal(g->pass_to, passes[r]);
    }
    dsort_plan_destroy(node);
}

static void test_stream_policy(void **state)
{
    (void)state;
    resolve_all();
    struct dsort_plan_policy p = {4, 0};
    assert_int_equal(dsort_plan_streams(&p, &devs[SDA1]), 1);  /* rotational */
    assert_int_equal(dsort_plan_streams(&p, &devs[SDC1]), 1);  /* rotational unknown */
    assert_int_equal(dsort_plan_streams(&p, &devs[NVME]), 4);  /* SSD */
    assert_int_equal(dsort_plan_streams(&p, &devs[TMPFS]), 1); /* st_dev only, default */
    p.nodisk_streams = 3;
    assert_int_equal(dsort_plan_streams(&p, &devs[TMPFS]), 3);
    p.ssd_streams = 0;
    assert_int_equal(dsort_plan_streams(&p, &devs[NVME]), 1);
    struct dsort_blockdev unknown;
    assert_int_equal(dsort_blockdev_resolve(root, 8, 99, &unknown, NULL), DSORT_OK);
    assert_int_equal(dsort_plan_streams(&p, &unknown), 1);
}

/* A partition of sda, a dm over sda+sdb and a partition of sdb share disks: one device. */
static void test_overlapping_devices_merge(void **state)
{
    (void)state;
    resolve_all();
    const int32_t ranks[2] = {0, 1};
    struct dsort_plan_read_in reads[4] = {rd("/a", 0, 10, SDA1, 0), rd("/b", 0, 10, SDB1, 1),
                                          rd("/v", 0, 10, VDA1, 1), rd("/dm", 0, 10, DM0, 0)};
    struct dsort_plan_node *node = build(ranks, 2, reads, 4, NULL, 0, 1);
    assert_int_equal(node->ndevices, 2);
    assert_string_equal(node->devices[0].dev.key, "sda+sdb");
    assert_int_equal(node->devices[0].nmembers, 3);
    assert_string_equal(node->devices[1].dev.key, "vda");
    assert_int_equal(node->devices[0].readers, 2);
    assert_int_equal(group(node, 1, "sda+sdb")->wait_for, 0);
    const struct dsort_plan_rank *r0 = dsort_plan_rank_find(node, 0);
    assert_int_equal(r0->ngroups, 1); /* sda1 and dm-0: one thread */
    assert_int_equal(r0->groups[0].nreads, 2);
    dsort_plan_destroy(node);
}

static void test_temp_dirs(void **state)
{
    (void)state;
    resolve_all();
    const int32_t ranks[4] = {0, 1, 2, 3};
    struct dsort_plan_read_in reads[4] = {rd("/a", 0, 10, SDA1, 0), rd("/a", 10, 10, SDA1, 1),
                                          rd("/b", 0, 10, SDB1, 2), rd("/b", 10, 10, SDB1, 3)};
    struct dsort_plan_temp_in temps[4] = {
        {"/t/sda", 8, 2}, {"/t/sdb", 8, 17}, {"/t/nvme", 259, 3}, {"/t/shm", 0, 50}};
    /* Only the disks being read: each rank spills to the other one. */
    struct dsort_plan_node *node = build(ranks, 4, reads, 4, temps, 2, 1);
    for (int r = 0; r < 4; r++) {
        const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, r);
        assert_int_equal(rk->ntemp_dirs, 1);
        assert_string_equal(node->temps[rk->temp_dirs[0]].path, r < 2 ? "/t/sdb" : "/t/sda");
    }
    assert_int_equal(node->devices[0].temps, 1);
    dsort_plan_destroy(node);

    /* Devices nobody reads win, and ranks take turns at which comes first. */
    node = build(ranks, 4, reads, 4, temps, 4, 1);
    for (int r = 0; r < 4; r++) {
        const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, r);
        assert_int_equal(rk->ntemp_dirs, 2);
        assert_string_equal(node->temps[rk->temp_dirs[0]].path, r % 2 ? "/t/shm" : "/t/nvme");
        assert_string_equal(node->temps[rk->temp_dirs[1]].path, r % 2 ? "/t/nvme" : "/t/shm");
    }
    assert_int_equal(node->ndevices, 4);
    assert_int_equal(node->devices[dsort_plan_device_find(node, "nvme0n1")].readers, 0);
    dsort_plan_destroy(node);

    /* Only the device being read: better than nothing. */
    node = build(ranks, 2, reads, 2, temps, 1, 1);
    const struct dsort_plan_rank *rk = dsort_plan_rank_find(node, 0);
    assert_int_equal(rk->ntemp_dirs, 1);
    assert_string_equal(node->temps[rk->temp_dirs[0]].path, "/t/sda");
    dsort_plan_destroy(node);
}

static void test_numa_hint_and_zero_reads(void **state)
{
    (void)state;
    resolve_all();
    devs[SDA1].numa = 0;
    devs[NVME].numa = 1;
    const int32_t ranks[2] = {0, 1};
    struct dsort_plan_read_in reads[4] = {rd("/a", 0, 100, SDA1, 0), rd("/n", 0, 300, NVME, 0),
                                          rd("/a", 100, 0, SDA1, 1), rd("/v", 0, 5, VDA1, 1)};
    struct dsort_plan_node *node = build(ranks, 2, reads, 4, NULL, 0, 2);
    assert_int_equal(dsort_plan_rank_find(node, 0)->numa, 1);
    assert_int_equal(dsort_plan_rank_find(node, 1)->numa, -1);
    assert_int_equal(node->nreads, 3); /* the empty read is dropped */
    assert_int_equal(dsort_plan_rank_find(node, 1)->ngroups, 1);
    assert_int_equal(node->devices[dsort_plan_device_find(node, "sda")].readers, 1);
    dsort_plan_destroy(node);
}

static void test_bad_input(void **state)
{
    (void)state;
    resolve_all();
    const int32_t ranks[2] = {0, 0};
    struct dsort_plan_read_in reads[1] = {rd("/a", 0, 1, SDA1, 5)};
    struct dsort_plan_input in = {0};
    in.ranks = ranks;
    in.nranks = 1;
    in.reads = reads;
    in.nreads = 1;
    struct dsort_plan_node *node = (struct dsort_plan_node *)1;
    struct dsort_error err;
    assert_int_equal(dsort_plan_build(&in, &node, &err), DSORT_EINVAL);
    assert_null(node);
    assert_non_null(strstr(err.msg, "rank 5"));
    in.nranks = 2;
    reads[0].rank = 0;
    assert_int_equal(dsort_plan_build(&in, &node, &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "twice"));
    in.nranks = 1;
    in.reads = NULL;
    assert_int_equal(dsort_plan_build(&in, &node, &err), DSORT_EINVAL);
    dsort_plan_destroy(NULL);
}

/* devs == NULL: the plan resolves st_devs itself under sysfs_root. */
static void test_resolves_itself(void **state)
{
    (void)state;
    const int32_t ranks[1] = {3};
    struct dsort_plan_read_in reads[3] = {rd("/v1", 0, 10, VDA1, 3), rd("/v2", 0, 10, VDA2, 3),
                                          rd("/l", 0, 10, TMPFS, 3)};
    reads[2].major = 7; /* loop1 */
    reads[2].minor = 1;
    struct dsort_plan_input in = {0};
    in.hostname = "n";
    in.ranks = ranks;
    in.nranks = 1;
    in.reads = reads;
    in.nreads = 3;
    in.sysfs_root = root;
    struct dsort_plan_node *node;
    assert_int_equal(dsort_plan_build(&in, &node, NULL), DSORT_OK);
    assert_int_equal(node->ndevices, 2);
    assert_string_equal(node->devices[0].dev.key, "vda");
    assert_string_equal(node->devices[1].dev.key, "loop1");
    assert_int_equal(node->devices[1].dev.numa, -1);
    dsort_plan_destroy(node);
}

static struct dsort_plan_node *sample_node(void)
{
    resolve_all();
    devs[VDA1].numa = devs[VDA2].numa = 0;
    const int32_t ranks[3] = {4, 5, 6};
    struct dsort_plan_read_in reads[5] = {
        rd("/data/in \"1\"\\\n\xff\xc3\xa9", 0, 1000, VDA1, 4), rd("/data/in2", 0, 1000, VDA2, 5),
        rd("/shm/in3", 0, 10, TMPFS, 5), rd("/shm/in3", 10, 10, TMPFS, 6),
        rd("/dm/in4", 0, 7, DM0, 6)};
    struct dsort_plan_temp_in temps[2] = {{"/shm2/tmp", 0, 51}, {"/data/tmp", 254, 1}};
    return build(ranks, 3, reads, 5, temps, 2, 4);
}

static void test_json(void **state)
{
    (void)state;
    struct dsort_plan_node *node = sample_node();
    assert_int_equal(dsort_plan_add_stats(node, "vda", 1000, 0.5), 0);
    assert_int_equal(dsort_plan_add_stats(node, "vda", 1000, 0.25), 0);
    assert_int_equal(dsort_plan_add_stats(node, "nope", 1, 1.0), -1);
    struct dsort_plan_node *nodes[2] = {node, node};
    char *json = json_of(nodes, 2);
    const char *want[] = {
        "{\"dsort_plan\": 1,",
        "\"hostname\": \"node07\"",
        "{\"key\": \"vda\", \"st_dev\": \"254:1\", \"st_devs\": [\"254:1\", \"254:2\"], "
        "\"sysfs\": [\"vda1\", \"vda2\"], \"disk\": \"vda\", \"disks\": [\"vda\"], "
        "\"kind\": \"disks\", \"rotational\": true, \"numa\": 0, \"virtual\": false, "
        "\"streams\": 1, \"readers\": 2, \"rounds\": 2, \"temps\": 1, \"bytes\": 2000, "
        "\"read_bytes\": 2000, \"read_seconds\": 0.500000}",
        "{\"key\": \"st_dev:0:50\", \"st_dev\": \"0:50\", \"st_devs\": [\"0:50\"], "
        "\"sysfs\": [\"\"], \"disk\": null, \"disks\": [], \"kind\": \"none\", "
        "\"rotational\": null, \"numa\": null",
        "\"key\": \"sda+sdb\"",
        "\"disk\": \"sda+sdb\", \"disks\": [\"sda\", \"sdb\"]",
        "{\"file\": \"/data/in \\\"1\\\"\\\\\\n\\ufffd\xc3\xa9\", \"offset\": 0, \"length\": 1000, "
        "\"st_dev\": \"254:1\", \"device\": \"vda\", \"thread\": 0}",
        "{\"device\": \"vda\", \"slot\": 0, \"turn\": 1, \"wait_for\": 4, \"pass_to\": null, "
        "\"reads\": 1, \"bytes\": 1000}",
        "{\"rank\": 6, \"numa\": null,",
        "\"temp_dirs\": [\"/shm2/tmp\"]}",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(json, want[i]))
            fail_msg("JSON lacks %s\n%s", want[i], json);
    /* Check the syntax with an independent parser when there is one. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        FILE *p = popen("/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
                        "sys.exit(0 if len(d[\"nodes\"]) == 2 else 1)'",
                        "w");
        assert_non_null(p);
        fputs(json, p);
        assert_int_equal(pclose(p), 0);
    }
    free(json);
    dsort_plan_destroy(node);
    json = json_of(NULL, 0);
    assert_string_equal(json, "{\"dsort_plan\": 1,\n \"nodes\": []}\n");
    free(json);
}

static void test_pack_unpack(void **state)
{
    (void)state;
    struct dsort_plan_node *node = sample_node();
    dsort_plan_add_stats(node, "st_dev:0:50", 20, 0.125);
    void *blob;
    size_t len;
    struct dsort_error err;
    assert_int_equal(dsort_plan_pack(node, &blob, &len, &err), DSORT_OK);
    struct dsort_plan_node *back = NULL;
    assert_int_equal(dsort_plan_unpack(blob, len, &back, &err), DSORT_OK);
    assert_int_equal(dsort_plan_check(back, &err), DSORT_OK);
    char *a = json_of(&node, 1), *b = json_of(&back, 1);
    assert_string_equal(a, b);
    free(a);
    free(b);
    dsort_plan_destroy(back);

    /* Truncated and bad magic. */
    assert_int_equal(dsort_plan_unpack(blob, len - 1, &back, &err), DSORT_EFORMAT);
    assert_null(back);
    assert_non_null(strstr(err.msg, "corrupt"));
    assert_int_equal(dsort_plan_unpack(blob, 3, &back, &err), DSORT_EFORMAT);
    unsigned char *bytes = blob;
    bytes[0] ^= 1;
    assert_int_equal(dsort_plan_unpack(blob, len, &back, &err), DSORT_EFORMAT);
    bytes[0] ^= 1;

    /* Random corruption must give EFORMAT or a plan that can be printed, never a crash. */
    unsigned seed = (unsigned)time(NULL);
    const char *env = getenv("DSORT_TEST_SEED");
    if (env)
        seed = (unsigned)strtoul(env, NULL, 10);
    srand(seed);
    unsigned char *copy = malloc(len);
    assert_non_null(copy);
    for (int round = 0; round < 300; round++) {
        memcpy(copy, blob, len);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++)
            copy[(size_t)rand() % len] ^= (unsigned char)(1u << (rand() % 8));
        back = NULL;
        enum dsort_status st = dsort_plan_unpack(copy, len, &back, &err);
        if (st != DSORT_OK && st != DSORT_EFORMAT)
            fail_msg("seed %u round %d: status %d (%s)", seed, round, (int)st, err.msg);
        if (st == DSORT_OK) {
            FILE *devnull = fopen("/dev/null", "w");
            assert_non_null(devnull);
            (void)dsort_planjson_write(devnull, (const struct dsort_plan_node *const *)&back, 1,
                                       &err);
            (void)dsort_plan_check(back, &err);
            fclose(devnull);
            dsort_plan_destroy(back);
        }
    }
    free(copy);
    free(blob);
    dsort_plan_destroy(node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_rotational_disks_four_ranks),
        cmocka_unit_test(test_ssd_streams),
        cmocka_unit_test(test_stream_policy),
        cmocka_unit_test(test_overlapping_devices_merge),
        cmocka_unit_test(test_temp_dirs),
        cmocka_unit_test(test_numa_hint_and_zero_reads),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_resolves_itself),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_pack_unpack),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
