/* dsort-typedkey-bench - the cost of normalising typed keys (typedkey.h), one thread:
 *
 *   dsort-typedkey-bench [MB] [REPEATS]     (default 1024 MB of 32-byte records, best of 3)
 *
 * Each line is ns per record, the best of REPEATS passes over the same records:
 *   key memcpy       the 8 bytes at offset 0 of each record to an array of keys (the floor:
 *                    what taking a raw 8-byte key costs)
 *   normalize u64le  dsort_typedkey_normalize of "-k 0:u64le" into the same array
 *   normalize 3 keys "-k 8:f64le -k 16:i32be:r -k 0:u64le" (20-byte normalised keys)
 *   record memcpy    each record to a 40-byte slot (the floor of widening)
 *   widen f64le      dsort_typedkey_widen "-k 0:f64le": normkey || record, 40 bytes
 *   widen u64le      dsort_typedkey_widen "-k 0:u64le": an integer key is normalised in
 *                    place (wide_prefix 0): the records copied, 32 bytes, their keys swapped
 *   in place u64le   dsort_typedkey_widen_inplace "-k 0:u64le" over records in a buffer (what
 *                    the pipeline's reader does after its read: no copy)
 * Speed is printed, never asserted.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "typedkey.h"

#define REC 32

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t sink;

enum what { KEY_MEMCPY, NORMALIZE, RECORD_MEMCPY, WIDEN, INPLACE };

static double pass(enum what w, const struct dsort_typedkey *tk, const unsigned char *in, size_t n,
                   unsigned char *out)
{
    double t0 = now();
    const size_t nl = tk->norm_len;
    switch (w) {
    case KEY_MEMCPY:
        for (size_t i = 0; i < n; i++)
            memcpy(out + i * 8, in + i * REC, 8);
        break;
    case NORMALIZE:
        for (size_t i = 0; i < n; i++)
            dsort_typedkey_normalize(tk, in + i * REC, out + i * nl);
        break;
    case RECORD_MEMCPY:
        for (size_t i = 0; i < n; i++)
            memcpy(out + i * (REC + 8), in + i * REC, REC);
        break;
    case WIDEN:
        dsort_typedkey_widen(tk, in, n, out);
        break;
    case INPLACE:
        dsort_typedkey_widen_inplace(tk, out, n);
        break;
    }
    double t = now() - t0;
    sink += out[(n / 2) * 8]; /* keep the stores */
    return t;
}

static void key_set(struct dsort_typedkey *tk, const char *const *specs, size_t k)
{
    struct dsort_error err;
    dsort_typedkey_init(tk);
    for (size_t i = 0; i < k; i++)
        if (dsort_typedkey_add(tk, specs[i], &err)) {
            fprintf(stderr, "%s\n", err.msg);
            exit(2);
        }
    if (dsort_typedkey_finish(tk, REC, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 1024;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    size_t n = (mb << 20) / REC;
    unsigned char *in = malloc(n * REC), *out = malloc(n * (REC + 8));
    if (!in || !out || reps < 1 || n == 0) {
        fprintf(stderr, "usage: dsort-typedkey-bench [MB] [REPEATS] (or out of memory)\n");
        return 2;
    }
    uint64_t x = 88172645463325252u;
    for (size_t i = 0; i < n * REC; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        memcpy(in + i, &x, 8);
    }
    memset(out, 0, n * (REC + 8)); /* fault the pages in before timing */
    static const char *one[] = {"0:u64le"}, *three[] = {"8:f64le", "16:i32be:r", "0:u64le"},
                      *fl[] = {"0:f64le"};
    struct dsort_typedkey tk1, tk3, tkf;
    key_set(&tk1, one, 1);
    key_set(&tk3, three, 3);
    key_set(&tkf, fl, 1);
    const struct {
        const char *name;
        enum what w;
        const struct dsort_typedkey *tk;
    } runs[] = {{"key memcpy", KEY_MEMCPY, &tk1},      {"normalize u64le", NORMALIZE, &tk1},
                {"normalize 3 keys", NORMALIZE, &tk3}, {"record memcpy", RECORD_MEMCPY, &tk1},
                {"widen f64le", WIDEN, &tkf},          {"widen u64le", WIDEN, &tk1},
                {"in place u64le", INPLACE, &tk1}};
    printf("%zu records of %d bytes (%zu MB), best of %d\n", n, REC, mb, reps);
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        double best = 1e30;
        for (int i = 0; i < reps; i++) {
            double t = pass(runs[r].w, runs[r].tk, in, n, out);
            best = t < best ? t : best;
        }
        printf("%-17s %6.2f ns/record  %7.0f MB/s of records\n", runs[r].name,
               best * 1e9 / (double)n, (double)(n * REC) / best / 1e6);
    }
    free(in);
    free(out);
    return sink == 42 ? 1 : 0;
}
