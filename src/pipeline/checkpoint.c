/* A stopped job's manifest (checkpoint.h). */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void put_hex(FILE *f, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (n == 0)
        fputc('-', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x", b[i]);
}

/* Decode a hex word ("-": empty) into a new buffer of *n bytes (NUL-terminated). */
static unsigned char *get_hex(const char *s, size_t *n)
{
    size_t len = strcmp(s, "-") ? strlen(s) : 0;
    if (len % 2)
        return NULL;
    unsigned char *b = malloc(len / 2 + 1);
    if (!b)
        return NULL;
    for (size_t i = 0; i < len / 2; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(b);
            return NULL;
        }
        b[i] = (unsigned char)v;
    }
    b[len / 2] = '\0';
    *n = len / 2;
    return b;
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
    }
    return DSORT_OK;
}

enum dsort_status dsort_ckpt_write(const char *dir, const struct dsort_ckpt *k,
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
    fprintf(f, "dsort-checkpoint 1\njob ");
    put_hex(f, k->job, strlen(k->job));
    fprintf(f, "\nshape ");
    put_hex(f, k->shape, strlen(k->shape));
    fprintf(f, "\nrank %d\nsize %d\n", k->rank, k->size);
    for (size_t i = 0; i < k->ninputs; i++) {
        const struct dsort_ckpt_input *c = &k->inputs[i];
        fprintf(f, "input %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " ", c->size,
                c->ino, c->dev, c->mtime_s, c->mtime_ns);
        put_hex(f, c->path, strlen(c->path));
        fputc('\n', f);
    }
    fprintf(f,
            "rounds %" PRIu64 "\nconsumed %" PRIu64 "\nblock %" PRIu64 "\nbytes_read %" PRIu64
            "\nlines_in %" PRIu64 "\nlongest %" PRIu64 "\nsum_in %" PRIu64 " %" PRIu64
            "\ncon_in %" PRIu64 " %" PRIu64 "\nnext_run %" PRIu64 "\nsplitters ",
            k->rounds, k->consumed, k->block, k->bytes_read, k->lines_in, k->longest, k->sum_in.lo,
            k->sum_in.hi, k->con_in.lo, k->con_in.hi, k->next_run);
    put_hex(f, k->blob, k->blob_len);
    fputc('\n', f);
    for (size_t i = 0; i < k->runs.n; i++) {
        const struct dsort_run *r = &k->runs.runs[i];
        fprintf(f, "run %" PRIu64 " %" PRIu64 " ", r->records, r->bytes);
        put_hex(f, r->path, strlen(r->path));
        fputc('\n', f);
    }
    fprintf(f, "end\n");
    int bad = fflush(f) || fsync(fileno(f));
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
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return DSORT_OK;
}

enum dsort_status dsort_ckpt_read(const char *dir, struct dsort_ckpt *k, struct dsort_error *err)
{
    memset(k, 0, sizeof *k);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, DSORT_CKPT_FILE);
    FILE *f = fopen(path, "re");
    if (!f)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot read the checkpoint '%s'", path);
    size_t cap = 0, inputs_cap = 0;
    char *line = NULL;
    ssize_t got;
    int ok = 1, ended = 0, lineno = 0;
    enum dsort_status st = DSORT_OK;
    while (ok && !ended && (got = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (line[got - 1] == '\n')
            line[got - 1] = '\0';
        char key[32], a[64], b[64];
        char *word = malloc(strlen(line) + 1);
        if (!word) {
            st = DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
            break;
        }
        size_t n = 0;
        if (lineno == 1) {
            ok = !strcmp(line, "dsort-checkpoint 1");
        } else if (sscanf(line, "%31s", key) != 1) {
            ok = 0;
        } else if (!strcmp(key, "end")) {
            ended = 1;
        } else if (!strcmp(key, "job") || !strcmp(key, "shape") || !strcmp(key, "splitters")) {
            unsigned char *v = sscanf(line, "%*s %s", word) == 1 ? get_hex(word, &n) : NULL;
            ok = v != NULL;
            if (!strcmp(key, "job"))
                k->job = (char *)v;
            else if (!strcmp(key, "shape"))
                k->shape = (char *)v;
            else {
                k->blob = v;
                k->blob_len = n;
            }
        } else if (!strcmp(key, "rank")) {
            ok = sscanf(line, "%*s %d", &k->rank) == 1;
        } else if (!strcmp(key, "size")) {
            ok = sscanf(line, "%*s %d", &k->size) == 1;
        } else if (!strcmp(key, "input")) {
            struct dsort_ckpt_input c;
            ok = sscanf(line, "%*s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64 " %s",
                        &c.size, &c.ino, &c.dev, &c.mtime_s, &c.mtime_ns, word) == 6 &&
                 (c.path = (char *)get_hex(word, &n)) != NULL;
            if (ok && k->ninputs == inputs_cap) {
                inputs_cap = inputs_cap ? 2 * inputs_cap : 16;
                void *m = realloc(k->inputs, inputs_cap * sizeof *k->inputs);
                if (!m)
                    ok = 0;
                else
                    k->inputs = m;
            }
            if (ok)
                k->inputs[k->ninputs++] = c;
        } else if (!strcmp(key, "run")) {
            uint64_t records, bytes;
            unsigned char *p = NULL;
            ok = sscanf(line, "%*s %" SCNu64 " %" SCNu64 " %s", &records, &bytes, word) == 3 &&
                 (p = get_hex(word, &n)) != NULL && n < sizeof k->runs.runs[0].path;
            if (ok) {
                struct dsort_error e2;
                ok = !dsort_runset_add(&k->runs, (char *)p, records, bytes, &e2);
            }
            free(p);
        } else if (!strcmp(key, "sum_in") || !strcmp(key, "con_in")) {
            struct dsort_sum128 *s = key[0] == 's' ? &k->sum_in : &k->con_in;
            ok = sscanf(line, "%*s %" SCNu64 " %" SCNu64, &s->lo, &s->hi) == 2;
        } else {
            static const char *const names[] = {"rounds",   "consumed", "block",   "bytes_read",
                                                "lines_in", "longest",  "next_run"};
            uint64_t *dst[] = {&k->rounds,   &k->consumed, &k->block,   &k->bytes_read,
                               &k->lines_in, &k->longest,  &k->next_run};
            int found = 0;
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (!strcmp(key, names[i])) {
                    found = 1;
                    ok = sscanf(line, "%*s %s %s", a, b) == 1 && sscanf(a, "%" SCNu64, dst[i]) == 1;
                }
            ok = ok && found;
        }
        free(word);
    }
    free(line);
    fclose(f);
    if (!st && (!ok || !ended || !k->job || !k->shape || k->size < 1))
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
    dsort_runset_keep(&k->runs);
    memset(k, 0, sizeof *k);
}
