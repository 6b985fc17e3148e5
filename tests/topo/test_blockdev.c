/* Unit tests for blockdev.h against a fake sysfs tree (fakesys.h): partitions, two partitions
 * of one disk, dm over two disks, dm over dm, md over two partitions, loop and its partition,
 * nvme namespace and partition, major 0, a missing root, a missing entry, broken trees, the
 * DSORT_SYSFS_ROOT override, and path -> st_dev -> device. */
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
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "fakesys.h"

static char root[PATH_MAX];

static int setup(void **state)
{
    (void)state;
    if (fakesys_tmpdir(root, sizeof root, "blockdev") != 0)
        return -1;
    return fakesys_build(root);
}

static int teardown(void **state)
{
    (void)state;
    return fakesys_remove(root);
}

static struct dsort_blockdev resolve(uint32_t maj, uint32_t min)
{
    struct dsort_blockdev d;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_equal(dsort_blockdev_resolve(root, maj, min, &d, &err), DSORT_OK);
    assert_int_equal(d.major, maj);
    assert_int_equal(d.minor, min);
    assert_int_equal(d.numa, -1);
    return d;
}

static void test_partition_resolves_to_disk(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(8, 1);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_DISKS);
    assert_string_equal(d.name, "sda1");
    assert_int_equal(d.ndisks, 1);
    assert_string_equal(d.disks[0], "sda");
    assert_string_equal(d.key, "sda");
    assert_int_equal(d.rotational, 1);
    assert_int_equal(d.disk_major[0], 8);
    assert_int_equal(d.disk_minor[0], 0);
    assert_int_equal(d.is_virtual, 0);
    assert_string_equal(d.reason, "");

    d = resolve(254, 1); /* virtio */
    assert_string_equal(d.key, "vda");
    assert_string_equal(d.name, "vda1");
    d = resolve(8, 0); /* the whole disk */
    assert_string_equal(d.key, "sda");
    assert_string_equal(d.name, "sda");
}

static void test_two_partitions_one_key(void **state)
{
    (void)state;
    struct dsort_blockdev a = resolve(254, 1), b = resolve(254, 2);
    assert_true(dsort_blockdev_same(&a, &b));
    assert_string_equal(a.key, b.key);
    assert_string_not_equal(a.name, b.name);
    struct dsort_blockdev c = resolve(8, 1), e = resolve(8, 2);
    assert_true(dsort_blockdev_same(&c, &e));
    assert_false(dsort_blockdev_same(&a, &c));
}

static void test_dm_over_two_disks(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(253, 0);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_DISKS);
    assert_string_equal(d.name, "dm-0");
    assert_int_equal(d.ndisks, 2);
    assert_string_equal(d.disks[0], "sda");
    assert_string_equal(d.disks[1], "sdb");
    assert_string_equal(d.key, "sda+sdb");
    assert_int_equal(d.disk_minor[1], 16);
    /* The disks spin, whatever dm-0's own queue says. */
    assert_int_equal(d.rotational, 1);

    struct dsort_blockdev n = resolve(253, 1); /* dm over dm */
    assert_string_equal(n.key, "sda+sdb");
    assert_string_equal(n.name, "dm-1");
}

static void test_md_over_partitions(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(9, 0);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_DISKS);
    assert_string_equal(d.key, "sda+sdb");
    struct dsort_blockdev p = resolve(8, 1);
    assert_true(dsort_blockdev_overlap(&d, &p));
    assert_false(dsort_blockdev_same(&d, &p));
    struct dsort_blockdev v = resolve(254, 0);
    assert_false(dsort_blockdev_overlap(&d, &v));
}

static void test_loop(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(7, 1);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_DISKS);
    assert_string_equal(d.key, "loop1");
    assert_int_equal(d.is_virtual, 1);
    struct dsort_blockdev p = resolve(259, 0); /* loop1p1, major 259 like the kernel's */
    assert_string_equal(p.name, "loop1p1");
    assert_string_equal(p.key, "loop1");
    assert_int_equal(p.is_virtual, 1);
    assert_int_equal(p.rotational, 1);
}

static void test_nvme(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(259, 1);
    assert_string_equal(d.key, "nvme0n1");
    assert_int_equal(d.rotational, 0);
    struct dsort_blockdev p = resolve(259, 3);
    assert_string_equal(p.name, "nvme0n1p2");
    assert_string_equal(p.key, "nvme0n1");
    assert_int_equal(p.rotational, 0);
    assert_int_equal(p.is_virtual, 0);
}

static void test_rotational_unknown(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(8, 33);
    assert_string_equal(d.key, "sdc");
    assert_int_equal(d.rotational, -1);
}

static void test_major_zero(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(0, 45);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_NODISK);
    assert_int_equal(d.ndisks, 0);
    assert_string_equal(d.key, "st_dev:0:45");
    struct dsort_blockdev e = resolve(0, 46);
    assert_false(dsort_blockdev_same(&d, &e));
    assert_false(dsort_blockdev_overlap(&d, &e));
}

