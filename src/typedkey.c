#include "typedkey.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} types[DSORT_TK_NTYPES] = {
    [DSORT_TK_U8] = {"u8", 1},       [DSORT_TK_I8] = {"i8", 1},
    [DSORT_TK_U16LE] = {"u16le", 2}, [DSORT_TK_U16BE] = {"u16be", 2},
    [DSORT_TK_I16LE] = {"i16le", 2}, [DSORT_TK_I16BE] = {"i16be", 2},
    [DSORT_TK_U32LE] = {"u32le", 4}, [DSORT_TK_U32BE] = {"u32be", 4},
    [DSORT_TK_I32LE] = {"i32le", 4}, [DSORT_TK_I32BE] = {"i32be", 4},
    [DSORT_TK_U64LE] = {"u64le", 8}, [DSORT_TK_U64BE] = {"u64be", 8},
    [DSORT_TK_I64LE] = {"i64le", 8}, [DSORT_TK_I64BE] = {"i64be", 8},
    [DSORT_TK_F32LE] = {"f32le", 4}, [DSORT_TK_F32BE] = {"f32be", 4},
    [DSORT_TK_F64LE] = {"f64le", 8}, [DSORT_TK_F64BE] = {"f64be", 8},
    [DSORT_TK_BYTES] = {"bytes", 0},
};

#define TYPE_LIST                                                                                  \
    "u8, i8, u16le, u16be, i16le, i16be, u32le, u32be, i32le, i32be, u64le, u64be, i64le, "        \
    "i64be, f32le, f32be, f64le, f64be or bytes"

/* Records are at most 2^24 bytes (format.c), so offsets and lengths fit well below this. */
#define FIELD_MAX ((uint64_t)1 << 24)

void dsort_typedkey_init(struct dsort_typedkey *tk)
{
    memset(tk, 0, sizeof *tk);
}

int dsort_typedkey_is_spec(const char *arg)
{
    return strchr(arg, ':') != NULL;
}

const char *dsort_typedkey_type_name(enum dsort_typedkey_type t)
{
    return (unsigned)t < DSORT_TK_NTYPES ? types[t].name : "?";
}

size_t dsort_typedkey_type_size(enum dsort_typedkey_type t)
{
    return (unsigned)t < DSORT_TK_NTYPES ? types[t].size : 0;
}

/* A decimal number of digits only, ending at ':' or '\0'. */
static int parse_num(const char **p, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    if (*s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        x = x * 10 + (uint64_t)(*s - '0');
        if (x > FIELD_MAX)
            return -1;
    }
    if (*s != ':' && *s != '\0')
        return -1;
    *v = x;
    *p = s;
    return 0;
}

enum dsort_status dsort_typedkey_parse_field(const char *s, struct dsort_typedkey_field *f,
                                             const char **rest, struct dsort_error *err)
{
    const char *p = s;
    uint64_t off, len = 0;
    if (parse_num(&p, &off) || *p != ':')
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad key '%s': expected OFF:TYPE[:LEN], OFF a byte offset", s);
    p++;
    size_t tl = strcspn(p, ":");
    int t = 0;
    while (t < DSORT_TK_NTYPES && (strlen(types[t].name) != tl || strncmp(p, types[t].name, tl)))
        t++;
    if (t == DSORT_TK_NTYPES)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad key '%s': unknown type '%.*s' (expected %s)", s,
                         (int)(tl > 32 ? 32 : tl), p, TYPE_LIST);
    p += tl;
    if (t == DSORT_TK_BYTES) {
        if (*p != ':' || p[1] < '0' || p[1] > '9')
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "bad key '%s': bytes needs a length, OFF:bytes:LEN", s);
        p++;
        if (parse_num(&p, &len))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "bad key '%s': LEN must be at most %" PRIu64, s,
                             FIELD_MAX);
        if (len == 0)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "bad key '%s': LEN must be at least 1", s);
    } else {
        len = types[t].size;
        if (*p == ':' && p[1] >= '0' && p[1] <= '9')
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "bad key '%s': %s is %zu bytes; a LEN goes with bytes only", s,
                             types[t].name, types[t].size);
    }
    memset(f, 0, sizeof *f);
    f->type = (enum dsort_typedkey_type)t;
    f->off = (size_t)off;
    f->len = (size_t)len;
    *rest = p;
    return DSORT_OK;
}

