/* dsort - distributed sort of fixed-size records: mpirun -n N dsort [OPTIONS] INPUT... -o FILE
 *
 * The pipeline of one rank (docs/design.md has the picture):
 *   read its record range -> radix sort of key prefixes -> gather into a sorted run
 *   -> exact splitters (collective) -> all-to-all exchange -> k-way merge -> write -> commit
 * Memory: the input buffer A and the run buffer B (each this rank's share of the data) plus
 * 32 bytes per record for the sort. A is reused to receive, B to hold the merged output.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cleanup.h"
#include "cli.h"
#include "clock.h"
#include "exchange.h"
#include "format.h"
#include "io.h"
#include "keysort.h"
#include "mem.h"
#include "merge.h"
#include "output.h"
#include "splitters.h"

enum phase { PH_READ, PH_SORT, PH_SPLIT, PH_EXCHANGE, PH_MERGE, PH_WRITE, PH_COMMIT, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"read",  "sort",  "splitters", "exchange",
                                                  "merge", "write", "commit"};

struct options {
    struct dsort_format fmt;
    struct dsort_order ord;
    const char *output, *output_dir, *stats;
    int check, verbose, verify, no_direct;
    uint64_t memory; /* 0: default */
    uint64_t chunk;
    char **inputs;
    size_t ninputs;
};

/* Per-rank figures, gathered to rank 0 as a flat struct. */
struct rank_stats {
    double t[PH_COUNT];
    uint64_t records_in, records_out, bytes_read, bytes_written, bytes_sent, bytes_received;
    uint64_t budget, needed;
    uint64_t io_rchar, io_wchar; /* the process's own I/O counters (/proc/self/io) */
    int splitter_rounds, exchange_rounds;
    char host[64];
};

enum { OPT_FORMAT = 256, OPT_STATS, OPT_CHUNK, OPT_HELP, OPT_VERSION, OPT_VERIFY, OPT_NO_DIRECT };

static const struct option long_opts[] = {{"output", required_argument, NULL, 'o'},
                                          {"output-dir", required_argument, NULL, 'O'},
                                          {"format", required_argument, NULL, OPT_FORMAT},
                                          {"reverse", no_argument, NULL, 'r'},
                                          {"unique", no_argument, NULL, 'u'},
                                          {"stable", no_argument, NULL, 's'},
                                          {"check", no_argument, NULL, 'c'},
                                          {"memory", required_argument, NULL, 'S'},
                                          {"buffer-size", required_argument, NULL, 'S'},
                                          {"verbose", no_argument, NULL, 'v'},
                                          {"stats", required_argument, NULL, OPT_STATS},
                                          {"verify", no_argument, NULL, OPT_VERIFY},
                                          {"no-direct", no_argument, NULL, OPT_NO_DIRECT},
                                          {"exchange-chunk", required_argument, NULL, OPT_CHUNK},
                                          {"help", no_argument, NULL, OPT_HELP},
                                          {"version", no_argument, NULL, OPT_VERSION},
                                          {NULL, 0, NULL, 0}};

