/* gnuopts.c - GNU sort's command-line-only options (gnuopts.h). */
#include "gnuopts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "agree.h"
#include "comm.h"
#include "keys.h"

void dsort_gnuopts_free(struct dsort_gnuopts *x)
{
    free(x->files0_buf);
    free(x->files0_names);
    x->files0_buf = NULL;
    x->files0_names = NULL;
    dsort_inputdir_free(&x->dirs);
}

/* An unsigned count as GNU sort reads --parallel and --batch-size (xstrtoumax without suffixes:
 * leading blanks and '+' allowed, a value too large taken as the largest) into *v: 0, or a
 * usage error in GNU's words naming the option (2). */
static int gnu_count(const struct dsort_comm *c, const char *opt, const char *arg, uintmax_t *v)
{
    const char *p = arg;
    while (isspace((unsigned char)*p))
        p++;
    char *end = (char *)p;
    *v = 0;
    if (*p != '-') {
        errno = 0;
        *v = strtoumax(p, &end, 10);
        if (errno == ERANGE)
            *v = UINTMAX_MAX;
    }
    if (end == p)
        return dsort_cli_usage_error(c, "invalid %s argument '%s'", opt, arg);
    if (*end)
        return dsort_cli_usage_error(c, "invalid suffix in %s argument '%s'", opt, arg);
    return 0;
}

/* --parallel=N as GNU sort's specify_nthreads reads it: 0 if N is valid, else a usage error in
 * GNU's words (2). */
int dsort_gnuopts_parallel(const struct dsort_comm *c, const char *arg)
{
    uintmax_t v;
    if (gnu_count(c, "--parallel", arg, &v))
        return 2;
    if (v == 0)
        return dsort_cli_usage_error(c, "number in parallel must be nonzero");
    return 0;
}

/* --batch-size=NMERGE as GNU sort reads it (at least 2): 0 if it is valid, else a usage error
 * in GNU's words (2). GNU's upper limit comes from its open-file rlimit; dsort ignores the
 * value (its merges' fan-in follows -S and --block-size), so there is none. */
int dsort_gnuopts_batch_size(const struct dsort_comm *c, const char *arg)
{
    uintmax_t v;
    if (gnu_count(c, "--batch-size", arg, &v))
        return 2;
    if (v < 2)
        return dsort_cli_usage_error(
            c, "invalid --batch-size argument '%s'\n%s: minimum --batch-size argument is '2'", arg,
            c->prog);
    return 0;
}

/* Rank 0: read F (from, "-" for standard input) whole into *buf (of *cap bytes); hdr[0] 1 after
 * an error (said in GNU's words), hdr[1] the length read. */
