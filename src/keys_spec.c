/* keys_spec.c - the ordering options into a struct dsort_keys: -k, -t, -bdfghiMnrV and
 * dsort_keys_finish's rules (keys.h). */
#include "keys_impl.h"

#include <string.h>

/* ---- Setup ------------------------------------------------------------------------------- */

void dsort_keys_init(struct dsort_keys *k)
{
    memset(k, 0, sizeof *k);
    k->tab = -1;
}

/* One option letter of a key or of the global options; pos is 1 for POS1, 2 for POS2 and 0
 * for a global option (where b means both). Returns false for a letter that is not one. */
static bool option_flag(char c, int pos, unsigned *flags)
{
    switch (c) {
    case 'b':
        if (pos != 2)
            *flags |= DSORT_KEY_SKIP_START_BLANKS;
        if (pos != 1)
            *flags |= DSORT_KEY_SKIP_END_BLANKS;
        return true;
    case 'd':
        *flags |= DSORT_KEY_DICT;
        return true;
    case 'f':
        *flags |= DSORT_KEY_FOLD;
        return true;
    case 'g':
        *flags |= DSORT_KEY_GENERAL;
        return true;
    case 'h':
        *flags |= DSORT_KEY_HUMAN;
        return true;
    case 'i':
        *flags |= DSORT_KEY_NONPRINT;
        return true;
    case 'M':
        *flags |= DSORT_KEY_MONTH;
        return true;
    case 'n':
        *flags |= DSORT_KEY_NUMERIC;
        return true;
    case 'r':
        *flags |= DSORT_KEY_REVERSE;
        return true;
    case 'V':
        *flags |= DSORT_KEY_VERSION;
        return true;
    case 'R':
        *flags |= DSORT_KEY_RANDOM;
        return true;
    default:
        return false;
    }
}

/* Parse the option letters at s into flags; returns where they stop. */
static const char *parse_options(const char *s, int pos, unsigned *flags)
{
    while (*s && option_flag(*s, pos, flags))
        s++;
    return s;
}

/* A field or character count as GNU reads it (xstrtoumax): optional white space, an
 * optional '+', decimal digits; too large a value becomes SIZE_MAX. Returns the end of the
 * digits, or NULL when there are none (or a '-'). */
static const char *parse_count(const char *s, size_t *val)
{
    while (is_space((uchar)*s))
        s++;
    if (*s == '+')
        s++;
    if (!is_digit((uchar)*s))
        return NULL;
    size_t v = 0;
    for (; is_digit((uchar)*s); s++) {
        size_t d = (size_t)(*s - '0');
        v = v > (SIZE_MAX - d) / 10 ? SIZE_MAX : v * 10 + d;
    }
    *val = v;
    return s;
}

/* gnulib's quote() in the C locale, which GNU sort uses in its messages: 'text', with C
 * escapes for \a \b \f \n \r \t \v, \\ and \', and octal for other bytes outside
 * 0x20..0x7e. Truncated to fit size. */
