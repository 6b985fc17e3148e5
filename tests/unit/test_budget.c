/* Unit tests for budget.h (issue 9, item 11): the cgroup memory limit read from fake
 * /proc + /sys trees (v2, nested v2, "max", v1 with memory.stat's hierarchical limit, v1
 * without mountinfo, a v1 container whose mount dsort_test_dir is its own cgroup, hybrid v1 + v2, a
 * mount point with an escaped space, no cgroup at all), and how it caps the default budget,
 * -S N% and Slurm's figure, and says so in `why`. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "budget.h"
#include "error.h"
#include "fixture.h"

#define GiB ((uint64_t)1 << 30)
#define MiB ((uint64_t)1 << 20)
#define V1_NONE "9223372036854771712"

/* Write text to dsort_test_dir/rel (the fake root of /proc and /sys), making its directories. */
static void put(const char *rel, const char *text)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dsort_test_dir, rel);
    for (char *p = path + strlen(dsort_test_dir) + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(path, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

#define MOUNT_V2 "30 22 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
#define MOUNT_V1 "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"

static uint64_t limit(int *version)
{
    return dsort_budget_cgroup_limit(dsort_test_dir, version);
}

static void test_no_cgroup(void **state)
{
    (void)state;
    int v = -1;
    assert_int_equal(limit(&v), 0);
    assert_int_equal(v, 0);
    put("proc/self/cgroup", "0::/\n");
    put("proc/self/mountinfo", MOUNT_V2);
    put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n"); /* the root has no memory.max */
    assert_int_equal(limit(&v), 0);
    struct dsort_budget b;
    struct dsort_error err;
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
    assert_string_equal(b.why, "default: 75% of 16.00 GiB node memory / 2 ranks");
}

static void test_v2(void **state)
{
    (void)state;
    put("proc/self/cgroup", "0::/user.slice/job.scope\n");
    put("proc/self/mountinfo", "22 1 0:20 / /proc rw - proc proc rw\n" MOUNT_V2);
    put("sys/fs/cgroup/user.slice/job.scope/memory.max", "2147483648\n");
    int v = 0;
    assert_int_equal(limit(&v), 2 * GiB);
    assert_int_equal(v, 2);
    struct dsort_budget b;
    struct dsort_error err;
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 2 * GiB / 4 * 3 / 2);
    assert_non_null(strstr(b.why, "75% of 2.00 GiB cgroup limit (cgroup v2; node memory "
                                  "16.00 GiB) / 2 ranks"));

    /* A limit above the node's memory changes nothing. */
    put("sys/fs/cgroup/user.slice/job.scope/memory.max", "68719476736\n");
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
    assert_null(strstr(b.why, "cgroup"));
}

static void test_v2_nested_and_max(void **state)
{
    (void)state;
    put("proc/self/cgroup", "0::/a/b/c\n");
    put("proc/self/mountinfo", MOUNT_V2);
    put("sys/fs/cgroup/a/memory.max", "4294967296\n");
    put("sys/fs/cgroup/a/b/memory.max", "1073741824\n");
    put("sys/fs/cgroup/a/b/c/memory.max", "max\n");
    assert_int_equal(limit(NULL), 1 * GiB); /* the parent's, below the leaf's "max" */
    put("sys/fs/cgroup/a/b/c/memory.max", "536870912\n");
    assert_int_equal(limit(NULL), 512 * MiB); /* the leaf's, the smallest */
    put("sys/fs/cgroup/a/b/c/memory.max", "max\n");
    put("sys/fs/cgroup/a/b/memory.max", "max\n");
    put("sys/fs/cgroup/a/memory.max", "max\n");
    int v = -1;
    assert_int_equal(limit(&v), 0); /* "max" all the way up */
    assert_int_equal(v, 0);
}

static void test_v1(void **state)
{
    (void)state;
    put("proc/self/cgroup", "9:name=systemd:/\n4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n"
                            "0::/\n");
    put("proc/self/mountinfo", MOUNT_V1);
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", V1_NONE "\n");
    put("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", V1_NONE "\n");
    put("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", V1_NONE "\n");
    put("sys/fs/cgroup/memory/docker/abc/memory.stat",
        "cache 0\nrss 0\nhierarchical_memory_limit 805306368\nhierarchical_memsw_limit " V1_NONE
        "\n");
    int v = 0;
    assert_int_equal(limit(&v), 768 * MiB);
    assert_int_equal(v, 1);
    /* Without memory.stat, the parent's limit (the walk up). */
    put("sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 0\n");
    put("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "1073741824\n");
    assert_int_equal(limit(NULL), 1 * GiB);
    /* Unlimited everywhere: none. */
    put("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", V1_NONE "\n");
    assert_int_equal(limit(NULL), 0);
}

static void test_v1_defaults_and_container(void **state)
{
    (void)state;
    /* No mountinfo: the usual mount point; memory listed with another controller. */
    put("proc/self/cgroup", "5:cpu,memory:/x\n");
    put("sys/fs/cgroup/memory/x/memory.limit_in_bytes", "3221225472\n");
    assert_int_equal(limit(NULL), 3 * GiB);
    /* A container: its own cgroup is the mount's root, mounted at the usual place. */
    put("proc/self/cgroup", "4:memory:/docker/abc\n");
    put("proc/self/mountinfo",
        "34 30 0:31 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n");
    put("sys/fs/cgroup/memory/memory.limit_in_bytes", "1610612736\n");
    assert_int_equal(limit(NULL), 1536 * MiB);
}

static void test_hybrid_and_escapes(void **state)
{
    (void)state;
    /* Hybrid: v2 at /sys/fs/cgroup/unified without the memory controller, memory on v1. */
    put("proc/self/cgroup", "4:memory:/job\n0::/job\n");
    put("proc/self/mountinfo",
        "40 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
        "34 30 0:31 / /sys/fs/cgroup/mem\\040ory rw - cgroup cgroup rw,memory\n");
    put("sys/fs/cgroup/unified/job/cgroup.procs", "1\n");
    put("sys/fs/cgroup/mem ory/job/memory.limit_in_bytes", "2147483648\n");
    int v = 0;
    assert_int_equal(limit(&v), 2 * GiB);
    assert_int_equal(v, 1);
    /* Both with a limit: the smaller. */
    put("sys/fs/cgroup/unified/job/memory.max", "1073741824\n");
    assert_int_equal(limit(&v), 1 * GiB);
    assert_int_equal(v, 2);
}

static void test_resolve_caps(void **state)
{
    (void)state;
    put("proc/self/cgroup", "0::/slurm/job\n");
    put("proc/self/mountinfo", MOUNT_V2);
    put("sys/fs/cgroup/slurm/job/memory.max", "1073741824\n");
    struct dsort_budget b;
    struct dsort_error err;
    /* -S N%: of the cgroup limit. */
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, "50%", 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, GiB / 2 / 2);
    assert_non_null(strstr(b.why, "-S 50%: 50% of 1.00 GiB cgroup limit"));
    /* -S SIZE: as given while the cgroup holds it for each rank; beyond, the default, and
     * note says so (issue 25, item 18). */
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, "512M", 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 512 * MiB);
    assert_string_equal(b.why, "-S 512M");
    assert_string_equal(b.note, "");
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, "4G", 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, GiB / 4 * 3 / 2);
    assert_non_null(strstr(b.note, "-S 4G (per rank) is more than this node can give each of "
                                   "its 2 ranks (512.00 MiB of 1.00 GiB cgroup limit)"));
    /* Slurm's figure above the cgroup limit: the cgroup's. */
    setenv("SLURM_MEM_PER_NODE", "4096", 1);
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 4, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, GiB / 4 * 3 / 4);
    assert_non_null(strstr(b.why, "cgroup limit (cgroup v2; SLURM_MEM_PER_NODE 4.00 GiB)"));
    /* Slurm's figure below it: Slurm's. */
    setenv("SLURM_MEM_PER_NODE", "512", 1);
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 4, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 512 * MiB / 5 * 4 / 4);
    assert_non_null(strstr(b.why, "80% of the Slurm allocation"));
    unsetenv("SLURM_MEM_PER_NODE");
}

