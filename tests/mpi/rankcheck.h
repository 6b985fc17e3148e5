/* rankcheck.h - the checks of the MPI tests that run without cmocka (one process a rank):
 * CHECK(cond) counts a failed condition in `failures` and prints one line naming the test, the
 * rank (`c.rank`, the test's struct dsort_comm), the place and the condition. Each test defines
 * RANKCHECK_NAME and the two variables before using it, and exits non-zero when failures > 0
 * on any rank. */
#ifndef DSORT_TESTS_RANKCHECK_H
#define DSORT_TESTS_RANKCHECK_H

#include <stdio.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s: rank %d: %s:%d: check failed: %s\n", RANKCHECK_NAME, c.rank,      \
                    __FILE__, __LINE__, #cond);                                                    \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
