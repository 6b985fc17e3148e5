/* fuzz_keycmp - the -n, -g, -h, -M and -V comparators of keys_*.c against slow references.
 *
 * Input: byte 0 picks the kind (n g h M V, % 5) and options (bit 3 r, bit 4 b, bit 5 f,
 * bit 6 -s, bit 7: d for -V); byte 1 % 4 picks where the key is: 0 the global option (one
 * key, the whole line), 1 -k1 with the options, 2 -t, -k2,2 with them, 3 -k1.2,1.9 with
 * them; the rest is up to 6 lines (fuzz_lines in fuzz_common.h).
 * Checks, on every pair and triple of lines: fuzz_keys_properties (reflexivity,
 * antisymmetry, transitivity, and the 64-bit prefix never contradicting the comparison).
 * Where the key is the whole line and only r or b is set, compare_keys must also agree in
 * sign with a reference when the reference is unambiguous:
 *   -n  the longest [blanks]-?D*(.D*)? at the start, its value by strtold; lines without
 *       byte 0x80 (a thousands separator in GNU's C locale) and with at most 18 significant
 *       digits, so that strtold's value is exact enough to order them;
 *   -h  the same number, after its SI suffix (K M G T P E Z Y k right after it, signed,
 *       counting only when a digit is nonzero);
 *   -g  strtold on the NUL-terminated key (not a number < NaN < numbers; two NaNs skipped):
 *       this checks keys_general.c's rewrite of keys longer than 64 bytes against strtold itself;
 *   -M  the first three bytes after blanks, upper-cased, among JAN..DEC (else 0);
 *   -V  lines of the form D+(.D+)*: compared as tuples of integers, shorter first on ties.
 */
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool ref_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

static size_t ref_skip_blanks(const struct fuzz_line *l)
{
    size_t i = 0;
    while (i < l->len && ref_blank(l->p[i]))
        i++;
    return i;
}

/* The -n number at the start of l (after blanks): its value, and where it ends. Returns false
 * when the reference cannot be trusted for this line. */
static bool ref_number(const struct fuzz_line *l, long double *v, size_t *endp, bool *nonzero)
{
    if (memchr(l->p, 0x80, l->len))
        return false;
    size_t i = ref_skip_blanks(l), start = i;
    char buf[300];
    size_t o = 0, sig = 0;
    bool seen = false;
    if (i < l->len && l->p[i] == '-')
        buf[o++] = (char)l->p[i++];
    bool point = false;
    for (; i < l->len && o + 2 < sizeof buf; i++) {
        unsigned char c = l->p[i];
        if (c == '.' && !point) {
            point = true;
        } else if (isdigit(c)) {
            seen |= c != '0';
            sig += seen;
        } else {
            break;
        }
        buf[o++] = (char)c;
    }
    if (i < l->len && o + 2 >= sizeof buf)
        return false;
    buf[o] = '\0';
    if (sig > 18)
        return false;
    char *e;
    long double x = strtold(buf, &e);
    *v = e == buf ? 0 : x; /* "", "-", ".", "-." are 0 */
    *endp = i;
    *nonzero = seen;
    (void)start;
    return true;
}

static int ref_cmp_ld(long double x, long double y)
{
    return (x > y) - (x < y);
}

static bool ref_numeric(const struct fuzz_line *a, const struct fuzz_line *b, int *out)
{
    long double x, y;
    size_t ea, eb;
    bool za, zb;
    if (!ref_number(a, &x, &ea, &za) || !ref_number(b, &y, &eb, &zb))
        return false;
    *out = ref_cmp_ld(x, y);
    return true;
}

static int ref_unit(const struct fuzz_line *l, size_t end, bool nonzero)
{
    static const char units[] = "KMGTPEZY";
    if (!nonzero || end >= l->len)
        return 0;
    unsigned char c = l->p[end];
    const char *u = c ? strchr(units, c) : NULL;
    int order = c == 'k' ? 1 : u ? (int)(u - units) + 1 : 0;
    size_t i = ref_skip_blanks(l);
    return i < l->len && l->p[i] == '-' ? -order : order;
}

static bool ref_human(const struct fuzz_line *a, const struct fuzz_line *b, int *out)
{
    long double x, y;
    size_t ea, eb;
    bool za, zb;
    if (!ref_number(a, &x, &ea, &za) || !ref_number(b, &y, &eb, &zb))
        return false;
    int ua = ref_unit(a, ea, za), ub = ref_unit(b, eb, zb);
    *out = ua != ub ? (ua > ub) - (ua < ub) : ref_cmp_ld(x, y);
    return true;
}

/* strtold of the key as a C string: false when nothing was read. */
static bool ref_strtold(const struct fuzz_line *l, char *buf, long double *v)
{
    memcpy(buf, l->p, l->len);
    buf[l->len] = '\0';
    char *e;
    *v = strtold(buf, &e);
    return e != buf;
}

static bool ref_general(const struct fuzz_line *a, const struct fuzz_line *b, int *out)
{
    static char ba[1 << 17], bb[1 << 17];
    if (a->len >= sizeof ba || b->len >= sizeof bb)
        return false;
    long double x, y;
    bool ox = ref_strtold(a, ba, &x), oy = ref_strtold(b, bb, &y);
    if (!ox || !oy) {
        *out = ox - oy;
        return true;
    }
    if (isnan(x) && isnan(y))
        return false;
    if (isnan(x) || isnan(y)) {
        *out = isnan(x) ? -1 : 1;
        return true;
    }
    *out = ref_cmp_ld(x, y);
    return true;
}

