/* job_plan.c - --plan's output (job_plan.h): the job's space estimate and every node's plan. */
#include "job_plan.h"

#include <inttypes.h>
#include <stdio.h>

#include "agree.h"
#include "job_space.h"
#include "job_topo.h"
#include "plan.h"
#include "planjson.h"

/* The nodes' plans as text. What a rank reads it reads only where the input is not mapped
 * (there its pages are faulted in, in the same turns), and it spills only out of core. */
static void print_text(FILE *f, struct dsort_plan_node *const *nodes, size_t n,
                       const struct dsort_job_space *sp)
{
    for (size_t i = 0; i < n; i++) {
        const struct dsort_plan_node *nd = nodes[i];
        fprintf(f, "node %s: %u cores, %u NUMA nodes\n", nd->hostname, nd->cores, nd->numa_nodes);
        for (size_t d = 0; d < nd->ndevices; d++) {
            const struct dsort_plan_device *dv = &nd->devices[d];
            char numa[16] = "?";
            if (dv->dev.numa >= 0)
                snprintf(numa, sizeof numa, "%d", dv->dev.numa);
            fprintf(f,
                    "  device %-16s st_dev %u:%u  disk %s  %s  numa %s  streams %u  readers %u\n",
                    dv->dev.key, dv->dev.major, dv->dev.minor, dv->dev.ndisks ? dv->dev.key : "-",
                    dv->dev.rotational == 1   ? "rotational"
                    : dv->dev.rotational == 0 ? "ssd"
                                              : "rotational?",
                    numa, dv->streams, dv->readers);
        }
        for (size_t r = 0; r < nd->nranks; r++) {
            const struct dsort_plan_rank *rk = &nd->ranks[r];
            fprintf(f, "  rank %d: %zu %s thread(s)\n", rk->rank, rk->ngroups,
                    sp->mapped ? "page-in" : "reading");
            for (size_t k = 0; k < rk->nreads; k++) {
                const struct dsort_plan_read *rd = &nd->reads[rk->first_read + k];
                fprintf(f, "    %s %s [%" PRIu64 ", +%" PRIu64 ") on %s, thread %u\n",
                        sp->mapped ? "map" : "read", rd->file, rd->offset, rd->length,
                        nd->devices[rd->device].dev.key, rd->thread);
            }
            for (size_t k = 0; sp->external && k < rk->ntemp_dirs; k++)
                fprintf(f, "    spill to %s\n", nd->temps[rk->temp_dirs[k]].path);
        }
    }
}

static void space_members(FILE *f, const void *sp)
{
    dsort_job_space_print(f, sp, 1);
}

int dsort_job_plan_print(const struct dsort_comm *c, struct dsort_job_topo *t,
                         const struct dsort_job_space *sp, int json)
{
    size_t n = 0;
    struct dsort_plan_node **nodes = dsort_job_topo_gather(c, t, 0, &n);
    int code = 0;
    if (c->rank == 0) {
        struct dsort_error err = {0};
        if (json) {
            if (dsort_planjson_write_with(stdout, (const struct dsort_plan_node *const *)nodes, n,
                                          space_members, sp, &err))
                code = 2;
            fputc('\n', stdout);
        } else {
            dsort_job_space_print(stdout, sp, 0);
            print_text(stdout, nodes, n, sp);
        }
        fflush(stdout);
    }
    dsort_job_topo_free_plans(nodes, n);
    return dsort_agree_code(c, code);
}