enum dsort_status dsort_typedkey_add(struct dsort_typedkey *tk, const char *arg,
                                     struct dsort_error *err)
{
    if (tk->count == DSORT_TYPEDKEY_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad key '%s': at most %d keys", arg,
                         DSORT_TYPEDKEY_MAX);
    struct dsort_typedkey_field f;
    const char *p;
    enum dsort_status st = dsort_typedkey_parse_field(arg, &f, &p, err);
    if (st)
        return st;
    if (!strcmp(p, ":r"))
        f.desc = 1;
    else if (*p)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad key '%s': '%s' after the type (expected nothing, or :r for "
                         "descending)",
                         arg, p + 1);
    tk->keys[tk->count++] = f;
    tk->rec_size = 0;
    return DSORT_OK;
}

/* A key's canonical spelling, as -k takes it. */
static int field_name(const struct dsort_typedkey_field *f, char *buf, size_t size)
{
    char lenbuf[24] = "";
    if (f->type == DSORT_TK_BYTES)
        snprintf(lenbuf, sizeof lenbuf, ":%zu", f->len);
    return snprintf(buf, size, "%zu:%s%s%s", f->off, types[f->type].name, lenbuf,
                    f->desc ? ":r" : "");
}

enum dsort_status dsort_typedkey_finish(struct dsort_typedkey *tk, size_t rec_size,
                                        struct dsort_error *err)
{
    if (tk->count == 0)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "no typed key");
    size_t norm = 0;
    for (size_t i = 0; i < tk->count; i++) {
        struct dsort_typedkey_field *f = &tk->keys[i];
        if (f->off + f->len > rec_size) {
            char name[64];
            field_name(f, name, sizeof name);
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "bad key '%s': its %zu bytes at offset %zu reach past the end of "
                             "the %zu-byte record",
                             name, f->len, f->off, rec_size);
        }
        f->norm_off = norm;
        norm += f->len;
    }
    tk->norm_len = norm;
    tk->rec_size = rec_size;
    int inplace = 1;
    for (size_t i = 0; i < tk->count && inplace; i++) {
        const struct dsort_typedkey_field *f = &tk->keys[i];
        inplace = (f->type < DSORT_TK_F32LE || f->type == DSORT_TK_BYTES) &&
                  f->off == tk->keys[0].off + f->norm_off;
    }
    tk->wide_prefix = inplace ? 0 : norm;
    tk->wide_key_off = inplace ? tk->keys[0].off : 0;
    return DSORT_OK;
}

