/* topo_probe - a tiny program over the topology library, for the real-mount test.
 *
 *   topo_probe key PATH...
 *       one line per path: PATH<TAB>KEY<TAB>MAJ:MIN<TAB>SYSFS-NAME<TAB>KIND<TAB>ROTATIONAL
 *   topo_probe plan RANKS [-T TEMPDIR]... PATH...
 *       the JSON plan of this node with RANKS ranks, file i read by rank i % RANKS; then
 *       reads every file through dsort_devread_run and prints per-device stats on stderr.
 * Exit 0, or 1 with a message on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "blockdev.h"
#include "devread.h"
#include "hwtopo.h"
#include "plan.h"
#include "planjson.h"

static int die(const char *what, const struct dsort_error *err)
{
    fprintf(stderr, "topo_probe: %s: %s\n", what, err->msg);
    return 1;
}

static int keys(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        struct dsort_blockdev d;
        struct dsort_error err;
        if (dsort_blockdev_of_path(NULL, argv[i], &d, &err) != DSORT_OK)
            return die("key", &err);
        printf("%s\t%s\t%u:%u\t%s\t%s\t%d\n", argv[i], d.key, (unsigned)d.major, (unsigned)d.minor,
               d.name[0] ? d.name : "-", dsort_blockdev_kind_name(d.kind), (int)d.rotational);
        if (d.reason[0])
            fprintf(stderr, "topo_probe: %s: %s\n", argv[i], d.reason);
    }
    return 0;
}

static int plan(int argc, char **argv)
{
    if (argc < 1)
        return 1;
    int nranks = atoi(argv[0]);
    if (nranks < 1)
        nranks = 1;
    argc--;
    argv++;
    struct dsort_plan_temp_in temps[16];
    size_t ntemps = 0;
    while (argc >= 2 && strcmp(argv[0], "-T") == 0 && ntemps < 16) {
        struct stat sb;
        if (stat(argv[1], &sb) != 0) {
            perror(argv[1]);
            return 1;
        }
        temps[ntemps].path = argv[1];
        temps[ntemps].major = major(sb.st_dev);
        temps[ntemps].minor = minor(sb.st_dev);
        ntemps++;
        argc -= 2;
        argv += 2;
    }
    struct dsort_plan_read_in *reads = calloc((size_t)argc + 1, sizeof *reads);
    int32_t *ranks = calloc((size_t)nranks, sizeof *ranks);
    if (!reads || !ranks)
        return 1;
    for (int r = 0; r < nranks; r++)
        ranks[r] = r;
    for (int i = 0; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            return 1;
        }
        reads[i].file = argv[i];
        reads[i].offset = 0;
        reads[i].length = (uint64_t)sb.st_size;
        reads[i].major = major(sb.st_dev);
        reads[i].minor = minor(sb.st_dev);
        reads[i].rank = i % nranks;
    }
    struct dsort_error err;
    struct dsort_hwtopo *hw = NULL;
    if (dsort_hwtopo_create(&hw, NULL, &err) != DSORT_OK)
        fprintf(stderr, "topo_probe: no hwloc: %s\n", err.msg);
    struct dsort_plan_input in = {0};
    in.ranks = ranks;
    in.nranks = (size_t)nranks;
    in.reads = reads;
    in.nreads = (size_t)argc;
    in.temps = temps;
    in.ntemps = ntemps;
    in.hw = hw;
    in.policy.ssd_streams = 4;
    struct dsort_plan_node *node;
    if (dsort_plan_build(&in, &node, &err) != DSORT_OK)
        return die("plan", &err);
    if (dsort_plan_check(node, &err) != DSORT_OK)
        return die("check", &err);

    /* Read everything, one thread per device, and record the stats in the plan. */
    struct dsort_devread_req *reqs = calloc(node->nreads + 1, sizeof *reqs);
    if (!reqs)
        return 1;
    for (size_t i = 0; i < node->nreads; i++) {
        const struct dsort_plan_read *r = &node->reads[i];
        reqs[i].path = r->file;
        reqs[i].fd = -1;
        reqs[i].offset = r->offset;
        reqs[i].length = (size_t)r->length;
        reqs[i].dest = malloc(reqs[i].length ? reqs[i].length : 1);
        reqs[i].key = node->devices[r->device].dev.key;
        if (!reqs[i].dest)
            return 1;
    }
    struct dsort_devread_stat *stats;
    size_t nstats;
    if (dsort_devread_run(reqs, node->nreads, 0, NULL, &stats, &nstats, &err) != DSORT_OK)
        return die("read", &err);
    for (size_t k = 0; k < nstats; k++) {
        fprintf(stderr, "topo_probe: %s: %llu bytes in %.3f s\n", stats[k].key,
                (unsigned long long)stats[k].bytes, stats[k].seconds);
        dsort_plan_add_stats(node, stats[k].key, stats[k].bytes, stats[k].seconds);
    }
    const struct dsort_plan_node *nodes[1] = {node};
    if (dsort_planjson_write(stdout, nodes, 1, &err) != DSORT_OK)
        return die("json", &err);
    for (size_t i = 0; i < node->nreads; i++)
        free(reqs[i].dest);
    free(reqs);
    free(stats);
    dsort_plan_destroy(node);
    dsort_hwtopo_destroy(hw);
    free(reads);
    free(ranks);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "key") == 0)
        return keys(argc - 2, argv + 2);
    if (argc >= 3 && strcmp(argv[1], "plan") == 0)
        return plan(argc - 2, argv + 2);
    fprintf(stderr, "usage: topo_probe key PATH... | topo_probe plan RANKS [-T DIR]... PATH...\n");
    return 1;
}
