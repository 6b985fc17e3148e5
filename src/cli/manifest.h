/* manifest.h - reading the _SUCCESS manifest of an output directory (dsort -O, dsort-gen
 * --parts) and checking the directory's parts against it, for dsort-validate. Local; no MPI.
 *
 * The manifest (mpi/output.c writes it) is JSON: {"parts": [{"name", "records", "bytes",
 * "checksum"}, ...], "total": {...}}, the checksum valsort's 128-bit sum in hex. A directory
 * without it is not an output: the job that made it failed, was killed, or still runs.
 */
#ifndef DSORT_MANIFEST_H
#define DSORT_MANIFEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checksum.h"

struct dsort_manifest_part {
    char name[64]; /* "part-NNNNN" */
    uint64_t records, bytes;
    struct dsort_sum128 checksum;
};

struct dsort_manifest {
    size_t count;
    struct dsort_manifest_part *parts;
    int node_local; /* written by --local-output: each node holds some of the parts */
};

/* Read DIR/_SUCCESS into *m. 0, or -1 with the reason in why (n bytes): "has no _SUCCESS
 * manifest ...", or what is wrong with it. */
int dsort_manifest_read(const char *dir, struct dsort_manifest *m, char *why, size_t n);

void dsort_manifest_free(struct dsort_manifest *m);

/* The index of the part called name in m, or m->count. */
size_t dsort_manifest_find(const struct dsort_manifest *m, const char *name);

/* Compare DIR's part-* files with m: each part listed must be there with its bytes, and each
 * part there must be listed. Every difference is a line on out (when not NULL) naming the
 * file, prefixed by prog. Returns the number of differences; -1 if DIR cannot be read (the
 * reason printed). */
long dsort_manifest_check_files(const char *prog, const char *dir, const struct dsort_manifest *m,
                                FILE *out);

#endif
