/* debugout.h - --debug: GNU sort's annotation of the sorted lines (debugout.c). Program-internal
 * (dsort's standard output, see pipeio.h). Local; no MPI.
 *
 * Each line is written with its tabs shown as '>' and a newline (also under -z), then one line
 * a key: blanks up to where the key starts, then an underscore a byte of it, or "^ no match for
 * key" when it is empty; then, unless -s or -u, the whole line so (the last resort). Without
 * keys the whole line is the key and is marked once, -s and -u or not. That is
 * what `LC_ALL=C sort --debug` writes for the same keys (dsort_keys_debug_span).
 */
#ifndef DSORT_DEBUGOUT_H
#define DSORT_DEBUGOUT_H

#include <stddef.h>

#include "keys.h"

struct dsort_debugout {
    const struct dsort_keys *keys; /* finished */
    unsigned char eol;             /* the input's line terminator ('\n', or '\0' under -z) */
    int fd;                        /* where the annotated lines go */
    unsigned char *line;           /* a line not yet ended (its bytes so far) */
    size_t len, cap;
    unsigned char *out; /* what is not written yet */
    size_t olen, ocap;
};

/* Set d up (no allocation yet). */
void dsort_debugout_init(struct dsort_debugout *d, const struct dsort_keys *k, unsigned char eol,
                         int fd);
/* Take n more bytes of the sorted output. 0, or -1 with errno (a write to fd failed; ENOMEM). */
int dsort_debugout_write(struct dsort_debugout *d, const void *buf, size_t n);
/* Annotate a last line without terminator and write what is left. 0, or -1 with errno. */
int dsort_debugout_finish(struct dsort_debugout *d);
/* Free d's buffers (any state). */
void dsort_debugout_free(struct dsort_debugout *d);

#endif
