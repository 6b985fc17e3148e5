/* lib.hostile: libdsort called carelessly (dsort.h's contract, case by case, at any rank
 * count): a NULL layout on one rank, record sizes near SIZE_MAX (a division by zero once:
 * SIGFPE inside a library that promises never to abort), counts whose bytes overflow, zero
 * records everywhere (*out must then be NULL, as dsort.h says), NULL out and n_out,
 * MPI_COMM_SELF, and bad typed-key lists (on every rank, or differing between ranks). Every rank
 * must return the same code, the same on every rank, and never crash or hang. Prints one line per
 * failed check; exit 0 if every check passed, else 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsort.h"

static int rank, size, failed;
static char last_msg[256]; /* refused()'s error message */

static void check(const char *what, int ok)
{
    if (!ok) {
        printf("rank %d: FAIL: %s\n", rank, what);
        failed = 1;
    }
}

/* The code must be the same on every rank. */
static void same_everywhere(const char *what, int rc)
{
    int lo = rc, hi = rc;
    MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check(what, lo == hi);
}

/* A call that must fail with code want on every rank, leaving *out NULL and *n_out 0. */
static void refused(const char *what, int want, const struct dsort_records *f, const void *in,
                    size_t n)
{
    void *out = (void *)&out;
    size_t no = 7;
    struct dsort_errinfo e;
    int rc = dsort_sort(MPI_COMM_WORLD, f, in, n, &out, &no, &e);
    char buf[300];
    snprintf(buf, sizeof buf, "%s: code %d (want %d), out %p, n_out %zu, '%s'", what, rc, want, out,
             no, e.msg);
    check(buf, rc == want && !out && no == 0 && e.code == rc && e.msg[0]);
    snprintf(last_msg, sizeof last_msg, "%s", e.msg);
    same_everywhere(what, rc);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned char buf[64] = {0};

    /* Record sizes whose rec_size + 32 wraps to 0 (or to little) in the overflow check. */
    struct dsort_records wrap0 = {SIZE_MAX - 31, 0, 1, 0, NULL};
    refused("record size SIZE_MAX - 31, no records", DSORT_ERR_ARG, &wrap0, NULL, 0);
    refused("record size SIZE_MAX - 31, one record", DSORT_ERR_ARG, &wrap0, buf, 1);
    struct dsort_records huge = {SIZE_MAX, 0, SIZE_MAX, 0, NULL};
    refused("record size SIZE_MAX", DSORT_ERR_ARG, &huge, buf, 1);
    struct dsort_records half = {SIZE_MAX / 2 + 1, 0, 1, 0, NULL};
    refused("record size SIZE_MAX / 2 + 1, two records", DSORT_ERR_ARG, &half, buf, 2);
    /* A NULL layout on the last rank only (the others' is huge on rank 0 alone). */
    struct dsort_records good = {8, 0, 8, 0, NULL};
    refused("a NULL layout on the last rank", DSORT_ERR_ARG,
            rank == size - 1 ? NULL
            : rank == 0      ? &wrap0
                             : &good,
            buf, 0);
    /* More records than any buffer can hold. */
    refused("2^62 records of 8 bytes", DSORT_ERR_ARG, &good, buf, (size_t)1 << 62);

    /* Bad typed keys (the message must name the bad key), on every rank or on the last only. */
    static const char *const bad_keys[] = {"0:u64",
                                           "0:u64le,",
                                           ",0:u64le",
                                           "0:u64le,,8:u8",
                                           "0:u64le:x",
                                           "4:u64le",
                                           "0:bytes",
                                           "0:u8:2",
                                           "0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,"
                                           "0:u8,0:u8,0:u8,0:u8,0:u8,0:u8,0:u8"};
    for (size_t i = 0; i < sizeof bad_keys / sizeof *bad_keys; i++) {
        struct dsort_records k = {8, 0, 0, 0, bad_keys[i]};
        char what[200];
        snprintf(what, sizeof what, "keys '%.100s'", bad_keys[i]);
        refused(what, DSORT_ERR_ARG, &k, buf, 1);
        char named[300];
        snprintf(named, sizeof named, "%s: the message names no bad key: '%s'", what, last_msg);
        check(named, strstr(last_msg, "rank 0: bad key") != NULL);
    }
    struct dsort_records typed = {8, 0, 0, 0, "0:u64le"}, other = {8, 0, 0, 0, "0:i64le:r"};
    if (size > 1) { /* a layout differing between ranks */
        refused("keys '0:i64le:r' on the last rank, '0:u64le' elsewhere", DSORT_ERR_ARG,
                rank == size - 1 ? &other : &typed, buf, 1);
        char differ[300];
        snprintf(differ, sizeof differ, "differing keys: '%s'", last_msg);
        check(differ, strstr(last_msg, "keys differ from rank 0's: '0:i64le:r' here, "
                                       "'0:u64le' on rank 0") != NULL);
        refused("raw bytes on the last rank, typed keys elsewhere", DSORT_ERR_ARG,
                rank == size - 1 ? &good : &typed, buf, 1);
    }
    /* A huge record with a key that fits: refused for its size, never a wrapped allocation. */
    struct dsort_records huge_typed = {SIZE_MAX - 31, 0, 0, 0, "0:f64le"};
    refused("record size SIZE_MAX - 31 with a typed key", DSORT_ERR_ARG, &huge_typed, buf, 1);

    /* Zero records on every rank: success, and *out NULL as dsort.h says. */
    void *out = (void *)&out;
    size_t no = 7;
    struct dsort_errinfo e;
    int rc = dsort_sort(MPI_COMM_WORLD, &good, NULL, 0, &out, &no, &e);
    char msg[200];
    snprintf(msg, sizeof msg, "no records anywhere: code %d, out %p, n_out %zu", rc, out, no);
    check(msg, rc == DSORT_SUCCESS && out == NULL && no == 0);
    free(out);
    /* The same on MPI_COMM_SELF (the one-rank path). */
    out = (void *)&out;
    rc = dsort_sort(MPI_COMM_SELF, &good, NULL, 0, &out, &no, &e);
    snprintf(msg, sizeof msg, "no records on MPI_COMM_SELF: code %d, out %p, n_out %zu", rc, out,
             no);
    check(msg, rc == DSORT_SUCCESS && out == NULL && no == 0);
    free(out);

    /* NULL out, n_out and err: the sort runs, its result is dropped. */
    uint64_t recs[3] = {3, 1, 2};
    rc = dsort_sort(MPI_COMM_WORLD, &good, recs, 3, NULL, NULL, NULL);
    check("NULL out, n_out and err", rc == DSORT_SUCCESS);
    same_everywhere("NULL out, n_out and err", rc);

    /* MPI_COMM_SELF with records: each rank sorts its own. */
    rc = dsort_sort(MPI_COMM_SELF, &good, recs, 3, &out, &no, &e);
    /* little-endian words 1, 2, 3 compare as their first bytes do */
    const uint64_t want[3] = {1, 2, 3};
    check("MPI_COMM_SELF: 3 records, sorted",
          rc == DSORT_SUCCESS && no == 3 && out && !memcmp(out, want, sizeof want));
    free(out);

    /* Typed keys, little-endian and descending: each rank sorts its own on MPI_COMM_SELF. */
    const uint64_t le[3] = {256, 1, 2}, want_desc[3] = {256, 2, 1};
    struct dsort_records desc = {8, 0, 0, 0, "0:u64le:r"};
    rc = dsort_sort(MPI_COMM_SELF, &desc, le, 3, &out, &no, &e);
    check("MPI_COMM_SELF: 3 records by 0:u64le:r",
          rc == DSORT_SUCCESS && no == 3 && out && !memcmp(out, want_desc, sizeof want_desc));
    free(out);

    int all = failed;
    MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("lib.hostile: %s\n", all ? "FAILED" : "all checks passed");
    MPI_Finalize();
    return all ? 1 : 0;
}
