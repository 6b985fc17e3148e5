/* Unit tests for hwtopo.h: an XML topology with two NUMA nodes (one package each) and block
 * devices under each package and under the machine; locality by name and by LinuxDeviceID,
 * disks from the fake sysfs located on it, cpusets for binding, HWLOC_XMLFILE, a missing XML
 * file, and the real machine's binding state (in child processes). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blockdev.h"
#include "fakesys.h"
#include "hwtopo.h"

/* Package 0: NUMA 0, PUs 0-1, sda (8:0). Package 1: NUMA 1, PUs 2-3, nvme0n1 (259:1) and a
 * disk hwloc calls "sdx" whose LinuxDeviceID 8:16 is sysfs's sdb. Machine: vdz (254:16),
 * near both NUMA nodes, so near neither. */
static const char xml_text[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" cpuset=\"0x0000000f\" complete_cpuset=\"0x0000000f\" "
    "allowed_cpuset=\"0x0000000f\" nodeset=\"0x00000003\" complete_nodeset=\"0x00000003\" "
    "allowed_nodeset=\"0x00000003\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" "
    "complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
    "gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" complete_cpuset=\"0x00000001\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"5\"/>\n"
    "   </object>\n"
    "   <object type=\"Core\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"6\">\n"
    "    <object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" complete_cpuset=\"0x00000002\" "
    "nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" gp_index=\"7\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"20\" bridge_type=\"0-1\" depth=\"0\" "
    "bridge_pci=\"0000:[00-00]\">\n"
    "    <object type=\"PCIDev\" gp_index=\"21\" pci_busid=\"0000:00:1f.2\" pci_type=\"0106 "
    "[8086:2922] [1af4:1100] 02\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"22\" name=\"sda\" osdev_type=\"0\"><info "
    "name=\"LinuxDeviceID\" value=\"8:0\"/></object>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"Package\" os_index=\"1\" cpuset=\"0x0000000c\" "
    "complete_cpuset=\"0x0000000c\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" "
    "gp_index=\"8\">\n"
    "   <object type=\"NUMANode\" os_index=\"1\" cpuset=\"0x0000000c\" "
    "complete_cpuset=\"0x0000000c\" nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" "
    "gp_index=\"9\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"2\" cpuset=\"0x00000004\" complete_cpuset=\"0x00000004\" "
    "nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"10\">\n"
    "    <object type=\"PU\" os_index=\"2\" cpuset=\"0x00000004\" complete_cpuset=\"0x00000004\" "
    "nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"11\"/>\n"
    "   </object>\n"
    "   <object type=\"Core\" os_index=\"3\" cpuset=\"0x00000008\" complete_cpuset=\"0x00000008\" "
    "nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"12\">\n"
    "    <object type=\"PU\" os_index=\"3\" cpuset=\"0x00000008\" complete_cpuset=\"0x00000008\" "
    "nodeset=\"0x00000002\" complete_nodeset=\"0x00000002\" gp_index=\"13\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"30\" bridge_type=\"0-1\" depth=\"0\" "
    "bridge_pci=\"0000:[80-81]\">\n"
    "    <object type=\"PCIDev\" gp_index=\"31\" pci_busid=\"0000:80:00.0\" pci_type=\"0108 "
    "[144d:a808] [144d:a801] 00\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"32\" name=\"nvme0n1\" osdev_type=\"0\"><info "
    "name=\"LinuxDeviceID\" value=\"259:1\"/></object>\n"
    "    </object>\n"
    "    <object type=\"PCIDev\" gp_index=\"33\" pci_busid=\"0000:80:01.0\" pci_type=\"0106 "
    "[8086:2922] [1af4:1100] 02\" pci_link_speed=\"0.000000\">\n"
    "     <object type=\"OSDev\" gp_index=\"34\" name=\"sdx\" osdev_type=\"0\"><info "
    "name=\"LinuxDeviceID\" value=\"8:16\"/></object>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"Bridge\" gp_index=\"40\" bridge_type=\"0-1\" depth=\"0\" "
    "bridge_pci=\"0000:[40-40]\">\n"
    "   <object type=\"PCIDev\" gp_index=\"41\" pci_busid=\"0000:40:00.0\" pci_type=\"0100 "
    "[1af4:1001] [1af4:0002] 00\" pci_link_speed=\"0.000000\">\n"
    "    <object type=\"OSDev\" gp_index=\"42\" name=\"vdz\" osdev_type=\"0\"><info "
    "name=\"LinuxDeviceID\" value=\"254:16\"/></object>\n"
    "   </object>\n"
    "  </object>\n"
    " </object>\n"
    "</topology>\n";

static char dir[PATH_MAX], xml[PATH_MAX + 16], sys[PATH_MAX + 16];
static struct dsort_hwtopo *topo;

static int setup(void **state)
{
    (void)state;
    unsetenv("HWLOC_XMLFILE");
    if (fakesys_tmpdir(dir, sizeof dir, "hwtopo") != 0)
        return -1;
    snprintf(xml, sizeof xml, "%s/two-numa.xml", dir);
    snprintf(sys, sizeof sys, "%s/sys", dir);
    if (fakesys_write(xml, xml_text) != 0)
        return -1;
    if (mkdir(sys, 0755) != 0 || fakesys_build(sys) != 0)
        return -1;
    struct dsort_error err;
    if (dsort_hwtopo_create(&topo, xml, &err) != DSORT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    dsort_hwtopo_destroy(topo);
    return fakesys_remove(dir);
}

static void test_counts(void **state)
{
    (void)state;
    assert_int_equal(dsort_hwtopo_cores(topo), 4);
    assert_int_equal(dsort_hwtopo_pus(topo), 4);
    assert_int_equal(dsort_hwtopo_numa_count(topo), 2);
    assert_int_equal(dsort_hwtopo_numa_index(topo, 0), 0);
    assert_int_equal(dsort_hwtopo_numa_index(topo, 1), 1);
    assert_int_equal(dsort_hwtopo_numa_index(topo, 2), -1);
    assert_non_null(strstr(dsort_hwtopo_source(topo), "two-numa.xml"));
}

static void test_blocks(void **state)
{
    (void)state;
    assert_int_equal(dsort_hwtopo_block_count(topo), 4);
    const char *names[4] = {"sda", "nvme0n1", "sdx", "vdz"};
    int numa[4] = {0, 1, 1, -1};
    unsigned maj[4] = {8, 259, 8, 254}, min[4] = {0, 1, 16, 16};
    for (size_t i = 0; i < 4; i++) {
        const struct dsort_hwtopo_block *b = dsort_hwtopo_block_get(topo, i);
        assert_non_null(b);
        assert_string_equal(b->name, names[i]);
        assert_int_equal(b->numa, numa[i]);
        assert_int_equal(b->has_devid, 1);
        assert_int_equal(b->major, maj[i]);
        assert_int_equal(b->minor, min[i]);
    }
    assert_null(dsort_hwtopo_block_get(topo, 4));
}

static void test_numa_of(void **state)
{
    (void)state;
    assert_int_equal(dsort_hwtopo_numa_of(topo, "sda", 0, 0), 0);
    assert_int_equal(dsort_hwtopo_numa_of(topo, "nvme0n1", 0, 0), 1);
    assert_int_equal(dsort_hwtopo_numa_of(topo, "sdb", 8, 16), 1); /* by LinuxDeviceID */
    assert_int_equal(dsort_hwtopo_numa_of(topo, NULL, 259, 1), 1);
    assert_int_equal(dsort_hwtopo_numa_of(topo, "vdz", 0, 0), -1);
    assert_int_equal(dsort_hwtopo_numa_of(topo, "loop1", 7, 1), -1);
    assert_int_equal(dsort_hwtopo_numa_of(NULL, "sda", 8, 0), -1);
}

static int located(uint32_t maj, uint32_t min)
{
    struct dsort_blockdev d;
    assert_int_equal(dsort_blockdev_resolve(sys, maj, min, &d, NULL), DSORT_OK);
    dsort_hwtopo_locate(topo, &d);
    return d.numa;
}

static void test_locate_sysfs_disks(void **state)
{
    (void)state;
    assert_int_equal(located(8, 1), 0);    /* sda1 -> sda */
    assert_int_equal(located(259, 3), 1);  /* nvme0n1p2 -> nvme0n1 */
    assert_int_equal(located(8, 17), 1);   /* sdb1 -> sdb = hwloc's sdx by dev number */
    assert_int_equal(located(253, 0), -1); /* dm over sda (NUMA 0) and sdb (NUMA 1) */
    assert_int_equal(located(7, 1), -1);   /* loop: hwloc does not list it */
    assert_int_equal(located(0, 40), -1);  /* tmpfs */
    assert_int_equal(located(8, 99), -1);  /* unknown */
    struct dsort_blockdev d;
    assert_int_equal(dsort_blockdev_resolve(sys, 8, 1, &d, NULL), DSORT_OK);
    dsort_hwtopo_locate(NULL, &d);
    assert_int_equal(d.numa, -1);
}

static void test_cpusets(void **state)
{
    (void)state;
    char buf[64];
    struct dsort_error err;
    assert_int_equal(dsort_hwtopo_numa_cpuset(topo, 0, buf, sizeof buf, &err), DSORT_OK);
    assert_string_equal(buf, "0-1");
    assert_int_equal(dsort_hwtopo_numa_cpuset(topo, 1, buf, sizeof buf, &err), DSORT_OK);
    assert_string_equal(buf, "2-3");
    assert_int_equal(dsort_hwtopo_numa_cpuset(topo, 5, buf, sizeof buf, &err), DSORT_EINVAL);
    assert_non_null(strstr(err.msg, "NUMA node 5"));
    assert_int_equal(dsort_hwtopo_numa_cpuset(topo, -1, buf, sizeof buf, NULL), DSORT_EINVAL);
    assert_int_equal(dsort_hwtopo_numa_cpuset(topo, 1, buf, 3, &err), DSORT_EINVAL);
}

static void test_xml_from_env(void **state)
{
    (void)state;
    setenv("HWLOC_XMLFILE", xml, 1);
    struct dsort_hwtopo *t = NULL;
    struct dsort_error err;
    assert_int_equal(dsort_hwtopo_create(&t, NULL, &err), DSORT_OK);
    unsetenv("HWLOC_XMLFILE");
    assert_non_null(strstr(dsort_hwtopo_source(t), "two-numa.xml"));
    assert_int_equal(dsort_hwtopo_numa_count(t), 2);
    assert_int_equal(dsort_hwtopo_numa_of(t, "nvme0n1", 0, 0), 1);
    dsort_hwtopo_destroy(t);
    dsort_hwtopo_destroy(NULL);
}

static void test_missing_xml(void **state)
{
    (void)state;
    char gone[PATH_MAX + 32];
    snprintf(gone, sizeof gone, "%s/no-such.xml", dir);
    struct dsort_hwtopo *t = (struct dsort_hwtopo *)1;
    struct dsort_error err;
    dsort_error_clear(&err);
    assert_int_not_equal(dsort_hwtopo_create(&t, gone, &err), DSORT_OK);
    assert_null(t);
    assert_non_null(strstr(err.msg, "no-such.xml"));
}

/* Run fn in a child so that binding changes stay there; returns its exit status. */
static int in_child(int (*fn)(struct dsort_hwtopo *), struct dsort_hwtopo *t)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(fn(t));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

static int bind_to_first_cpu(struct dsort_hwtopo *t)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 10;
    int first = -1;
    for (int i = 0; i < CPU_SETSIZE && first < 0; i++)
        if (CPU_ISSET(i, &set))
            first = i;
    CPU_ZERO(&set);
    CPU_SET(first, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return 11;
    char buf[64];
    int bound = dsort_hwtopo_bound(t, buf, sizeof buf);
    char want[16];
    snprintf(want, sizeof want, "%d", first);
    return bound == 1 && strcmp(buf, want) == 0 ? 0 : 12;
}

static int bind_to_numa0(struct dsort_hwtopo *t)
{
    struct dsort_error err;
    int numa = dsort_hwtopo_numa_index(t, 0);
    if (dsort_hwtopo_bind(t, numa, &err) != DSORT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 20;
    }
    /* Bound now unless NUMA node 0 holds every usable PU. */
    char near[256], cur[256];
    if (dsort_hwtopo_numa_cpuset(t, numa, near, sizeof near, &err) != DSORT_OK)
        return 21;
    int bound = dsort_hwtopo_bound(t, cur, sizeof cur);
    if (strcmp(near, cur) != 0)
        return 22;
    return bound == 0 || bound == 1 ? 0 : 23;
}

static void test_real_machine_binding(void **state)
{
    (void)state;
    struct dsort_hwtopo *t = NULL;
    struct dsort_error err;
    assert_int_equal(dsort_hwtopo_create(&t, NULL, &err), DSORT_OK);
    assert_string_equal(dsort_hwtopo_source(t), "this system");
    assert_true(dsort_hwtopo_pus(t) >= 1);
    assert_true(dsort_hwtopo_numa_count(t) >= 1);
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    char buf[256];
    int bound = dsort_hwtopo_bound(t, buf, sizeof buf);
    if ((unsigned)CPU_COUNT(&set) >= dsort_hwtopo_pus(t))
        assert_int_equal(bound, 0); /* not started under taskset or a binding launcher */
    else
        assert_int_equal(bound, 1);
    if (CPU_COUNT(&set) >= 2)
        assert_int_equal(in_child(bind_to_first_cpu, t), 0);
    assert_int_equal(in_child(bind_to_numa0, t), 0);
    dsort_hwtopo_destroy(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),      cmocka_unit_test(test_blocks),
        cmocka_unit_test(test_numa_of),     cmocka_unit_test(test_locate_sysfs_disks),
        cmocka_unit_test(test_cpusets),     cmocka_unit_test(test_xml_from_env),
        cmocka_unit_test(test_missing_xml), cmocka_unit_test(test_real_machine_binding),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
