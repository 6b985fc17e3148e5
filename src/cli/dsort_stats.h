/* dsort_stats.h - dsort's report at the end of a sort: under -v, rank 0's summary on standard
 * error (records, bytes, budget, the phases of the slowest rank, I/O, balance, the disks);
 * under --stats, the JSON file (every rank's figures and the plan), written to a temp beside it
 * and renamed over it once complete, so that a failed write keeps an older file whole.
 * Errors are printed (naming the rank and the file), never fatal here: the caller exits. */
#ifndef DSORT_STATS_H
#define DSORT_STATS_H

#include "comm.h"
#include "error.h"
#include "job.h"
#include "phase.h"

/* Local, rank 0, before any work: can the --stats file at path be written? DSORT_OK, or an
 * error in err (the caller agrees on it over the ranks). */
enum dsort_status dsort_stats_probe(const char *path, struct dsort_error *err);

/* The report (-v, --stats) of a finished sort whose own figures are mine, total_time seconds
 * long. Collective (it gathers every rank's figures to rank 0). Returns the exit status, the
 * same on every rank: 0, or 2 if the stats file could not be written (the output is committed
 * already and stays). */
int dsort_stats_report(const struct dsort_comm *c, const struct dsort_job_options *o,
                       const struct dsort_job_stats *mine, double total_time);

#endif