static void test_missing_root(void **state)
{
    (void)state;
    char gone[PATH_MAX + 16];
    snprintf(gone, sizeof gone, "%s/not-here", root);
    struct dsort_blockdev d;
    assert_int_equal(dsort_blockdev_resolve(gone, 8, 1, &d, NULL), DSORT_OK);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_UNKNOWN);
    assert_string_equal(d.key, "st_dev:8:1");
    assert_int_equal(d.rotational, -1);
    assert_non_null(strstr(d.reason, "no sysfs"));
    assert_non_null(strstr(d.reason, "not-here"));
}

static void test_missing_entry(void **state)
{
    (void)state;
    struct dsort_blockdev d = resolve(8, 99);
    assert_int_equal(d.kind, DSORT_BLOCKDEV_UNKNOWN);
    assert_string_equal(d.key, "st_dev:8:99");
    assert_non_null(strstr(d.reason, "8:99"));
}

static void test_broken_trees(void **state)
{
    (void)state;
    /* A slave cycle ends at the depth limit instead of looping forever. */
    struct dsort_blockdev c = resolve(253, 9);
    assert_int_equal(c.kind, DSORT_BLOCKDEV_DISKS);
    assert_non_null(strstr(c.reason, "too deep"));
    /* A dangling slave: the dm device itself is the best name left. */
    struct dsort_blockdev g = resolve(253, 8);
    assert_string_equal(g.key, "dm-8");
    assert_non_null(strstr(g.reason, "ghost"));
}

static void test_root_from_env(void **state)
{
    (void)state;
    setenv("DSORT_SYSFS_ROOT", root, 1);
    assert_string_equal(dsort_blockdev_root(NULL), root);
    assert_string_equal(dsort_blockdev_root(""), root);
    assert_string_equal(dsort_blockdev_root("/elsewhere"), "/elsewhere");
    struct dsort_blockdev d;
    assert_int_equal(dsort_blockdev_resolve(NULL, 259, 3, &d, NULL), DSORT_OK);
    assert_string_equal(d.key, "nvme0n1");
    unsetenv("DSORT_SYSFS_ROOT");
    assert_string_equal(dsort_blockdev_root(NULL), "/sys");
}

static void test_of_path(void **state)
{
    (void)state;
    struct dsort_blockdev d;
    struct dsort_error err;
    dsort_error_clear(&err);
    char missing[PATH_MAX + 16];
    snprintf(missing, sizeof missing, "%s/no-such-file", root);
    assert_int_equal(dsort_blockdev_of_path(root, missing, &d, &err), DSORT_EIO);
    assert_non_null(strstr(err.msg, "no-such-file"));
    assert_int_equal(d.kind, DSORT_BLOCKDEV_UNKNOWN);

    /* A real file: its st_dev comes through whatever the fake tree says about it. */
    struct stat sb;
    assert_int_equal(stat(root, &sb), 0);
    assert_int_equal(dsort_blockdev_of_path(root, root, &d, &err), DSORT_OK);
    assert_int_equal(d.major, major(sb.st_dev));
    assert_int_equal(d.minor, minor(sb.st_dev));
    assert_true(d.key[0] != '\0');
    assert_int_equal(dsort_blockdev_resolve(root, 1, 1, NULL, &err), DSORT_EINVAL);
}

static void test_merge(void **state)
{
    (void)state;
    struct dsort_blockdev a = resolve(8, 1), n = resolve(259, 1), b = resolve(8, 17);
    dsort_blockdev_merge(&a, &n);
    assert_string_equal(a.key, "nvme0n1+sda");
    assert_int_equal(a.rotational, 1); /* sda spins */
    assert_int_equal(a.major, 8);      /* keeps its own st_dev */
    assert_string_equal(a.name, "sda1");
    dsort_blockdev_merge(&a, &b);
    assert_string_equal(a.key, "nvme0n1+sda+sdb");
    assert_int_equal(a.ndisks, 3);
    assert_int_equal(a.disk_minor[2], 16);
    assert_string_equal(dsort_blockdev_kind_name(DSORT_BLOCKDEV_NODISK), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partition_resolves_to_disk),
        cmocka_unit_test(test_two_partitions_one_key),
        cmocka_unit_test(test_dm_over_two_disks),
        cmocka_unit_test(test_md_over_partitions),
        cmocka_unit_test(test_loop),
        cmocka_unit_test(test_nvme),
        cmocka_unit_test(test_rotational_unknown),
        cmocka_unit_test(test_major_zero),
        cmocka_unit_test(test_missing_root),
        cmocka_unit_test(test_missing_entry),
        cmocka_unit_test(test_broken_trees),
        cmocka_unit_test(test_root_from_env),
        cmocka_unit_test(test_of_path),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
