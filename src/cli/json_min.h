/* json_min.h - a small JSON reader for dsort-report (no MPI, no other dependency).
 *
 * Reads one JSON text (RFC 8259) into a tree: objects (keys kept in file order), arrays,
 * strings (escapes decoded to UTF-8; a lone surrogate, \u0000 or a byte that is not valid UTF-8
 * becomes U+FFFD), numbers (as double: exact for integers up to 2^53), true, false and null.
 * Nesting is limited to DSORT_JSON_MAX_DEPTH levels. On malformed input the parse fails with
 * the byte offset (0-based) where the reader stopped and what it expected there.
 */
#ifndef DSORT_JSON_MIN_H
#define DSORT_JSON_MIN_H

#include <stddef.h>

#define DSORT_JSON_MAX_DEPTH 64

enum dsort_json_type {
    DSORT_JSON_NULL,
    DSORT_JSON_BOOL,
    DSORT_JSON_NUMBER,
    DSORT_JSON_STRING,
    DSORT_JSON_ARRAY,
    DSORT_JSON_OBJECT
};

struct dsort_json {
    enum dsort_json_type type;
    int boolean;              /* BOOL */
    double number;            /* NUMBER */
    char *string;             /* STRING: NUL-terminated UTF-8 */
    struct dsort_json *items; /* ARRAY: the elements; OBJECT: the values */
    char **keys;              /* OBJECT: keys[i] names items[i] */
    size_t count;             /* ARRAY, OBJECT: number of items */
};

struct dsort_json_error {
    size_t offset; /* byte offset of the error in the text */
    char msg[128]; /* what was wrong there */
};

/* Parse text[0..len) into *out. 0 on success (free *out with dsort_json_free), -1 on malformed
 * input or no memory (*err says where and why; *out is then empty). */
int dsort_json_parse(const char *text, size_t len, struct dsort_json *out,
                     struct dsort_json_error *err);

/* Free what dsort_json_parse allocated in v (not v itself). */
void dsort_json_free(struct dsort_json *v);

/* The value of key in object v (the last one if the key repeats), or NULL if v is not an
 * object or has no such key. */
const struct dsort_json *dsort_json_get(const struct dsort_json *v, const char *key);

/* Like dsort_json_get, but NULL unless the value has the given type. */
const struct dsort_json *dsort_json_get_type(const struct dsort_json *v, const char *key,
                                             enum dsort_json_type type);

/* The value at key in object v if it has the type; else NULL, with why set to "missing field
 * 'CTXKEY'" or "field 'CTXKEY' is not a number" (ctx: where v is, e.g. "per_rank[2].", or ""). */
const struct dsort_json *dsort_json_require(const struct dsort_json *v, const char *ctx,
                                            const char *key, enum dsort_json_type type, char *why,
                                            size_t n);

/* The number (or dflt) and the string (or NULL) at key in object v. */
double dsort_json_number(const struct dsort_json *v, const char *key, double dflt);
const char *dsort_json_string(const struct dsort_json *v, const char *key);

/* Read and parse the file at path into *out. 0 on success, -1 with why set to the cause: the
 * system's message if it cannot be read, "invalid JSON at byte offset N: ..." if malformed. */
int dsort_json_read_file(const char *path, struct dsort_json *out, char *why, size_t n);

#endif
