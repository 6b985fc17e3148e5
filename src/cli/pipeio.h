/* pipeio.h - dsort's standard input and output (pipeio.c), for pipelines of modest size.
 * Program-internal (dsort only).
 *
 * Standard input (an INPUT of "-", or none), and files whose size says nothing of what they
 * hold (/proc, /sys): rank 0 copies them to files in the first temp directory, and only rank 0
 * reads the inputs (the other ranks' share of the input is empty; the exchange gives them
 * their part of the key range as usual).
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

/* Room for a copy's path. */
#define DSORT_PIPEIO_PATH 4096

/* The INPUTs as the job reads them. Standard input (the first "-"; a later "-" is empty, as in
 * GNU, and left out) and every file whose stat size is not what it holds (dsort_io_unsized, as
 * rank 0 sees it: /proc, /sys, FUSE and network files) are read to their end by rank 0 into
 * copies in a temp directory; the job then reads the copies, rank 0 alone (stdin_rank0). */
struct dsort_pipeio_inputs {
    char **paths; /* the INPUTs with the copies in their place (n); NULL: nothing copied */
    char **shown; /* each one's name for messages: the INPUT as given ("-" for stdin) */
    size_t n;
    char **copies; /* the copies' paths (ncopies), the same on every rank */
    size_t ncopies;
};

/* Collective. Copy what needs a copy (above; other files only if probe) into new files in dir
 * ("dsort_stdin.XXXXXX", "dsort_input.XXXXXX": output temps, registered for removal on
 * signals). Returns 0 (p->paths NULL if nothing needed a copy), or 2 after an error printed by
 * rank 0 naming the file and the cause (no copy is left). */
int dsort_pipeio_copy_inputs(const struct dsort_comm *c, const char *dir, char *const *inputs,
                             size_t n, int probe, struct dsort_pipeio_inputs *p);

/* Local: remove the copies (rank 0) and free p (any state after dsort_pipeio_copy_inputs). */
void dsort_pipeio_uncopy(const struct dsort_comm *c, struct dsort_pipeio_inputs *p);

/* Local: in an error message msg (len bytes), name a quoted copy by its INPUT: 'COPY' becomes
 * 'INPUT' (copied to 'COPY'). */
void dsort_pipeio_name_copies(const struct dsort_pipeio_inputs *p, char *msg, size_t len);

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
