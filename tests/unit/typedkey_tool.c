/* typedkey_tool - sort fixed-size records from stdin by typed keys, for typedkey_diff.py.
 *
 * typedkey_tool [-s] -R RECSIZE -k OFF:TYPE[:LEN][:r]... < in > out
 *
 * Widens each record to normalised key || record, or normalises its key bytes in place
 * (dsort_typedkey_widen, as the pipeline does), sorts the widened records with memcmp: the
 * normalised key, then with -s the input position, else the widened record's bytes; and writes
 * the records back (dsort_typedkey_narrow).
 * A bad option exits 2 with the library's message.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typedkey.h"

static size_t wide_size, norm_len, key_off;
static int stable;

struct item {
    const unsigned char *w;
    size_t pos;
};

static int by_key(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    int c = memcmp(a->w + key_off, b->w + key_off, norm_len);
    if (c)
        return c;
    if (!stable)
        return memcmp(a->w, b->w, wide_size);
    return (a->pos > b->pos) - (a->pos < b->pos);
}

static unsigned char *read_all(size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) {
            unsigned char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    *len = n;
    return buf;
}

int main(int argc, char **argv)
{
    struct dsort_typedkey tk;
    struct dsort_error err = {0};
    size_t rs = 0;
    int ch;
    dsort_typedkey_init(&tk);
    while ((ch = getopt(argc, argv, "sR:k:")) != -1) {
        if (ch == 's') {
            stable = 1;
        } else if (ch == 'R') {
            rs = (size_t)strtoull(optarg, NULL, 10);
        } else if (ch == 'k') {
            if (dsort_typedkey_add(&tk, optarg, &err)) {
                fprintf(stderr, "typedkey_tool: %s\n", err.msg);
                return 2;
            }
        } else {
            return 2;
        }
    }
    if (rs == 0 || dsort_typedkey_finish(&tk, rs, &err)) {
        fprintf(stderr, "typedkey_tool: %s\n", rs ? err.msg : "-R RECSIZE is needed");
        return 2;
    }
    size_t len;
    unsigned char *in = read_all(&len);
    if (!in || len % rs) {
        fprintf(stderr, "typedkey_tool: %s\n",
                in ? "input not a whole number of records" : "out of memory");
        return 2;
    }
    size_t n = len / rs;
    norm_len = dsort_typedkey_norm_len(&tk);
    wide_size = tk.wide_prefix + rs;
    key_off = tk.wide_key_off;
    unsigned char *wide = malloc(n * wide_size + 1), *out = malloc(len + 1),
                  *sorted = malloc(n * wide_size + 1);
    struct item *items = malloc((n + 1) * sizeof *items);
    if (!wide || !out || !sorted || !items) {
        fprintf(stderr, "typedkey_tool: out of memory\n");
        return 2;
    }
    dsort_typedkey_widen(&tk, in, n, wide);
    for (size_t i = 0; i < n; i++)
        items[i] = (struct item){wide + i * wide_size, i};
    qsort(items, n, sizeof *items, by_key);
    for (size_t i = 0; i < n; i++)
        memcpy(sorted + i * wide_size, items[i].w, wide_size);
    dsort_typedkey_narrow(&tk, sorted, n, out);
    int bad = fwrite(out, 1, len, stdout) != len || fflush(stdout);
    free(in);
    free(wide);
    free(out);
    free(sorted);
    free(items);
    return bad ? 2 : 0;
}
