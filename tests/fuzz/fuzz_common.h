/* fuzz_common.h - what the libFuzzer targets share: a check that aborts (so that libFuzzer
 * saves the input), line decoding, and the properties every struct dsort_keys order must have.
 *
 * Header-only (static functions): each target is one translation unit linked with dsort_core.
 */
#ifndef DSORT_FUZZ_COMMON_H
#define DSORT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

/* A failed property: print what and where, then abort so that libFuzzer keeps the input. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property failed: %s\n  ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* DSORT_FUZZ_VERBOSE=1: targets say what they did with each input (to check the seeds). */
static inline int fuzz_verbose(void)
{
    static int v = -1;
    if (v < 0) {
        const char *e = getenv("DSORT_FUZZ_VERBOSE");
        v = e && *e && *e != '0';
    }
    return v;
}

static inline int fuzz_sign(int v)
{
    return (v > 0) - (v < 0);
}

/* Print bytes C-escaped, for failure messages. */
static inline void fuzz_print(const char *name, const unsigned char *p, size_t n)
{
    fprintf(stderr, "  %s (%zu bytes): \"", name, n);
    for (size_t i = 0; i < n && i < 400; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
            fputc(p[i], stderr);
        else
            fprintf(stderr, "\\x%02x", p[i]);
    }
    fprintf(stderr, "%s\"\n", n > 400 ? "..." : "");
}

/* A cursor over the fuzz input. */
struct fuzz_in {
    const unsigned char *p;
    size_t n;
};

static inline unsigned fuzz_byte(struct fuzz_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

struct fuzz_line {
    const unsigned char *p;
    size_t len;
};

/* Up to max lines, each a length byte L then L bytes (fewer at the end of the input); L = 254
 * is followed by a 2-byte big-endian length instead, and L = 255 takes the whole rest. Lines
 * hold any bytes. */
static inline size_t fuzz_lines(struct fuzz_in *in, struct fuzz_line *lines, size_t max)
{
    size_t n = 0;
    while (n < max && in->n) {
        size_t len = fuzz_byte(in);
        if (len == 254) {
            len = fuzz_byte(in) << 8;
            len |= fuzz_byte(in);
        }
        if (len == 255 || len > in->n)
            len = in->n;
        lines[n].p = in->p;
        lines[n].len = len;
        in->p += len;
        in->n -= len;
        n++;
    }
    return n;
}

static inline void fuzz_keys_fail(const char *what, const struct fuzz_line *a,
                                  const struct fuzz_line *b, const struct fuzz_line *c)
{
    fprintf(stderr, "keys property failed: %s\n", what);
    fuzz_print("a", a->p, a->len);
    if (b)
        fuzz_print("b", b->p, b->len);
    if (c)
        fuzz_print("c", c->p, c->len);
    abort();
}

/* The properties of keys.h for a finished order k over n lines:
 *   - compare and compare_keys are reflexive (0 on a line against itself), antisymmetric in
 *     sign and transitive (on every triple, as <= and as ==);
 *   - compare agrees with compare_keys where the keys differ, and is compare_keys with -s/-u;
 *   - prefix(a) < prefix(b) implies compare(a, b) < 0; compare_keys(a, b) == 0 implies equal
 *     prefixes; equal prefixes that prefix_decides imply equal first keys, and then the
 *     *_after_first functions agree with compare and compare_keys. */
static inline void fuzz_keys_properties(const struct dsort_keys *k, const struct fuzz_line *l,
                                        size_t n)
{
    enum { MAX = 16 };
    int full[MAX][MAX], keys[MAX][MAX];
    uint64_t pre[MAX];
    if (n > MAX)
        n = MAX;
    for (size_t i = 0; i < n; i++)
        pre[i] = dsort_keys_prefix(k, l[i].p, l[i].len);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            const struct fuzz_line *a = &l[i], *b = &l[j];
            full[i][j] = fuzz_sign(dsort_keys_compare(k, a->p, a->len, b->p, b->len));
            keys[i][j] = fuzz_sign(dsort_keys_compare_keys(k, a->p, a->len, b->p, b->len));
            if (keys[i][j] && full[i][j] != keys[i][j])
                fuzz_keys_fail("compare disagrees with compare_keys", a, b, NULL);
            if ((k->stable || k->unique) && full[i][j] != keys[i][j])
                fuzz_keys_fail("with -s/-u, compare is not compare_keys", a, b, NULL);
            if (pre[i] < pre[j] && full[i][j] >= 0)
                fuzz_keys_fail("prefix(a) < prefix(b) but compare(a, b) >= 0", a, b, NULL);
            if (!keys[i][j] && pre[i] != pre[j])
                fuzz_keys_fail("compare_keys(a, b) == 0 but the prefixes differ", a, b, NULL);
            if (pre[i] == pre[j] && dsort_keys_has_prefix(k) &&
                dsort_keys_prefix_decides(k, pre[i])) {
                int fa = dsort_keys_compare_after_first(k, a->p, a->len, b->p, b->len);
                int ka = dsort_keys_compare_keys_after_first(k, a->p, a->len, b->p, b->len);
                if (fuzz_sign(fa) != full[i][j] || fuzz_sign(ka) != keys[i][j])
                    fuzz_keys_fail("equal prefixes decide, but *_after_first disagree", a, b, NULL);
            }
        }
        if (full[i][i] || keys[i][i])
            fuzz_keys_fail("a line does not compare equal to itself", &l[i], NULL, NULL);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            if (full[i][j] != -full[j][i] || keys[i][j] != -keys[j][i])
                fuzz_keys_fail("not antisymmetric", &l[i], &l[j], NULL);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (size_t m = 0; m < n; m++) {
                if (full[i][j] <= 0 && full[j][m] <= 0 && full[i][m] > 0)
                    fuzz_keys_fail("compare not transitive (a <= b <= c, a > c)", &l[i], &l[j],
                                   &l[m]);
                if (keys[i][j] <= 0 && keys[j][m] <= 0 && keys[i][m] > 0)
                    fuzz_keys_fail("compare_keys not transitive (a <= b <= c, a > c)", &l[i], &l[j],
                                   &l[m]);
                if (!keys[i][j] && !keys[j][m] && keys[i][m])
                    fuzz_keys_fail("compare_keys equality not transitive", &l[i], &l[j], &l[m]);
            }
}

#endif