/* -S beyond the node's memory for each of its ranks (issue 25, item 18): the default instead,
 * said in note; up to the share, as given. */
static void test_resolve_node_clamp(void **state)
{
    (void)state;
    struct dsort_budget b;
    struct dsort_error err;
    unsetenv("SLURM_MEM_PER_NODE");
    unsetenv("SLURM_MEM_PER_CPU");
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, "4G", 16 * GiB, 4, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 4 * GiB);
    assert_string_equal(b.note, "");
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, "50G", 16 * GiB, 4, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 3 * GiB);
    assert_non_null(strstr(b.note, "-S 50G (per rank) is more than this node can give each of its "
                                   "4 ranks (4.00 GiB of 16.00 GiB node memory): using 3.00 GiB"));
    assert_non_null(strstr(b.why, "-S 50G, more than the node's memory"));
}

/* A Slurm figure that is no memory size, or more than the node has (issue 25, item 23): the
 * node's memory instead, said in note; never a budget of petabytes. */
static void test_slurm_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "-1",       "-2048", "18446744073709551615", "99999999999999999999999",
        "4096junk", "G",     "17592186044416"};
    struct dsort_budget b;
    struct dsort_error err;
    unsetenv("SLURM_MEM_PER_CPU");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("SLURM_MEM_PER_NODE", bad[i], 1);
        assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                         DSORT_OK);
        assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
        assert_non_null(strstr(b.note, "SLURM_MEM_PER_NODE='"));
        assert_non_null(strstr(b.note, "the node's memory"));
    }
    setenv("SLURM_MEM_PER_NODE", "32G", 1); /* a valid size, but more than the node has */
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
    assert_non_null(strstr(b.note, "(32.00 GiB) is more than this node's memory (16.00 GiB)"));
    setenv("SLURM_MEM_PER_NODE", "8G", 1); /* valid: used, no note */
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 8 * GiB / 5 * 4 / 2);
    assert_string_equal(b.note, "");
    unsetenv("SLURM_MEM_PER_NODE");
    setenv("SLURM_MEM_PER_CPU", "-100", 1);
    setenv("SLURM_CPUS_ON_NODE", "4", 1);
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
    assert_non_null(strstr(b.note, "SLURM_MEM_PER_CPU='-100' is not a memory size"));
    setenv("SLURM_MEM_PER_CPU", "4611686018427387904", 1); /* x 4 cpus overflows */
    assert_int_equal(dsort_budget_resolve_at(dsort_test_dir, NULL, 16 * GiB, 2, &b, &err),
                     DSORT_OK);
    assert_int_equal(b.bytes, 16 * GiB / 4 * 3 / 2);
    assert_non_null(strstr(b.note, "SLURM_MEM_PER_CPU="));
    unsetenv("SLURM_MEM_PER_CPU");
    unsetenv("SLURM_CPUS_ON_NODE");
}

