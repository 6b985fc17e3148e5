/* The unit tests' temporary directories: one way to make them (under $TMPDIR, or /tmp when it
 * is unset or empty, so that ctest and a user's TMPDIR are honoured) and one way to remove them
 * with everything inside (no shell, no `rm -rf` through system()).
 *
 * dsort_test_dir_setup and dsort_test_dir_teardown are cmocka fixtures (setup and teardown of
 * a test or a group) for the tests that work in one directory at a time: dsort_test_dir names
 * it while it exists. They leave *state alone, so that a test's own fixture may call them and
 * keep its state. Local, single-threaded; errors return -1 with errno set (cmocka fails the
 * test). */
#ifndef DSORT_TEST_FIXTURE_H
#define DSORT_TEST_FIXTURE_H

#include <limits.h>
#include <stddef.h>

/* The directory made by dsort_test_dir_setup; "" when there is none. */
extern char dsort_test_dir[PATH_MAX];

/* Make a fresh directory $TMPDIR/dsort-test-NAME-XXXXXX (mode 0700) and put its path in buf.
 * Returns 0, or -1 with errno set (ENAMETOOLONG when buf is too small). */
int dsort_test_mkdtemp(char *buf, size_t len, const char *name);

/* Remove path and everything under it (not following symbolic links). A path that does not
 * exist is not an error. Returns 0, or -1 with errno set. */
int dsort_test_rmtree(const char *path);

/* out = dsort_test_dir "/" name (truncated to len). */
void dsort_test_path(char *out, size_t len, const char *name);

/* cmocka fixtures: make dsort_test_dir (named after the test program) and remove it. */
int dsort_test_dir_setup(void **state);
int dsort_test_dir_teardown(void **state);

#endif
