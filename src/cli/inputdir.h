/* inputdir.h - a directory among dsort's INPUTs stands for its parts (the TeraGen-TeraSort
 * chain: dsort-gen --parts DIR, then dsort DIR -O OUT). Program-internal (dsort only).
 *
 * A directory's parts are its part-* files in name order, as dsort-validate and --local-inputs
 * take them (io.h's DSORT_INPUTS_EXPAND_DIRS): _SUCCESS, hidden files (._SUCCESS.tmp, a killed
 * job's stage) and other names are not parts. When the directory holds a _SUCCESS manifest
 * (manifest.h), its parts must be the ones listed, with the bytes listed and, for fixed-size
 * records, the records listed. Rank 0 lists and checks, so that every rank sorts the same list
 * even where a shared file system shows a fresh directory late to some nodes.
 */
#ifndef DSORT_INPUTDIR_H
#define DSORT_INPUTDIR_H

#include <stddef.h>

#include "cli.h"
#include "format.h"

struct dsort_inputdir {
    char *buf;    /* the paths, NUL-separated */
    char **paths; /* the INPUTs with each directory replaced by its parts, then NULL; NULL
                   * when no INPUT is a directory */
    size_t n;
};

/* Collective. Expand the directories among inputs (n; "-" is standard input, never one) into
 * d. fmt: the records' format (the parts are opened as dsort_inputs_open does); rec_size: the
 * record size that the manifest's record counts are checked against (0, for lines: not
 * checked). Returns -1 (d->paths NULL if no INPUT is a directory), or 2 after an
 * error printed by rank 0 that names the directory or part and the cause: a directory that
 * cannot be read or holds no parts, a manifest that cannot be read, a part missing from the
 * directory or from the manifest, or one whose size or record count is not the manifest's (the
 * differences are printed first, one line each). Nothing is read but the directory, the
 * manifest and the parts' sizes. */
int dsort_inputdir_expand(const struct dsort_comm *c, char *const *inputs, size_t n,
                          const struct dsort_format *fmt, size_t rec_size,
                          struct dsort_inputdir *d);

/* Local: the first of inputs (n) that is a directory holding path (path itself, or a name
 * inside it, compared by canonical names; path need not exist), or NULL. An output written
 * there would become one of its parts, or replace one, and its manifest would no longer hold. */
const char *dsort_inputdir_holding(char *const *inputs, size_t n, const char *path);

/* Local: free d (any state after dsort_inputdir_expand; zeroed may be freed). */
void dsort_inputdir_free(struct dsort_inputdir *d);

#endif