static void usage(void)
{
    printf("Usage: mpirun -n N dsort [OPTION]... INPUT... (-o FILE | -O DIR)\n"
           "       mpirun -n N dsort -c [OPTION]... INPUT...\n"
           "Sort fixed-size binary records (default: gensort's 100-byte records with a\n"
           "10-byte key) across the ranks of an MPI job.\n\n"
           "Output:\n"
           "  -o, --output=FILE       write one sorted file (on a file system all ranks see)\n"
           "  -O, --output-dir=DIR    write DIR/part-00000 ... (one per rank, in key order)\n"
           "                          and the manifest DIR/_SUCCESS\n"
           "Records and order:\n"
           "      --format=FMT        gensort (default) or fixed:SIZE:KEYOFF:KEYLEN\n"
           "  -r, --reverse           descending order\n"
           "  -u, --unique            keep only the first record of each run of equal keys\n"
           "  -s, --stable            equal keys keep their input order\n"
           "  -c, --check             check that the input is sorted; exit 1 if not\n"
           "Resources and reports:\n"
           "  -S, --memory=SIZE       memory budget per rank (K, M, G, T suffixes, or N%%\n"
           "                          of the node's memory shared by its ranks)\n"
           "      --verify            checksum input and output and compare them\n"
           "      --no-direct         write output through the page cache (default: O_DIRECT\n"
           "                          where the file system supports it)\n"
           "  -v, --verbose           rank 0 prints a summary: phases, throughput, balance\n"
           "      --stats=FILE        write per-rank figures as JSON\n"
           "      --exchange-chunk=SIZE  largest message of the exchange (default 256M)\n"
           "      --help              display this help and exit\n"
           "      --version           output version information and exit\n\n"
           "Exit status: 0 success, 1 -c found disorder, 2 error.\n");
}

/* Returns -1 to go on, or an exit code. */
static int parse_options(const struct dsort_comm *c, int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    dsort_format_gensort(&o->fmt);
    o->chunk = DSORT_EXCHANGE_CHUNK;
    struct dsort_error err = {0};
    int ch;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":o:O:ruscvS:", long_opts, NULL)) != -1) {
        switch (ch) {
        case 'o':
            o->output = optarg;
            break;
        case 'O':
            o->output_dir = optarg;
            break;
        case OPT_FORMAT:
            if (dsort_format_parse(optarg, &o->fmt, &err))
                return dsort_cli_usage_error(c, "%s", err.msg);
            break;
        case 'r':
            o->ord.reverse = 1;
            break;
        case 'u':
            o->ord.unique = 1;
            break;
        case 's':
            o->ord.stable = 1;
            break;
        case 'c':
            o->check = 1;
            break;
        case 'S':
            if (dsort_mem_parse_size(optarg, &o->memory, &err) || o->memory == 0)
                return dsort_cli_usage_error(c, "invalid --memory '%s'", optarg);
            break;
        case 'v':
            o->verbose = 1;
            break;
        case OPT_STATS:
            o->stats = optarg;
            break;
        case OPT_VERIFY:
            o->verify = 1;
            break;
        case OPT_NO_DIRECT:
            o->no_direct = 1;
            break;
        case OPT_CHUNK:
            if (dsort_mem_parse_size(optarg, &o->chunk, &err) || o->chunk == 0 ||
                o->chunk > (uint64_t)1 << 30)
                return dsort_cli_usage_error(c, "invalid --exchange-chunk '%s' (1 byte to 1G)",
                                             optarg);
            break;
        case OPT_HELP:
            if (c->rank == 0)
                usage();
            return 0;
        case OPT_VERSION:
            if (c->rank == 0)
                printf("dsort %s\n", DSORT_VERSION);
            return 0;
        case ':':
            return dsort_cli_usage_error(c, "option '%s' requires an argument", argv[optind - 1]);
        default:
            return dsort_cli_usage_error(c, "unrecognized option '%s'", argv[optind - 1]);
        }
    }
    o->inputs = argv + optind;
    o->ninputs = (size_t)(argc - optind);
    if (o->ninputs == 0)
        return dsort_cli_usage_error(c, "no input files");
    if (o->check && (o->output || o->output_dir))
        return dsort_cli_usage_error(c, "-c does not take an output");
    if (!o->check && !o->output == !o->output_dir)
        return dsort_cli_usage_error(c, "give exactly one of -o FILE and -O DIR");
    return -1;
}

/* The composite key of the i-th record of the sorted run: normalised key, then source rank,
 * then position. Unique across the job, and memcmp order is the output order. */
struct run_keys {
    const struct dsort_format *fmt;
    const unsigned char *run;
    uint32_t rank_code; /* rank, or ~rank when ties go downward */
    int reverse;
};

