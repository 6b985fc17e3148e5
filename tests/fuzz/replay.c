/* replay.c - a main for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on
 * each file named, or on each file in each directory named (not recursive).
 *
 * Every ordinary build links each target with it, and ctest replays the seed corpus and the
 * regression inputs (unit.fuzz_replay): the harnesses are compiled, and their properties
 * checked, by every build, not only by the clang build of scripts/fuzz.sh. A property that
 * fails aborts (FUZZ_CHECK), which fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 4096, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    int bad = !buf || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "%s: cannot read it\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files in DIR, in name order; returns how many ran, or -1. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    long rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[n] = malloc(len))) {
            rc = -1;
            break;
        }
        snprintf(names[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (rc >= 0 && stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode))
            rc = run_file(names[i]) ? -1 : rc + 1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    long runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            perror(argv[i]);
            return 2;
        }
        long r = S_ISDIR(sb.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) ? -1 : 1;
        if (r < 0)
            return 2;
        runs += r;
    }
    if (runs == 0) {
        fprintf(stderr, "%s: no inputs replayed\n", argv[0]);
        return 2;
    }
    printf("%s: %ld inputs, every property held\n", argv[0], runs);
    return 0;
}
