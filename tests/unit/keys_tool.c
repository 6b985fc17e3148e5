/* keys_tool - sort stdin with keys.h, for differential tests against `LC_ALL=C sort`.
 *
 * keys_tool [--check-prefix] [-z] [-s] [-u] [-t SEP] [-k SPEC]... [-bdfghiMnrV]
 *
 * Reads all of stdin, splits it into lines (newline, or NUL with -z; a last line without a
 * terminator gets one), sorts them stably with dsort_keys_compare (a merge sort of indexes
 * that compares the cached prefixes first and the lines only when the prefixes are equal, as
 * the real callers do), drops all but the first of each run of equal keys with -u, and writes
 * them to stdout. Option errors exit 2 with the library's message, as sort does.
 *
 * --check-prefix tests dsort_keys_prefix's contract instead of trusting it: the sort then
 * uses the full comparison alone (every comparison whose prefixes differ must agree with
 * them), and afterwards every adjacent pair (a, b) of the sorted lines must have
 * prefix(a) <= prefix(b), equal prefixes when compare_keys(a, b) == 0, and compare(a, b) <= 0.
 * Adjacent pairs suffice: the order is total, and lines with equal keys are contiguous in it.
 * It also tests dsort_keys_prefix_decides: for every adjacent pair, every line and the first
 * line of its run of equal prefixes, and 20 random pairs per line, when the prefixes are
 * equal and decide, the first keys must compare equal, and compare_after_first and
 * compare_keys_after_first must agree with compare and compare_keys. A violation exits 3 with
 * a message. The output is the same as without the option.
 *
 * Without --check-prefix, comparisons of lines whose equal prefixes decide use
 * dsort_keys_compare_after_first, as a real caller may.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"

struct line {
    const unsigned char *p;
    size_t len;
    uint64_t prefix;
};

struct sorter {
    const struct dsort_keys *keys;
    const struct dsort_keys *first; /* the first key alone (or no keys) */
    const struct line *lines;
    int check; /* --check-prefix */
};

static void die(const char *msg)
{
    fprintf(stderr, "keys_tool: %s\n", msg);
    exit(2);
}

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

static void broken(const char *what, size_t i, size_t j, int full, int keys, const struct line *a,
                   const struct line *b)
{
    fprintf(stderr,
            "keys_tool: prefix contract broken (%s): lines %zu and %zu compare %d (keys %d) but "
            "prefixes %016llx %016llx\n",
            what, i + 1, j + 1, full, keys, (unsigned long long)a->prefix,
            (unsigned long long)b->prefix);
    exit(3);
}

static int compare(const struct sorter *s, size_t i, size_t j)
{
    const struct line *a = &s->lines[i], *b = &s->lines[j];
    if (!s->check) {
        if (a->prefix != b->prefix)
            return a->prefix < b->prefix ? -1 : 1;
        if (dsort_keys_prefix_decides(s->keys, a->prefix))
            return dsort_keys_compare_after_first(s->keys, a->p, a->len, b->p, b->len);
        return dsort_keys_compare(s->keys, a->p, a->len, b->p, b->len);
    }
    int full = dsort_keys_compare(s->keys, a->p, a->len, b->p, b->len);
    if (a->prefix != b->prefix) {
        int byprefix = a->prefix < b->prefix ? -1 : 1;
        if (sign(full) != byprefix)
            broken("comparison", i, j, full,
                   dsort_keys_compare_keys(s->keys, a->p, a->len, b->p, b->len), a, b);
    }
    return full;
}

/* --check-prefix: dsort_keys_prefix_decides on the pair (i, j) of lines. */
static void check_decides(const struct sorter *s, size_t i, size_t j)
{
    const struct line *a = &s->lines[i], *b = &s->lines[j];
    if (a->prefix != b->prefix || !dsort_keys_prefix_decides(s->keys, a->prefix))
        return;
    const struct dsort_keys *k = s->keys;
    int full = dsort_keys_compare(k, a->p, a->len, b->p, b->len);
    int keys = dsort_keys_compare_keys(k, a->p, a->len, b->p, b->len);
    if (dsort_keys_compare_keys(s->first, a->p, a->len, b->p, b->len) != 0)
        broken("prefix decides, first keys differ", i, j, full, keys, a, b);
    if (sign(dsort_keys_compare_after_first(k, a->p, a->len, b->p, b->len)) != sign(full))
        broken("compare_after_first differs", i, j, full, keys, a, b);
    if (sign(dsort_keys_compare_keys_after_first(k, a->p, a->len, b->p, b->len)) != sign(keys))
        broken("compare_keys_after_first differs", i, j, full, keys, a, b);
}

/* --check-prefix: the contract on every adjacent pair of the sorted idx[0..n), and
 * check_decides on adjacent pairs, on each line and the first of its run of equal prefixes,
 * and on random pairs. */