static void run_key_at(const void *ctx, uint64_t i, unsigned char *out)
{
    const struct run_keys *k = ctx;
    const size_t kl = k->fmt->key_len;
    const unsigned char *key = dsort_format_key(k->fmt, k->run + i * k->fmt->rec_size);
    if (k->reverse)
        for (size_t b = 0; b < kl; b++)
            out[b] = (unsigned char)~key[b];
    else
        memcpy(out, key, kl);
    for (int b = 0; b < 4; b++)
        out[kl + (size_t)b] = (unsigned char)(k->rank_code >> (24 - 8 * b));
    for (int b = 0; b < 8; b++)
        out[kl + 4 + (size_t)b] = (unsigned char)(i >> (56 - 8 * b));
}

static uint64_t default_budget(const struct dsort_comm *c)
{
    /* Three quarters of the node's memory, shared by the node's ranks. */
    return dsort_mem_physical() / 4 * 3 / (uint64_t)c->node_size;
}

/* -u across ranks: drop our first record if it equals the last key of the nearest
 * non-empty rank before us (each rank's run is already free of equal neighbours). */
static enum dsort_status unique_boundary(const struct dsort_comm *c, const struct options *o,
                                         unsigned char *out, uint64_t *nout,
                                         struct dsort_error *err)
{
    const size_t kl = o->fmt.key_len, rs = o->fmt.rec_size, slot = 1 + kl;
    unsigned char *mine = calloc(1, slot), *all = malloc(slot * (size_t)c->size);
    enum dsort_status st = DSORT_OK;
    if (!mine || !all)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    if (*nout) {
        mine[0] = 1;
        memcpy(mine + 1, dsort_format_key(&o->fmt, out + (*nout - 1) * rs), kl);
    }
    MPI_Allgather(mine, (int)slot, MPI_BYTE, all, (int)slot, MPI_BYTE, c->comm);
    for (int r = c->rank - 1; r >= 0 && *nout; r--) {
        const unsigned char *s = all + (size_t)r * slot;
        if (!s[0])
            continue;
        if (!memcmp(s + 1, dsort_format_key(&o->fmt, out), kl)) {
            memmove(out, out + rs, (*nout - 1) * rs);
            (*nout)--;
        }
        break;
    }
out:
    free(mine);
    free(all);
    return st;
}

/* Exchange B (the sorted run, cut by cuts) into A, then merge the pieces back into B.
 * *nout gets the number of output records in B. Collective. */
static enum dsort_status exchange_and_merge(const struct dsort_comm *c, const struct options *o,
                                            unsigned char *a, unsigned char *b, size_t bytes,
                                            const uint64_t *cuts, uint64_t *nout,
                                            struct rank_stats *stats, struct dsort_error *err)
{
    const size_t rs = o->fmt.rec_size;
    double t = dsort_clock_now();
    uint64_t *scount = calloc((size_t)c->size, sizeof *scount);
    uint64_t *rcount = calloc((size_t)c->size, sizeof *rcount);
    struct dsort_cursor *cur = calloc((size_t)c->size, sizeof *cur);
    enum dsort_status st = DSORT_OK;
    if (!scount || !rcount || !cur)
        st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    for (int r = 0; r < c->size; r++)
        scount[r] = (cuts[r + 1] - cuts[r]) * rs;
    st = dsort_exchange_counts(c->comm, scount, rcount, err);
    uint64_t rbytes = 0;
    for (int r = 0; r < c->size; r++)
        rbytes += rcount[r];
    if (!st && rbytes > bytes)
        st = DSORT_ERR(err, DSORT_EINTERNAL, 0,
                       "receiving %" PRIu64 " bytes but the buffer holds %zu", rbytes, bytes);
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    st = dsort_exchange_run(c->comm, b, scount, a, rcount, (size_t)o->chunk,
                            &stats->exchange_rounds, err);
    stats->bytes_sent = bytes - scount[c->rank];
    stats->bytes_received = rbytes - rcount[c->rank];
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    stats->t[PH_EXCHANGE] = dsort_clock_now() - t;

