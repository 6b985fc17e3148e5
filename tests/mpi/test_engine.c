/* MPI test for the engine (src/pipeline/) under mpiexec, with the real functions, no mocks:
 *  - dsort_job_name: rank 0's name (ending with its pid) on every rank, the same twice;
 *  - dsort_job_tempdirs: "dsort-JOB-rR" of mode 0700 per rank in each -T dir, refused (and kept)
 *    when it exists; the run set removes its runs and dsort_tempdirs_destroy the rest;
 *  - dsort_job_output_open + dsort_job_finish, -o FILE and -O DIR: skewed shares (one empty at
 *    p > 2, rank 0's big enough for O_DIRECT) of records that depend on their index only, sums
 *    "read" over another split: the commit holds exactly those records (read back by rank 0)
 *    and survives dsort_cleanup_run; rank p-1 reporting a record fewer, a wrong conservation sum
 *    or a wrong --verify sum gives 2 on every rank and leaves the directory as it was (an old
 *    FILE unchanged), as does dsort_output_abandon;
 *  - the planners used collectively: waves of a skewed all-to-all count matrix (in rank order,
 *    within cap unless one piece is larger, greedy; what senders send per wave is what the
 *    receiver planned), the fan-in (rank p-1 under a low open-file limit has the job's lowest;
 *    the fewest extra passes), and sampled splitters (the same on every rank, sorted,
 *    floor(j*N/p) sample keys below splitter j).
 * Seeded: rank 0 prints the seed; DSORT_TEST_SEED=<seed> replays. A failed check prints one line
 * naming the rank and the check; exit status 1 if any rank failed one (every rank agrees). */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cleanup.h"
#include "job.h"
#include "output.h"
#include "runset.h"
#include "splitters.h"
#include "job_end.h"
#include "job_topo.h"
#include "phase.h"

#define REC 100
#define KS 16

static struct dsort_comm c;
static uint64_t seed, rng;
static int failures;
static char base[4096];

/* One line per failed check, written at once (ranks share stderr). */
#define CHECK(cond, what, ...)                                                                     \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            char m_[1024];                                                                         \
            int k_ = snprintf(m_, sizeof m_,                                                       \
                              "test_engine: rank %d/%d seed %" PRIu64 ": FAIL %s: ", c.rank,       \
                              c.size, seed, what);                                                 \
            snprintf(m_ + k_, sizeof m_ - (size_t)k_, __VA_ARGS__);                                \
            fprintf(stderr, "%s\n", m_);                                                           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static uint64_t rnd(void)
{
    return rng = mix(rng);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return p;
}

/* Record i of the job: its bytes depend on the seed and i only. */
static void gen(uint64_t i, uint64_t n, unsigned char *out)
{
    for (uint64_t k = 0; k < n * REC; k++)
        out[k] = (unsigned char)mix(seed ^ ((i + k / REC) * REC + k % REC));
}

/* valsort's sum and the conservation sum of n records. */
static void sums(const unsigned char *b, uint64_t n, struct dsort_sum128 *crc,
                 struct dsort_sum128 *crc32c)
{
    dsort_checksum_records(crc, b, (size_t)n, REC);
    dsort_checksum_records_c(crc32c, b, (size_t)n, REC);
}

/* Rank r's share of the output (skewed; rank 1 empty at p > 2) and its first record. */
static uint64_t share(int r)
{
    return r == 0 ? 10007 : r == 1 && c.size > 2 ? 0 : 311 * (uint64_t)r + 13;
}
static uint64_t first_of(int r)
{
    uint64_t f = 0;
    for (int k = 0; k < r; k++)
        f += share(k);
    return f;
}

/* Entries of dir other than . and ..; -1 if it cannot be read. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* The file's bytes (NUL-terminated), or NULL. */
static unsigned char *slurp(const char *path, size_t *len)
{
    struct stat sb;
    int fd = open(path, O_RDONLY);
    unsigned char *b = fd < 0 || fstat(fd, &sb) ? NULL : xmalloc((size_t)sb.st_size + 1);
    ssize_t got = b ? read(fd, b, (size_t)sb.st_size) : 0;
    *len = got > 0 ? (size_t)got : 0;
    if (fd >= 0)
        close(fd);
    return b;
}

