/* A stopped job's manifest (checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_hex(FILE *f, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (n == 0)
        fputc('-', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
}

/* Decode a word of lower-case hex digits ("-": empty) into a new buffer of *n bytes
 * (NUL-terminated); NULL if it is anything else. */
static unsigned char *get_hex(const char *s, size_t *n)
{
    size_t len = strcmp(s, "-") ? strlen(s) : 0;
    if (len % 2)
        return NULL;
    unsigned char *b = malloc(len / 2 + 1);
    if (!b)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        int c = s[i], v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) {
            free(b);
            return NULL;
        }
        if (i % 2 == 0)
            b[i / 2] = (unsigned char)(v << 4);
        else
            b[i / 2] |= (unsigned char)v;
    }
    b[len / 2] = '\0';
    *n = len / 2;
    return b;
}

/* A hex-encoded text (no NUL inside), or NULL. */
static char *get_text(const char *s)
{
    size_t n;
    unsigned char *b = get_hex(s, &n);
    if (b && memchr(b, 0, n)) {
        free(b);
        return NULL;
    }
    return (char *)b;
}

/* A decimal number that is the whole word. */
static int get_u64(const char *s, uint64_t *v)
{
    if (*s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    *v = strtoull(s, &end, 10);
    return !*end && !errno;
}

enum dsort_status dsort_ckpt_set_inputs(struct dsort_ckpt *k, const struct dsort_inputs *in,
                                        struct dsort_error *err)
{
    k->inputs = calloc(in->count ? in->count : 1, sizeof *k->inputs);
    if (!k->inputs)
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < in->count; i++) {
        const struct dsort_input *f = &in->files[i];
        struct dsort_ckpt_input *c = &k->inputs[k->ninputs++];
        if (!(c->path = strdup(f->path)))
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        c->size = f->size;
        c->ino = (uint64_t)f->ino;
        c->dev = (uint64_t)f->dev;
        c->mtime_s = (int64_t)f->mtime.tv_sec;
        c->mtime_ns = (int64_t)f->mtime.tv_nsec;
        c->ctime_s = (int64_t)f->ctime.tv_sec;
        c->ctime_ns = (int64_t)f->ctime.tv_nsec;
        c->has_ctime = 1;
    }
    return DSORT_OK;
}

/* The windows sampled over [from, to) in units of rs bytes: *n windows of *w units, window i
 * at the returned position. Up to DSORT_CKPT_SAMPLES evenly spread; a range shorter than that
 * many windows is covered whole. */
static uint64_t window_at(uint64_t from, uint64_t to, size_t rs, size_t i, uint64_t *w, size_t *n)
{
    uint64_t len = to > from ? to - from : 0;
    *w = rs >= DSORT_CKPT_WINDOW ? 1 : DSORT_CKPT_WINDOW / rs;
    if (len <= (uint64_t)DSORT_CKPT_SAMPLES * *w) {
        *n = (size_t)((len + *w - 1) / *w);
        uint64_t at = from + i * *w;
        if (*n && i + 1 == *n)
            *w = to - at;
        return at;
    }
    *n = DSORT_CKPT_SAMPLES;
    return from + (len - *w) / (DSORT_CKPT_SAMPLES - 1) * i;
}

/* The CRC32C of window i of k's range into *crc (buf: room for a window). */
static enum dsort_status sample_window(const struct dsort_ckpt *k, const struct dsort_inputs *in,
                                       size_t i, unsigned char *buf, uint32_t *crc, uint64_t *at,
                                       struct dsort_error *err)
{
    uint64_t w;
    size_t n;
    *at = window_at(k->sample_from, k->sample_to, in->rec_size, i, &w, &n);
    enum dsort_status st = dsort_inputs_read(in, *at, w, buf, err);
    if (!st)
        *crc = dsort_crc32c(0, buf, (size_t)w * in->rec_size);
    return st;
}

