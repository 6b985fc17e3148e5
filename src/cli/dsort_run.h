/* dsort_run.h - the dsort program's body: one command line, run on a communicator.
 *
 * Shared by the program (dsort.c: MPI_Init, dsort_run over MPI_COMM_WORLD, MPI_Finalize) and
 * libdsort's file sort (dsort_file.c: a command line made from struct dsort_file_job, run over
 * the library's duplicate of the caller's communicator), so that both parse, check, sort and
 * word their errors alike. Program-internal; not installed.
 */
#ifndef DSORT_RUN_H
#define DSORT_RUN_H

#include "comm.h"

/* Collective over c->comm: parse argv (argv[0] is the program's name; getopt permutes argv,
 * so pass a copy if it matters) and do what it says: sort, check (-c), --plan, --help. Every
 * line goes to c->say when set (comm.h), else to stderr; --help, --version, --plan and an
 * output to standard output write to stdout. Returns the exit code: 0, 1 (-c: disorder), 2
 * (an error, said once in one line naming the rank) or 3 (stopped with a checkpoint); the
 * ranks agree on it before every branch. Never exits; an MPI call that fails ends the job
 * (comm.h). Temp files registered on the way are left to dsort_cleanup_run. Call it again only
 * after getopt has been reset (optind = 0). */
int dsort_run(const struct dsort_comm *c, int argc, char **argv);

#endif
