/* jsonstr.h - strings in the JSON that dsort writes (--stats, --plan --json).
 *
 * Every string written into JSON goes through here, so that a name holding a quote, a
 * backslash, a control character or bytes that are not UTF-8 (file and host names may hold any
 * byte) cannot break the document. Local.
 */
#ifndef DSORT_JSONSTR_H
#define DSORT_JSONSTR_H

#include <stdio.h>

/* Write s to f as a JSON string literal, quotes included (NULL: null). '"' and '\\' are
 * escaped, '\n' and '\t' by name, other control characters and DEL as \u00XX; a byte that
 * does not start a valid UTF-8 sequence is written as \ufffd. */
void dsort_jsonstr_write(FILE *f, const char *s);

#endif