/* Rank 0: does path hold exactly records [first, first + n)? */
static void check_records(const char *path, uint64_t first, uint64_t n)
{
    size_t len;
    unsigned char *b = slurp(path, &len), *want = xmalloc(n * REC);
    gen(first, n, want);
    CHECK(b && len == n * REC, "committed content", "'%s' holds %zu bytes, expected %" PRIu64, path,
          len, n * REC);
    for (uint64_t i = 0; b && len == n * REC && i < n; i++)
        if (memcmp(b + i * REC, want + i * REC, REC)) {
            CHECK(0, "committed content", "'%s': record %" PRIu64 " differs", path, first + i);
            break;
        }
    free(b), free(want);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

static void test_name(void)
{
    char a[256], b[256], *all = xmalloc(256 * (size_t)c.size);
    memset(a, 'x', sizeof a);
    dsort_job_name(&c, a, sizeof a);
    dsort_job_name(&c, b, sizeof b);
    long pid0 = (long)getpid();
    MPI_Bcast(&pid0, 1, MPI_LONG, 0, c.comm);
    char suffix[32], mine[32];
    snprintf(suffix, sizeof suffix, "-%ld", pid0);
    snprintf(mine, sizeof mine, "-%ld", (long)getpid());
    size_t n = strnlen(a, sizeof a);
    CHECK(n > 0 && n < sizeof a && !strpbrk(a, "/ "), "job name", "'%.255s' is not a file name", a);
    CHECK(n > strlen(suffix) && !strcmp(a + n - strlen(suffix), suffix), "job name",
          "'%s' does not end with rank 0's pid (%s)", a, suffix);
    CHECK(c.rank == 0 || n < strlen(mine) || strcmp(a + n - strlen(mine), mine), "job name",
          "'%s' is this rank's own name, not rank 0's", a);
    CHECK(!strcmp(a, b), "job name", "two calls gave '%s' and '%s'", a, b);
    MPI_Allgather(a, 256, MPI_CHAR, all, 256, MPI_CHAR, c.comm);
    for (int r = 0; r < c.size; r++)
        CHECK(!strcmp(all + 256 * r, a), "job name", "rank %d has '%s', this rank '%s'", r,
              all + 256 * r, a);
    free(all);
}

static void test_tempdirs(void)
{
    char t1[4200], t2[4200], job[128], want[8600], run[8800];
    snprintf(t1, sizeof t1, "%s/T1", base);
    snprintf(t2, sizeof t2, "%s/T2", base);
    if (c.rank == 0 && (mkdir(t1, 0755) || mkdir(t2, 0755)))
        MPI_Abort(MPI_COMM_WORLD, 2);
    dsort_job_name(&c, job, sizeof job);
    MPI_Barrier(c.comm);
    char *dirs[2] = {t1, t2};
    struct dsort_job_options o;
    memset(&o, 0, sizeof o);
    o.temp_dirs = dirs;
    o.ntemp = 2;
    struct dsort_tempdirs td, again;
    struct dsort_error err;
    enum dsort_status st = dsort_job_tempdirs(&o, job, c.rank, &td, &err);
    CHECK(st == DSORT_OK && td.count == 2, "tempdirs", "status %d, %zu dirs: %s", st, td.count,
          err.msg);
    for (size_t i = 0; !st && i < td.count; i++) {
        snprintf(want, sizeof want, "%s/dsort-%s-r%d", dirs[i], job, c.rank);
        struct stat sb;
        CHECK(!strcmp(td.dirs[i], want), "tempdirs", "dir %zu is '%s', expected '%s'", i,
              td.dirs[i], want);
        CHECK(!stat(want, &sb) && S_ISDIR(sb.st_mode) && (sb.st_mode & 07777) == 0700, "tempdirs",
              "'%s' is not a directory of mode 0700", want);
    }
    /* The same name again is another job's: refused, and the first one stays. */
    CHECK(dsort_job_tempdirs(&o, job, c.rank, &again, &err) != DSORT_OK && entries(td.dirs[0]) >= 1,
          "tempdirs", "a second create of '%s' %s", td.dirs[0],
          entries(td.dirs[0]) >= 1 ? "succeeded" : "removed the first");
    MPI_Barrier(c.comm);
    if (c.rank == 0)
        CHECK(entries(t1) == c.size && entries(t2) == c.size, "tempdirs",
              "%d and %d per-rank dirs, expected %d each", entries(t1), entries(t2), c.size);
    MPI_Barrier(c.comm);
    /* Runs go round-robin over the dirs; the run set's release unlinks them. */
    struct dsort_runset rs;
    dsort_runset_init(&rs);
    for (int k = 0; !st && k < 3; k++) {
        dsort_tempdirs_run_path(&td, run, sizeof run);
        int fd = open(run, O_WRONLY | O_CREAT | O_EXCL, 0600);
        CHECK(fd >= 0 && strstr(run, td.dirs[k % 2]) == run &&
                  !dsort_runset_add(&rs, run, 1, 1, &err),
              "runset", "run %d: '%s'", k, run);
        close(fd);
    }
    dsort_runset_release(&rs);
    CHECK(entries(td.dirs[0]) == 1 && entries(td.dirs[1]) == 1, "runset",
          "after release '%s' holds %d entries, '%s' %d (the owner file only expected)", td.dirs[0],
          entries(td.dirs[0]), td.dirs[1], entries(td.dirs[1]));
    dsort_tempdirs_destroy(&td);
    CHECK(td.count == 0 && td.dirs == NULL, "tempdirs", "destroy left %zu dirs", td.count);
    MPI_Barrier(c.comm);
    if (c.rank == 0) {
        CHECK(entries(t1) == 0 && entries(t2) == 0, "tempdirs",
              "after destroy '%s' holds %d entries, '%s' %d", t1, entries(t1), t2, entries(t2));
        rmdir(t1);
        rmdir(t2);
    }
}

enum { COMMIT, FEWER, CON_SUM, VERIFY_SUM, ABANDON };
static const char *const how_name[] = {"commit", "one record fewer", "conservation sum",
                                       "verify sum", "abandon"};

static void test_job(int dir_mode, int how)
{
    char what[80], dir[4200], path[4300], part[4400];
    snprintf(what, sizeof what, "%s %s", dir_mode ? "-O DIR" : "-o FILE", how_name[how]);
    snprintf(dir, sizeof dir, "%s/job-%d-%d", base, dir_mode, how);
    snprintf(path, sizeof path, "%s/out", dir);
    static const char old[] = "what the user had\n";
    const int keep_old = !dir_mode && how == CON_SUM;
    if (c.rank == 0) {
        FILE *f;
        if (mkdir(dir, 0755) ||
            (keep_old && (!(f = fopen(path, "w")) || fputs(old, f) < 0 || fclose(f))))
            MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(c.comm);
    struct dsort_job_options o;
    memset(&o, 0, sizeof o);
    o.output = dir_mode ? NULL : path;
    o.output_dir = dir_mode ? path : NULL;
    o.verify = 1;
    const uint64_t n = share(c.rank), first = first_of(c.rank), N = first_of(c.size);
    struct dsort_output out;
    struct dsort_error err;
    enum dsort_status st = dsort_job_output_open(&c, &o, n * REC, &out, &err);
    CHECK(st == DSORT_OK, what, "output open: %s", err.msg);
    if (st)
        return; /* agreed: every rank returns */
    unsigned char *buf = xmalloc(n * REC);
    gen(first, n, buf);
    /* Two writes: the second at an offset within the share. */
    uint64_t half = n / 2 * REC;
    st = dsort_output_write(&out, buf, (size_t)half, 0, &err);
    if (!st)
        st = dsort_output_write(&out, buf + half, (size_t)(n * REC - half), half, &err);
    CHECK(st == DSORT_OK, what, "write: %s", err.msg);
    struct dsort_job_sums s;
    memset(&s, 0, sizeof s);
    sums(buf, n, &s.sum_out, &s.con_out);
    s.n_out = n;
    s.bytes_out = n * REC;
    /* What this rank "read": an even split of the same records. */
    uint64_t f0, n0;
    dsort_io_split(N, c.rank, c.size, &f0, &n0);
    unsigned char *in_buf = xmalloc(n0 * REC);
    gen(f0, n0, in_buf);
    sums(in_buf, n0, &s.sum_in, &s.con_in);
    s.n_in = n0;
    if (c.rank == c.size - 1) {
        if (how == FEWER)
            s.n_out--;
        else if (how == CON_SUM)
            s.con_out.lo ^= 1;
        else if (how == VERIFY_SUM)
            s.sum_out.hi++;
    }
    static struct dsort_inputs in; /* none: nothing to change under us */
    static struct dsort_job_stats stats;
    int rc = 2;
    if (how == ABANDON) {
        dsort_output_abandon(&out);
        dsort_output_abandon(&out); /* safe twice */
    } else {
        rc = dsort_job_finish(&c, &o, &in, &out, &s, &stats, &err);
    }
    CHECK(rc == (how == COMMIT ? 0 : 2), what, "dsort_job_finish returned %d", rc);
    if (rc == 0)
        dsort_cleanup_run(); /* committed: nothing of the output is registered any more */
    MPI_Barrier(c.comm);
    if (c.rank == 0 && how == COMMIT) {
        CHECK(entries(dir) == 1, what, "'%s' holds %d entries, expected the output only", dir,
              entries(dir));
        if (!dir_mode) {
            check_records(path, 0, N);
        } else {
            CHECK(entries(path) == c.size + 1, what, "'%s' holds %d entries, expected %d + 1", path,
                  entries(path), c.size);
            for (int r = 0; r < c.size; r++) {
                snprintf(part, sizeof part, "%s/part-%05d", path, r);
                check_records(part, first_of(r), share(r));
            }
            snprintf(part, sizeof part, "%s/_SUCCESS", path);
            size_t len;
            char *m = (char *)slurp(part, &len), *t = m ? strstr(m, "\"total\":") : NULL;
            int parts = -1;
            uint64_t recs = 0, bytes = 0;
            if (t)
                sscanf(t,
                       "\"total\": {\"parts\": %d, \"records\": %" SCNu64 ", \"bytes\": %" SCNu64,
                       &parts, &recs, &bytes);
            CHECK(parts == c.size && recs == N && bytes == N * REC, what,
                  "manifest total: %d parts, %" PRIu64 " records, %" PRIu64 " bytes", parts, recs,
                  bytes);
            free(m);
        }
    } else if (c.rank == 0) {
        size_t len;
        unsigned char *b = slurp(path, &len);
        CHECK(entries(dir) == keep_old, what, "'%s' holds %d entries, expected %d", dir,
              entries(dir), keep_old);
        CHECK(keep_old ? b && len == strlen(old) && !memcmp(b, old, len) : !b, what, "'%s' %s",
              path, keep_old ? "was changed" : "exists");
        free(b);
    }
    if (c.rank == 0)
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    MPI_Barrier(c.comm);
    free(buf), free(in_buf);
}

static void test_waves(int rep)
{
    static const uint64_t caps[] = {1000, 1, 2500, (uint64_t)1 << 40, 1000};
    const uint64_t cap = caps[rep % 5];
    const int p = c.size;
    char what[48];
    snprintf(what, sizeof what, "waves rep %d cap %" PRIu64, rep, cap);
    uint64_t *sc = xmalloc(48 * (size_t)p), *rcount = sc + p, *x = sc + 2 * p, *got = sc + 3 * p;
    int *wave_of = (int *)(sc + 4 * p), *swave = wave_of + p;
    rng = mix(seed ^ mix((uint64_t)rep * 977 + (uint64_t)c.rank));
    static const uint64_t sizes[] = {0, 0, 1000, 333, 2999, 1};
    for (int d = 0; d < p; d++) /* rep 4: only rank 0 sends, one big piece to each rank */
        sc[d] = rep == 4         ? (c.rank == 0) * 5000
                : rnd() % 7 == 6 ? 5000 + rnd() % 5000
                                 : sizes[rnd() % 6];
    MPI_Alltoall(sc, 1, MPI_UINT64_T, rcount, 1, MPI_UINT64_T, c.comm);
    uint64_t most = 0, total = 0, wsum = 0, big = 0;
    int w = dsort_waves_assign(rcount, p, cap, wave_of, &most), nonzero = 0;
    CHECK(w >= 1 && wave_of[0] == 0 && wave_of[p - 1] == w - 1, what,
          "%d waves, first source in %d, last in %d", w, wave_of[0], wave_of[p - 1]);
    for (int s = 0; s < p; s++) {
        if (s && wave_of[s] != wave_of[s - 1]) { /* only when the piece would pass cap */
            CHECK(wave_of[s] == wave_of[s - 1] + 1 && wsum > 0 && wsum + rcount[s] > cap, what,
                  "source %d starts wave %d after %d of %" PRIu64 " bytes", s, wave_of[s],
                  wave_of[s - 1], wsum);
            wsum = 0, nonzero = 0;
        }
        total += rcount[s];
        wsum += rcount[s];
        nonzero += rcount[s] > 0;
        big = wsum > big ? wsum : big;
        CHECK(wsum <= cap || nonzero == 1, what, "wave %d holds %" PRIu64 " bytes in %d pieces",
              wave_of[s], wsum, nonzero);
    }
    CHECK(most == big, what, "largest wave %" PRIu64 ", planner said %" PRIu64, big, most);
    /* As the lines pipeline (ooc_lines.c): senders learn their waves, then every rank sends wave
     * after wave. */
    MPI_Alltoall(wave_of, 1, MPI_INT, swave, 1, MPI_INT, c.comm);
    int waves = (int)dsort_comm_max(&c, (uint64_t)w);
    uint64_t arrived = 0;
    for (int wv = 0; wv < waves; wv++) {
        int wrong = -1;
        for (int d = 0; d < p; d++)
            x[d] = swave[d] == wv ? sc[d] : 0;
        MPI_Alltoall(x, 1, MPI_UINT64_T, got, 1, MPI_UINT64_T, c.comm);
        for (int s = 0; s < p; s++) {
            if (got[s] != (wave_of[s] == wv ? rcount[s] : 0))
                wrong = s;
            arrived += got[s];
        }
        CHECK(wrong < 0, what,
              "wave %d of %d brings %" PRIu64 " bytes from rank %d, not as planned", wv, waves,
              wrong < 0 ? 0 : got[wrong], wrong);
    }
    CHECK(arrived == total && waves >= w, what, "%" PRIu64 " of %" PRIu64 " bytes arrived", arrived,
          total);
    free(sc);
}

static void test_fan_in(void)
{
    struct rlimit saved, low;
    struct dsort_fan_in fi;
    const int last = c.rank == c.size - 1;
    getrlimit(RLIMIT_NOFILE, &saved);
    low = saved;
    if (last) {
        low.rlim_cur = (rlim_t)(entries("/proc/self/fd") + 20);
        CHECK(!setrlimit(RLIMIT_NOFILE, &low), "fan-in", "cannot lower the open-file limit");
    }
    dsort_fan_in_now((uint64_t)64 << 20, (uint64_t)1 << 20, 0, &fi);
    setrlimit(RLIMIT_NOFILE, &saved);
    uint64_t lim = low.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)low.rlim_cur;
    size_t want = fi.by_files < 64 ? fi.by_files : 64;
    CHECK(fi.files_limit == lim && fi.by_mem == 64 && fi.f == (want < 2 ? 2 : want) &&
              (!lim || fi.by_files + fi.open_now + 8 == lim),
          "fan-in", "f %zu, by files %zu, by memory %zu, limit %" PRIu64 " (set %" PRIu64 ")", fi.f,
          fi.by_files, fi.by_mem, fi.files_limit, lim);
    /* The job's fan-in is the lowest: rank p-1's, limited by its files. */
    int f = (int)fi.f, fmin = 0, flast = f;
    MPI_Allreduce(&f, &fmin, 1, MPI_INT, MPI_MIN, c.comm);
    MPI_Bcast(&flast, 1, MPI_INT, c.size - 1, c.comm);
    CHECK(fmin == flast && flast < 64 && (last || f > flast || c.size == 1), "fan-in",
          "lowest fan-in %d, rank p-1's %d, this rank's %d", fmin, flast, f);
    char why[200];
    dsort_fan_in_explain(&fi, fi.f + 1, why, sizeof why);
    CHECK(strstr(why, last ? "open-file limit" : "merge buffers"), "fan-in", "explain: '%s'", why);
    /* Extra passes, smallest first: the fewest, ceil((n - 1) / (f - 1)) - 1 of them. */
    rng = mix(seed ^ (uint64_t)c.rank * 31);
    for (int rep = 0; rep < 20; rep++) {
        size_t n0 = 1 + (size_t)c.rank * 29 + rnd() % 200, n = n0, passes = 0, k;
        for (; n > fi.f; n -= k - 1, passes++) {
            k = dsort_fan_in_step(n, fi.f);
            CHECK(k >= 2 && k <= fi.f, "fan-in step", "%zu of %zu runs at fan-in %zu", k, n, fi.f);
            if (k < 2)
                break;
        }
        size_t need = n0 <= fi.f ? 0 : (n0 - 1 + fi.f - 2) / (fi.f - 1) - 1;
        CHECK(passes == need, "fan-in step", "%zu runs at fan-in %zu: %zu extra passes, not %zu",
              n0, fi.f, passes, need);
    }
}

static int key_cmp(const void *a, const void *b)
{
    return memcmp(a, b, KS);
}

static void test_sample(int rep)
{
    const int p = c.size;
    char what[32];
    snprintf(what, sizeof what, "sample rep %d", rep);
    rng = mix(seed ^ mix((uint64_t)rep * 7919 + (uint64_t)c.rank));
    /* rep 0: random counts; 1: rank 0 only; 2: fewer keys than ranks; 3: none anywhere */
    uint64_t n = rep == 0 ? rnd() % 200 : rep == 1 ? (c.rank == 0) * 500 : rep == 2 ? rnd() % 2 : 0;
    unsigned char *k = xmalloc(n * KS), *spl = xmalloc((size_t)p * KS);
    unsigned char *all = xmalloc((size_t)p * (size_t)p * KS);
    for (uint64_t i = 0; i < n; i++) { /* unsorted; few values: the rank and index decide */
        dsort_job_put_be64(k + i * KS, rnd() % 64);
        dsort_job_put_be64(k + i * KS + 8, (uint64_t)c.rank << 32 | i);
    }
    memset(spl, 0xab, (size_t)p * KS);
    struct dsort_error err;
    CHECK(dsort_splitters_sample(c.comm, k, n, 0, KS, 0, spl, NULL, &err) == DSORT_OK, what, "%s",
          err.msg);
    MPI_Allgather(spl, (p - 1) * KS, MPI_BYTE, all, (p - 1) * KS, MPI_BYTE, c.comm);
    for (int r = 0; r < p; r++)
        CHECK(!memcmp(all + (size_t)r * (size_t)(p - 1) * KS, spl, (size_t)(p - 1) * KS), what,
              "rank %d's splitters differ from this rank's", r);
    uint64_t N = dsort_comm_sum(&c, n);
    qsort(k, n, KS, key_cmp);
    static const unsigned char zero[KS];
    for (int j = 1; j < p; j++) {
        const unsigned char *sj = spl + (size_t)(j - 1) * KS;
        if (j > 1)
            CHECK(memcmp(sj - KS, sj, KS) < (N >= (uint64_t)p ? 0 : 1), what,
                  "splitters %d and %d out of order", j - 1, j);
        uint64_t below = 0, found = 0;
        while (below < n && memcmp(k + below * KS, sj, KS) < 0)
            below++;
        found = below < n && !memcmp(k + below * KS, sj, KS);
        below = dsort_comm_sum(&c, below);
        found = dsort_comm_sum(&c, found);
        CHECK(N ? below == (uint64_t)j * N / (uint64_t)p && found == 1 : !memcmp(sj, zero, KS),
              what,
              "splitter %d: %" PRIu64 " keys below (expected %" PRIu64 "), found %" PRIu64
              " times among %" PRIu64,
              j, below, (uint64_t)j * N / (uint64_t)p, found, N);
    }
    free(k), free(spl), free(all);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    dsort_comm_init(&c, MPI_COMM_WORLD, "test_engine");
    if (c.rank == 0) {
        const char *env = getenv("DSORT_TEST_SEED"), *tmp = getenv("TMPDIR");
        seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
        snprintf(base, sizeof base, "%s/test_engine-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(base)) {
            perror("test_engine: mkdtemp");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        printf("test_engine: %d ranks, random seed %" PRIu64
               " (set DSORT_TEST_SEED to replay); the failing jobs' error lines are expected\n",
               c.size, seed);
        fflush(stdout);
    }
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, c.comm);
    MPI_Bcast(base, sizeof base, MPI_CHAR, 0, c.comm);
    test_name();
    test_tempdirs();
    for (int dir_mode = 0; dir_mode < 2; dir_mode++)
        for (int how = COMMIT; how <= ABANDON; how++)
            test_job(dir_mode, how);
    for (int rep = 0; rep < 10; rep++)
        test_waves(rep);
    test_fan_in();
    for (int rep = 0; rep < 4; rep++)
        test_sample(rep);
    MPI_Barrier(c.comm);
    if (c.rank == 0 && rmdir(base)) {
        CHECK(0, "leftovers", "'%s' is not empty at the end (%d entries)", base, entries(base));
        nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    int any = dsort_comm_sum(&c, (uint64_t)failures) != 0;
    if (c.rank == 0)
        printf("test_engine: %s at %d ranks\n", any ? "FAILED" : "passed", c.size);
    dsort_comm_destroy(&c);
    MPI_Finalize();
    return any;
}
