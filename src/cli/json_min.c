#include "json_min.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *s;
    size_t len, pos;
    struct dsort_json_error *err;
    int failed;
};

__attribute__((format(printf, 3, 4))) static int fail_at(struct parser *p, size_t at,
                                                         const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err->msg, sizeof p->err->msg, fmt, ap);
        va_end(ap);
        p->err->offset = at;
        p->failed = 1;
    }
    return -1;
}

/* What is at the current position, for error messages. */
static const char *what_here(const struct parser *p, char *buf, size_t n)
{
    if (p->pos >= p->len)
        return "the end of the file";
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, n, "'%c'", c);
    else
        snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static int expected(struct parser *p, const char *what)
{
    char buf[16];
    return fail_at(p, p->pos, "expected %s, found %s", what, what_here(p, buf, sizeof buf));
}

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

static int no_memory(struct parser *p)
{
    return fail_at(p, p->pos, "out of memory");
}

struct sbuf {
    char *b;
    size_t n, cap;
};

static int sbuf_put(struct parser *p, struct sbuf *sb, const char *d, size_t n)
{
    if (sb->n + n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 32;
        while (cap < sb->n + n + 1)
            cap *= 2;
        char *b = realloc(sb->b, cap);
        if (!b)
            return no_memory(p);
        sb->b = b;
        sb->cap = cap;
    }
    memcpy(sb->b + sb->n, d, n);
    sb->n += n;
    sb->b[sb->n] = '\0';
    return 0;
}

static int put_utf8(struct parser *p, struct sbuf *sb, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
        cp = 0xfffd;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (char)(0xf0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return sbuf_put(p, sb, u, n);
}

static int hex4(struct parser *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        if (p->pos >= p->len)
            return expected(p, "4 hex digits after \\u");
        char c = p->s[p->pos];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return expected(p, "4 hex digits after \\u");
        v = v << 4 | (uint32_t)d;
        p->pos++;
    }
    *out = v;
    return 0;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if there is none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c < 0x80                 ? 1
                 : c >= 0xc2 && c <= 0xdf ? 2
                 : c >= 0xe0 && c <= 0xef ? 3
                 : c >= 0xf0 && c <= 0xf4 ? 4
                                          : 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (len == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0; /* overlong, or a surrogate */
    if (len == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
        return 0; /* overlong, or past U+10FFFF */
    return len;
}

/* At the opening quote: a string into *out (malloc'ed). */
static int parse_string(struct parser *p, char **out)
{
    struct sbuf sb = {NULL, 0, 0};
    size_t start = p->pos++;
    if (sbuf_put(p, &sb, "", 0))
        return -1;
    for (;;) {
        if (p->pos >= p->len) {
            free(sb.b);
            return fail_at(p, start, "unterminated string");
        }
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            free(sb.b);
            return fail_at(p, p->pos, "control character 0x%02x in a string", c);
        }
        if (c != '\\') { /* one character: valid UTF-8 as it is, else U+FFFD */
            size_t n = utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
            if (n ? sbuf_put(p, &sb, p->s + p->pos, n) : put_utf8(p, &sb, 0xfffd))
                goto bad;
            p->pos += n ? n : 1;
            continue;
        }
        size_t esc = p->pos++;
        char e = p->pos < p->len ? p->s[p->pos] : '\0';
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *simple = e ? strchr(from, e) : NULL;
        if (simple) {
            p->pos++;
            if (sbuf_put(p, &sb, &to[simple - from], 1))
                goto bad;
        } else if (e == 'u') {
            uint32_t cp, lo;
            p->pos++;
            if (hex4(p, &cp))
                goto bad;
            if (cp >= 0xd800 && cp <= 0xdbff && p->pos + 1 < p->len && p->s[p->pos] == '\\' &&
                p->s[p->pos + 1] == 'u') {
                size_t back = p->pos;
                p->pos += 2;
                if (hex4(p, &lo))
                    goto bad;
                if (lo >= 0xdc00 && lo <= 0xdfff)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    p->pos = back; /* a lone high surrogate: U+FFFD, then the next escape */
            }
            if (put_utf8(p, &sb, cp))
                goto bad;
        } else {
            fail_at(p, esc, "invalid escape in a string");
            goto bad;
        }
    }
    *out = sb.b;
    return 0;
bad:
    free(sb.b);
    return -1;
}

static int parse_number(struct parser *p, double *out)
{
    size_t i = p->pos, start = p->pos;
    const char *s = p->s;
#define DIGIT(k) ((k) < p->len && s[k] >= '0' && s[k] <= '9')
    if (i < p->len && s[i] == '-')
        i++;
    if (i < p->len && s[i] == '0') {
        i++;
    } else if (DIGIT(i)) {
        while (DIGIT(i))
            i++;
    } else {
        p->pos = i;
        return expected(p, "a digit");
    }
    if (i < p->len && s[i] == '.') {
        i++;
        if (!DIGIT(i)) {
            p->pos = i;
            return expected(p, "a digit after '.'");
        }
        while (DIGIT(i))
            i++;
    }
    if (i < p->len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < p->len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!DIGIT(i)) {
            p->pos = i;
            return expected(p, "a digit in the exponent");
        }
        while (DIGIT(i))
            i++;
    }
#undef DIGIT
    char buf[64];
    size_t n = i - start;
    if (n >= sizeof buf)
        return fail_at(p, start, "number too long");
    memcpy(buf, s + start, n);
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    if (!isfinite(*out))
        return fail_at(p, start, "number out of range");
    p->pos = i;
    return 0;
}

