/* fuzz_keyspec - the key-spec parser (-k, -t, the global -bdfghiMnrVR, -s, -u) and then the
 * order it builds.
 *
 * Input: a program of options, then lines.
 *   op byte % 8: 0-2 -k ARG, 3 -t ARG (ARG: the bytes up to a NUL or the end of the input),
 *                4 a global option (the next byte, any value), 5 toggle -s, 6 toggle -u,
 *                7 end of the options (also at most 40 options);
 *   then dsort_keys_finish, then lines for fuzz_lines (fuzz_common.h).
 * Checks:
 *   - no crash or UB for any argument (sanitizers);
 *   - an error sets a NUL-terminated, non-empty message and leaves the struct as it was
 *     (keys.h: "the struct then keeps its previous keys and settings");
 *   - dsort_keys_add accepts exactly what an independent parser of F[.C][OPTS][,F[.C][OPTS]]
 *     accepts (GNU's xstrtoumax counts: blanks, '+', saturation), with the same positions
 *     and flags; -t and the global options likewise;
 *   - after a successful finish (and a second, harmless one): fuzz_keys_properties on the
 *     lines (antisymmetry, reflexivity, transitivity, prefix contract).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A count as keys.h documents it (GNU's xstrtoumax): white space, no '-', an optional '+',
 * decimal digits; too large becomes SIZE_MAX. NULL when there are no digits. */
static const char *ref_count(const char *s, size_t *v)
{
    const char *t = s;
    while (isspace((unsigned char)*t))
        t++;
    if (*t == '-')
        return NULL;
    errno = 0;
    char *end;
    uintmax_t x = strtoumax(s, &end, 10);
    if (end == s)
        return NULL;
    *v = errno == ERANGE || x > SIZE_MAX ? SIZE_MAX : (size_t)x;
    return end;
}

static const char *ref_options(const char *s, int pos, unsigned *flags)
{
    static const char letters[] = "bdfghiMnrVR";
    static const unsigned bits[] = {0,
                                    DSORT_KEY_DICT,
                                    DSORT_KEY_FOLD,
                                    DSORT_KEY_GENERAL,
                                    DSORT_KEY_HUMAN,
                                    DSORT_KEY_NONPRINT,
                                    DSORT_KEY_MONTH,
                                    DSORT_KEY_NUMERIC,
                                    DSORT_KEY_REVERSE,
                                    DSORT_KEY_VERSION,
                                    DSORT_KEY_RANDOM};
    for (; *s; s++) {
        const char *l = strchr(letters, *s);
        if (!l)
            break;
        if (*s == 'b')
            *flags |= pos == 1   ? DSORT_KEY_SKIP_START_BLANKS
                      : pos == 2 ? DSORT_KEY_SKIP_END_BLANKS
                                 : DSORT_KEY_SKIP_START_BLANKS | DSORT_KEY_SKIP_END_BLANKS;
        else
            *flags |= bits[l - letters];
    }
    return s;
}

/* The reference -k parser: true and *key when spec is valid. */
static bool ref_key(const char *s, struct dsort_key *key)
{
    memset(key, 0, sizeof *key);
    key->efield = DSORT_KEY_EOL;
    if (!(s = ref_count(s, &key->sfield)) || key->sfield == 0)
        return false;
    key->sfield--;
    if (*s == '.') {
        if (!(s = ref_count(s + 1, &key->schar)) || key->schar == 0)
            return false;
        key->schar--;
    }
    s = ref_options(s, 1, &key->flags);
    if (*s == ',') {
        if (!(s = ref_count(s + 1, &key->efield)) || key->efield == 0)
            return false;
        key->efield--;
        if (*s == '.' && !(s = ref_count(s + 1, &key->echar)))
            return false;
        s = ref_options(s, 2, &key->flags);
    }
    return *s == '\0';
}

