/* lib.files: dsort_sort_files (dsort_file.h) at the rank count it is started with, on gensort
 * files made by dsort-gen (run.sh): the world sorts file A in memory and out of core, and by a
 * typed key; a missing input fails alike on every rank, naming the file, with no output; a bad
 * option is refused; and the world split in two halves sorts A and B at once, each half on its
 * own communicator. Every output is checked by rank 0 against the inputs with an oracle of its
 * own (records in whole-record byte order, the same count, the same order-free checksum).
 * Usage: lib_files DIR A B. Prints one line per failed check; exit 0 if all passed, else 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsort.h"
#include "dsort_file.h"

#define REC 100

static int rank, size, failed;
static const char *dir;

static void check(const char *what, int ok)
{
    if (!ok) {
        printf("rank %d/%d: FAIL: %s\n", rank, size, what);
        fflush(stdout);
        failed = 1;
    }
}

/* The file's bytes (NULL if it cannot be read). */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    *len = b && fread(b, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return b;
}

/* An order-free checksum of records: the sum of each record's FNV-1a hash. */
static uint64_t sum_records(const unsigned char *b, size_t len)
{
    uint64_t s = 0;
    for (size_t r = 0; r + REC <= len; r += REC) {
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < REC; i++)
            h = (h ^ b[r + i]) * 1099511628211ull;
        s += h;
    }
    return s;
}

/* Rank 0 of comm: out holds in's records (count, checksum) in whole-record byte order. */
static void check_output(MPI_Comm comm, const char *what, const char *in, const char *out)
{
    int r;
    MPI_Comm_rank(comm, &r);
    if (r != 0)
        return;
    size_t ni = 0, no = 0;
    unsigned char *a = slurp(in, &ni), *b = slurp(out, &no);
    char buf[512];
    snprintf(buf, sizeof buf, "%s: output %s readable and as long as the input (%zu, %zu)", what,
             out, ni, no);
    check(buf, a && b && ni == no && ni % REC == 0 && ni > 0);
    if (a && b && ni == no) {
        size_t bad = 0;
        for (size_t i = REC; i < no; i += REC)
            bad += memcmp(b + i - REC, b + i, REC) > 0;
        snprintf(buf, sizeof buf, "%s: %zu records out of order", what, bad);
        check(buf, bad == 0);
        snprintf(buf, sizeof buf, "%s: the output's checksum is the input's", what);
        check(buf, sum_records(a, ni) == sum_records(b, no));
    }
    free(a);
    free(b);
}

