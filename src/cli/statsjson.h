/* statsjson.h - the --stats fields of the report's timeline and disks (dsort-report), written
 * by rank 0 into the file dsort.c opens. Local; writes only to f.
 *
 * Per rank, after its other fields (times in seconds since the job's start, the earliest
 * rank's start by the real-time clock: on several nodes as good as their clocks agree):
 *   "started", "ended": the rank's start and the end of its sort;
 *   "spans": [[PHASE, START, END]...] the phases as they happened, stretches of one phase less
 *            than a millisecond apart joined; PHASE null for a last span that holds every
 *            later phase once DSORT_JOB_SPANS were used; "spans_merged": stretches in it.
 * Per watched disk of a rank (the node's disk, so ranks of one node see the same traffic),
 * after its per-phase counters: "job_read_bytes", "job_write_bytes", "job_busy_seconds" from
 * the block layer over "job_seconds", the whole job, waiting between phases included.
 */
#ifndef DSORT_STATSJSON_H
#define DSORT_STATSJSON_H

#include <stdio.h>

#include "phase.h"
#include "roofline.h"

/* The earliest start (real-time clock, Unix seconds) of the n ranks in all. */
double dsort_statsjson_start(const struct dsort_job_stats *all, int n);

/* ", \"started\": ..., \"spans_merged\": N" for rank s; start: dsort_statsjson_start. */
void dsort_statsjson_times(FILE *f, const struct dsort_job_stats *s, double start);

/* ", \"job_read_bytes\": ..., \"job_seconds\": S" for watched disk i of s. */
void dsort_statsjson_disk_totals(FILE *f, const struct dsort_job_stats *s, int i);

/* Rank 0: the roofline of the job (n ranks' figures all, seconds long) into *rl, with the
 * rates of DSORT_ROOFLINE_RATES and DSORT_ROOFLINE_SHARED into *r (a bad value: that variable
 * is ignored, and why, to print, in warn[0..wn); else warn is ""); the cores of each node
 * from plan (the --stats plan's JSON text, plan_len bytes; NULL: each node's ranks). Returns
 * DSORT_OK, or DSORT_ENOMEM (*rl empty). Free *rl with dsort_roofline_free. */
enum dsort_status dsort_statsjson_roofline(const struct dsort_job_stats *all, int n, double seconds,
                                           const char *plan, size_t plan_len,
                                           struct dsort_roofline *rl,
                                           struct dsort_roofline_rates *r, char *warn, size_t wn);

/* The "roofline" object's value (see above), indented by two spaces. */
void dsort_statsjson_roofline_write(FILE *f, const struct dsort_roofline *rl,
                                    const struct dsort_roofline_rates *r);

#endif
