/* comm.h - who we are, agreement, and the abort path that names the rank.
 *
 * Ranks agree before they branch: at every point where a rank may fail, all ranks call
 * dsort_comm_agree (collective over comm), which tells every rank whether any rank failed,
 * and has the lowest failing rank print its error as one line:
 *   dsort: rank 3/8 (node07): cannot open 'x': No such file or directory
 * When a rank cannot reach an agreement point (an error in the middle of a phase that the
 * others may be blocked in), dsort_comm_die prints the same line, removes registered temp
 * files and calls MPI_Abort, which ends every rank of the job.
 *
 * MPI errors are never silent: dsort_comm_init gives comm (the caller's, e.g. MPI_COMM_WORLD)
 * and the node communicator an error handler that prints the rank-named line with MPI's text
 * for the code ("dsort: rank 1/4 (node07): an MPI call failed: MPI_ERR_TRUNCATE: ..."),
 * removes registered temp files and aborts the job. A failed MPI call is not carried past:
 * the other ranks may be blocked in the collective it belonged to. dsort_comm_check turns a
 * code into a status where a caller checks one itself (calls on communicators of its own, set
 * to MPI_ERRORS_RETURN); dsort_comm_require ends the job on a failed code.
 */
#ifndef DSORT_COMM_H
#define DSORT_COMM_H

#include <mpi.h>
#include <stdint.h>

#include "error.h"

/* Where a rank's lines go (dsort_comm_print, and the error line of dsort_comm_agree): NULL,
 * the default, writes each line to stderr in one write(2); a hook gets the line instead
 * ("prog: rank R/N (host): text", one line, newline included), whether it is an error
 * (error != 0: the line that says why the job fails; st its status) or a note. Set by a caller
 * that prints nothing itself (libdsort, dsort_file.h); copies of c carry it along. */
typedef void dsort_comm_say_fn(void *arg, int error, enum dsort_status st, const char *line,
                               size_t len);

struct dsort_comm {
    MPI_Comm comm;
    int rank, size;
    int node_rank, node_size;   /* position among the ranks of this node */
    int node_index, node_count; /* this node among the job's nodes (by lowest rank) */
    MPI_Comm node;              /* the ranks of this node (owned) */
    char host[64];
    const char *prog;       /* program name for messages */
    dsort_comm_say_fn *say; /* NULL: stderr (see above); set after dsort_comm_init */
    void *say_arg;
};

/* Collective: fill c for comm (which stays owned by the caller; its error handler becomes
 * dsort's, above). Also tells the signal handler how to name this rank. c must outlive every
 * MPI call on comm (the handler names the rank through it). */
void dsort_comm_init(struct dsort_comm *c, MPI_Comm comm, const char *prog);

/* Collective: free what init made. */
void dsort_comm_destroy(struct dsort_comm *c);

/* Collective: returns 1 on every rank when every rank passes ok != 0, else 0. */
int dsort_comm_all_ok(const struct dsort_comm *c, int ok);

/* Collective: agree on success. Returns DSORT_OK on every rank when every rank passed
 * DSORT_OK; otherwise the lowest failing rank prints err as one line to stderr and every rank
 * gets the failing rank's status. */
enum dsort_status dsort_comm_agree(const struct dsort_comm *c, enum dsort_status st,
                                   const struct dsort_error *err);

/* Local: print "prog: rank R/N (host): message" to stderr, in one write(2) (or to c->say, as
 * a note). */
void dsort_comm_print(const struct dsort_comm *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Local: the same line as an error with status st: to stderr, or to c->say as an error. For
 * an error that one rank says for all after an agreement of its own (dsort_cli_agree_usage). */
void dsort_comm_print_error(const struct dsort_comm *c, enum dsort_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Local: say the error line that this rank printed (in dsort_comm_agree or dsort_comm_die)
 * once more, if it may have been lost: an error of a full file system ("No space left on
 * device", "Disk quota exceeded") whose line went to a launcher (mpirun's forwarding) that
 * writes to a file on a file system with no room, or that cannot be seen from here; or a line
 * whose write failed. A launcher drops such a line without a word. Call it once the temp files
 * are removed (and every rank has removed its own), when there is room again. */
void dsort_comm_say_again(void);

/* Local, does not return: print the error line (one write, or c->say), remove temp files, say it
 * again if it may have been lost (dsort_comm_say_again), then MPI_Abort(comm, 2). The rank that
 * ends the job is the one that says why, before it ends it. */
_Noreturn void dsort_comm_die(const struct dsort_comm *c, const struct dsort_error *err);

/* Collective: sum / max of a uint64 over comm. */
uint64_t dsort_comm_sum(const struct dsort_comm *c, uint64_t v);
uint64_t dsort_comm_max(const struct dsort_comm *c, uint64_t v);

/* Turn an MPI error code into text in err (DSORT_EIO): one line, the name of the code's
 * standard class first ("MPI_ERR_RANK"), then the library's own text, so that messages read the
 * same under Open MPI and MPICH. */
enum dsort_status dsort_comm_mpi_error(int code, const char *what, struct dsort_error *err);

/* Local: DSORT_OK if mpi_rc is MPI_SUCCESS; otherwise DSORT_EIO with "what: " and MPI's text
 * for the code in err ("posting a send: MPI_ERR_RANK: invalid rank"). err may be NULL. */
enum dsort_status dsort_comm_check(int mpi_rc, const char *what, struct dsort_error *err);

/* Local: returns if mpi_rc is MPI_SUCCESS; otherwise does not return: dsort_comm_die with the
 * message of dsort_comm_check (the line names the rank). For calls whose failure leaves no
 * agreement point to reach, such as a failed collective. */
void dsort_comm_require(const struct dsort_comm *c, int mpi_rc, const char *what);

#endif