    /* Merge the pieces, in source-rank order so that the merge is stable. */
    t = dsort_clock_now();
    struct dsort_sink sink;
    dsort_sink_memory(&sink, b, bytes);
    uint64_t off = 0;
    for (int r = 0; r < c->size; r++) {
        dsort_cursor_memory(&cur[r], a + off, rcount[r] / rs, rs);
        off += rcount[r];
    }
    st = dsort_merge(&o->fmt, &o->ord, cur, (size_t)c->size, &sink, err);
    *nout = sink.records;
    if ((st = dsort_comm_agree(c, st, err)))
        goto out;
    if (o->ord.unique)
        st = unique_boundary(c, o, b, nout, err);
    stats->t[PH_MERGE] = dsort_clock_now() - t;
out:
    free(scount);
    free(rcount);
    free(cur);
    return st;
}

static void proc_io(uint64_t *rchar, uint64_t *wchar)
{
    *rchar = *wchar = 0;
    FILE *f = fopen("/proc/self/io", "r");
    if (!f)
        return;
    char name[64];
    unsigned long long v;
    while (fscanf(f, "%63s %llu", name, &v) == 2) {
        if (!strcmp(name, "rchar:"))
            *rchar = v;
        else if (!strcmp(name, "wchar:"))
            *wchar = v;
    }
    fclose(f);
}

static void report(const struct dsort_comm *c, const struct options *o,
                   const struct rank_stats *mine, double total_time)
{
    struct rank_stats *all = c->rank == 0 ? calloc((size_t)c->size, sizeof *all) : NULL;
    MPI_Gather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0, c->comm);
    if (c->rank != 0 || !all)
        return;
    uint64_t recs = 0, maxout = 0, bytes = 0;
    double tmax[PH_COUNT] = {0};
    for (int r = 0; r < c->size; r++) {
        recs += all[r].records_in;
        maxout = all[r].records_out > maxout ? all[r].records_out : maxout;
        for (int p = 0; p < PH_COUNT; p++)
            tmax[p] = all[r].t[p] > tmax[p] ? all[r].t[p] : tmax[p];
    }
    bytes = recs * o->fmt.rec_size;
    double avg = c->size ? (double)recs / c->size : 0;
    if (o->verbose) {
        char b1[32], b2[32];
        fprintf(stderr, "dsort: %d ranks on %s..., format %s\n", c->size, c->host, o->fmt.name);
        fprintf(stderr, "dsort: records %" PRIu64 ", bytes %" PRIu64 " (%s)\n", recs, bytes,
                dsort_mem_format(bytes, b1, sizeof b1));
        fprintf(stderr, "dsort: memory budget per rank %s, needed %s\n",
                dsort_mem_format(mine->budget, b1, sizeof b1),
                dsort_mem_format(mine->needed, b2, sizeof b2));
        fprintf(stderr, "dsort: phase seconds (slowest rank):");
        for (int p = 0; p < PH_COUNT; p++)
            fprintf(stderr, " %s %.3f", phase_names[p], tmax[p]);
        fprintf(stderr,
                "\ndsort: total %.3f s, %.1f MB/s; splitter rounds %d, exchange rounds %d\n",
                total_time, total_time > 0 ? (double)bytes / total_time / 1e6 : 0.0,
                mine->splitter_rounds, mine->exchange_rounds);
        fprintf(stderr, "dsort: balance max/avg %.4f (max %" PRIu64 " records, avg %.1f)\n",
                avg > 0 ? (double)maxout / avg : 1.0, maxout, avg);
    }
    if (o->stats) {
        FILE *f = fopen(o->stats, "w");
        if (!f) {
            dsort_comm_print(c, "cannot write stats '%s': %s", o->stats, strerror(errno));
        } else {
            fprintf(f, "{\n  \"version\": \"%s\",\n  \"ranks\": %d,\n  \"format\": \"%s\",\n",
                    DSORT_VERSION, c->size, o->fmt.name);
            fprintf(f,
                    "  \"records\": %" PRIu64 ",\n  \"bytes\": %" PRIu64
                    ",\n  \"seconds\": %.6f,\n  \"balance\": %.6f,\n  \"per_rank\": [\n",
                    recs, bytes, total_time, avg > 0 ? (double)maxout / avg : 1.0);
            for (int r = 0; r < c->size; r++) {
                const struct rank_stats *s = &all[r];
                fprintf(f, "    {\"rank\": %d, \"host\": \"%s\", \"phases\": {", r, s->host);
                for (int p = 0; p < PH_COUNT; p++)
                    fprintf(f, "%s\"%s\": %.6f", p ? ", " : "", phase_names[p], s->t[p]);
                fprintf(f,
                        "}, \"records_in\": %" PRIu64 ", \"records_out\": %" PRIu64
                        ", \"bytes_read\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                        ", \"bytes_sent\": %" PRIu64 ", \"bytes_received\": %" PRIu64
                        ", \"memory_budget\": %" PRIu64 ", \"memory_needed\": %" PRIu64
                        ", \"io_rchar\": %" PRIu64 ", \"io_wchar\": %" PRIu64
                        ", \"splitter_rounds\": %d, \"exchange_rounds\": %d}%s\n",
                        s->records_in, s->records_out, s->bytes_read, s->bytes_written,
                        s->bytes_sent, s->bytes_received, s->budget, s->needed, s->io_rchar,
                        s->io_wchar, s->splitter_rounds, s->exchange_rounds,
                        r + 1 < c->size ? "," : "");
            }
            fprintf(f, "  ]\n}\n");
            fclose(f);
        }
    }
    free(all);
}