/* The code (and errinfo code, rank, message) must be the same on every rank of comm. */
static void same_everywhere(MPI_Comm comm, const char *what, int rc, const struct dsort_errinfo *e)
{
    int v[3] = {rc, e->code, e->rank}, lo[3], hi[3];
    MPI_Allreduce(v, lo, 3, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(v, hi, 3, MPI_INT, MPI_MAX, comm);
    char m0[sizeof e->msg];
    memcpy(m0, e->msg, sizeof m0);
    MPI_Bcast(m0, (int)sizeof m0, MPI_CHAR, 0, comm);
    char buf[600];
    snprintf(buf, sizeof buf, "%s: code %d, errinfo %d rank %d '%s' the same on every rank", what,
             rc, e->code, e->rank, e->msg);
    check(buf, !memcmp(lo, hi, sizeof lo) && !strcmp(m0, e->msg));
}

static char *path(const char *name)
{
    static char p[8][4096];
    static int i;
    i = (i + 1) % 8;
    snprintf(p[i], sizeof p[i], "%s/%s", dir, name);
    return p[i];
}

static void count_line(const char *line, void *arg)
{
    (void)line;
    ++*(int *)arg;
}

static const char *temps[1];

/* A job of n inputs into out, with the test's temp directory. */
static struct dsort_file_job job_of(const char *const *in, size_t n, const char *out)
{
    return (struct dsort_file_job){
        .inputs = in, .ninputs = n, .output = out, .temp_dirs = temps, .ntemp = 1};
}

/* A sort that must succeed on comm. */
static void sorts(MPI_Comm comm, const char *what, struct dsort_file_job *j)
{
    struct dsort_errinfo e;
    int rc = dsort_sort_files(comm, j, &e);
    char buf[600];
    snprintf(buf, sizeof buf, "%s: code %d '%s'", what, rc, e.msg);
    check(buf, rc == DSORT_SUCCESS && e.code == 0 && e.rank == -1);
    same_everywhere(comm, what, rc, &e);
    check_output(comm, what, j->inputs[0], j->output);
}

/* A job that must fail on every rank with code want, the message holding needle, and no
 * output. */
static void fails(const char *what, struct dsort_file_job *j, int want, const char *needle)
{
    struct dsort_errinfo e;
    int rc = dsort_sort_files(MPI_COMM_WORLD, j, &e);
    char buf[700];
    snprintf(buf, sizeof buf, "%s: code %d (want %d), errinfo %d, rank %d, '%s' (want '%s')", what,
             rc, want, e.code, e.rank, e.msg, needle);
    check(buf, rc == want && e.code == rc && e.rank >= 0 && e.rank < size &&
                   strstr(e.msg, needle) && !strncmp(e.msg, "rank ", 5));
    same_everywhere(MPI_COMM_WORLD, what, rc, &e);
    if (rank == 0)
        printf("%s: code %d: %s\n", what, rc, e.msg);
    snprintf(buf, sizeof buf, "%s: no output %s", what, j->output);
    check(buf, access(j->output, F_OK) != 0);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        fprintf(stderr, "usage: lib_files DIR A B\n");
        MPI_Finalize();
        return 2;
    }
    dir = argv[1];
    const char *in_a[] = {argv[2]}, *in_b[] = {argv[3]};
    temps[0] = path("tmp");
    struct dsort_file_job j = job_of(in_a, 1, path("a.mem"));
    sorts(MPI_COMM_WORLD, "A in memory", &j);

    static const char *const ooc[] = {"--out-of-core", "--block-size=64K", NULL};
    j.output = path("a.ooc");
    j.memory = "16M";
    j.options = ooc;
    sorts(MPI_COMM_WORLD, "A out of core", &j);

    /* gensort records by their first 8 bytes as a big-endian u64 and then the whole record:
     * the same order as by the 10-byte key then the whole record */
    j = job_of(in_a, 1, path("a.typed"));
    j.format = "fixed:100:0:10";
    j.keys = "0:u64be";
    sorts(MPI_COMM_WORLD, "A by a typed key", &j);

    /* -O DIR: the parts in name order are the sorted input */
    j = job_of(in_a, 1, NULL);
    j.output_dir = path("a.parts");
    struct dsort_errinfo e;
    int rc = dsort_sort_files(MPI_COMM_WORLD, &j, &e);
    check(rc == DSORT_SUCCESS ? "-O DIR" : e.msg, rc == DSORT_SUCCESS);
    if (rank == 0) {
        char cmd[9000];
        snprintf(cmd, sizeof cmd, "cat '%s'/part-* > '%s'", j.output_dir, path("a.cat"));
        check("-O DIR's parts", system(cmd) == 0);
    }
    check_output(MPI_COMM_WORLD, "-O DIR", in_a[0], path("a.cat"));

    const char *missing[] = {argv[2], path("no-such-input")};
    int lines = 0;
    j = job_of(missing, 2, path("bad.out"));
    j.log = count_line;
    j.log_arg = &lines;
    fails("a missing input", &j, DSORT_ERR_IO, "no-such-input");
    int all_lines = 0;
    MPI_Allreduce(&lines, &all_lines, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check("the error line went to the log hook", all_lines >= 1);
    /* an output that exists keeps its contents after a failed sort */
    if (rank == 0) {
        FILE *f = fopen(path("old.out"), "w");
        check("old.out made", f && fputs("old\n", f) >= 0 && fclose(f) == 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    j.output = path("old.out");
    j.log = NULL;
    rc = dsort_sort_files(MPI_COMM_WORLD, &j, &e);
    same_everywhere(MPI_COMM_WORLD, "a failed sort over an existing output", rc, &e);
    if (rank == 0) {
        size_t n = 0;
        unsigned char *b = slurp(path("old.out"), &n);
        check("a failed sort leaves the existing output as it was",
              rc == DSORT_ERR_IO && b && n == 4 && !memcmp(b, "old\n", 4));
        free(b);
    }

    j = job_of(in_a, 1, path("bad.out"));
    static const char *const bad_block[] = {"--block-size=1", NULL};
    j.options = bad_block;
    fails("a bad option value", &j, DSORT_ERR_ARG, "--block-size");
    static const char *const help[] = {"--he", NULL};
    j.options = help;
    fails("--help's abbreviation", &j, DSORT_ERR_ARG, "--he");
    static const char *const stop[] = {"--stop-after=1", NULL};
    j.options = stop;
    fails("--stop-after", &j, DSORT_ERR_ARG, "--stop-after");
    j.options = NULL;
    j.keys = "0:u64le,"; /* an empty last key: refused, as dsort_sort refuses it */
    fails("a key list ending in a comma", &j, DSORT_ERR_ARG, "''");
    j.keys = NULL;

    /* Two halves, two files, at once (a rank count of 1 has one half). */
    int color = rank % 2;
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &half);
    j = job_of(color ? in_b : in_a, 1, path(color ? "b.half" : "a.half"));
    sorts(half, color ? "B by the odd half" : "A by the even half", &j);
    MPI_Comm_free(&half);

    /* Nothing left in the temp directory but what dsort keeps (none after a success). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        char cmd[4200];
        snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s' 2>/dev/null)\"", temps[0]);
        check("the temp directory is empty at the end", system(cmd) == 0);
    }
    int all = 0;
    MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
