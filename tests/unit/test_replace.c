/* replace.h: the commit of -o keeps another program's file that took the name meanwhile, and
 * replaces only the file seen at the start (or creates the name when it was absent). Each case
 * plays the other job with a plain rename between "seen" and the commit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "replace.h"

static char stage[PATH_MAX], target[PATH_MAX], other[PATH_MAX];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void expect_text(const char *path, const char *text)
{
    char buf[64] = "";
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    assert_string_equal(buf, text);
}

static struct dsort_replace_seen seen_now(void)
{
    struct stat sb;
    struct dsort_replace_seen s = {0, 0, 0};
    if (!lstat(target, &sb))
        s = (struct dsort_replace_seen){1, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino};
    return s;
}

static int setup(void **state)
{
    if (dsort_test_dir_setup(state))
        return -1;
    dsort_test_path(stage, sizeof stage, ".stage");
    dsort_test_path(target, sizeof target, "sorted");
    dsort_test_path(other, sizeof other, ".other");
    return 0;
}

static void commit(const struct dsort_replace_seen *seen, int want_overtaken)
{
    struct dsort_error err = {0};
    int overtaken = -1;
    assert_int_equal(dsort_replace_commit(stage, target, "sorted", seen, &overtaken, &err),
                     DSORT_OK);
    assert_int_equal(overtaken, want_overtaken);
}

static void absent_commits(void **state)
{
    (void)state;
    const struct dsort_replace_seen seen = seen_now();
    put(stage, "ours");
    commit(&seen, 0);
    expect_text(target, "ours");
    assert_int_equal(access(stage, F_OK), -1);
}

static void absent_then_created_is_kept(void **state)
{
    (void)state;
    const struct dsort_replace_seen seen = seen_now();
    put(stage, "ours");
    put(other, "theirs");
    assert_int_equal(rename(other, target), 0); /* the other job commits first */
    commit(&seen, 1);
    expect_text(target, "theirs");
    expect_text(stage, "ours"); /* left for the caller to remove */
}

static void seen_is_replaced(void **state)
{
    (void)state;
    put(target, "old");
    const struct dsort_replace_seen seen = seen_now();
    put(stage, "ours");
    commit(&seen, 0);
    expect_text(target, "ours");
    assert_int_equal(access(stage, F_OK), -1); /* the old file is gone, not left as a temp */
}

static void seen_then_replaced_is_kept(void **state)
{
    (void)state;
    put(target, "old");
    const struct dsort_replace_seen seen = seen_now();
    put(stage, "ours");
    put(other, "theirs");
    assert_int_equal(rename(other, target), 0);
    commit(&seen, 2);
    expect_text(target, "theirs"); /* swapped back */
    expect_text(stage, "ours");
}

static void seen_then_removed_commits(void **state)
{
    (void)state;
    put(target, "old");
    const struct dsort_replace_seen seen = seen_now();
    assert_int_equal(unlink(target), 0); /* the user removed the old output */
    put(stage, "ours");
    commit(&seen, 0);
    expect_text(target, "ours");
}

static void missing_stage_is_an_error(void **state)
{
    (void)state;
    const struct dsort_replace_seen seen = seen_now();
    struct dsort_error err = {0};
    int overtaken = -1;
    assert_int_equal(dsort_replace_commit(stage, target, "sorted", &seen, &overtaken, &err),
                     DSORT_EIO);
    assert_non_null(strstr(err.msg, "'sorted'"));
    assert_int_equal(access(target, F_OK), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(absent_commits, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(absent_then_created_is_kept, setup,
                                        dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(seen_is_replaced, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(seen_then_replaced_is_kept, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(seen_then_removed_commits, setup, dsort_test_dir_teardown),
        cmocka_unit_test_setup_teardown(missing_stage_is_an_error, setup, dsort_test_dir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
