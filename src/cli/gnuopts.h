/* gnuopts.h - GNU sort's options that only dsort's command line deals with: -C and
 * --check=WORD (the check mode), --parallel=N (accepted, ignored), --files0-from=F (the input
 * names, read by rank 0 and shared). Errors are printed in GNU's words (usage errors through
 * dsort_cli_usage_error). Collective where marked.
 */
#ifndef DSORT_GNUOPTS_H
#define DSORT_GNUOPTS_H

#include <stddef.h>

#include "budget.h"
#include "cli.h"
#include "inputdir.h"

/* What the command line says beyond struct dsort_job_options: GNU sort's options that only the
 * command line deals with. */
struct dsort_gnuopts {
    int check_mode;            /* with o->check: 'c' (report the first disorder) or 'C' (quiet) */
    int from_stdin;            /* the input is standard input (INPUT "-", or none) */
    int to_stdout;             /* no -o or -O: the output goes to standard output */
    int debug;                 /* --debug: annotate the keys of the lines on standard output */
    int format_given;          /* --format was given: else input that is plainly text is refused */
    const char *parallel;      /* --parallel=N: accepted and ignored */
    const char *batch_size;    /* --batch-size=NMERGE: accepted and ignored */
    const char *compress;      /* --compress-program=PROG: accepted and ignored */
    const char *files0_from;   /* --files0-from=F */
    const char *random_source; /* --random-source=FILE: the seed of -R */
    int traditional;           /* GNU's obsolete +POS1 [-POS2] keys are on */
    char *files0_buf;          /* F's contents, the names NUL-separated */
    char **files0_names;       /* the names in files0_buf, then NULL */
    /* the INPUTs with directories expanded (inputdir.h) */
    struct dsort_inputdir dirs;
    /* -S, or the default: the rank's memory budget, resolved once when the options are parsed
     * (dsort_budget_resolve); its note is printed when the sort starts. */
    struct dsort_budget budget;
};

/* Free what dsort_gnuopts_files0 allocated (any state). */
void dsort_gnuopts_free(struct dsort_gnuopts *x);
/* --parallel=N as GNU sort reads it: 0 if N is valid, else 2 after a usage error. */
int dsort_gnuopts_parallel(const struct dsort_comm *c, const char *arg);
/* --batch-size=NMERGE as GNU sort reads it: 0 if valid (2 or more), else 2 after a usage
 * error. */
int dsort_gnuopts_batch_size(const struct dsort_comm *c, const char *arg);
/* Collective: read x->files0_from (see gnuopts.c). Returns -1 with the names in
 * x->files0_names and their count in *count, or an exit code (2) after an error. */
int dsort_gnuopts_files0(const struct dsort_comm *c, struct dsort_gnuopts *x, size_t *count);
/* Collective: code is the parse's so far (-1: no error), agreed first (dsort_cli_agree_usage).
 * Then seed the R keys of k (dsort_keys_set_random_seed) with rank 0's 16 bytes, from source
 * (--random-source=FILE, its first 16 bytes as GNU sort reads them) or from the kernel. A job
 * that checkpoints needs a source (its resumed run must order alike). Returns -1, or an exit
 * code after an error (printed by rank 0 in GNU's words). */
int dsort_gnuopts_random(const struct dsort_comm *c, int code, const char *source,
                         int checkpointing, struct dsort_keys *k);
/* getopt_long's unknown option arg (opts: its long options): "unrecognized option", or for an
 * ambiguous prefix the candidates (as GNU getopt words it), with a hint for --p. Returns 2. */
struct option;
int dsort_gnuopts_unknown_option(const struct dsort_comm *c, const char *arg,
                                 const struct option *opts);
/* An operand (argv[*optind_p - 1], as getopt_long returns them in order) that may be GNU sort's
 * obsolete key +POS1 [-POS2]: a key when _POSIX2_VERSION is below 200112 or (without
 * POSIXLY_CORRECT) when -POS2 follows, which is then consumed (*optind_p moves past it);
 * *traditional records that the syntax is on for the rest of the command line, as in GNU.
 * Returns 1 (a key, added to k), 0 (a file name) or -1 after a usage error (printed). */
int dsort_gnuopts_operand(const struct dsort_comm *c, struct dsort_keys *k, char **argv, int argc,
                          int *optind_p, int *traditional);
/* -v (verbose): rank 0 says which of GNU sort's options were accepted and ignored. */
void dsort_gnuopts_notes(const struct dsort_comm *c, int verbose, const struct dsort_gnuopts *x);
/* Are a and b (b may be NULL or not exist yet) the same existing file? */
int dsort_gnuopts_same_file(const char *a, const char *b);

#endif