/* The process's limits (issue 25, item 16): the default is 3/4 of what the tighter of
 * RLIMIT_AS and RLIMIT_DATA leaves beyond use and the reserve; -S beyond it is cut to it, and
 * note names the limit and the -S used. */
static void test_resolve_rlimits(void **state)
{
    (void)state;
    unsetenv("SLURM_MEM_PER_NODE");
    unsetenv("SLURM_MEM_PER_CPU");
    struct dsort_budget b;
    struct dsort_error err;
    struct dsort_budget_env env = {16 * GiB, 2, GiB, 200 * MiB, 0, 0};
    const uint64_t room = (GiB - 200 * MiB - DSORT_BUDGET_RESERVE) / 4 * 3 >> 20 << 20;
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, NULL, &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, room);
    assert_non_null(strstr(b.why, "the address-space limit of this process is 1.00 GiB "
                                  "(ulimit -v 1048576), 200.00 MiB of it in use"));
    assert_string_equal(b.note, "");
    char want[200];
    snprintf(want, sizeof want,
             "-S 2G does not fit: the address-space limit of this process is "
             "1.00 GiB (ulimit -v 1048576), 200.00 MiB of it in use; using -S %lluM",
             (unsigned long long)(room >> 20));
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, "2G", &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, room);
    assert_string_equal(b.note, want);
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, "100M", &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, 100 * MiB);
    assert_string_equal(b.note, "");
    /* The data limit, when it is the tighter. */
    env.data_limit = 512 * MiB;
    env.data_used = 40 * MiB;
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, NULL, &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, (512 * MiB - 40 * MiB - DSORT_BUDGET_RESERVE) / 4 * 3 >> 20 << 20);
    assert_non_null(strstr(b.why, "(ulimit -d 524288)"));
    /* Nothing left: 1 MiB, which the pipelines refuse as too small, naming it. */
    env.data_limit = 0;
    env.as_used = GiB - MiB;
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, NULL, &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, MiB);
    /* With -S beyond the node's share too, both notes. */
    env.as_used = 200 * MiB;
    assert_int_equal(dsort_budget_resolve_env(dsort_test_dir, "100G", &env, &b, &err), DSORT_OK);
    assert_int_equal(b.bytes, room);
    assert_non_null(strstr(b.note, "is more than this node can give"));
    assert_non_null(strstr(b.note, "; -S 100G does not fit: the address-space limit"));
}

