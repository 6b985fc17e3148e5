/* mpi/agree.h (issue 26): the helpers give every rank the same figures, and a rank that cannot
 * take part in a gather (mine NULL, len SIZE_MAX) makes every rank skip it alike, with NULL on
 * all of them, instead of leaving the others waiting in the collective. Run at 1, 2 and 3 ranks
 * under a timeout, so that a skipped collective fails as a hang. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"

static int failures;

#define RANKCHECK_NAME "test_agree"
#include "rankcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct dsort_comm c;
    dsort_comm_init(&c, MPI_COMM_WORLD, "test_agree");
    const int p = c.size, last = c.size - 1;
    CHECK(dsort_agree_min(&c, (uint64_t)c.rank + 5) == 5);
    int flags[2] = {c.rank == last, 0};
    dsort_agree_any(&c, flags, 2);
    CHECK(flags[0] == 1 && flags[1] == 0);
    CHECK(dsort_agree_code(&c, c.rank == 0 ? 7 : 1) == 7);
    char name[8] = "";
    if (c.rank == 0)
        snprintf(name, sizeof name, "job-42");
    dsort_agree_bcast(&c, name, sizeof name, "test");
    CHECK(!strcmp(name, "job-42"));
    uint64_t sum = 0, mine = (uint64_t)c.rank + 1;
    dsort_agree_reduce(&c, c.comm, &mine, &sum, 1, MPI_UINT64_T, MPI_SUM, 0, "test");
    CHECK(c.rank != 0 || sum == (uint64_t)p * (p + 1) / 2);

    /* every rank takes part */
    void *all = NULL;
    int r32 = c.rank * 10;
    CHECK(dsort_agree_allgather(&c, c.comm, &r32, sizeof r32, &all, NULL) == DSORT_OK);
    CHECK(all != NULL);
    for (int r = 0; all && r < p; r++)
        CHECK(((int *)all)[r] == r * 10);
    free(all);
    CHECK(dsort_agree_gather(&c, &r32, sizeof r32, &all, NULL) == DSORT_OK);
    CHECK((all != NULL) == (c.rank == 0));
    for (int r = 0; all && r < p; r++)
        CHECK(((int *)all)[r] == r * 10);
    free(all);
    /* rank r sends r bytes of the letter 'a' + r */
    char blob[8];
    memset(blob, 'a' + c.rank, sizeof blob);
    size_t *offs = NULL;
    CHECK(dsort_agree_gatherv(&c, blob, (size_t)c.rank, &all, &offs, NULL) == DSORT_OK);
    CHECK((all != NULL) == (c.rank == 0) && (offs != NULL) == (c.rank == 0));
    for (int r = 0; all && offs && r < p; r++) {
        CHECK(offs[r + 1] - offs[r] == (size_t)r);
        for (size_t i = offs[r]; i < offs[r + 1]; i++)
            CHECK(((char *)all)[i] == 'a' + r);
    }
    free(all);
    free(offs);

    /* the last rank cannot take part: nobody gathers, every rank gets NULL, none hangs */
    all = (void *)&c;
    CHECK(dsort_agree_allgather(&c, c.comm, c.rank == last ? NULL : &r32, sizeof r32, &all, NULL) ==
          DSORT_OK);
    CHECK(all == NULL);
    all = (void *)&c;
    CHECK(dsort_agree_allgather(&c, c.node, c.rank == last ? NULL : &r32, sizeof r32, &all, NULL) ==
          DSORT_OK);
    CHECK(all == NULL); /* (ctest runs it on one node: the last rank is on every rank's node) */
    all = (void *)&c;
    CHECK(dsort_agree_gather(&c, c.rank == last ? NULL : &r32, sizeof r32, &all, NULL) == DSORT_OK);
    CHECK(all == NULL);
    all = (void *)&c;
    offs = (size_t *)&c;
    CHECK(dsort_agree_gatherv(&c, blob, c.rank == last ? SIZE_MAX : 1, &all, &offs, NULL) ==
          DSORT_OK);
    CHECK(all == NULL && offs == NULL);
    int bad = 0;
    MPI_Allreduce(&failures, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (c.rank == 0)
        printf("test_agree: %d ranks, %s\n", p, bad ? "FAILED" : "ok");
    dsort_comm_destroy(&c);
    MPI_Finalize();
    return bad ? 1 : 0;
}
