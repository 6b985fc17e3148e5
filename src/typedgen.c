#include "typedgen.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"

void dsort_typedgen_init(struct dsort_typedgen *g, size_t rec_size, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->rec_size = rec_size;
    g->seed = seed;
}

/* "=N" after a word, N decimal digits up to ':' or the end. */
static int parse_arg(const char **p, uint64_t max, uint64_t *v)
{
    const char *s = *p;
    if (*s++ != '=' || *s < '0' || *s > '9')
        return -1;
    uint64_t x = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        if ((x = x * 10 + (uint64_t)(*s - '0')) > max)
            return -1;
    if (*s != ':' && *s != '\0')
        return -1;
    *v = x;
    *p = s;
    return 0;
}

static int is_float(enum dsort_typedkey_type t)
{
    return t >= DSORT_TK_F32LE && t <= DSORT_TK_F64BE;
}

/* The DIST items after the field: ":uniform", ":distinct=K", ":seq", ":nan=P", ":special=P". */
static enum dsort_status parse_dist(const char *spec, const char *p, struct dsort_typedgen_field *d,
                                    struct dsort_error *err)
{
    while (*p == ':') {
        p++;
        uint64_t v = 0;
        const size_t wl = strcspn(p, ":=");
        int bad = 0;
        if (wl == 7 && !strncmp(p, "uniform", 7)) {
            d->dist = DSORT_TG_UNIFORM, p += wl;
        } else if (wl == 3 && !strncmp(p, "seq", 3)) {
            d->dist = DSORT_TG_SEQ, p += wl;
        } else if (wl == 8 && !strncmp(p, "distinct", 8)) {
            p += wl;
            bad = parse_arg(&p, UINT64_MAX / 10, &v) || v == 0;
            d->dist = DSORT_TG_DISTINCT, d->distinct = v;
        } else if (wl == 3 && !strncmp(p, "nan", 3)) {
            p += wl;
            bad = parse_arg(&p, 100, &v);
            d->nan_pct = (unsigned)v;
            if (!bad && !is_float(d->f.type))
                return DSORT_ERR(err, DSORT_EINVAL, 0, "bad field '%s': nan= goes with floats",
                                 spec);
        } else if (wl == 7 && !strncmp(p, "special", 7)) {
            p += wl;
            bad = parse_arg(&p, 100, &v);
            d->special_pct = (unsigned)v;
        } else {
            bad = 1;
        }
        if (bad)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "bad field '%s': expected OFF:TYPE[:LEN] then uniform, distinct=K "
                             "(K >= 1), seq, nan=P or special=P (P a percentage)",
                             spec);
    }
    if (*p)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad field '%s'", spec);
    if (d->nan_pct + d->special_pct > 100)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad field '%s': nan= and special= exceed 100%%",
                         spec);
    return DSORT_OK;
}

enum dsort_status dsort_typedgen_add(struct dsort_typedgen *g, const char *spec,
                                     struct dsort_error *err)
{
    if (g->count == DSORT_TYPEDGEN_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad field '%s': at most %d fields", spec,
                         DSORT_TYPEDGEN_MAX);
    struct dsort_typedgen_field d;
    memset(&d, 0, sizeof d);
    const char *p;
    enum dsort_status st = dsort_typedkey_parse_field(spec, &d.f, &p, err);
    if (!st)
        st = parse_dist(spec, p, &d, err);
    if (st)
        return st;
    if (d.f.off + d.f.len > g->rec_size)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad field '%s': its %zu bytes at offset %zu reach past the end of the "
                         "%zu-byte record",
                         spec, d.f.len, d.f.off, g->rec_size);
    g->fields[g->count++] = d;
    return DSORT_OK;
}