static void check_error(enum dsort_status st, const struct dsort_error *err,
                        const struct dsort_keys *before, const struct dsort_keys *after,
                        const char *what, const char *arg)
{
    FUZZ_CHECK(st == DSORT_EINVAL, "%s '%s': status %d", what, arg, (int)st);
    FUZZ_CHECK(memchr(err->msg, 0, sizeof err->msg) && err->msg[0], "%s: no message", what);
    FUZZ_CHECK(!memcmp(before, after, sizeof *before), "%s '%s' failed but changed the keys", what,
               arg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    struct dsort_keys k, before;
    dsort_keys_init(&k);
    char arg[512];
    for (int ops = 0; ops < 40 && in.n; ops++) {
        unsigned op = fuzz_byte(&in) % 8;
        if (op == 7)
            break;
        size_t len = 0;
        if (op <= 3) {
            while (in.n && in.p[0] && len + 1 < sizeof arg)
                arg[len++] = (char)fuzz_byte(&in);
            fuzz_byte(&in); /* the NUL */
        }
        arg[len] = '\0';
        struct dsort_error err = {0};
        enum dsort_status st;
        memcpy(&before, &k, sizeof k);
        if (op <= 2) {
            struct dsort_key ref;
            bool ok = ref_key(arg, &ref);
            st = dsort_keys_add(&k, arg, &err);
            if (st) {
                check_error(st, &err, &before, &k, "-k", arg);
                FUZZ_CHECK(!ok || before.n == DSORT_KEYS_MAX, "-k '%s' rejected: %s", arg, err.msg);
            } else {
                FUZZ_CHECK(ok, "-k '%s' accepted, the reference rejects it", arg);
                const struct dsort_key *got = &k.key[k.n - 1];
                FUZZ_CHECK(k.n == before.n + 1 && got->sfield == ref.sfield &&
                               got->schar == ref.schar && got->efield == ref.efield &&
                               got->echar == ref.echar && got->flags == ref.flags,
                           "-k '%s': got %zu.%zu,%zu.%zu/%#x, reference %zu.%zu,%zu.%zu/%#x", arg,
                           got->sfield, got->schar, got->efield, got->echar, got->flags, ref.sfield,
                           ref.schar, ref.efield, ref.echar, ref.flags);
            }
        } else if (op == 3) {
            int want = len == 1 ? (unsigned char)arg[0] : !strcmp(arg, "\\0") ? 0 : -1;
            st = dsort_keys_set_tab(&k, arg, &err);
            if (st) {
                check_error(st, &err, &before, &k, "-t", arg);
                FUZZ_CHECK(want < 0 || (before.tab >= 0 && before.tab != want),
                           "-t '%s' rejected: %s", arg, err.msg);
            } else {
                FUZZ_CHECK(want >= 0 && k.tab == want && (before.tab < 0 || before.tab == want),
                           "-t '%s' accepted as %d", arg, k.tab);
            }
        } else if (op == 4) {
            char opt = (char)fuzz_byte(&in);
            char s[2] = {opt, '\0'};
            bool ok = opt && strchr("bdfghiMnrVR", opt);
            st = dsort_keys_set_global(&k, opt, &err);
            if (st) {
                check_error(st, &err, &before, &k, "global option", s);
                FUZZ_CHECK(!ok, "global option '%c' rejected: %s", opt, err.msg);
            } else {
                unsigned flags = before.global;
                ref_options(s, 0, &flags);
                FUZZ_CHECK(ok && k.global == flags, "global option %#x accepted as %#x",
                           (unsigned)(unsigned char)opt, k.global);
            }
        } else if (op == 5) {
            k.stable = !k.stable;
        } else {
            k.unique = !k.unique;
        }
    }
    struct dsort_error err = {0};
    memcpy(&before, &k, sizeof k);
    enum dsort_status st = dsort_keys_finish(&k, &err);
    if (st) {
        check_error(st, &err, &before, &k, "finish", "");
        return 0;
    }
    memcpy(&before, &k, sizeof k);
    FUZZ_CHECK(dsort_keys_finish(&k, &err) == DSORT_OK && !memcmp(&before, &k, sizeof k),
               "a second finish changed the keys");
    struct fuzz_line lines[12];
    size_t n = fuzz_lines(&in, lines, 12);
    fuzz_keys_properties(&k, lines, n);
    return 0;
}
