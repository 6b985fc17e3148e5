/* cli.h - what the three programs share: start-up, option values, the version. */
#ifndef DSORT_CLI_H
#define DSORT_CLI_H

#include <stdint.h>

#include "comm.h"
#include "format.h"
#include "typedkey.h"

#define DSORT_VERSION "0.2.0"

/* MPI_Init, install the temp-file cleanup handlers, fill c for MPI_COMM_WORLD. When the
 * environment says a launcher started N > 1 tasks (dsort_cli_launcher) but MPI made this
 * process a singleton, print why and exit 2 at once: every task would sort the whole input. */
void dsort_cli_start(int *argc, char ***argv, struct dsort_comm *c, const char *prog);

/* The launcher that started this process, from its environment at start-up: name ("mpirun",
 * "srun", "mpiexec", ...), the variable read, the tasks it started and this one's index. */
struct dsort_cli_launch {
    const char *name, *var;
    long tasks, task;
};
/* Local: the launcher, or NULL when none of the known ones started this process. */
const struct dsort_cli_launch *dsort_cli_launcher(void);

/* Collective: leave. Remove the temp files, wait for every rank (none exits before all have
 * printed their lines), say a lost error line again (dsort_comm_say_again), MPI_Finalize, and
 * return code for main. If code is 2 after an agreed error, all ranks return 2, so mpirun's
 * exit status is 2. */
int dsort_cli_finish(int code);

/* Print a usage error (rank 0 only) and return 2. Every rank keeps the text for
 * dsort_cli_agree_usage. With a hook (c->say, comm.h) rank 0 gives it the error's rank-named
 * line instead, without the --help hint. */
int dsort_cli_usage_error(const struct dsort_comm *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Local: forget the last usage error's text (a new command line is parsed in this process). */
void dsort_cli_usage_forget(void);

/* Collective: the option parsing's outcome, the same on every rank. code is this rank's (< 0:
 * go on; else an exit code). Most usage errors are the same on every rank, but some depend on
 * the node (-S N% of its memory, a list or a directory a node sees differently, an MPMD
 * launch): there a rank that went on would wait in the job's first collective for ranks that
 * left. Returns -1 when every rank goes on, else the highest code on every rank; when rank 0
 * did not see that error, the lowest rank that did prints it in one line naming itself. */
int dsort_cli_agree_usage(const struct dsort_comm *c, int code);

/* Local: the canonical name of path (which need not exist): its directory resolved by
 * realpath, then its last component (a final symbolic link is not followed). The path itself
 * if its directory cannot be resolved. */
void dsort_cli_canonical(const char *path, char *buf, size_t len);

/* Local: is path dir itself or inside it (by canonical names)? */
int dsort_cli_inside(const char *path, const char *dir);

/* Parse a non-negative decimal count; -1 on a bad value. */
int dsort_cli_parse_u64(const char *s, uint64_t *out);

struct dsort_keys;
/* GNU's argmatch: arg is one of words (NULL-terminated) or a prefix of words that all have the
 * same value (values[i] is words[i]'s). Returns the value, or 0 after a usage error (printed)
 * in GNU's words: "invalid argument 'x' for '--sort'" (or "ambiguous argument"), then valid
 * (GNU's "Valid arguments are:" list). */
int dsort_cli_argmatch(const struct dsort_comm *c, const char *option, const char *arg,
                       const char *const *words, const char *values, const char *valid);

/* getopt value of --sort=WORD (general-numeric, human-numeric, month, numeric, random, version,
 * or an unambiguous prefix, as GNU's argmatch takes them): the same as -g -h -M -n -R -V. */
#define DSORT_CLI_OPT_SORT 0x4000
/* GNU sort's key options, shared by dsort and dsort-validate: ch is one of z t k b d f i n g h
 * V M R (R is rejected: random sort is not supported) or DSORT_CLI_OPT_SORT (optarg for t, k
 * and --sort). Returns 1 if ch was one of them (*eol set by z), -1 after a usage error
 * (printed), 0 if ch is something else. */
int dsort_cli_key_option(const struct dsort_comm *c, struct dsort_keys *k, int ch, const char *arg,
                         unsigned char *eol);
/* Typed keys (-k OFF:TYPE[:LEN][:r], typedkey.h; GNU sort's KEYDEF has no ':'), shared by dsort
 * and dsort-validate: the set given, and the first bad key's status and message. Zeroed: none. */
struct dsort_cli_typed {
    struct dsort_typedkey tk;
    enum dsort_status st;
    struct dsort_error err;
};
/* If ch and arg spell a typed key, add it to t (keeping the first error) and return 1; else 0. */
int dsort_cli_typed_option(struct dsort_cli_typed *t, int ch, const char *arg);
/* After the options: a usage error (returned as its exit code, printed) for a bad key, one past
 * the record, or typed keys with text lines' options (lines); else the keys, if any, bound to
 * fmt (fmt->typed) and -1. */
int dsort_cli_typed_setup(const struct dsort_comm *c, struct dsort_cli_typed *t, int lines,
                          struct dsort_format *fmt);
/* The getopt letters and long options of dsort_cli_key_option. */
#define DSORT_CLI_KEY_LETTERS "zt:k:bdfinghVMR"
#define DSORT_CLI_KEY_LONG_OPTIONS                                                                 \
    {"zero-terminated", no_argument, NULL, 'z'},                                                   \
        {"field-separator", required_argument, NULL, 't'}, {"key", required_argument, NULL, 'k'},  \
        {"ignore-leading-blanks", no_argument, NULL, 'b'},                                         \
        {"dictionary-order", no_argument, NULL, 'd'}, {"ignore-case", no_argument, NULL, 'f'},     \
        {"ignore-nonprinting", no_argument, NULL, 'i'}, {"numeric-sort", no_argument, NULL, 'n'},  \
        {"general-numeric-sort", no_argument, NULL, 'g'},                                          \
        {"human-numeric-sort", no_argument, NULL, 'h'}, {"version-sort", no_argument, NULL, 'V'},  \
        {"random-sort", no_argument, NULL, 'R'},                                                   \
        {"sort", required_argument, NULL, DSORT_CLI_OPT_SORT},                                     \
    {                                                                                              \
        "month-sort", no_argument, NULL, 'M'                                                       \
    }

#endif