void dsort_typedkey_name(const struct dsort_typedkey *tk, char *buf, size_t size)
{
    if (size == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < tk->count && used + 1 < size; i++) {
        if (i)
            buf[used++] = ' ';
        int n = field_name(&tk->keys[i], buf + used, size - used);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    buf[used < size ? used : size - 1] = '\0';
}

/* Little- and big-endian loads, and a big-endian store, written out (no loops) so that
 * compilers turn each into one load or store and a byte swap at -O2. */
static inline uint64_t load_le(const unsigned char *p, size_t n)
{
    switch (n) {
    case 2:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8;
    case 4:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
    default:
        return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
               (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
               (uint64_t)p[7] << 56;
    }
}

static inline uint64_t load_be(const unsigned char *p, size_t n)
{
    switch (n) {
    case 2:
        return (uint64_t)p[0] << 8 | (uint64_t)p[1];
    case 4:
        return (uint64_t)p[0] << 24 | (uint64_t)p[1] << 16 | (uint64_t)p[2] << 8 | (uint64_t)p[3];
    default:
        return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
               (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
               (uint64_t)p[6] << 8 | (uint64_t)p[7];
    }
}

static inline void store_be(unsigned char *p, uint64_t v, size_t n)
{
    switch (n) {
    case 2:
        p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v;
        break;
    case 4:
        p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
        p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
        break;
    default:
        p[0] = (unsigned char)(v >> 56), p[1] = (unsigned char)(v >> 48);
        p[2] = (unsigned char)(v >> 40), p[3] = (unsigned char)(v >> 32);
        p[4] = (unsigned char)(v >> 24), p[5] = (unsigned char)(v >> 16);
        p[6] = (unsigned char)(v >> 8), p[7] = (unsigned char)v;
        break;
    }
}

static inline void store_le(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) /* constant n: unrolled */
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A float's bits (n bytes, as an unsigned integer) made monotone: numpy's order, with every
 * NaN above +inf and equal, and -0.0 equal to +0.0. */
static inline uint64_t float_order(uint64_t bits, size_t n)
{
    const unsigned w = (unsigned)n * 8;
    const uint64_t sign = (uint64_t)1 << (w - 1);
    const uint64_t mask = w == 64 ? UINT64_MAX : (((uint64_t)1 << w) - 1);
    const uint64_t inf = n == 8 ? UINT64_C(0x7ff0000000000000) : UINT64_C(0x7f800000);
    uint64_t mag = bits & ~sign;
    if (mag > inf)
        return mask; /* NaN: the largest, every one alike */
    if (mag == 0)
        return sign; /* -0.0 as +0.0 */
    return bits & sign ? ~bits & mask : bits | sign;
}

/* Sizes are constants in every case, so that loads and stores become single instructions. */
#define SIGN(n) ((uint64_t)1 << (8 * (n)-1))

static inline uint64_t field_value(enum dsort_typedkey_type t, const unsigned char *p)
{
    switch (t) {
    case DSORT_TK_U8:
        return p[0];
    case DSORT_TK_I8:
        return p[0] ^ SIGN(1);
    case DSORT_TK_U16LE:
        return load_le(p, 2);
    case DSORT_TK_U16BE:
        return load_be(p, 2);
    case DSORT_TK_I16LE:
        return load_le(p, 2) ^ SIGN(2);
    case DSORT_TK_I16BE:
        return load_be(p, 2) ^ SIGN(2);
    case DSORT_TK_U32LE:
        return load_le(p, 4);
    case DSORT_TK_U32BE:
        return load_be(p, 4);
    case DSORT_TK_I32LE:
        return load_le(p, 4) ^ SIGN(4);
    case DSORT_TK_I32BE:
        return load_be(p, 4) ^ SIGN(4);
    case DSORT_TK_U64LE:
        return load_le(p, 8);
    case DSORT_TK_U64BE:
        return load_be(p, 8);
    case DSORT_TK_I64LE:
        return load_le(p, 8) ^ SIGN(8);
    case DSORT_TK_I64BE:
        return load_be(p, 8) ^ SIGN(8);
    case DSORT_TK_F32LE:
        return float_order(load_le(p, 4), 4);
    case DSORT_TK_F32BE:
        return float_order(load_be(p, 4), 4);
    case DSORT_TK_F64LE:
        return float_order(load_le(p, 8), 8);
    case DSORT_TK_F64BE:
        return float_order(load_be(p, 8), 8);
    default:
        return 0;
    }
}

static inline void normalize_field(const struct dsort_typedkey_field *f, const unsigned char *rec,
                                   unsigned char *out)
{
    const unsigned char *p = rec + f->off;
    unsigned char *o = out + f->norm_off;
    if (f->type == DSORT_TK_BYTES) {
        if (!f->desc) {
            memcpy(o, p, f->len);
        } else {
            for (size_t i = 0; i < f->len; i++)
                o[i] = (unsigned char)~p[i];
        }
        return;
    }
    uint64_t v = field_value(f->type, p);
    if (f->desc)
        v = ~v;
    switch (f->len) {
    case 1:
        o[0] = (unsigned char)v;
        break;
    case 2:
        store_be(o, v, 2);
        break;
    case 4:
        store_be(o, v, 4);
        break;
    default:
        store_be(o, v, 8);
        break;
    }
}

void dsort_typedkey_normalize(const struct dsort_typedkey *tk, const unsigned char *rec,
                              unsigned char *out)
{
    for (size_t i = 0; i < tk->count; i++)
        normalize_field(&tk->keys[i], rec, out);
}

/* An integer or bytes key of rec, normalised where it lies (the key sets of wide_prefix 0),
 * and back. */
static inline void normalize_here(const struct dsort_typedkey_field *f, unsigned char *rec)
{
    if (f->type != DSORT_TK_BYTES || f->desc) /* each byte is read before it is written */
        normalize_field(f, rec, rec + f->off - f->norm_off);
}

static inline void denormalize_here(const struct dsort_typedkey_field *f, unsigned char *rec)
{
    unsigned char *p = rec + f->off;
    if (f->type == DSORT_TK_BYTES || f->len == 1) {
        for (size_t i = 0; f->desc && i < f->len; i++)
            p[i] = (unsigned char)~p[i];
        if (f->type == DSORT_TK_I8)
            p[0] ^= 0x80;
        return;
    }
    const int le = f->type == DSORT_TK_U16LE || f->type == DSORT_TK_I16LE ||
                   f->type == DSORT_TK_U32LE || f->type == DSORT_TK_I32LE ||
                   f->type == DSORT_TK_U64LE || f->type == DSORT_TK_I64LE;
    const int sgn = f->type == DSORT_TK_I16LE || f->type == DSORT_TK_I16BE ||
                    f->type == DSORT_TK_I32LE || f->type == DSORT_TK_I32BE ||
                    f->type == DSORT_TK_I64LE || f->type == DSORT_TK_I64BE;
    const size_t n = f->len == 2 ? 2 : f->len == 4 ? 4 : 8;
    uint64_t v = load_be(p, n);
    if (f->desc)
        v = ~v;
    if (sgn)
        v ^= SIGN(n);
    if (le)
        store_le(p, v, n);
    else
        store_be(p, v, n);
}

static void normalize_records(const struct dsort_typedkey *tk, unsigned char *recs, size_t n)
{
    const size_t rs = tk->rec_size;
    if (tk->count == 1 && tk->keys[0].type == DSORT_TK_U64LE && !tk->keys[0].desc) {
        unsigned char *p = recs + tk->keys[0].off; /* the common case, without the dispatch */
        for (size_t i = 0; i < n; i++)
            store_be(p + i * rs, load_le(p + i * rs, 8), 8);
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tk->count; k++)
            normalize_here(&tk->keys[k], recs + i * rs);
}

static void denormalize_records(const struct dsort_typedkey *tk, unsigned char *recs, size_t n)
{
    const size_t rs = tk->rec_size;
    if (tk->count == 1 && tk->keys[0].type == DSORT_TK_U64LE && !tk->keys[0].desc) {
        unsigned char *p = recs + tk->keys[0].off;
        for (size_t i = 0; i < n; i++)
            store_le(p + i * rs, load_be(p + i * rs, 8), 8);
        return;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tk->count; k++)
            denormalize_here(&tk->keys[k], recs + i * rs);
}

void dsort_typedkey_widen(const struct dsort_typedkey *tk, const unsigned char *in, size_t n,
                          unsigned char *out)
{
    if (!tk->wide_prefix) {
        memcpy(out, in, n * tk->rec_size);
        normalize_records(tk, out, n);
        return;
    }
    const size_t rs = tk->rec_size, nl = tk->norm_len, ws = nl + rs;
    /* The common case, one little-endian u64 key, without the per-key dispatch. */
    if (tk->count == 1 && tk->keys[0].type == DSORT_TK_U64LE && !tk->keys[0].desc) {
        const size_t off = tk->keys[0].off;
        for (size_t i = 0; i < n; i++) {
            store_be(out + i * ws, load_le(in + i * rs + off, 8), 8);
            memcpy(out + i * ws + 8, in + i * rs, rs);
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        dsort_typedkey_normalize(tk, in + i * rs, out + i * ws);
        memcpy(out + i * ws + nl, in + i * rs, rs);
    }
}

void dsort_typedkey_narrow(const struct dsort_typedkey *tk, const unsigned char *in, size_t n,
                           unsigned char *out)
{
    const size_t rs = tk->rec_size, nl = tk->norm_len, ws = nl + rs;
    if (!tk->wide_prefix) {
        memcpy(out, in, n * rs);
        denormalize_records(tk, out, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        memcpy(out + i * rs, in + i * ws + nl, rs);
}

/* Both in-place conversions go front to back in blocks that dsort_typedkey_widen/_narrow may
 * convert without overlap; the blocks grow geometrically (the room between the converted and
 * the unconverted records grows with each), so there are O(log n) of them, and only the few
 * records where that room is less than one record are moved one at a time. */
void dsort_typedkey_widen_inplace(const struct dsort_typedkey *tk, unsigned char *buf, size_t n)
{
    const size_t rs = tk->rec_size, nl = tk->norm_len, ws = nl + rs;
    if (!tk->wide_prefix) {
        normalize_records(tk, buf, n);
        return;
    }
    const unsigned char *src = buf + n * nl; /* record i at src + i * rs */
    size_t i = 0;
    while (i < n) {
        /* Records [i, i + k) widened end at (i + k) * ws, where record i starts in the tail:
         * n * nl + i * rs. */
        size_t k = (n - i) * nl / ws;
        if (k) {
            dsort_typedkey_widen(tk, src + i * rs, k, buf + i * ws);
            i += k;
            continue;
        }
        /* Less than a record of room: move the record to its place (never past record i + 1),
         * then normalise it from there. */
        unsigned char *w = buf + i * ws;
        memmove(w + nl, src + i * rs, rs);
        dsort_typedkey_normalize(tk, w + nl, w);
        i++;
    }
}

void dsort_typedkey_narrow_inplace(const struct dsort_typedkey *tk, unsigned char *buf, size_t n)
{
    const size_t rs = tk->rec_size, nl = tk->norm_len, ws = nl + rs;
    if (!tk->wide_prefix) {
        denormalize_records(tk, buf, n);
        return;
    }
    size_t i = 0;
    while (i < n) {
        /* Records [i, i + k) narrowed end at (i + k) * rs, where widened record i starts at
         * i * ws. */
        size_t k = i * nl / rs;
        if (k > n - i)
            k = n - i;
        if (k) {
            dsort_typedkey_narrow(tk, buf + i * ws, k, buf + i * rs);
            i += k;
            continue;
        }
        memmove(buf + i * rs, buf + i * ws + nl, rs);
        i++;
    }
}
