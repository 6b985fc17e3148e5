/* roofline_tool STATS.json RATES SHARED: the roofline (src/roofline.h) of a --stats file's
 * per-rank figures, computed by the C module from the JSON (not from the run), printed as the
 * "roofline" object dsort writes into --stats. For roofline_synth.py, which checks it against
 * tests/bench/roofline.py on synthetic files of many nodes (the cases one machine cannot run).
 * Exit 2 with a message on a bad file or rates. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_min.h"
#include "jsonstr.h"
#include "roofline.h"

#define MAXD 16

static double num(const struct dsort_json *o, const char *k)
{
    return dsort_json_number(o, k, 0);
}

/* The sum over a phase-keyed object's phases of group g. */
static double by_group(const struct dsort_json *o, int g)
{
    double s = 0;
    for (size_t i = 0; o && o->type == DSORT_JSON_OBJECT && i < o->count; i++)
        if (dsort_roofline_group_of(o->keys[i]) == g && o->items[i].type == DSORT_JSON_NUMBER)
            s += o->items[i].number;
    return s;
}

static void rank_of(const struct dsort_json *r, struct dsort_roofline_rank *k,
                    struct dsort_roofline_disk *d)
{
    const struct dsort_json *devs = dsort_json_get_type(r, "devices", DSORT_JSON_ARRAY);
    k->host = dsort_json_string(r, "host") ? dsort_json_string(r, "host") : "";
    k->disk = d;
    k->bytes_sent = num(r, "bytes_sent");
    k->bytes_received = num(r, "bytes_received");
    k->bytes_read = num(r, "bytes_read");
    for (int g = 0; g < DSORT_ROOFLINE_GROUPS; g++)
        k->seconds[g] = by_group(dsort_json_get(r, "phases"), g);
    for (size_t i = 0; devs && i < devs->count && i < MAXD; i++, k->ndisks++) {
        const struct dsort_json *v = &devs->items[i];
        d[i].name = dsort_json_string(v, "disk");
        d[i].job_bytes = num(v, "job_read_bytes") + num(v, "job_write_bytes");
        d[i].busy_seconds = num(v, "job_busy_seconds");
        for (int g = 0; g < DSORT_ROOFLINE_GROUPS; g++) {
            d[i].read[g] = by_group(dsort_json_get(v, "read_bytes"), g);
            d[i].written[g] = by_group(dsort_json_get(v, "write_bytes"), g);
        }
    }
}

int main(int argc, char **argv)
{
    struct dsort_json root;
    char why[256];
    struct dsort_error err = {0};
    static struct dsort_roofline_rates rates;
    if (argc != 4 || dsort_json_read_file(argv[1], &root, why, sizeof why)) {
        fprintf(stderr, "roofline_tool: %s\n", argc != 4 ? "usage: STATS RATES SHARED" : why);
        return 2;
    }
    if (dsort_roofline_rates_parse(&rates, argv[2], &err) ||
        dsort_roofline_shared_parse(&rates, argv[3], &err)) {
        fprintf(stderr, "roofline_tool: %s\n", err.msg);
        return 2;
    }
    const struct dsort_json *pr = dsort_json_get_type(&root, "per_rank", DSORT_JSON_ARRAY);
    const struct dsort_json *plan = dsort_json_get_type(&root, "plan", DSORT_JSON_OBJECT);
    const struct dsort_json *nodes = dsort_json_get_type(plan, "nodes", DSORT_JSON_ARRAY);
    size_t n = pr ? pr->count : 0, nn = nodes ? nodes->count : 0;
    struct dsort_roofline_rank *k = calloc(n + 1, sizeof *k);
    struct dsort_roofline_disk *d = calloc(n * MAXD + 1, sizeof *d);
    const char **hosts = calloc(nn + 1, sizeof *hosts);
    double *cores = calloc(nn + 1, sizeof *cores);
    if (!k || !d || !hosts || !cores)
        return 2;
    for (size_t i = 0; i < n; i++)
        rank_of(&pr->items[i], &k[i], &d[i * MAXD]);
    struct dsort_roofline_input in = {.rank = k,
                                      .nranks = n,
                                      .seconds = num(&root, "seconds"),
                                      .core_host = hosts,
                                      .cores = cores};
    for (size_t i = 0; i < nn; i++)
        if ((hosts[in.ncore_hosts] = dsort_json_string(&nodes->items[i], "hostname")))
            cores[in.ncore_hosts++] = dsort_json_number(&nodes->items[i], "cores", 1);
    struct dsort_roofline rl;
    if (dsort_roofline_compute(&in, &rates, &rl, &err)) {
        fprintf(stderr, "roofline_tool: %s\n", err.msg);
        return 2;
    }
    printf("{\n \"rates\": {");
    for (size_t i = 0; i < rates.n; i++) {
        printf("%s", i ? ", " : "");
        dsort_jsonstr_write(stdout, rates.key[i]);
        printf(": %.9g", rates.rate[i] / 1e6);
    }
    printf("}, \"shared_disks\": [");
    for (size_t i = 0; i < rates.nshared; i++) {
        printf("%s", i ? ", " : "");
        dsort_jsonstr_write(stdout, rates.shared[i]);
    }
    printf("],\n");
    dsort_roofline_json(stdout, &rl, "");
    printf("\n}\n");
    dsort_roofline_free(&rl);
    dsort_json_free(&root);
    free(k);
    free(d);
    free(hosts);
    free(cores);
    return 0;
}