static int run_check(const struct dsort_comm *c, const struct options *o,
                     const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    struct dsort_vsum total;
    enum dsort_status st = dsort_vsum_init(&total, &o->fmt, &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        return 2;
    st = dsort_check_inputs(c, in, &o->fmt, &o->ord, (size_t)16 << 20, &total, &err);
    int code = st ? 2 : total.unordered ? 1 : 0;
    if (!st && total.unordered && c->rank == 0) {
        /* Name the file and the record within it, as sort -c names file and line. */
        uint64_t g = total.first_unordered;
        for (size_t i = 0; i < in->count; i++)
            if (g < in->files[i].first + in->files[i].records) {
                fprintf(stderr, "%s: %s:record %" PRIu64 ": disorder\n", c->prog, in->files[i].path,
                        g - in->files[i].first);
                break;
            }
    }
    dsort_vsum_destroy(&total);
    return code;
}

/* Sum a checksum over all ranks (rank 0 gets it). */
static struct dsort_sum128 sum_all(const struct dsort_comm *c, const struct dsort_sum128 *mine)
{
    struct dsort_sum128 *all = c->rank == 0 ? calloc((size_t)c->size, sizeof *all) : NULL;
    struct dsort_sum128 total = {0, 0};
    MPI_Gather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0, c->comm);
    if (all)
        for (int r = 0; r < c->size; r++)
            dsort_sum128_merge(&total, &all[r]);
    free(all);
    MPI_Bcast(&total, (int)sizeof total, MPI_BYTE, 0, c->comm);
    return total;
}