static void put(unsigned char *p, uint64_t v, size_t n, int le)
{
    for (size_t i = 0; i < n; i++)
        p[le ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

/* A double as the bits of an n-byte float. */
static uint64_t float_bits(double d, size_t n)
{
    if (n == 8) {
        uint64_t b;
        memcpy(&b, &d, 8);
        return b;
    }
    float f = (float)d;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* A corner value of an n-byte type (r random); NaN only when nan. */
static uint64_t corner(int fl, size_t n, uint64_t r, int nan)
{
    const unsigned w = 8 * (unsigned)n;
    const uint64_t mask = w == 64 ? UINT64_MAX : ((uint64_t)1 << w) - 1,
                   top = (uint64_t)1 << (w - 1);
    if (!fl) {
        switch (r % 5) {
        case 0:
            return 0;
        case 1:
            return 1;
        case 2:
            return mask; /* unsigned max, signed -1 */
        case 3:
            return top; /* signed min */
        default:
            return top - 1; /* signed max */
        }
    }
    const unsigned mant = n == 8 ? 52 : 23;
    const uint64_t inf = (mask >> 1) & ~(((uint64_t)1 << mant) - 1), frac = inf ^ (mask >> 1);
    const uint64_t sign = (r >> 63) ? top : 0, pay = (r >> 8) & frac;
    if (nan) /* quiet or signalling, any payload (never 0: that is inf) */
        return sign | inf | (pay ? pay : 1);
    switch ((r >> 1) % 7) {
    case 0:
        return sign;
    case 1:
        return sign | inf;
    case 2:
        return sign | inf | (pay ? pay : 1);
    case 3:
        return sign | (inf - 1); /* largest finite */
    case 4:
        return sign | ((uint64_t)1 << mant); /* smallest normal */
    case 5:
        return sign | (pay ? pay : 1); /* subnormal */
    default:
        return sign | float_bits(1.0, n);
    }
}

static void fill_field(const struct dsort_typedgen *g, size_t k, uint64_t index, uint64_t *rs,
                       unsigned char *rec)
{
    const struct dsort_typedgen_field *d = &g->fields[k];
    const size_t n = d->f.len;
    unsigned char *p = rec + d->f.off;
    const int fl = is_float(d->f.type), le = strstr(dsort_typedkey_type_name(d->f.type), "le") != 0;
    uint64_t pct = dsort_splitmix64(rs) % 100, r = dsort_splitmix64(rs);
    if (pct < d->nan_pct + d->special_pct) {
        uint64_t v = corner(fl, n, r, pct < d->nan_pct);
        if (d->f.type == DSORT_TK_BYTES)
            memset(p, (int)(v & 1) * 0xff, n);
        else
            put(p, v, n, le);
        return;
    }
    uint64_t vs = r; /* the stream the value comes from */
    if (d->dist == DSORT_TG_DISTINCT) {
        vs = g->seed ^ (uint64_t)(k + 1) * UINT64_C(0xd6e8feb86659fd93);
        vs += (r % d->distinct) * UINT64_C(0x2545f4914f6cdd1d);
    }
    if (d->dist == DSORT_TG_SEQ) {
        if (d->f.type == DSORT_TK_BYTES) {
            memset(p, 0, n);
            put(n > 8 ? p + n - 8 : p, index, n > 8 ? 8 : n, 0);
        } else {
            put(p, fl ? float_bits((double)index, n) : index, n, le);
        }
        return;
    }
    if (d->f.type == DSORT_TK_BYTES) {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = dsort_splitmix64(&vs);
            put(p + i, v, n - i < 8 ? n - i : 8, 1);
        }
        return;
    }
    uint64_t v = dsort_splitmix64(&vs);
    if (fl)
        v = float_bits(-1000.0 + 2000.0 * (double)(v >> 11) * 0x1p-53, n);
    put(p, v, n, le);
}

void dsort_typedgen_fill(const struct dsort_typedgen *g, uint64_t first, size_t n,
                         unsigned char *buf)
{
    const size_t rsz = g->rec_size;
    for (size_t i = 0; i < n; i++) {
        unsigned char *rec = buf + i * rsz;
        uint64_t index = first + i, s = g->seed ^ index * UINT64_C(0x9e6c63d0676a9a99);
        for (size_t j = 0; j < rsz; j += 8) {
            uint64_t v = dsort_splitmix64(&s);
            put(rec + j, v, rsz - j < 8 ? rsz - j : 8, 1);
        }
        for (size_t k = 0; k < g->count; k++)
            fill_field(g, k, index, &s, rec);
    }
}