static void test_real_machine(void **state)
{
    (void)state;
    /* Whatever this machine has: no crash, and a limit (if any) the default budget obeys. */
    int v = -1;
    uint64_t cg = dsort_budget_cgroup_limit(NULL, &v);
    assert_true(v >= 0 && v <= 2);
    assert_true((cg == 0) == (v == 0));
    struct dsort_budget b;
    struct dsort_error err;
    unsetenv("SLURM_MEM_PER_NODE");
    unsetenv("SLURM_MEM_PER_CPU");
    assert_int_equal(dsort_budget_resolve(NULL, 64 * GiB, 1, &b, &err), DSORT_OK);
    if (cg && cg < 64 * GiB)
        assert_true(b.bytes <= cg);
}

/* An out-of-memory error names the address-space limit when one is set (error.c): in a child,
 * so that the limit (64 GiB: far above this test's use, so nothing fails) stays there. The
 * message says it once, and not when the message names a ulimit already. */
static void test_enomem_names_limit(void **state)
{
    (void)state;
    struct dsort_error err;
    dsort_error_clear(&err);
    DSORT_ERR(&err, DSORT_ENOMEM, ENOMEM, "out of memory for %d keys", 4096);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY &&
        getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur == RLIM_INFINITY)
        assert_null(strstr(err.msg, "ulimit"));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit lim = {(rlim_t)64 << 30, (rlim_t)64 << 30};
        if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_max < lim.rlim_max || setrlimit(RLIMIT_AS, &lim))
            _exit(77);
        struct dsort_error e;
        DSORT_ERR(&e, DSORT_ENOMEM, ENOMEM, "out of memory for %d keys", 4096);
        int ok = !strcmp(e.msg, "out of memory for 4096 keys: Cannot allocate memory (the "
                                "address-space limit of this process is 67108864 KiB: "
                                "ulimit -v 67108864)");
        DSORT_ERR(&e, DSORT_ENOMEM, 0, "cannot start a thread (ulimit -v 5)");
        ok = ok && !strcmp(e.msg, "cannot start a thread (ulimit -v 5)");
        DSORT_ERR(&e, DSORT_EIO, ENOMEM, "not a memory error");
        ok = ok && !strstr(e.msg, "ulimit");
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77)
        skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_no_cgroup, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_v2, dsort_test_dir_setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_v2_nested_and_max, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_v1, dsort_test_dir_setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_v1_defaults_and_container, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_hybrid_and_escapes, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_resolve_caps, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_resolve_node_clamp, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_slurm_bad, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(test_resolve_rlimits, dsort_test_dir_setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test(test_real_machine),
        cmocka_unit_test(test_enomem_names_limit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
