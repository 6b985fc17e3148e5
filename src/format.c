#include "format.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

void dsort_format_gensort(struct dsort_format *fmt)
{
    memset(fmt, 0, sizeof *fmt);
    fmt->kind = DSORT_FORMAT_FIXED;
    fmt->rec_size = 100;
    fmt->key_off = 0;
    fmt->key_len = 10;
    snprintf(fmt->name, sizeof fmt->name, "gensort");
}

/* Parse one decimal field ending at ':' or '\0'; advances *p past the separator. Returns 0;
 * -1 if it is not such a field; -2 if it is a number above max. */
static int parse_field(const char **p, uint64_t max, uint64_t *out)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != ':' && *end != '\0')
        return -1;
    if (errno || v > max)
        return -2; /* a number, but too large */
    *out = v;
    /* A separator must be followed by another field. */
    if (*end == ':' && end[1] == '\0')
        return -1;
    *p = *end == ':' ? end + 1 : end;
    return 0;
}

enum dsort_status dsort_format_parse(const char *spec, struct dsort_format *fmt,
                                     struct dsort_error *err)
{
    if (!strcmp(spec, "gensort")) {
        dsort_format_gensort(fmt);
        return DSORT_OK;
    }
    if (strncmp(spec, "fixed:", 6))
        return DSORT_ERR(
            err, DSORT_EINVAL, 0,
            "unknown format '%s' (expected gensort, lines or fixed:SIZE:KEYOFF:KEYLEN)", spec);
    const uint64_t max = 1u << 24; /* 16 MiB records are plenty for a fixed format */
    uint64_t size, off, len;
    const char *p = spec + 6;
    int bad = parse_field(&p, max, &size);
    bad = bad ? bad : parse_field(&p, max, &off);
    bad = bad ? bad : parse_field(&p, max, &len);
    if (bad == -2)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad format '%s': SIZE, KEYOFF and KEYLEN are at most %" PRIu64
                         " (records of up to 16 MiB)",
                         spec, max);
    if (bad || *p != '\0')
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad format '%s' (expected fixed:SIZE:KEYOFF:KEYLEN, decimal numbers)",
                         spec);
    if (size == 0 || len == 0 || off + len > size)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "bad format '%s': need SIZE >= 1, KEYLEN >= 1 and KEYOFF + KEYLEN <= SIZE",
                         spec);
    memset(fmt, 0, sizeof *fmt);
    fmt->kind = DSORT_FORMAT_FIXED;
    fmt->rec_size = size;
    fmt->key_off = off;
    fmt->key_len = len;
    snprintf(fmt->name, sizeof fmt->name, "fixed:%" PRIu64 ":%" PRIu64 ":%" PRIu64, size, off, len);
    return DSORT_OK;
}

void dsort_cmp_init(struct dsort_cmp *c, const struct dsort_format *fmt,
                    const struct dsort_order *ord)
{
    memset(c, 0, sizeof *c);
    c->key_off = fmt->key_off;
    c->key_len = fmt->key_len;
    c->reverse = ord->reverse;
    if (dsort_order_last_resort(ord)) {
        c->tie_off = 0;
        c->tie_len = fmt->rec_size;
        c->tie_reverse = ord->reverse;
    }
}
