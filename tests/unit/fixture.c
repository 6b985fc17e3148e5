/* The unit tests' temporary directories (fixture.h). */
#include "fixture.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char dsort_test_dir[PATH_MAX];

int dsort_test_mkdtemp(char *buf, size_t len, const char *name)
{
    const char *t = getenv("TMPDIR");
    int n = snprintf(buf, len, "%s/dsort-test-%s-XXXXXX", t && *t ? t : "/tmp", name);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(buf) ? 0 : -1;
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

int dsort_test_rmtree(const char *path)
{
    if (access(path, F_OK) != 0 && errno == ENOENT)
        return 0;
    /* Depth first, so that each directory is empty when its turn comes. */
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void dsort_test_path(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s/%s", dsort_test_dir, name);
}

int dsort_test_dir_setup(void **state)
{
    (void)state;
    /* The program's name without "test_": dsort-test-io-XXXXXX for test_io. */
    const char *name = program_invocation_short_name;
    if (strncmp(name, "test_", 5) == 0)
        name += 5;
    if (dsort_test_mkdtemp(dsort_test_dir, sizeof dsort_test_dir, name) != 0) {
        dsort_test_dir[0] = '\0';
        return -1;
    }
    return 0;
}

int dsort_test_dir_teardown(void **state)
{
    (void)state;
    if (!dsort_test_dir[0])
        return 0;
    int rc = dsort_test_rmtree(dsort_test_dir);
    dsort_test_dir[0] = '\0';
    return rc;
}