static int ref_month_of(const struct fuzz_line *l)
{
    static const char *const names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                        "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
    size_t i = ref_skip_blanks(l);
    char m[4] = {0};
    for (int j = 0; j < 3 && i + (size_t)j < l->len; j++) {
        unsigned char c = l->p[i + (size_t)j];
        if (!c)
            break;
        m[j] = (char)(c < 0x80 ? toupper(c) : c);
    }
    for (int j = 0; j < 12; j++)
        if (!strcmp(m, names[j]))
            return j + 1;
    return 0;
}

static bool ref_month(const struct fuzz_line *a, const struct fuzz_line *b, int *out)
{
    int x = ref_month_of(a), y = ref_month_of(b);
    *out = (x > y) - (x < y);
    return true;
}

/* Is l D+(.D+)* after skip bytes? */
static bool ref_dotted(const struct fuzz_line *l, size_t skip)
{
    bool digit = false;
    for (size_t i = skip; i < l->len; i++) {
        if (isdigit(l->p[i]))
            digit = true;
        else if (l->p[i] == '.' && digit)
            digit = false;
        else
            return false;
    }
    return digit;
}

/* Compare the digit strings [p, pe) and [q, qe) as integers. */
static int ref_int_cmp(const unsigned char *p, const unsigned char *pe, const unsigned char *q,
                       const unsigned char *qe)
{
    while (p < pe && *p == '0')
        p++;
    while (q < qe && *q == '0')
        q++;
    if (pe - p != qe - q)
        return pe - p < qe - q ? -1 : 1;
    int d = memcmp(p, q, (size_t)(pe - p));
    return (d > 0) - (d < 0);
}

static bool ref_version(const struct fuzz_line *a, const struct fuzz_line *b, bool skip_blanks,
                        int *out)
{
    size_t sa = skip_blanks ? ref_skip_blanks(a) : 0, sb = skip_blanks ? ref_skip_blanks(b) : 0;
    if (!ref_dotted(a, sa) || !ref_dotted(b, sb))
        return false;
    const unsigned char *p = a->p + sa, *pe = a->p + a->len, *q = b->p + sb, *qe = b->p + b->len;
    for (;;) {
        if (p >= pe || q >= qe) {
            *out = (p < pe) - (q < qe);
            return true;
        }
        const unsigned char *pn = p, *qn = q;
        while (pn < pe && *pn != '.')
            pn++;
        while (qn < qe && *qn != '.')
            qn++;
        int d = ref_int_cmp(p, pn, q, qn);
        if (d) {
            *out = d;
            return true;
        }
        p = pn < pe ? pn + 1 : pn;
        q = qn < qe ? qn + 1 : qn;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char kinds[] = "nghMV";
    struct fuzz_in in = {data, size};
    unsigned b0 = fuzz_byte(&in), shape = fuzz_byte(&in) % 4;
    char kind = kinds[b0 % 5];
    bool rev = b0 & 8, blanks = b0 & 16, fold = b0 & 32, stable = b0 & 64;
    bool dict = (b0 & 128) && kind == 'V';
    char opts[8];
    size_t no = 0;
    opts[no++] = kind;
    if (rev)
        opts[no++] = 'r';
    if (blanks)
        opts[no++] = 'b';
    if (fold)
        opts[no++] = 'f';
    if (dict)
        opts[no++] = 'd';
    opts[no] = '\0';

    struct dsort_keys k;
    struct dsort_error err = {0};
    dsort_keys_init(&k);
    k.stable = stable;
    char spec[32];
    enum dsort_status st = DSORT_OK;
    switch (shape) {
    case 0:
        for (size_t i = 0; i < no && !st; i++)
            st = dsort_keys_set_global(&k, opts[i], &err);
        break;
    case 1:
        snprintf(spec, sizeof spec, "1%s", opts);
        st = dsort_keys_add(&k, spec, &err);
        break;
    case 2:
        st = dsort_keys_set_tab(&k, ",", &err);
        snprintf(spec, sizeof spec, "2,2%s", opts);
        if (!st)
            st = dsort_keys_add(&k, spec, &err);
        break;
    default:
        snprintf(spec, sizeof spec, "1.2%s,1.9", opts);
        st = dsort_keys_add(&k, spec, &err);
        break;
    }
    if (!st)
        st = dsort_keys_finish(&k, &err);
    FUZZ_CHECK(st == DSORT_OK, "options -%s (shape %u) rejected: %s", opts, shape, err.msg);

    struct fuzz_line l[6];
    size_t n = fuzz_lines(&in, l, 6);
    fuzz_keys_properties(&k, l, n);

    if (shape > 1 || fold || dict)
        return 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            int want = 0;
            bool ok = false;
            switch (kind) {
            case 'n':
                ok = ref_numeric(&l[i], &l[j], &want);
                break;
            case 'h':
                ok = ref_human(&l[i], &l[j], &want);
                break;
            case 'g':
                ok = ref_general(&l[i], &l[j], &want);
                break;
            case 'M':
                ok = ref_month(&l[i], &l[j], &want);
                break;
            default:
                ok = ref_version(&l[i], &l[j], blanks, &want);
                break;
            }
            if (!ok)
                continue;
            if (rev)
                want = -want;
            int got = fuzz_sign(dsort_keys_compare_keys(&k, l[i].p, l[i].len, l[j].p, l[j].len));
            if (got != want) {
                fprintf(stderr, "-%s: compare_keys gives %d, the reference %d\n", opts, got, want);
                fuzz_keys_fail("disagrees with the reference", &l[i], &l[j], NULL);
            }
        }
    return 0;
}
