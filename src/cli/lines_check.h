/* lines_check.h - dsort-validate --format lines and dsort -c --format lines (lines_check.c).
 * Program-internal. */
#ifndef DSORT_LINES_CHECK_H
#define DSORT_LINES_CHECK_H

#include "check.h"
#include "comm.h"
#include "io.h"
#include "keys.h"

/* valsort's figures of a sequence of lines (a record is a line). */
struct dsort_lines_figures {
    uint64_t records, unordered, first_unordered, duplicates;
    struct dsort_sum128 checksum;
};

/* Collective: check the lines of in (opened as 1-byte records) in the order k defines, put
 * valsort's figures into fig and each file's lines and checksum into files (in->count entries,
 * may be NULL), on every rank, and return the exit code on every rank: 0 in order, 1 not, 2
 * error (printed by the lowest failing rank; fig and files are then undefined). */
int dsort_lines_validate(const struct dsort_comm *c, const struct dsort_inputs *in,
                         const struct dsort_keys *k, unsigned char eol,
                         struct dsort_lines_figures *fig, struct dsort_file_sum *files);

/* Collective: sort -c for the lines of in (as one sequence) in the order k defines. Unless quiet
 * (-C), rank 0 prints GNU's "PROG: FILE:LINE: disorder: TEXT" for the first line out of order
 * (LINE counted from 1 in FILE; FILE is shown[the file's argument index] when shown is not
 * NULL: "-" for standard input's copy, a /proc file's name for its copy). Returns on every rank 0
 * sorted, 1 not, 2 error (printed by the lowest failing rank). */
int dsort_lines_check(const struct dsort_comm *c, const struct dsort_inputs *in,
                      const struct dsort_keys *k, unsigned char eol, int quiet, char *const *shown);

#endif
