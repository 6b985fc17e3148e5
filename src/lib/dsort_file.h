/* dsort_file.h - libdsort, files to files: sort files across an MPI communicator as the dsort
 * program does (included by dsort.h; see docs/libdsort.3, FILES TO FILES).
 *
 * dsort_sort_files runs the program's own body (the same option parser, checks, pipelines
 * and messages) on the library's duplicate of the caller's communicator: what `mpirun -n P
 * dsort OPTIONS -o OUT INPUT...` does with P ranks, a call by every rank of comm does, writing
 * the same bytes. The job is described by struct dsort_file_job, whose fields stand for the
 * program's common options; every other long option of dsort(1) may be passed as text in
 * `options` ("--exchange=node", "--key=2,2n" for text lines, "--stats=run.json", ...), so the
 * header does not grow a field, nor the ABI change, for each of the program's options.
 *
 * Collective over comm, like an MPI collective: every rank calls it with the same job. The
 * caller's communicator is never used itself (no handler set on it, no message of the caller's
 * can match the library's). Errors come back as a code, the same on every rank, and a message
 * in err, the same on every rank: "rank R/P (HOST): CAUSE", naming the rank that failed first
 * and the file and the cause, as the program's one error line does ("rank 1/4 (node07): cannot
 * open 'in.2': No such file or directory"). After a failure no output is committed: -o FILE is
 * left as it was (replaced only by a rename once every rank has succeeded), -O DIR gets no
 * parts, and the temp files are removed. The library never exits and never prints unless asked:
 * the lines the program would print (its notes and its error line) go to job->log when it is
 * set; options that print by nature (--verbose, --progress) print to standard error as the
 * program does. An MPI call that fails inside the sort still ends the job with MPI_Abort, as
 * the program does: a rank cannot leave a collective the others may be blocked in.
 *
 * One file sort at a time per process (the pipeline keeps process-wide state: the temp-file
 * registry, getopt's), from the thread that called MPI_Init. Signal handlers are the
 * caller's: the library installs none, so a signal that kills the process may leave temp files
 * (dsort's own sweep removes dead jobs' temp directories at the next run). Checkpoints
 * (--checkpoint, --stop-after, --resume) are the program's alone.
 *
 * Not yet caught by the hook (printed to standard error by rank 0 before the error comes
 * back): the differences that an input directory's _SUCCESS manifest finds in its parts, and
 * a failure to read the seed of --random-sort.
 */
#ifndef DSORT_FILE_H
#define DSORT_FILE_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct dsort_errinfo; /* dsort.h */

/* Return codes of dsort_sort_files besides dsort.h's (DSORT_SUCCESS, DSORT_ERR_ARG: a bad job
 * or option, DSORT_ERR_NOMEM, DSORT_ERR_MPI, DSORT_ERR_INTERNAL). */
#define DSORT_ERR_IO 5   /* a file could not be opened, read, written or made room for */
#define DSORT_ERR_DATA 6 /* an input is not in the format (size, lines, manifest) */

/* A flag of struct dsort_file_job besides DSORT_REVERSE and DSORT_STABLE (dsort.h). */
#define DSORT_UNIQUE 4u /* keep one record of each run of equal keys (dsort -u) */

struct dsort_file_job {
    const char *const *inputs;    /* files (or directories of part-* files), not "-" */
    size_t ninputs;               /* >= 1 */
    const char *output;           /* -o FILE: one sorted file; or NULL and output_dir */
    const char *output_dir;       /* -O DIR: part-NNNNN per rank and a _SUCCESS manifest */
    const char *format;           /* --format: NULL or "gensort", "fixed:SIZE:KEYOFF:KEYLEN",
                                   * "lines" */
    const char *keys;             /* typed keys of fixed records, "OFF:TYPE[:LEN][:r],..." (one -k
                                   * each, dsort(1)); NULL: the format's key. Text lines' keys go
                                   * in options ("--key=2,2n"). */
    const char *const *temp_dirs; /* -T, in order; NULL or ntemp 0: $TMPDIR or /tmp */
    size_t ntemp;
    const char *memory; /* -S per rank ("2G", "40%"); NULL: the program's default */
    unsigned flags;     /* DSORT_REVERSE | DSORT_STABLE | DSORT_UNIQUE (-r -s -u), or 0 */
    /* More long options, NULL-terminated (NULL: none), each "--NAME" or "--NAME=VALUE" as
     * dsort(1) takes it. Refused: short options, "--", and what is no library's business:
     * --help, --version, --check, --debug, --plan, --json, --files0-from, --checkpoint,
     * --stop-after, --resume (and abbreviations of them). */
    const char *const *options;
    /* Where the program's lines go, each one line without its newline ("libdsort: rank 0/4
     * (node07): ..."); NULL: nowhere. Called on the rank that says the line. */
    void (*log)(const char *line, void *arg);
    void *log_arg;
};

/* Collective over comm: sort the job's inputs into its output (see above). Returns
 * DSORT_SUCCESS or an error code, the same on every rank, with err (if not NULL) filled the
 * same on every rank. DSORT_ERR_ARG on the calling rank alone, without communicating, when MPI
 * is not initialised or comm is MPI_COMM_NULL. */
int dsort_sort_files(MPI_Comm comm, const struct dsort_file_job *job, struct dsort_errinfo *err);

#ifdef __cplusplus
}
#endif

#endif
