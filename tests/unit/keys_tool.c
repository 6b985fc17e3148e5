/* keys_tool - sort stdin with keys.h, for differential tests against `LC_ALL=C sort`.
 *
 * keys_tool [-z] [-s] [-u] [-t SEP] [-k SPEC]... [-bdfghiMnrV]
 *
 * Reads all of stdin, splits it into lines (newline, or NUL with -z; a last line without a
 * terminator gets one), sorts them stably with dsort_keys_compare (a merge sort of indexes
 * that compares the cached prefixes first, as the real callers do), drops all but the first
 * of each run of equal keys with -u, and writes them to stdout. Every comparison also checks
 * the prefix contract against the full comparison; a violation exits 3. Option errors exit 2
 * with the library's message, as sort does.
 */
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
    const struct line *lines;
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

static int compare(const struct sorter *s, size_t i, size_t j)
{
    const struct line *a = &s->lines[i], *b = &s->lines[j];
    int full = dsort_keys_compare(s->keys, a->p, a->len, b->p, b->len);
    if (a->prefix != b->prefix) {
        int byprefix = a->prefix < b->prefix ? -1 : 1;
        if (sign(full) != byprefix) {
            fprintf(stderr,
                    "keys_tool: prefix contract broken: lines %zu and %zu compare %d but "
                    "prefixes %016llx %016llx\n",
                    i + 1, j + 1, full, (unsigned long long)a->prefix,
                    (unsigned long long)b->prefix);
            exit(3);
        }
        return byprefix;
    }
    return full;
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
    int eol = '\n', c;
    dsort_keys_init(&keys);
    dsort_error_clear(&err);
    while ((c = getopt(argc, argv, "zsut:k:bdfghiMnrV")) != -1) {
        enum dsort_status st = DSORT_OK;
        switch (c) {
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

    struct sorter s = {&keys, lines};
    merge_sort(&s, idx, tmp, n);

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
