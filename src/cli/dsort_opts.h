/* dsort_opts.h - dsort's command line (dsort_opts.c): the options into struct dsort_job_options
 * and struct dsort_gnuopts, --help and --version. Program-internal (dsort only).
 *
 * Collective: every rank must call it with the same argv, and every rank returns the same
 * code. Rank 0 reads the --files0-from list and lists the INPUTs that are directories, and
 * shares what it found (gnuopts.h, inputdir.h). Usage errors are printed by rank 0 only, in
 * GNU sort's words where GNU has them; --help and --version print on rank 0 only.
 */
#ifndef DSORT_OPTS_H
#define DSORT_OPTS_H

#include "gnuopts.h"
#include "job.h"

/* Parse argv into o and x (both cleared first; o gets the defaults: gensort records, 4M
 * blocks, the exchange chunk, 4 streams per device, $TMPDIR or /tmp when no -T).
 *
 * Returns -1 to go on with o and x filled, or an exit code: 0 after --help or --version, 2
 * after a usage error (printed). Whatever it returns, the caller frees *temp_store (the array
 * behind o->temp_dirs; may be NULL) with free() and x with dsort_gnuopts_free. o's strings
 * point into argv or x; o->keys points to a static struct dsort_keys, so call this once per
 * process. */
int dsort_opts_parse(const struct dsort_comm *c, int argc, char **argv, struct dsort_job_options *o,
                     struct dsort_gnuopts *x, char ***temp_store);

/* Local: print --help to standard output (dsort_help.c). */
void dsort_opts_usage(void);

#endif
