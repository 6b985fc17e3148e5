/* pipeio.h - dsort's standard input and output (pipeio.c), for pipelines of modest size.
 * Program-internal (dsort only).
 *
 * Standard input (an INPUT of "-", or none): rank 0 copies it to a spool file in the first
 * temp directory, and only rank 0 reads it (the other ranks' share of the input is empty; the
 * exchange gives them their part of the key range as usual).
 * Standard output (no -o and no -O): the job writes node-local parts (-O DIR --local-output
 * with DIR a fresh name in the first temp directory); then every rank sends its part to rank 0
 * through MPI, in rank order, and rank 0 writes them to its standard output. Ranks on other
 * nodes need no shared file system for either.
 */
#ifndef DSORT_PIPEIO_H
#define DSORT_PIPEIO_H

#include <stddef.h>

#include "cli.h"
#include "debugout.h"

/* Collective. Rank 0 copies its standard input to a new file in dir ("dsort_stdin.XXXXXX",
 * registered for removal on signals) and every rank gets its name in path. Returns 0, or 2
 * after an error (printed by rank 0, naming the file and the cause). */
int dsort_pipeio_spool(const struct dsort_comm *c, const char *dir, char *path, size_t len);

/* Local: remove the spool file (rank 0; any other rank does nothing). */
void dsort_pipeio_unspool(const struct dsort_comm *c, const char *path);

/* Collective: a name for the node-local output directory in dir, the same on every rank
 * (made by rank 0: host, pid and a random part). */
void dsort_pipeio_outdir(const struct dsort_comm *c, const char *dir, char *path, size_t len);

/* Collective, after the job committed -O path --local-output: send every rank's part to rank 0
 * in rank order, rank 0 writing them to standard output; then remove the parts, the manifest
 * and the directories. With dbg (--debug; rank 0's, else NULL), rank 0 writes the lines through
 * it (debugout.h) instead. Returns 0, or 2 after an error (printed by the rank that saw it;
 * what rank 0 had written to standard output by then stays written).
 * Under a launcher that forwards rank 0's standard output (mpirun, srun: they report no error
 * writing it), rank 0 checks that the launcher's file took every byte when it can see that
 * file (mpirun is its parent and writes to a regular file: an error, and 2, when it stays
 * short), and otherwise says how many records and bytes it handed over; to a terminal it says
 * nothing. rec_size: the records' size, 0 for text lines ending in eol (to count them). */
int dsort_pipeio_emit(const struct dsort_comm *c, const char *path, struct dsort_debugout *dbg,
                      size_t rec_size, int eol);

#endif