/* Room for one window of in's records. */
static unsigned char *window_buf(const struct dsort_inputs *in, struct dsort_error *err)
{
    size_t rs = in->rec_size ? in->rec_size : 1;
    unsigned char *b = malloc(rs >= DSORT_CKPT_WINDOW ? rs : DSORT_CKPT_WINDOW);
    if (!b)
        DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
    return b;
}

enum dsort_status dsort_ckpt_sample(struct dsort_ckpt *k, const struct dsort_inputs *in,
                                    struct dsort_error *err)
{
    if (k->sample_to > in->total_records)
        k->sample_to = in->total_records;
    uint64_t w, at;
    window_at(k->sample_from, k->sample_to, in->rec_size ? in->rec_size : 1, 0, &w, &k->nsample);
    unsigned char *buf = k->nsample ? window_buf(in, err) : NULL;
    if (k->nsample && !buf)
        return DSORT_ENOMEM;
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < k->nsample && !st; i++)
        st = sample_window(k, in, i, buf, &k->sample[i], &at, err);
    free(buf);
    return st;
}

int dsort_ckpt_sample_differs(const struct dsort_ckpt *k, const struct dsort_inputs *in, char *why,
                              size_t len, struct dsort_error *err)
{
    why[0] = '\0';
    if (!k->nsample)
        return 0;
    uint64_t w, at;
    size_t n;
    window_at(k->sample_from, k->sample_to, in->rec_size ? in->rec_size : 1, 0, &w, &n);
    if (n != k->nsample || k->sample_to > in->total_records) {
        snprintf(why, len, "its sampled input does not fit the inputs now");
        return 1;
    }
    unsigned char *buf = window_buf(in, err);
    if (!buf)
        return -1;
    int differs = 0;
    for (size_t i = 0; i < n && !differs; i++) {
        uint32_t crc;
        if (sample_window(k, in, i, buf, &crc, &at, err)) {
            free(buf);
            return -1;
        }
        if (crc == k->sample[i])
            continue;
        differs = 1;
        size_t f = 0; /* the input that holds the window's first unit */
        while (f + 1 < in->count && at >= in->files[f].first + in->files[f].records)
            f++;
        uint64_t off = (at - in->files[f].first) * in->rec_size;
        snprintf(why, len,
                 "input '%s' changed since the checkpoint: the bytes at offset %" PRIu64
                 ", read before the stop, are not what they were (rewritten in place with its "
                 "size and times kept?)",
                 in->files[f].path, off);
    }
    free(buf);
    return differs;
}

