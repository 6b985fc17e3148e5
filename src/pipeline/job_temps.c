/* The job's per-job temp directories (job_topo.h): the -T dirs in the order the node's plan
 * prefers for this rank, each directory once, grouped by physical disk where the topology
 * knows them. Local; only the topology's public calls (dsort_job_topo_temp_dirs, _devices). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "job.h"
#include "job_topo.h"
#include "runfile.h"
#include "tempdir.h"

/* Does temps[i] name the same directory as an earlier entry (the same path given twice, or a
 * link to it)? GNU sort takes "-T /tmp -T /tmp"; two per-job directories of one name cannot
 * both be made, so the later one is dropped. */
static int temp_seen(char **temps, size_t i)
{
    struct stat a, b;
    if (stat(temps[i], &a))
        return 0; /* creating it will say why it cannot be used */
    for (size_t j = 0; j < i; j++)
        if (!strcmp(temps[j], temps[i]) ||
            (!stat(temps[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino))
            return 1;
    return 0;
}

char **dsort_job_temp_order(const struct dsort_job_options *o, size_t *n)
{
    char **temps = calloc(o->ntemp + 1, sizeof *temps);
    *n = 0;
    if (!temps)
        return NULL;
    /* spill to a device this rank does not read, where the node has one */
    dsort_job_topo_temp_dirs(o->topo, o, temps, n);
    size_t kept = 0;
    for (size_t i = 0; i < *n; i++)
        if (!temp_seen(temps, i))
            temps[kept++] = temps[i];
    /* (temp_seen looks at temps[0..i): each is a kept entry or the same directory as one) */
    *n = kept;
    return temps;
}

enum dsort_status dsort_job_tempdirs(const struct dsort_job_options *o, const char *job, int rank,
                                     struct dsort_tempdirs *td, struct dsort_error *err)
{
    size_t ntemps = 0;
    char **temps = dsort_job_temp_order(o, &ntemps);
    if (!temps)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    enum dsort_status st = dsort_tempdirs_create(td, temps, ntemps, job, rank, err);
    if (!st)
        dsort_job_regroup_temps(o, temps, ntemps, td);
    free(temps);
    return st;
}

void dsort_job_regroup_temps(const struct dsort_job_options *o, char *const *temps, size_t n,
                             struct dsort_tempdirs *td)
{
    uint64_t *devs = calloc(n ? n : 1, sizeof *devs);
    if (devs && dsort_job_topo_temp_devices(o->topo, temps, n, devs))
        dsort_tempdirs_regroup(td, devs);
    free(devs); /* (no memory: the st_dev grouping stays, which is correct, only coarser) */
}

size_t dsort_job_temp_disks(const struct dsort_job_options *o)
{
    size_t n = 0, ndev = 1;
    char **temps = dsort_job_temp_order(o, &n);
    uint64_t *devs = calloc(n ? n : 1, sizeof *devs);
    size_t *of = calloc(n ? n : 1, sizeof *of);
    if (temps && devs && of)
        ndev = dsort_job_topo_temp_devices(o->topo, temps, n, devs)
                   ? dsort_tempdirs_group(devs, n, of)
                   : dsort_tempdirs_count_devices(temps, n);
    free(temps);
    free(devs);
    free(of);
    return ndev < 1 ? 1 : ndev > DSORT_RUN_MAX_STRIPES ? DSORT_RUN_MAX_STRIPES : ndev;
}