static int parse_value(struct parser *p, struct dsort_json *v, int depth);

/* At '[' or '{': the items (and for an object the keys) up to the closing bracket. */
static int parse_container(struct parser *p, struct dsort_json *v, int depth)
{
    int object = p->s[p->pos] == '{';
    char close = object ? '}' : ']';
    size_t cap = 0;
    v->type = object ? DSORT_JSON_OBJECT : DSORT_JSON_ARRAY;
    if (depth >= DSORT_JSON_MAX_DEPTH)
        return fail_at(p, p->pos, "nested deeper than %d levels", DSORT_JSON_MAX_DEPTH);
    p->pos++;
    skip_ws(p);
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (v->count == cap) {
            cap = cap ? cap * 2 : 8;
            struct dsort_json *items = realloc(v->items, cap * sizeof *items);
            if (!items)
                return no_memory(p);
            v->items = items;
            if (object) {
                char **keys = realloc(v->keys, cap * sizeof *keys);
                if (!keys)
                    return no_memory(p);
                v->keys = keys;
            }
        }
        struct dsort_json *item = &v->items[v->count];
        memset(item, 0, sizeof *item);
        if (object) {
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != '"')
                return expected(p, "a string (an object key)");
            v->keys[v->count] = NULL;
            if (parse_string(p, &v->keys[v->count]))
                return -1;
            v->count++; /* the key is owned from here; the value is empty until parsed */
            skip_ws(p);
            if (p->pos >= p->len || p->s[p->pos] != ':')
                return expected(p, "':' after an object key");
            p->pos++;
        } else {
            v->count++;
        }
        if (parse_value(p, item, depth + 1))
            return -1;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        return expected(p, object ? "',' or '}'" : "',' or ']'");
    }
}

static int parse_value(struct parser *p, struct dsort_json *v, int depth)
{
    static const struct {
        const char *word;
        enum dsort_json_type type;
        int boolean;
    } words[] = {
        {"true", DSORT_JSON_BOOL, 1}, {"false", DSORT_JSON_BOOL, 0}, {"null", DSORT_JSON_NULL, 0}};
    skip_ws(p);
    if (p->pos >= p->len)
        return expected(p, "a value");
    char c = p->s[p->pos];
    if (c == '{' || c == '[')
        return parse_container(p, v, depth);
    if (c == '"') {
        v->type = DSORT_JSON_STRING;
        return parse_string(p, &v->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        v->type = DSORT_JSON_NUMBER;
        return parse_number(p, &v->number);
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        size_t n = strlen(words[i].word);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, words[i].word, n) == 0) {
            v->type = words[i].type;
            v->boolean = words[i].boolean;
            p->pos += n;
            return 0;
        }
    }
    return expected(p, "a value");
}