static const char *quoted(const char *s, char *buf, size_t size)
{
    static const char plain[] = "\a\b\f\n\r\t\v\\'";
    static const char named[] = "abfnrtv\\'";
    size_t o = 0;
    buf[o++] = '\'';
    for (; *s && o + 6 < size; s++) {
        uchar c = (uchar)*s;
        const char *e = strchr(plain, c);
        if (e) {
            buf[o++] = '\\';
            buf[o++] = named[e - plain];
        } else if (c < 0x20 || c > 0x7e) {
            buf[o++] = '\\';
            buf[o++] = (char)('0' + (c >> 6));
            buf[o++] = (char)('0' + ((c >> 3) & 7));
            buf[o++] = (char)('0' + (c & 7));
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

static enum dsort_status bad_spec(struct dsort_error *err, const char *why, const char *spec)
{
    char q[256];
    return DSORT_ERR(err, DSORT_EINVAL, 0, "%s: invalid field specification %s", why,
                     quoted(spec, q, sizeof q));
}

static enum dsort_status bad_count(struct dsort_error *err, const char *why, const char *at)
{
    char q[256];
    return DSORT_ERR(err, DSORT_EINVAL, 0, "%s: invalid count at start of %s", why,
                     quoted(at, q, sizeof q));
}

enum dsort_status dsort_keys_add(struct dsort_keys *k, const char *spec, struct dsort_error *err)
{
    struct dsort_key key = {0, 0, DSORT_KEY_EOL, 0, 0};
    const char *s = parse_count(spec, &key.sfield);
    if (!s)
        return bad_count(err, "invalid number at field start", spec);
    if (key.sfield-- == 0)
        return bad_spec(err, "field number is zero", spec);
    if (*s == '.') {
        const char *at = s + 1;
        if (!(s = parse_count(at, &key.schar)))
            return bad_count(err, "invalid number after '.'", at);
        if (key.schar-- == 0)
            return bad_spec(err, "character offset is zero", spec);
    }
    s = parse_options(s, 1, &key.flags);
    if (*s == ',') {
        const char *at = s + 1;
        if (!(s = parse_count(at, &key.efield)))
            return bad_count(err, "invalid number after ','", at);
        if (key.efield-- == 0)
            return bad_spec(err, "field number is zero", spec);
        if (*s == '.') {
            at = s + 1;
            if (!(s = parse_count(at, &key.echar)))
                return bad_count(err, "invalid number after '.'", at);
        }
        s = parse_options(s, 2, &key.flags);
    }
    if (*s)
        return bad_spec(err, "stray character in field spec", spec);
    if (k->n == DSORT_KEYS_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many keys (at most %d): '%s'", DSORT_KEYS_MAX,
                         spec);
    k->key[k->n++] = key;
    k->finished = 0;
    return DSORT_OK;
}

enum dsort_status dsort_keys_add_obsolete(struct dsort_keys *k, const char *pos1, const char *pos2,
                                          int *not_key, struct dsort_error *err)
{
    struct dsort_key key = {0, 0, DSORT_KEY_EOL, 0, 0};
    /* +A[.x][OPTS]: anything else is a file's name, as in GNU */
    const char *s = *pos1 == '+' ? parse_count(pos1 + 1, &key.sfield) : NULL;
    if (s && *s == '.')
        s = parse_count(s + 1, &key.schar);
    if (s)
        s = parse_options(s, 1, &key.flags);
    *not_key = !s || *s;
    if (*not_key)
        return DSORT_EINVAL;
    if (pos2) {
        /* -B[.y][OPTS]: B fields from 0 and y characters into the next one; y = 0 (or none)
         * ends the key with field B (1-based), which -0 leaves as field 1. */
        const char *at = pos2 + 1;
        if (!(s = parse_count(at, &key.efield)))
            return bad_count(err, "invalid number after '-'", at);
        if (*s == '.') {
            at = s + 1;
            if (!(s = parse_count(at, &key.echar)))
                return bad_count(err, "invalid number after '.'", at);
        }
        if (!key.echar && key.efield)
            key.efield--;
        s = parse_options(s, 2, &key.flags);
        if (*s)
            return bad_spec(err, "stray character in field spec", pos2);
    }
    if (k->n == DSORT_KEYS_MAX)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "too many keys (at most %d): '%s'", DSORT_KEYS_MAX,
                         pos1);
    k->key[k->n++] = key;
    k->finished = 0;
    return DSORT_OK;
}

enum dsort_status dsort_keys_set_tab(struct dsort_keys *k, const char *arg, struct dsort_error *err)
{
    int tab = (uchar)arg[0];
    if (!arg[0])
        return DSORT_ERR(err, DSORT_EINVAL, 0, "empty tab");
    if (arg[1]) {
        if (strcmp(arg, "\\0") != 0) {
            char q[256];
            return DSORT_ERR(err, DSORT_EINVAL, 0, "multi-character tab %s",
                             quoted(arg, q, sizeof q));
        }
        tab = 0;
    }
    if (k->tab >= 0 && k->tab != tab)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "incompatible tabs");
    k->tab = tab;
    return DSORT_OK;
}

enum dsort_status dsort_keys_set_global(struct dsort_keys *k, char opt, struct dsort_error *err)
{
    unsigned flags = k->global;
    if (!option_flag(opt, 0, &flags))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid ordering option -- '%c'", opt);
    k->global = flags;
    k->finished = 0;
    return DSORT_OK;
}

/* GNU's spelling of a key's options in the "incompatible" message: b and r left out, d or
 * i (d when both), in the order of its key_to_opts. */
static void incompatible_letters(unsigned flags, char *out)
{
    if (flags & DSORT_KEY_DICT)
        *out++ = 'd';
    if (flags & DSORT_KEY_FOLD)
        *out++ = 'f';
    if (flags & DSORT_KEY_GENERAL)
        *out++ = 'g';
    if (flags & DSORT_KEY_HUMAN)
        *out++ = 'h';
    if ((flags & KEY_IGNORE_FLAGS) == DSORT_KEY_NONPRINT)
        *out++ = 'i';
    if (flags & DSORT_KEY_MONTH)
        *out++ = 'M';
    if (flags & DSORT_KEY_NUMERIC)
        *out++ = 'n';
    if (flags & DSORT_KEY_RANDOM)
        *out++ = 'R';
    if (flags & DSORT_KEY_VERSION)
        *out++ = 'V';
    *out = '\0';
}

/* At most one of n, g, h, M and "V or R or d or i" (GNU's check_ordering_compatibility). */
static bool compatible(unsigned f)
{
    int kinds = !!(f & DSORT_KEY_NUMERIC) + !!(f & DSORT_KEY_GENERAL) + !!(f & DSORT_KEY_HUMAN) +
                !!(f & DSORT_KEY_MONTH) +
                !!(f & (DSORT_KEY_VERSION | DSORT_KEY_RANDOM | KEY_IGNORE_FLAGS));
    return kinds <= 1;
}

enum dsort_status dsort_keys_finish(struct dsort_keys *k, struct dsort_error *err)
{
    struct dsort_key keys[DSORT_KEYS_MAX];
    size_t n = k->n;
    if (dsort_keys_random(k) && !k->random_seeded)
        return DSORT_ERR(err, DSORT_EINVAL, 0,
                         "random sort (R) needs a seed, which only dsort "
                         "gives it (--random-source)");
    memcpy(keys, k->key, n * sizeof keys[0]);
    for (size_t i = 0; i < n; i++)
        if (!(keys[i].flags & (KEY_OPTION_FLAGS | DSORT_KEY_REVERSE)))
            keys[i].flags = k->global;
    if (n == 0 && (k->global & KEY_OPTION_FLAGS))
        keys[n++] = (struct dsort_key){0, 0, DSORT_KEY_EOL, 0, k->global};
    for (size_t i = 0; i < n; i++) {
        if (!compatible(keys[i].flags)) {
            char opts[16];
            incompatible_letters(keys[i].flags, opts);
            return DSORT_ERR(err, DSORT_EINVAL, 0, "options '-%s' are incompatible", opts);
        }
        if (keys[i].flags & DSORT_KEY_DICT)
            keys[i].flags &= ~(unsigned)DSORT_KEY_NONPRINT;
    }
    memcpy(k->key, keys, n * sizeof keys[0]);
    k->n = n;
    k->reverse = !!(k->global & DSORT_KEY_REVERSE);
    if (n == 0)
        k->prefix_mode = PREFIX_LINE;
    else if (k->key[0].flags & DSORT_KEY_RANDOM)
        k->prefix_mode = PREFIX_RANDOM;
    else if (!(k->key[0].flags & (KEY_KIND_FLAGS | KEY_IGNORE_FLAGS)))
        k->prefix_mode = PREFIX_KEY;
    else if ((k->key[0].flags & KEY_KIND_FLAGS) == DSORT_KEY_NUMERIC)
        k->prefix_mode = PREFIX_NUMERIC;
    else if ((k->key[0].flags & KEY_KIND_FLAGS) == DSORT_KEY_HUMAN)
        k->prefix_mode = PREFIX_HUMAN;
    else
        k->prefix_mode = PREFIX_NONE;
    k->finished = 1;
    return DSORT_OK;
}

int dsort_keys_plain(const struct dsort_keys *k)
{
    return k->n == 0 && !k->reverse;
}

int dsort_keys_has_prefix(const struct dsort_keys *k)
{
    return k->prefix_mode != PREFIX_NONE;
}
