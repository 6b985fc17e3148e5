/* fuzz_tmpfile.h - one scratch file per fuzzing process, rewritten for every input.
 *
 * It is created in $DSORT_FUZZ_TMPDIR, else /dev/shm (no disk I/O), else /tmp, and unlinked at
 * once: the code under test opens it as /proc/self/fd/N, so nothing is left behind however
 * the process ends (libFuzzer leaves with _Exit, crashes skip atexit). Header-only, like
 * fuzz_common.h.
 */
#ifndef DSORT_FUZZ_TMPFILE_H
#define DSORT_FUZZ_TMPFILE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"

/* Replace the scratch file's contents with [p, p + n); returns a path that opens it. */
static const char *fuzz_tmp_write(const unsigned char *p, size_t n)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        const char *dir = getenv("DSORT_FUZZ_TMPDIR");
        struct stat sb;
        if (!dir || !*dir)
            dir = stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) ? "/dev/shm" : "/tmp";
        char name[4096];
        snprintf(name, sizeof name, "%s/dsort-fuzz-XXXXXX", dir);
        fd = mkstemp(name);
        FUZZ_CHECK(fd >= 0, "cannot create a scratch file in %s", dir);
        unlink(name);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(fd, p + done, n - done, (off_t)done);
        FUZZ_CHECK(w > 0, "write to the scratch file");
        done += (size_t)w;
    }
    return path;
}

#endif