int dsort_json_parse(const char *text, size_t len, struct dsort_json *out,
                     struct dsort_json_error *err)
{
    struct parser p = {text, len, 0, err, 0};
    memset(out, 0, sizeof *out);
    err->offset = 0;
    err->msg[0] = '\0';
    skip_ws(&p);
    if (p.pos >= len) {
        fail_at(&p, p.pos, "no JSON value (the file is empty or blank)");
    } else if (!parse_value(&p, out, 0)) {
        skip_ws(&p);
        if (p.pos < len)
            fail_at(&p, p.pos, "unexpected data after the JSON value");
    }
    if (p.failed) {
        dsort_json_free(out);
        return -1;
    }
    return 0;
}

void dsort_json_free(struct dsort_json *v)
{
    if (!v)
        return;
    free(v->string);
    for (size_t i = 0; i < v->count; i++) {
        dsort_json_free(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

const struct dsort_json *dsort_json_get(const struct dsort_json *v, const char *key)
{
    if (!v || v->type != DSORT_JSON_OBJECT)
        return NULL;
    for (size_t i = v->count; i-- > 0;)
        if (strcmp(v->keys[i], key) == 0)
            return &v->items[i];
    return NULL;
}

const struct dsort_json *dsort_json_get_type(const struct dsort_json *v, const char *key,
                                             enum dsort_json_type type)
{
    const struct dsort_json *x = dsort_json_get(v, key);
    return x && x->type == type ? x : NULL;
}

double dsort_json_number(const struct dsort_json *v, const char *key, double dflt)
{
    const struct dsort_json *x = dsort_json_get_type(v, key, DSORT_JSON_NUMBER);
    return x ? x->number : dflt;
}

const char *dsort_json_string(const struct dsort_json *v, const char *key)
{
    const struct dsort_json *x = dsort_json_get_type(v, key, DSORT_JSON_STRING);
    return x ? x->string : NULL;
}

int dsort_json_read_file(const char *path, struct dsort_json *out, char *why, size_t n)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, n, "%s", strerror(errno));
        return -1;
    }
    size_t cap = (size_t)1 << 16, used = 0;
    char *buf = malloc(cap), *b;
    while (buf && (used += fread(buf + used, 1, cap - used, f)) == cap) {
        if (!(b = realloc(buf, cap *= 2)))
            free(buf);
        buf = b;
    }
    int bad = ferror(f), e = errno;
    fclose(f);
    if (!buf || bad) {
        snprintf(why, n, "%s", !buf ? "out of memory" : strerror(e));
        free(buf);
        return -1;
    }
    struct dsort_json_error err;
    int rc = dsort_json_parse(buf, used, out, &err);
    if (rc)
        snprintf(why, n, "invalid JSON at byte offset %zu: %s", err.offset, err.msg);
    free(buf);
    return rc;
}

const struct dsort_json *dsort_json_require(const struct dsort_json *v, const char *ctx,
                                            const char *key, enum dsort_json_type type, char *why,
                                            size_t n)
{
    static const char *const names[] = {"null",     "true or false", "a number",
                                        "a string", "an array",      "an object"};
    const struct dsort_json *x = dsort_json_get(v, key);
    if (!x)
        snprintf(why, n, "missing field '%s%s'", ctx, key);
    else if (x->type != type)
        snprintf(why, n, "field '%s%s' is not %s", ctx, key, names[type]);
    return x && x->type == type ? x : NULL;
}
