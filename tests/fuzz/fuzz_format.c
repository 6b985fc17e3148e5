/* fuzz_format - the --format parser (dsort_format_parse: "gensort", "fixed:SIZE:KEYOFF:KEYLEN").
 *
 * ("lines" is not parsed here: src/cli/dsort_opts.c recognises that word before calling the parser.)
 * Input: the spec (up to the first NUL). Checks:
 *   - no crash or UB on any spec;
 *   - it accepts exactly what a reference accepts: "gensort", or "fixed:" then three fields
 *     of decimal digits (leading zeros allowed) with values at most 2^24, SIZE >= 1,
 *     KEYLEN >= 1 and KEYOFF + KEYLEN <= SIZE; the fields parsed equal the reference's;
 *   - an error is DSORT_EINVAL with a message; a success has a canonical name that parses
 *     back to the same format, and dsort_cmp_init gives a comparison inside the record.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One field: digits up to ':' or the end; false if empty, not digits or above max. */
static bool ref_field(const char **s, uint64_t max, uint64_t *v)
{
    const char *p = *s;
    uint64_t x = 0;
    bool big = false;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        x = x * 10 + (uint64_t)(*p - '0');
        big |= x > max;
        if (big)
            x = max + 1;
    }
    if (big)
        return false;
    *v = x;
    *s = p;
    return true;
}

static bool ref_parse(const char *s, uint64_t f[3])
{
    if (!strcmp(s, "gensort")) {
        f[0] = 100, f[1] = 0, f[2] = 10;
        return true;
    }
    if (strncmp(s, "fixed:", 6))
        return false;
    s += 6;
    const uint64_t max = (uint64_t)1 << 24;
    for (int i = 0; i < 3; i++) {
        if (!ref_field(&s, max, &f[i]))
            return false;
        if (i < 2 && *s++ != ':')
            return false;
    }
    return *s == '\0' && f[0] >= 1 && f[2] >= 1 && f[1] + f[2] <= f[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *spec = malloc(size + 1);
    if (!spec)
        return 0;
    memcpy(spec, data, size);
    spec[size] = '\0';
    uint64_t f[3];
    bool ok = ref_parse(spec, f);
    struct dsort_format fmt;
    struct dsort_error err = {0};
    enum dsort_status st = dsort_format_parse(spec, &fmt, &err);
    if (st) {
        FUZZ_CHECK(st == DSORT_EINVAL && err.msg[0] && memchr(err.msg, 0, sizeof err.msg),
                   "status %d", (int)st);
        FUZZ_CHECK(!ok, "'%s' rejected (%s), the reference accepts it", spec, err.msg);
        free(spec);
        return 0;
    }
    FUZZ_CHECK(ok, "'%s' accepted as %s, the reference rejects it", spec, fmt.name);
    FUZZ_CHECK(fmt.kind == DSORT_FORMAT_FIXED && fmt.rec_size == f[0] && fmt.key_off == f[1] &&
                   fmt.key_len == f[2],
               "'%s' parsed as %zu:%zu:%zu", spec, fmt.rec_size, fmt.key_off, fmt.key_len);
    FUZZ_CHECK(memchr(fmt.name, 0, sizeof fmt.name), "name not terminated");
    struct dsort_format again;
    FUZZ_CHECK(dsort_format_parse(fmt.name, &again, &err) == DSORT_OK &&
                   again.rec_size == fmt.rec_size && again.key_off == fmt.key_off &&
                   again.key_len == fmt.key_len && !strcmp(again.name, fmt.name),
               "the name '%s' of '%s' does not parse back", fmt.name, spec);
    for (int o = 0; o < 8; o++) {
        struct dsort_order ord = {o & 1, (o >> 1) & 1, (o >> 2) & 1};
        struct dsort_cmp c;
        dsort_cmp_init(&c, &fmt, &ord);
        FUZZ_CHECK(c.key_off + c.key_len <= fmt.rec_size && c.tie_off + c.tie_len <= fmt.rec_size,
                   "comparison outside the record");
        FUZZ_CHECK(!c.tie_len == !dsort_order_last_resort(&ord), "last resort");
    }
    free(spec);
    return 0;
}