static void check_sorted(const struct sorter *s, const size_t *idx, size_t n)
{
    size_t run = 0;
    for (size_t i = 1; i < n; i++) {
        const struct line *a = &s->lines[idx[i - 1]], *b = &s->lines[idx[i]];
        int full = dsort_keys_compare(s->keys, a->p, a->len, b->p, b->len);
        int keys = dsort_keys_compare_keys(s->keys, a->p, a->len, b->p, b->len);
        if (full > 0)
            broken("not sorted", idx[i - 1], idx[i], full, keys, a, b);
        if (a->prefix > b->prefix)
            broken("prefix(a) > prefix(b)", idx[i - 1], idx[i], full, keys, a, b);
        if (keys == 0 && a->prefix != b->prefix)
            broken("equal keys, different prefixes", idx[i - 1], idx[i], full, keys, a, b);
        check_decides(s, idx[i - 1], idx[i]);
        check_decides(s, idx[i], idx[i - 1]);
        if (a->prefix != b->prefix)
            run = i;
        else if (run + 1 < i)
            check_decides(s, idx[run], idx[i]);
    }
    uint64_t x = 0x9e3779b97f4a7c15u ^ n;
    for (size_t i = 0; i < n; i++)
        for (int r = 0; r < 20; r++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check_decides(s, i, (size_t)(x % n));
        }
}

/* Stable merge sort of idx[0..n) using tmp[0..n). */
static void merge_sort(const struct sorter *s, size_t *idx, size_t *tmp, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(s, idx, tmp, h);
    merge_sort(s, idx + h, tmp, n - h);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n)
        tmp[o++] = compare(s, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
    while (i < h)
        tmp[o++] = idx[i++];
    while (j < n)
        tmp[o++] = idx[j++];
    memcpy(idx, tmp, n * sizeof *idx);
}

static unsigned char *read_all(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap + 1);
    if (!buf)
        die("out of memory");
    for (;;) {
        if (n == cap) {
            cap *= 2;
            unsigned char *nb = realloc(buf, cap + 1);
            if (!nb)
                die("out of memory");
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, stdin);
        n += r;
        if (r == 0) {
            if (ferror(stdin))
                die("read error");
            break;
        }
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    struct dsort_keys keys;
    struct dsort_error err;
    int eol = '\n', c, check = 0;
    static const struct option longopts[] = {{"check-prefix", no_argument, NULL, 'C'},
                                             {NULL, 0, NULL, 0}};
    dsort_keys_init(&keys);
    dsort_error_clear(&err);
    while ((c = getopt_long(argc, argv, "zsut:k:bdfghiMnrV", longopts, NULL)) != -1) {
        enum dsort_status st = DSORT_OK;
        switch (c) {
        case 'C':
            check = 1;
            break;
        case 'z':
            eol = '\0';
            break;
        case 's':
            keys.stable = 1;
            break;
        case 'u':
            keys.unique = 1;
            break;
        case 't':
            st = dsort_keys_set_tab(&keys, optarg, &err);
            break;
        case 'k':
            st = dsort_keys_add(&keys, optarg, &err);
            break;
        case '?':
            exit(2);
        default:
            st = dsort_keys_set_global(&keys, (char)c, &err);
            break;
        }
        if (st != DSORT_OK)
            die(err.msg);
    }
    if (optind != argc)
        die("no file operands are accepted");
    if (dsort_keys_finish(&keys, &err) != DSORT_OK)
        die(err.msg);

    size_t len;
    unsigned char *buf = read_all(&len);
    if (len && buf[len - 1] != eol)
        buf[len++] = (unsigned char)eol;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == eol;
    struct line *lines = malloc((n ? n : 1) * sizeof *lines);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    size_t *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (!lines || !idx || !tmp)
        die("out of memory");
    size_t start = 0, k = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != eol)
            continue;
        lines[k].p = buf + start;
        lines[k].len = i - start;
        lines[k].prefix = dsort_keys_prefix(&keys, lines[k].p, lines[k].len);
        idx[k] = k;
        k++;
        start = i + 1;
    }
    if (!dsort_keys_has_prefix(&keys))
        for (size_t i = 0; i < n; i++)
            if (lines[i].prefix != 0) {
                fprintf(stderr, "keys_tool: prefix without has_prefix\n");
                return 3;
            }

    struct dsort_keys first = keys;
    if (first.n > 1)
        first.n = 1;
    struct sorter s = {&keys, &first, lines, check};
    merge_sort(&s, idx, tmp, n);
    if (check)
        check_sorted(&s, idx, n);

    const struct line *kept = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct line *l = &lines[idx[i]];
        if (keys.unique && kept) {
            int d = dsort_keys_compare_keys(&keys, kept->p, kept->len, l->p, l->len);
            if (d == 0) {
                if (kept->prefix != l->prefix) {
                    fprintf(stderr, "keys_tool: equal keys with different prefixes\n");
                    return 3;
                }
                continue;
            }
        }
        kept = l;
        fwrite(l->p, 1, l->len, stdout);
        putchar(eol);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        die("write error");
    free(lines);
    free(idx);
    free(tmp);
    free(buf);
    return 0;
}
