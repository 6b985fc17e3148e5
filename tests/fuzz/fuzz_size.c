/* fuzz_size - size parsing: dsort_mem_parse_size (-S, --block-size, --exchange-chunk) and
 * dsort_budget_resolve (-S SIZE or N%, shared by the node's ranks).
 *
 * Input: byte 0 picks the node's ranks (1-8) and memory; the rest is the text (up to a NUL).
 * Checks:
 *   - no crash or UB on any text (float-to-integer overflow included: UBSan);
 *   - an error is DSORT_EINVAL with a message;
 *   - plain sizes are exact: D{1,15} with an optional K/M/G/T (powers of 1024, either case)
 *     and an optional B must parse to exactly D x 1024^k, and be accepted;
 *   - the budget agrees with dsort_mem_parse_size on a size, is > 0 on success, never more
 *     than the node's memory for a percentage, and its `why` is a terminated string.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "fuzz_common.h"
#include "mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A plain size and its exact value; false when text is not one. */
static bool ref_plain(const char *s, uint64_t *v)
{
    uint64_t x = 0;
    size_t d = 0;
    for (; isdigit((unsigned char)*s) && d < 16; s++, d++)
        x = x * 10 + (uint64_t)(*s - '0');
    if (d == 0 || d > 15)
        return false;
    static const char units[] = "KMGT";
    const char *u = *s ? strchr(units, toupper((unsigned char)*s)) : NULL;
    int shift = 0;
    if (u) {
        shift = 10 * (int)(u - units + 1);
        s++;
    }
    if (toupper((unsigned char)*s) == 'B')
        s++;
    if (*s)
        return false;
    if (shift && x > (UINT64_MAX >> shift))
        return false; /* too large: no exact expectation */
    *v = x << shift;
    return true;
}

static void check_error(enum dsort_status st, const struct dsort_error *err)
{
    FUZZ_CHECK(st == DSORT_EINVAL, "status %d", (int)st);
    FUZZ_CHECK(err->msg[0] && memchr(err->msg, 0, sizeof err->msg), "no message");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_in in = {data, size};
    unsigned b0 = fuzz_byte(&in);
    int ranks = 1 + (int)(b0 & 7);
    /* Realistic node memory: 1 GiB to 2 PiB (larger values are not real machines). */
    uint64_t node = (uint64_t)1 << (30 + (b0 >> 3) % 22);
    char *text = malloc(in.n + 1);
    if (!text)
        return 0;
    memcpy(text, in.p, in.n);
    text[in.n] = '\0';

    uint64_t bytes = 0, want;
    struct dsort_error err = {0};
    enum dsort_status st = dsort_mem_parse_size(text, &bytes, &err);
    bool plain = ref_plain(text, &want);
    if (st) {
        check_error(st, &err);
        FUZZ_CHECK(!plain || want > UINT64_C(18000000000000000000), "'%s' rejected: %s", text,
                   err.msg);
    } else if (plain) {
        /* Only values below 2^53 survive the double in between exactly. */
        FUZZ_CHECK(want > ((uint64_t)1 << 53) || bytes == want, "'%s' parsed as %llu, not %llu",
                   text, (unsigned long long)bytes, (unsigned long long)want);
    }

    struct dsort_budget b;
    struct dsort_error berr = {0};
    enum dsort_status bst = dsort_budget_resolve(text, node, ranks, &b, &berr);
    if (bst) {
        check_error(bst, &berr);
    } else {
        FUZZ_CHECK(b.bytes > 0, "'%s': a budget of 0", text);
        FUZZ_CHECK(memchr(b.why, 0, sizeof b.why), "why not terminated");
        size_t len = strlen(text);
        if (len > 1 && text[len - 1] == '%')
            FUZZ_CHECK(b.bytes <= node, "'%s': %llu bytes of a %llu-byte node", text,
                       (unsigned long long)b.bytes, (unsigned long long)node);
        else /* the size as given, or less with a note saying why (the node, the cgroup or
              * the process's limits cannot give it) */
            FUZZ_CHECK(!st && (b.bytes == bytes || (b.bytes < bytes && b.note[0])),
                       "'%s': budget %llu, size %llu (status %d, note '%s')", text,
                       (unsigned long long)b.bytes, (unsigned long long)bytes, (int)st, b.note);
    }
    free(text);
    return 0;
}
