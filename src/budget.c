#include "budget.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

static uint64_t env_mb(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    /* Slurm gives megabytes, possibly with a unit letter. */
    if (*end == 'G' || *end == 'g')
        x *= 1024;
    else if (*end == 'T' || *end == 't')
        x *= 1024 * 1024;
    return (uint64_t)x << 20;
}

enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err)
{
    memset(b, 0, sizeof *b);
    if (node_ranks < 1)
        node_ranks = 1;
    char m[32];
    if (text) {
        size_t len = strlen(text);
        if (len > 1 && text[len - 1] == '%') {
            char *end;
            double pct = strtod(text, &end);
            if (end != text + len - 1 || !(pct > 0) || pct > 100)
                return DSORT_ERR(err, DSORT_EINVAL, 0,
                                 "invalid --memory '%s' (a percentage is 0-100%%)", text);
            b->bytes = (uint64_t)((double)node_memory * pct / 100.0) / (uint64_t)node_ranks;
            snprintf(b->why, sizeof b->why, "-S %s: %g%% of %s node memory / %d ranks", text, pct,
                     dsort_mem_format(node_memory, m, sizeof m), node_ranks);
        } else {
            enum dsort_status st = dsort_mem_parse_size(text, &b->bytes, err);
            if (st)
                return st;
            snprintf(b->why, sizeof b->why, "-S %s", text);
        }
        if (b->bytes == 0)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid --memory '%s' (must be > 0)", text);
        return DSORT_OK;
    }
    uint64_t node = env_mb("SLURM_MEM_PER_NODE");
    const char *src = "SLURM_MEM_PER_NODE";
    if (!node) {
        uint64_t per_cpu = env_mb("SLURM_MEM_PER_CPU");
        const char *cpus = getenv("SLURM_CPUS_ON_NODE");
        if (per_cpu) {
            node = per_cpu * (uint64_t)(cpus && atoi(cpus) > 0 ? atoi(cpus) : node_ranks);
            src = "SLURM_MEM_PER_CPU";
        }
    }
    if (node) {
        b->bytes = node / 5 * 4 / (uint64_t)node_ranks;
        snprintf(b->why, sizeof b->why, "80%% of the Slurm allocation (%s: %s) / %d ranks", src,
                 dsort_mem_format(node, m, sizeof m), node_ranks);
    } else {
        b->bytes = node_memory / 4 * 3 / (uint64_t)node_ranks;
        snprintf(b->why, sizeof b->why, "default: 75%% of %s node memory / %d ranks",
                 dsort_mem_format(node_memory, m, sizeof m), node_ranks);
    }
    return DSORT_OK;
}
