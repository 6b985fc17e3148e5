#include "debugout.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io.h"

#define DEBUGOUT_FLUSH (1u << 20) /* write out once this much is buffered */

void dsort_debugout_init(struct dsort_debugout *d, const struct dsort_keys *k, unsigned char eol,
                         int fd)
{
    memset(d, 0, sizeof *d);
    d->keys = k;
    d->eol = eol;
    d->fd = fd;
}

static int grow(unsigned char **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    unsigned char *q = realloc(*p, c);
    if (!q) {
        errno = ENOMEM;
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

static int put(struct dsort_debugout *d, const void *s, size_t n)
{
    if (n == 0) /* (an empty line first: nothing allocated yet) */
        return 0;
    if (grow(&d->out, &d->ocap, d->olen + n))
        return -1;
    memcpy(d->out + d->olen, s, n);
    d->olen += n;
    return 0;
}

static int put_run(struct dsort_debugout *d, unsigned char c, size_t n)
{
    if (n == 0)
        return 0;
    if (grow(&d->out, &d->ocap, d->olen + n))
        return -1;
    memset(d->out + d->olen, c, n);
    d->olen += n;
    return 0;
}

static int flush(struct dsort_debugout *d)
{
    if (dsort_io_write_all(d->fd, d->out, d->olen))
        return -1;
    d->olen = 0;
    return 0;
}

/* The columns bytes [b, e) of s take, as GNU sort --debug counts them in the C locale: control
 * characters none (a tab is shown as '>': one), every other byte one. */
static size_t width(const unsigned char *s, size_t b, size_t e)
{
    size_t w = 0;
    for (size_t i = b; i < e; i++)
        w += s[i] == '\t' || (s[i] >= 0x20 && s[i] != 0x7f);
    return w;
}

/* One mark: blanks to b, then underscores to e, or the no-match note at b. */
static int mark(struct dsort_debugout *d, const unsigned char *s, size_t b, size_t e)
{
    static const char none[] = "^ no match for key\n";
    if (put_run(d, ' ', width(s, 0, b)))
        return -1;
    size_t w = width(s, b, e);
    if (w == 0) /* nothing to show (control characters only, or nothing at all) */
        return put(d, none, sizeof none - 1);
    if (put_run(d, '_', w))
        return -1;
    return put(d, "\n", 1);
}

static int annotate(struct dsort_debugout *d, const unsigned char *s, size_t len)
{
    size_t at = d->olen;
    if (put(d, s, len) || put(d, "\n", 1))
        return -1;
    for (size_t i = at; i < at + len; i++)
        if (d->out[i] == '\t')
            d->out[i] = '>';
    const struct dsort_keys *k = d->keys;
    for (size_t i = 0; i < k->n; i++) {
        size_t b, e;
        dsort_keys_debug_span(k, i, s, len, &b, &e);
        if (mark(d, s, b, e))
            return -1;
    }
    /* The whole line, as GNU's debug_line: once when no key was given (it is then the key,
     * whatever -s and -u say), else as the last resort unless -s or -u turned it off. */
    if ((k->n == 0 || (!k->stable && !k->unique)) && mark(d, s, 0, len))
        return -1;
    return d->olen >= DEBUGOUT_FLUSH ? flush(d) : 0;
}

int dsort_debugout_write(struct dsort_debugout *d, const void *buf, size_t n)
{
    const unsigned char *p = buf, *end = p + n;
    while (p < end) {
        const unsigned char *q = memchr(p, d->eol, (size_t)(end - p));
        size_t take = (size_t)((q ? q : end) - p);
        if (!q || d->len) { /* part of a line: gather it */
            if (grow(&d->line, &d->cap, d->len + take))
                return -1;
            memcpy(d->line + d->len, p, take);
            d->len += take;
        }
        if (!q)
            break;
        if (d->len ? annotate(d, d->line, d->len) : annotate(d, p, take))
            return -1;
        d->len = 0;
        p = q + 1;
    }
    return 0;
}

int dsort_debugout_finish(struct dsort_debugout *d)
{
    if (d->len && annotate(d, d->line, d->len))
        return -1;
    d->len = 0;
    return flush(d);
}

void dsort_debugout_free(struct dsort_debugout *d)
{
    free(d->line);
    free(d->out);
    d->line = d->out = NULL;
    d->len = d->cap = d->olen = d->ocap = 0;
}