static int run_sort(const struct dsort_comm *c, const struct options *o,
                    const struct dsort_inputs *in)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    struct rank_stats stats;
    memset(&stats, 0, sizeof stats);
    snprintf(stats.host, sizeof stats.host, "%s", c->host);
    const size_t rs = o->fmt.rec_size;
    double t0 = dsort_clock_now(), t;
    uint64_t first, n;
    dsort_io_split(in->total_records, c->rank, c->size, &first, &n);
    stats.records_in = n;

    /* Memory: A and B hold this rank's share, the sort entries 16 bytes a record (their
     * scratch lives in B, unless records are shorter than entries). */
    const size_t ent = sizeof(struct dsort_sortent);
    stats.budget = o->memory ? o->memory : default_budget(c);
    stats.needed = n * (2 * rs + ent + (rs < ent ? ent : 0)) + ((uint64_t)16 << 20);
    if (n >= DSORT_KEYSORT_MAX_RECORDS)
        st = DSORT_ERR(&err, DSORT_ENOMEM, 0, "%" PRIu64 " records on one rank is too many", n);
    else if (stats.needed > stats.budget) {
        char b1[32], b2[32];
        st = DSORT_ERR(&err, DSORT_ENOMEM, 0,
                       "the data does not fit in memory: this rank needs %s for %" PRIu64
                       " records but the memory budget is %s (-S/--memory); use more ranks or "
                       "a larger budget (sorting data larger than memory is not supported yet)",
                       dsort_mem_format(stats.needed, b1, sizeof b1), n,
                       dsort_mem_format(stats.budget, b2, sizeof b2));
    }
    if ((st = dsort_comm_agree(c, st, &err)))
        return 2;

    /* Claim the output name first: an unwritable output fails before any work is done. */
    struct dsort_output out;
    st = dsort_output_open(c, &out, o->output ? DSORT_OUTPUT_FILE : DSORT_OUTPUT_DIR,
                           o->output ? o->output : o->output_dir, n * rs, !o->no_direct, &err);
    if (st)
        return 2;

    size_t bytes = (size_t)(n * rs);
    unsigned char *a = dsort_mem_alloc(bytes), *b = dsort_mem_alloc(bytes);
    struct dsort_sortent *ents = dsort_mem_alloc(n * sizeof *ents);
    if (!a || !b || !ents)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "cannot allocate %zu bytes of buffers",
                       2 * bytes + n * sizeof *ents);
    struct dsort_sum128 sum_in = {0, 0};
    t = dsort_clock_now();
    if (!st)
        st = dsort_inputs_read(in, first, n, a, &err);
    if (!st && o->verify)
        dsort_checksum_records(&sum_in, a, n, rs);
    stats.bytes_read = bytes;
    stats.t[PH_READ] = dsort_clock_now() - t;
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;

    t = dsort_clock_now();
    /* B is free until the gather: it is the radix sort's scratch, unless records are
     * shorter than entries. */
    struct dsort_sortent *tmp =
        rs >= sizeof *tmp ? (struct dsort_sortent *)(void *)b : dsort_mem_alloc(n * sizeof *tmp);
    if (!tmp)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "cannot allocate the sort scratch");
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail;
    dsort_keysort_sort(&o->fmt, &o->ord, a, n, ents, tmp);
    if ((void *)tmp != (void *)b)
        dsort_mem_free(tmp, n * sizeof *tmp);
    dsort_keysort_gather(&o->fmt, a, ents, n, b);
    dsort_mem_free(ents, n * sizeof *ents);
    ents = NULL;
    stats.t[PH_SORT] = dsort_clock_now() - t;

    /* Exact splitters over the sorted runs. */
    t = dsort_clock_now();
    uint64_t *cuts = calloc((size_t)c->size + 1, sizeof *cuts);
    if (!cuts)
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail_cuts;
    const int desc = dsort_order_ties_descending(&o->ord);
    struct run_keys rk = {&o->fmt, b, desc ? ~(uint32_t)c->rank : (uint32_t)c->rank,
                          o->ord.reverse};
    struct dsort_splitter_keys sk = {n, o->fmt.key_len + 12, run_key_at, &rk};
    st = dsort_splitters_cut(c->comm, &sk, cuts, &stats.splitter_rounds, &err);
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail_cuts;
    stats.t[PH_SPLIT] = dsort_clock_now() - t;

    uint64_t nout = n;
    if (c->size > 1 || o->ord.unique) {
        st = exchange_and_merge(c, o, a, b, bytes, cuts, &nout, &stats, &err);
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail_cuts;
    } /* else one rank: B already holds the sorted output */
    stats.records_out = nout;

    /* With -u the output shrank: the file offsets must follow. */
    if (o->ord.unique && o->output) {
        uint64_t mine = nout * rs, before = 0;
        MPI_Exscan(&mine, &before, 1, MPI_UINT64_T, MPI_SUM, c->comm);
        out.offset = c->rank ? before : 0;
        uint64_t total = dsort_comm_sum(c, mine);
        if (c->rank == 0 && truncate(out.stage, (off_t)total))
            st = DSORT_ERR(&err, DSORT_EIO, errno, "cannot size output '%s'", out.final);
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail_cuts;
    }

    t = dsort_clock_now();
    struct dsort_part_info info = {nout, nout * rs, {0, 0}};
    if (o->output_dir || o->verify)
        dsort_checksum_records(&info.checksum, b, nout, rs);
    st = dsort_output_write(&out, b, nout * rs, 0, &err);
    stats.bytes_written = nout * rs;
    stats.t[PH_WRITE] = dsort_clock_now() - t;
    if ((st = dsort_comm_agree(c, st, &err)))
        goto fail_cuts;
    if (o->verify) {
        /* Proof that nothing was lost: same count and the same order-independent checksum. */
        struct dsort_sum128 si = sum_all(c, &sum_in), so = sum_all(c, &info.checksum);
        uint64_t nin = dsort_comm_sum(c, n), nall = dsort_comm_sum(c, nout);
        /* -u drops records by design: then there is nothing to compare. */
        if (!o->ord.unique && (si.lo != so.lo || si.hi != so.hi || nin != nall)) {
            char h1[33], h2[33];
            dsort_sum128_hex(&si, h1);
            dsort_sum128_hex(&so, h2);
            st = DSORT_ERR(&err, DSORT_EINTERNAL, 0,
                           "verification failed: input %" PRIu64
                           " records checksum %s, output %" PRIu64 " records checksum %s",
                           nin, h1, nall, h2);
        }
        if ((st = dsort_comm_agree(c, st, &err)))
            goto fail_cuts;
    }

    t = dsort_clock_now();
    st = dsort_output_commit(c, &out, &info, &err);
    stats.t[PH_COMMIT] = dsort_clock_now() - t;
    free(cuts);
    dsort_mem_free(a, bytes);
    dsort_mem_free(b, bytes);
    if (st)
        return 2;
    proc_io(&stats.io_rchar, &stats.io_wchar);
    report(c, o, &stats, dsort_clock_now() - t0);
    return 0;

fail_cuts:
    free(cuts);
fail:
    dsort_output_abandon(&out);
    dsort_mem_free(a, bytes);
    dsort_mem_free(b, bytes);
    dsort_mem_free(ents, n * sizeof *ents);
    return 2;
}

int main(int argc, char **argv)
{
    struct dsort_comm c;
    dsort_cli_start(&argc, &argv, &c, "dsort");
    struct options o;
    int code = parse_options(&c, argc, argv, &o);
    if (code >= 0)
        return dsort_cli_finish(code);

    struct dsort_error err = {0};
    struct dsort_inputs in;
    enum dsort_status st = dsort_inputs_open(&in, o.inputs, o.ninputs, &o.fmt, &err);
    if (!st && o.output && dsort_inputs_contains(&in, o.output))
        st = DSORT_ERR(&err, DSORT_EINVAL, 0,
                       "output '%s' is also an input; write to another file and rename it",
                       o.output);
    if ((st = dsort_comm_agree(&c, st, &err)))
        return dsort_cli_finish(2);
    code = o.check ? run_check(&c, &o, &in) : run_sort(&c, &o, &in);
    dsort_inputs_destroy(&in);
    return dsort_cli_finish(code);
}