enum dsort_status dsort_ckpt_write(const char *dir, const struct dsort_ckpt *k, int durable,
                                   struct dsort_error *err)
{
    char tmp[4200], path[4200];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, DSORT_CKPT_FILE);
    snprintf(path, sizeof path, "%s/%s", dir, DSORT_CKPT_FILE);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        if (fd >= 0)
            close(fd);
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot write the checkpoint '%s'", tmp);
    }
    fprintf(f, "dsort-checkpoint 2\njob ");
    put_hex(f, k->job, strlen(k->job));
    fprintf(f, "\nshape ");
    put_hex(f, k->shape, strlen(k->shape));
    fprintf(f, "\nrank %d\nsize %d\n", k->rank, k->size);
    for (size_t i = 0; i < k->ninputs; i++) {
        const struct dsort_ckpt_input *c = &k->inputs[i];
        fprintf(f, "input %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " ", c->size,
                c->ino, c->dev, c->mtime_s, c->mtime_ns);
        put_hex(f, c->path, strlen(c->path));
        fprintf(f, " %" PRId64 " %" PRId64 "\n", c->ctime_s, c->ctime_ns);
    }
    if (k->nsample) { /* sample FROM TO CRC... (one hex word of 4-byte CRCs, big-endian) */
        unsigned char b[4 * DSORT_CKPT_SAMPLES];
        for (size_t i = 0; i < k->nsample; i++)
            for (int j = 0; j < 4; j++)
                b[4 * i + (size_t)j] = (unsigned char)(k->sample[i] >> (24 - 8 * j));
        fprintf(f, "sample %" PRIu64 " %" PRIu64 " ", k->sample_from, k->sample_to);
        put_hex(f, b, 4 * k->nsample);
        fputc('\n', f);
    }
    fprintf(f,
            "rounds %" PRIu64 "\nconsumed %" PRIu64 "\nblock %" PRIu64 "\nbytes_read %" PRIu64
            "\nlines_in %" PRIu64 "\nlongest %" PRIu64 "\nnext_run %" PRIu64 "\nsum_in %" PRIu64
            " %" PRIu64 "\ncon_in %" PRIu64 " %" PRIu64 "\nsplitters ",
            k->rounds, k->consumed, k->block, k->bytes_read, k->lines_in, k->longest, k->next_run,
            k->sum_in.lo, k->sum_in.hi, k->con_in.lo, k->con_in.hi);
    put_hex(f, k->blob, k->blob_len);
    fputc('\n', f);
    for (size_t i = 0; i < k->runs.n; i++) {
        /* run RECORDS BYTES then SIZE PATH of each file (a striped run has several) */
        const struct dsort_run *r = &k->runs.runs[i];
        const char *paths[DSORT_RUN_MAX_STRIPES];
        size_t nf = dsort_run_files(r, paths);
        fprintf(f, "run %" PRIu64 " %" PRIu64, r->records, r->bytes);
        for (size_t j = 0; j < nf; j++) {
            struct stat sb;
            if (stat(paths[j], &sb)) {
                int e = errno;
                fclose(f);
                unlink(tmp);
                return DSORT_ERR(err, DSORT_EIO, e, "cannot keep run '%s'", paths[j]);
            }
            fprintf(f, " %" PRIu64 " ", (uint64_t)sb.st_size);
            put_hex(f, paths[j], strlen(paths[j]));
        }
        fputc('\n', f);
    }
    fprintf(f, "end\n");
    int bad = ferror(f) || fflush(f) || (durable && fsync(fileno(f)));
    int e = errno;
    if (fclose(f) || bad) {
        unlink(tmp);
        return DSORT_ERR(err, DSORT_EIO, bad ? e : errno, "cannot write the checkpoint '%s'", tmp);
    }
    if (rename(tmp, path)) {
        e = errno;
        unlink(tmp);
        return DSORT_ERR(err, DSORT_EIO, e, "cannot rename '%s' to '%s'", tmp, path);
    }
    int dfd = durable ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return DSORT_OK;
}

/* The keys that come exactly once, as bits of `seen`. */
static const char *const once[] = {"job",      "shape",  "rank",       "size",     "rounds",
                                   "consumed", "block",  "bytes_read", "lines_in", "longest",
                                   "next_run", "sum_in", "con_in",     "splitters"};
#define N_ONCE (sizeof once / sizeof once[0])

