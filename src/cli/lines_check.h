/* lines_check.h - dsort-validate --format lines and dsort -c --format lines (lines_check.c).
 * Program-internal. */
#ifndef DSORT_LINES_CHECK_H
#define DSORT_LINES_CHECK_H

#include "comm.h"
#include "io.h"
#include "keys.h"

/* Collective: check the lines of in (opened as 1-byte records) in the order k defines, print
 * valsort's figures on rank 0, and return the exit code on every rank: 0 in order, 1 not, 2
 * error (printed by the lowest failing rank). */
int dsort_lines_validate(const struct dsort_comm *c, const struct dsort_inputs *in,
                         const struct dsort_keys *k, unsigned char eol);

/* Collective: sort -c for the lines of in (as one sequence) in the order k defines. Unless quiet
 * (-C), rank 0 prints GNU's "PROG: FILE:LINE: disorder: TEXT" for the first line out of order
 * (LINE counted from 1 in FILE; FILE is shown[the file's argument index] when shown is not
 * NULL: "-" for standard input's copy, a /proc file's name for its copy). Returns on every rank 0
 * sorted, 1 not, 2 error (printed by the lowest failing rank). */
int dsort_lines_check(const struct dsort_comm *c, const struct dsort_inputs *in,
                      const struct dsort_keys *k, unsigned char eol, int quiet, char *const *shown);

#endif
