#include "cli.h"
#include "keys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

static struct dsort_comm *started; /* for dsort_cli_finish */

void dsort_cli_start(int *argc, char ***argv, struct dsort_comm *c, const char *prog)
{
    dsort_cleanup_remember_ignored();
    /* MPI_Init starts threads of its own (Open MPI's progress and PMIx threads) that may take
     * a handled signal: the handler passes it on to the main thread (cleanup.h). Blocking the
     * signals in those threads instead made Open MPI 4.1 crash at start-up under srun. */
    MPI_Init(argc, argv);
    dsort_cleanup_install();
    dsort_comm_init(c, MPI_COMM_WORLD, prog);
    started = c;
}

int dsort_cli_finish(int code)
{
    dsort_cleanup_run();
    /* The error is reported; mpirun may now SIGTERM ranks still finishing: no more lines. */
    if (code)
        dsort_cleanup_set_prefix(NULL);
    if (started)
        dsort_comm_destroy(started);
    MPI_Finalize();
    return code;
}

int dsort_cli_usage_error(const struct dsort_comm *c, const char *fmt, ...)
{
    if (c->rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", c->prog);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry '%s --help' for more information.\n", c->prog);
        va_end(ap);
    }
    return 2;
}

int dsort_cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

const char *dsort_cli_norm_path(const char *path, char *buf, size_t len)
{
    if (strchr(path, '/'))
        return path;
    snprintf(buf, len, "./%s", path);
    return buf;
}

int dsort_cli_argmatch(const struct dsort_comm *c, const char *option, const char *arg,
                       const char *const *words, const char *values, const char *valid)
{
    size_t len = strlen(arg);
    int value = 0, ambiguous = 0;
    for (size_t i = 0; words[i]; i++) {
        if (!strcmp(words[i], arg))
            return values[i];
        if (!strncmp(words[i], arg, len)) {
            if (value && value != values[i])
                ambiguous = 1;
            value = values[i];
        }
    }
    if (value && !ambiguous)
        return value;
    dsort_cli_usage_error(c, "%s argument '%s' for '%s'\nValid arguments are:\n%s",
                          ambiguous ? "ambiguous" : "invalid", arg, option, valid);
    return 0;
}

/* --sort=WORD: the option letter, or 0 after a usage error (printed). GNU lists 'random' as
 * valid too; dsort leaves it out, since it refuses it (as it refuses -R). */
static int sort_word(const struct dsort_comm *c, const char *arg)
{
    static const char *const words[] = {"general-numeric", "human-numeric", "month", "numeric",
                                        "random",          "version",       NULL};
    return dsort_cli_argmatch(c, "--sort", arg, words, "ghMnRV",
                              "  - 'general-numeric'\n"
                              "  - 'human-numeric'\n"
                              "  - 'month'\n"
                              "  - 'numeric'\n"
                              "  - 'version'");
}

int dsort_cli_key_option(const struct dsort_comm *c, struct dsort_keys *k, int ch, const char *arg,
                         unsigned char *eol)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    switch (ch) {
    case 'z':
        *eol = '\0';
        return 1;
    case 't':
        st = dsort_keys_set_tab(k, arg, &err);
        break;
    case 'k':
        st = dsort_keys_add(k, arg, &err);
        break;
    case 'b':
    case 'd':
    case 'f':
    case 'i':
    case 'n':
    case 'g':
    case 'h':
    case 'V':
    case 'M':
    case 'R': /* refused by keys.c: "random sort (-R) is not supported" */
        st = dsort_keys_set_global(k, (char)ch, &err);
        break;
    case DSORT_CLI_OPT_SORT: {
        int letter = sort_word(c, arg);
        if (!letter)
            return -1;
        st = dsort_keys_set_global(k, (char)letter, &err);
        break;
    }
    default:
        return 0;
    }
    if (st) {
        dsort_cli_usage_error(c, "%s", err.msg);
        return -1;
    }
    return 1;
}