/* One line of a manifest (its first word is key) into k. 0 if it does not parse. */
static int parse_line(struct dsort_ckpt *k, const char *key, char **w, int nw, size_t *icap,
                      size_t *scap)
{
    uint64_t *num[] = {NULL,         NULL,         NULL,        NULL,
                       &k->rounds,   &k->consumed, &k->block,   &k->bytes_read,
                       &k->lines_in, &k->longest,  &k->next_run};
    if (!strcmp(key, "job"))
        return nw == 2 && (k->job = get_text(w[1])) != NULL;
    if (!strcmp(key, "shape"))
        return nw == 2 && (k->shape = get_text(w[1])) != NULL;
    if (!strcmp(key, "splitters"))
        return nw == 2 && (k->blob = get_hex(w[1], &k->blob_len)) != NULL;
    if (!strcmp(key, "rank") || !strcmp(key, "size")) {
        uint64_t v;
        if (nw != 2 || !get_u64(w[1], &v) || v > 1u << 30)
            return 0;
        *(key[0] == 'r' ? &k->rank : &k->size) = (int)v;
        return 1;
    }
    if (!strcmp(key, "sum_in") || !strcmp(key, "con_in")) {
        struct dsort_sum128 *s = key[0] == 's' ? &k->sum_in : &k->con_in;
        return nw == 3 && get_u64(w[1], &s->lo) && get_u64(w[2], &s->hi);
    }
    for (size_t i = 4; i < sizeof num / sizeof num[0]; i++)
        if (!strcmp(key, once[i]))
            return nw == 2 && get_u64(w[1], num[i]);
    if (!strcmp(key, "input")) {
        struct dsort_ckpt_input c = {0};
        uint64_t ms, mns, cs = 0, cns = 0;
        /* version 2 adds the ctime after the path */
        if ((nw != 7 && nw != 9) || !get_u64(w[1], &c.size) || !get_u64(w[2], &c.ino) ||
            !get_u64(w[3], &c.dev) || !get_u64(w[4], &ms) || !get_u64(w[5], &mns) ||
            (nw == 9 && (!get_u64(w[7], &cs) || !get_u64(w[8], &cns))) ||
            !(c.path = get_text(w[6])))
            return 0;
        c.mtime_s = (int64_t)ms;
        c.mtime_ns = (int64_t)mns;
        c.ctime_s = (int64_t)cs;
        c.ctime_ns = (int64_t)cns;
        c.has_ctime = nw == 9;
        if (k->ninputs == *icap) {
            *icap = *icap ? 2 * *icap : 16;
            void *m = realloc(k->inputs, *icap * sizeof *k->inputs);
            if (!m) {
                free(c.path);
                return 0;
            }
            k->inputs = m;
        }
        k->inputs[k->ninputs++] = c;
        return 1;
    }
    if (!strcmp(key, "sample")) { /* at most once (version 2; none in version 1) */
        size_t n;
        unsigned char *b;
        if (nw != 4 || k->nsample || !get_u64(w[1], &k->sample_from) ||
            !get_u64(w[2], &k->sample_to) || !(b = get_hex(w[3], &n)))
            return 0;
        int ok = n && n % 4 == 0 && n / 4 <= DSORT_CKPT_SAMPLES;
        for (size_t i = 0; ok && i < n / 4; i++)
            k->sample[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
                           (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
        k->nsample = ok ? n / 4 : 0;
        free(b);
        return ok;
    }
    if (!strcmp(key, "run")) {
        /* run RECORDS BYTES, then SIZE PATH for each of the run's files (1 or the stripes) */
        uint64_t records, bytes, fsize[DSORT_RUN_MAX_STRIPES];
        char *p[DSORT_RUN_MAX_STRIPES] = {0};
        size_t nf = nw >= 5 && (nw - 3) % 2 == 0 ? (size_t)(nw - 3) / 2 : 0;
        int ok = nf >= 1 && nf <= DSORT_RUN_MAX_STRIPES && get_u64(w[1], &records) &&
                 get_u64(w[2], &bytes);
        for (size_t j = 0; ok && j < nf; j++)
            ok = get_u64(w[3 + 2 * j], &fsize[j]) && (p[j] = get_text(w[4 + 2 * j])) != NULL &&
                 strlen(p[j]) < sizeof k->runs.runs[0].path;
        if (ok && k->runs.n == *scap) {
            *scap = *scap ? 2 * *scap : 16;
            void *m = realloc(k->run_sizes, *scap * DSORT_RUN_MAX_STRIPES * sizeof *k->run_sizes);
            ok = m != NULL;
            if (ok)
                k->run_sizes = m;
        }
        struct dsort_error e2;
        if (ok) {
            for (size_t j = 0; j < nf; j++)
                k->run_sizes[k->runs.n * DSORT_RUN_MAX_STRIPES + j] = fsize[j];
            ok = !dsort_runset_add_striped(&k->runs, (const char *const *)p, nf, records, bytes,
                                           &e2);
        }
        for (size_t j = 0; j < nf; j++)
            free(p[j]);
        return ok;
    }
    return 0;
}

enum dsort_status dsort_ckpt_read(const char *dir, struct dsort_ckpt *k, struct dsort_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, DSORT_CKPT_FILE);
    return dsort_ckpt_read_file(path, k, err);
}

enum dsort_status dsort_ckpt_read_file(const char *path, struct dsort_ckpt *k,
                                       struct dsort_error *err)
{
    memset(k, 0, sizeof *k);
    FILE *f = fopen(path, "re");
    if (!f)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot read the checkpoint '%s'", path);
    size_t cap = 0, icap = 0, scap = 0;
    char *line = NULL;
    ssize_t got;
    int ok = 1, ended = 0, lineno = 0;
    unsigned long seen = 0;
    while (ok && !ended && (got = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        if (lineno == 1) {
            ok = !strcmp(line, "dsort-checkpoint 1") || !strcmp(line, "dsort-checkpoint 2");
            continue;
        }
        if (!strcmp(line, "end")) {
            ended = 1;
            continue;
        }
        /* split into at most 24 words at single spaces (a run line of a run striped over
         * DSORT_RUN_MAX_STRIPES files has 3 + 2 * 8) */
        char *w[24] = {0};
        int nw = 0;
        for (char *q = line; nw < 24;) {
            w[nw++] = q;
            char *sp = strchr(q, ' ');
            if (!sp)
                break;
            *sp = '\0';
            q = sp + 1;
        }
        for (size_t i = 0; i < N_ONCE; i++)
            if (!strcmp(w[0], once[i])) {
                ok = !(seen & (1ul << i));
                seen |= 1ul << i;
            }
        ok = ok && parse_line(k, w[0], w, nw, &icap, &scap);
    }
    free(line);
    fclose(f);
    enum dsort_status st = DSORT_OK;
    if (!ok || !ended || seen != (1ul << N_ONCE) - 1 || k->size < 1 || k->next_run < k->runs.n)
        st = DSORT_ERR(err, DSORT_EFORMAT, 0,
                       "the checkpoint '%s' is damaged (line %d): not resuming from it", path,
                       lineno);
    if (st)
        dsort_ckpt_free(k);
    return st;
}

int dsort_ckpt_differs(const struct dsort_ckpt *k, const char *shape, int size,
                       const struct dsort_inputs *in, char *why, size_t len)
{
    if (strcmp(k->shape, shape)) {
        snprintf(why, len, "its options were '%s', not '%s'", k->shape, shape);
        return 1;
    }
    if (k->size != size) {
        snprintf(why, len,
                 "it was made by %d ranks, not %d (resuming with another rank count "
                 "is not supported)",
                 k->size, size);
        return 1;
    }
    if (k->ninputs != in->count) {
        snprintf(why, len, "it had %zu input files, there are %zu now", k->ninputs, in->count);
        return 1;
    }
    for (size_t i = 0; i < in->count; i++) {
        const struct dsort_ckpt_input *c = &k->inputs[i];
        const struct dsort_input *f = &in->files[i];
        const char *what =
            strcmp(c->path, f->path) ? "another file in its place"
            : c->size != f->size     ? "its size changed"
            : c->ino != (uint64_t)f->ino || c->dev != (uint64_t)f->dev
                ? "it is another file now (inode or device)"
            : c->mtime_s != (int64_t)f->mtime.tv_sec || c->mtime_ns != (int64_t)f->mtime.tv_nsec
                ? "it was modified (mtime)"
            : c->has_ctime && (c->ctime_s != (int64_t)f->ctime.tv_sec ||
                               c->ctime_ns != (int64_t)f->ctime.tv_nsec)
                ? "its ctime changed (it was rewritten with its mtime put back, as cp -p, "
                  "rsync -t and touch -r do, or its owner, mode or links changed)"
                : NULL;
        if (what) {
            snprintf(why, len,
                     "input '%s' changed since the checkpoint: %s (size %" PRIu64 " then, %" PRIu64
                     " now)",
                     f->path, what, c->size, f->size);
            return 1;
        }
    }
    why[0] = '\0';
    return 0;
}

void dsort_ckpt_free(struct dsort_ckpt *k)
{
    free(k->job);
    free(k->shape);
    for (size_t i = 0; i < k->ninputs; i++)
        free(k->inputs[i].path);
    free(k->inputs);
    free(k->blob);
    free(k->run_sizes);
    dsort_runset_keep(&k->runs);
    memset(k, 0, sizeof *k);
}
