/* keys_sort: the MPI side of lib.keys_numpy (keys_numpy.py is the oracle). Every rank reads
 * the records of DATA (REC_SIZE bytes each), then for each case of CASES calls dsort_sort on
 * MPI_COMM_WORLD with the case's typed keys and flags and writes its share of the output.
 *
 *   keys_sort DATA REC_SIZE CASES OUTDIR
 *
 * CASES has one case a line: "FLAGS NREC KEYS": FLAGS "-" or a combination of r (DSORT_REVERSE)
 * and s (DSORT_STABLE); NREC the records used, the first NREC of DATA; KEYS the key list as
 * struct dsort_records.keys takes it. Rank r of p gives dsort_sort records
 * [floor(NREC*r*r/p^2), floor(NREC*(r+1)*(r+1)/p^2)) of them (unequal shares, the first ranks
 * often none), so that the input order is DATA's. Rank r writes OUTDIR/K.r, K the case's line
 * number from 0; on an error rank 0 writes OUTDIR/K.err, "CODE MESSAGE", or "MISMATCH ..." if
 * the ranks did not all get the same code. Exit 0, or 1 when DATA or an output cannot be used.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsort.h"

static int rank, size;

static int put_file(const char *dir, size_t k, const char *suffix, const void *p, size_t len)
{
    char name[4096];
    snprintf(name, sizeof name, "%s/%zu.%s", dir, k, suffix);
    FILE *f = fopen(name, "wb");
    int ok = f && (!len || fwrite(p, 1, len, f) == len); /* out is NULL for 0 records */
    if (f && fclose(f))
        ok = 0;
    if (!ok)
        fprintf(stderr, "keys_sort: rank %d: cannot write %s\n", rank, name);
    return ok;
}

static unsigned char *read_data(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    if (f && !fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
        (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    if (!buf)
        fprintf(stderr, "keys_sort: rank %d: cannot read %s\n", rank, path);
    *len = n < 0 ? 0 : (size_t)n;
    return buf;
}

/* One case: 1 on success or an expected error report, 0 when an output cannot be written. */
static int one_case(const unsigned char *data, size_t rs, size_t k, const char *flags, size_t nrec,
                    const char *keys, const char *dir)
{
    struct dsort_records fmt = {rs, 0, 0, 0, keys};
    fmt.flags |= strchr(flags, 'r') ? DSORT_REVERSE : 0;
    fmt.flags |= strchr(flags, 's') ? DSORT_STABLE : 0;
    const size_t p2 = (size_t)size * (size_t)size, r = (size_t)rank;
    const size_t lo = nrec * r * r / p2, hi = nrec * (r + 1) * (r + 1) / p2;
    void *out = NULL;
    size_t n_out = 0;
    struct dsort_errinfo err;
    int rc = dsort_sort(MPI_COMM_WORLD, &fmt, data + lo * rs, hi - lo, &out, &n_out, &err);
    int lo_rc = rc, hi_rc = rc;
    MPI_Allreduce(MPI_IN_PLACE, &lo_rc, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &hi_rc, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int ok = 1;
    if (rc == DSORT_SUCCESS && lo_rc == hi_rc) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, "%d", rank);
        ok = put_file(dir, k, suffix, out, n_out * rs);
    } else if (rank == 0) {
        char line[400];
        if (lo_rc != hi_rc)
            snprintf(line, sizeof line, "MISMATCH codes %d..%d\n", lo_rc, hi_rc);
        else
            snprintf(line, sizeof line, "%d %s\n", rc, err.msg);
        ok = put_file(dir, k, "err", line, strlen(line));
    }
    free(out);
    return ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0)
            fprintf(stderr, "usage: keys_sort DATA REC_SIZE CASES OUTDIR\n");
        MPI_Finalize();
        return 1;
    }
    const size_t rs = strtoul(argv[2], NULL, 10);
    size_t len = 0;
    unsigned char *data = read_data(argv[1], &len);
    FILE *cases = fopen(argv[3], "r");
    int ok = data && cases && rs > 0;
    char line[1024];
    for (size_t k = 0; ok && fgets(line, sizeof line, cases); k++) {
        char flags[8], keys[1000] = "";
        size_t nrec;
        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%7s %zu %999[^\n]", flags, &nrec, keys) < 2 || nrec > len / rs) {
            fprintf(stderr, "keys_sort: rank %d: bad case line %zu: '%s'\n", rank, k, line);
            ok = 0;
            break;
        }
        ok = one_case(data, rs, k, flags, nrec, keys, argv[4]);
    }
    if (cases)
        fclose(cases);
    free(data);
    /* A rank that stopped early must not leave the others waiting in a case's collectives:
     * each rank's loop reads the same cases, so they stop together except on a write error,
     * which ends the job. */
    if (!ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
    return 0;
}
