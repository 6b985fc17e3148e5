/* MPI errors end the job with a message that names the rank, never silently (issue 9, item 14).
 *
 * Default: dsort_comm_check turns MPI codes into DSORT_EIO with "what: ", the name of the
 * code's class ("MPI_ERR_RANK", under Open MPI and MPICH alike) and MPI's text, one line; a
 * communicator of the test's own with MPI_ERRORS_RETURN gives such codes back (a send to a rank
 * that does not exist, a negative count); the ranks go on (agree, sum).
 * --die: after dsort_comm_init, the last rank sends to rank 5 on the job's communicator; dsort's
 * error handler must print "test_comm: rank R/P (host): an MPI call failed: MPI_ERR_RANK..."
 * and end the job (registered with a regular expression for that line). Under Open MPI's
 * default handler the job aborts with no line naming the rank.
 * --require: the last rank hands a failed code to dsort_comm_require: the same line, its text.
 * Usage: test_comm [--die|--require] */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "comm.h"

static int failures;

#define RANKCHECK_NAME "test_comm"
#include "rankcheck.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct dsort_comm c;
    dsort_comm_init(&c, MPI_COMM_WORLD, "test_comm");
    const char *mode = argc > 1 ? argv[1] : "";
    int x = 1, bad = c.size + 4;
    if (!strcmp(mode, "--die")) {
        if (c.rank == c.size - 1)
            MPI_Send(&x, 1, MPI_INT, bad, 0, c.comm); /* the handler ends the job */
        MPI_Barrier(c.comm);
        fprintf(stderr, "test_comm: rank %d: the bad send did not end the job\n", c.rank);
        dsort_comm_destroy(&c);
        MPI_Finalize();
        return 1;
    }
    struct dsort_error err;
    memset(&err, 0, sizeof err);
    CHECK(dsort_comm_check(MPI_SUCCESS, "nothing", &err) == DSORT_OK);
    CHECK(dsort_comm_check(MPI_ERR_RANK, "sending to rank 5", &err) == DSORT_EIO);
    CHECK(strstr(err.msg, "sending to rank 5: ") == err.msg);
    static const char head[] = "sending to rank 5: MPI_ERR_RANK: ";
    CHECK(strstr(err.msg, head) == err.msg);
    /* named once, though Open MPI's own text starts with it too */
    CHECK(strlen(err.msg) >= sizeof head - 1 &&
          strstr(err.msg + sizeof head - 1, "MPI_ERR_RANK") == NULL);
    if (!strcmp(mode, "--require")) {
        if (c.rank == c.size - 1)
            dsort_comm_require(&c, MPI_ERR_RANK, "sending to rank 5"); /* does not return */
        MPI_Barrier(c.comm);
        return 1;
    }
    /* A communicator of our own that returns errors: the codes come back and convert. */
    MPI_Comm mine;
    MPI_Comm_dup(MPI_COMM_WORLD, &mine);
    MPI_Comm_set_errhandler(mine, MPI_ERRORS_RETURN);
    int rc = MPI_Send(&x, 1, MPI_INT, bad, 0, mine);
    CHECK(rc != MPI_SUCCESS);
    CHECK(dsort_comm_check(rc, "sending to a rank that does not exist", &err) == DSORT_EIO);
    /* The class's name first, whatever the library's text (MPICH's is an error stack). */
    CHECK(strstr(err.msg, "sending to a rank that does not exist: MPI_ERR_RANK: ") == err.msg);
    CHECK(strchr(err.msg, '\n') == NULL);
    rc = MPI_Send(&x, -1, MPI_INT, 0, 1, mine);
    CHECK(rc != MPI_SUCCESS);
    CHECK(dsort_comm_check(rc, "sending -1 ints", &err) == DSORT_EIO);
    CHECK(strstr(err.msg, "sending -1 ints: MPI_ERR_COUNT: ") == err.msg);
    CHECK(strchr(err.msg, '\n') == NULL);
    MPI_Comm_free(&mine);
    /* dsort's communicators carry dsort's handler, not Open MPI's fatal default. */
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(c.comm, &eh);
    CHECK(eh != MPI_ERRORS_ARE_FATAL && eh != MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    CHECK(dsort_comm_agree(&c, DSORT_OK, NULL) == DSORT_OK);
    CHECK(dsort_comm_sum(&c, 1) == (uint64_t)c.size);
    int any = dsort_comm_sum(&c, (uint64_t)failures) != 0;
    if (c.rank == 0)
        printf("test_comm: %s at %d ranks\n", any ? "FAILED" : "passed", c.size);
    dsort_comm_destroy(&c);
    MPI_Finalize();
    return any;
}