static void files0_read(const struct dsort_comm *c, const char *from, char **buf, size_t *cap,
                        uint64_t *hdr)
{
    FILE *f = strcmp(from, "-") ? fopen(from, "r") : stdin; /* rank 0 has stdin */
    size_t len = 0;
    if (!f) {
        fprintf(stderr, "%s: open failed: %s: %s\n", c->prog, from, strerror(errno));
        hdr[0] = 1;
    }
    while (f) {
        if (len == *cap) {
            char *nb = *cap < ((size_t)1 << 40) ? realloc(*buf, *cap ? 2 * *cap : 65536) : NULL;
            if (!nb) {
                fprintf(stderr, "%s: memory exhausted reading '%s'\n", c->prog, from);
                hdr[0] = 1;
                break;
            }
            *buf = nb;
            *cap = *cap ? 2 * *cap : 65536;
        }
        size_t got = fread(*buf + len, 1, *cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (f && !hdr[0] && ferror(f)) {
        fprintf(stderr, "%s: cannot read file names from '%s'\n", c->prog, from);
        hdr[0] = 1;
    }
    if (f && f != stdin)
        fclose(f);
    hdr[1] = len;
}

/* The n names read from F (from): -1 if GNU takes them, else 2 (rank 0 says why). */
static int files0_check(const struct dsort_comm *c, const char *from, char *const *names, size_t n)
{
    if (n == 0) {
        if (c->rank == 0)
            fprintf(stderr, "%s: no input from '%s'\n", c->prog, from);
        return 2;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(names[i], "-")) { /* GNU's words (coreutils 9.1 says them for a file too) */
            if (c->rank == 0)
                fprintf(stderr,
                        "%s: when reading file names from stdin, no file name of '-' allowed\n",
                        c->prog);
            return 2;
        }
        if (!names[i][0]) {
            if (c->rank == 0)
                fprintf(stderr, "%s: %s:%zu: invalid zero-length file name\n", c->prog, from,
                        i + 1);
            return 2;
        }
    }
    return -1;
}

/* Collective. --files0-from=F: rank 0 reads F whole and sends it to the other ranks, so that
 * every rank has the same names (and F is read once, not once per rank); every rank then splits
 * it at NULs as GNU's readtokens0 does (a last name without its NUL counts). GNU's errors:
 * F cannot be opened or read, holds no name, or an empty name ("F:2: invalid zero-length file
 * name"); a name "-" is refused as by GNU (dsort reads standard input only as the one INPUT
 * operand). Returns -1 with the names in x->files0_names and their count in *count, or 2 after an
 * error (printed by rank 0, or by the lowest rank that ran out of memory). */
int dsort_gnuopts_files0(const struct dsort_comm *c, struct dsort_gnuopts *x, size_t *count)
{
    const char *from = x->files0_from;
    struct dsort_error err = {0};
    uint64_t hdr[2] = {0, 0}; /* failed, length */
    char *buf = NULL;
    size_t cap = 0;
    if (c->rank == 0)
        files0_read(c, from, &buf, &cap, hdr);
    dsort_agree_bcast(c, hdr, sizeof hdr, "sharing the --files0-from names (MPI_Bcast)");
    if (hdr[0]) {
        free(buf);
        return 2;
    }
    size_t len = (size_t)hdr[1];
    if (c->rank != 0) {
        buf = malloc(len + 1);
    } else if (len == cap) { /* room for the sentinel NUL */
        char *nb = realloc(buf, len + 1);
        if (!nb)
            free(buf);
        buf = nb;
    }
    enum dsort_status st =
        buf ? DSORT_OK : DSORT_ERR(&err, DSORT_ENOMEM, 0, "out of memory for --files0-from");
    if (dsort_comm_agree(c, st, &err)) {
        free(buf);
        return 2;
    }
    dsort_agree_bcast(c, buf, len, "sharing the --files0-from names (MPI_Bcast)");
    buf[len] = '\0';
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += buf[i] == '\0';
    if (len && buf[len - 1] != '\0')
        n++;
    char **names = calloc(n + 1, sizeof *names);
    st = names ? DSORT_OK : DSORT_ERR(&err, DSORT_ENOMEM, 0, "out of memory for --files0-from");
    x->files0_buf = buf;
    x->files0_names = names;
    if (dsort_comm_agree(c, st, &err))
        return 2;
    for (size_t i = 0, off = 0; i < n; i++) {
        names[i] = buf + off;
        off += strlen(names[i]) + 1;
    }
    int code = files0_check(c, from, names, n);
    if (code < 0)
        *count = n;
    return code;
}

/* Rank 0: the 16 bytes of R keys' seed into seed[0..15], from source (GNU's --random-source:
 * its first 16 bytes) or from the kernel; 0, or 1 after saying why in GNU's words. */
static int random_seed(const char *prog, const char *source, unsigned char *seed)
{
    if (!source) {
        if (getrandom(seed, 16, 0) == 16)
            return 0;
        fprintf(stderr, "%s: cannot get 16 random bytes for -R: %s\n", prog, strerror(errno));
        return 1;
    }
    FILE *f = fopen(source, "rb");
    if (!f) {
        fprintf(stderr, "%s: open failed: %s: %s\n", prog, source, strerror(errno));
        return 1;
    }
    errno = 0;
    size_t got = fread(seed, 1, 16, f);
    int e = errno, failed = ferror(f);
    fclose(f);
    if (got == 16)
        return 0;
    if (failed)
        fprintf(stderr, "%s: '%s': read error: %s\n", prog, source, strerror(e));
    else
        fprintf(stderr, "%s: '%s': end of file\n", prog, source);
    return 1;
}

/* Collective. The seed of R keys: rank 0's, so that every rank orders alike (the order is then
 * a function of the seed and the lines: the same at any rank count). code is the parse's so
 * far (-1: no error). -1, or an exit code after an error (printed by rank 0). */
int dsort_gnuopts_random(const struct dsort_comm *c, int code, const char *source,
                         int checkpointing, struct dsort_keys *k)
{
    /* every rank enters the broadcast or none: a usage error may be one rank's (-S N%) */
    if ((code = dsort_cli_agree_usage(c, code)) >= 0)
        return code;
    /* a checkpoint's runs are ordered by the seed: the resumed run needs the first one's */
    if (checkpointing && !source)
        return dsort_cli_usage_error(c, "-R with --checkpoint, --stop-after or --resume needs "
                                        "--random-source=FILE (a resumed run must order as the "
                                        "first one did)");
    unsigned char seed[17] = {0}; /* the seed, then "rank 0 failed" */
    if (c->rank == 0)
        seed[16] = (unsigned char)random_seed(c->prog, source, seed);
    dsort_agree_bcast(c, seed, sizeof seed, "sharing the -R seed (MPI_Bcast)");
    if (seed[16])
        return 2;
    dsort_keys_set_random_seed(k, seed);
    return -1;
}

/* GNU's _POSIX2_VERSION (gnulib's posix2_version): the standard it follows; 200809 unless the
 * variable holds a number (blanks before it allowed). */
static long posix2_version(void)
{
    const char *v = getenv("_POSIX2_VERSION");
    char *end = NULL;
    long n = v && *v ? strtol(v, &end, 10) : 0;
    return v && *v && !*end ? n : 200809;
}

int dsort_gnuopts_operand(const struct dsort_comm *c, struct dsort_keys *k, char **argv, int argc,
                          int *optind_p, int *traditional)
{
    const char *arg = argv[*optind_p - 1];
    if (arg[0] != '+')
        return 0;
    const char *next = *optind_p < argc ? argv[*optind_p] : NULL;
    int minus_pos = next && next[0] == '-' && isdigit((unsigned char)next[1]);
    long v = posix2_version();
    if (v < 200112 || v >= 200809) /* as GNU 9.1: refused only for POSIX 1003.1-2001 */
        *traditional = 1;
    if (minus_pos && !getenv("POSIXLY_CORRECT"))
        *traditional = 1;
    if (!*traditional)
        return 0;
    struct dsort_error err = {0};
    int not_key = 0;
    if (dsort_keys_add_obsolete(k, arg, minus_pos ? next : NULL, &not_key, &err) == DSORT_OK) {
        *optind_p += minus_pos;
        return 1;
    }
    if (not_key)
        return 0;
    dsort_cli_usage_error(c, "%s", err.msg);
    return -1;
}

/* -v: say which of GNU sort's options were accepted and ignored. */
void dsort_gnuopts_notes(const struct dsort_comm *c, int verbose, const struct dsort_gnuopts *x)
{
    if (!verbose || c->rank != 0)
        return;
    if (x->parallel)
        fprintf(stderr,
                "%s: --parallel=%s ignored: dsort's parallelism is its %d rank%s (mpirun -n)\n",
                c->prog, x->parallel, c->size, c->size == 1 ? "" : "s");
    if (x->batch_size)
        fprintf(stderr,
                "%s: --batch-size=%s ignored: dsort's merges take as many runs as -S and "
                "--block-size allow\n",
                c->prog, x->batch_size);
    if (x->compress)
        fprintf(stderr,
                "%s: --compress-program=%s ignored: dsort does not compress its temporary files "
                "(see dsort(1))\n",
                c->prog, x->compress);
}

/* The second line of the message for an ambiguous --p: GNU sort's only --p option. */
#define P_HINT                                                                                     \
    "\ndsort: GNU sort's --p is --parallel, its only option so named; dsort has more: spell it "   \
    "out (--parallel is accepted and ignored)"

/* An option getopt did not take: an ambiguous prefix of long options (--p=1) names them all,
 * as GNU getopt does when it prints its own messages; anything else is unrecognized. */
int dsort_gnuopts_unknown_option(const struct dsort_comm *c, const char *arg,
                                 const struct option *opts)
{
    size_t n = strncmp(arg, "--", 2) ? 0 : strcspn(arg + 2, "=");
    char list[512] = "";
    size_t len = 0;
    int found = 0;
    for (const struct option *p = opts; n && p->name; p++)
        if (!strncmp(p->name, arg + 2, n) && len < sizeof list) {
            len += (size_t)snprintf(list + len, sizeof list - len, " '--%s'", p->name);
            found++;
        }
    if (found > 1) /* GNU sort's --p (coreutils' tests write --p=1) is --parallel */
        return dsort_cli_usage_error(c, "option '%s' is ambiguous; possibilities:%s%s", arg, list,
                                     strstr(list, "'--parallel'") ? P_HINT : "");
    return dsort_cli_usage_error(c, "unrecognized option '%s'", arg);
}

int dsort_gnuopts_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return b && !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
