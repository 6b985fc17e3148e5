/* inputdir.c - directories among dsort's INPUTs (inputdir.h). */
#include "inputdir.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <dirent.h>

#include "agree.h"
#include "cli.h"
#include "comm.h"
#include "io.h"
#include "manifest.h"

/* Append s and its NUL to *buf (*len bytes used, *cap allocated). */
static enum dsort_status append(char **buf, size_t *len, size_t *cap, const char *s,
                                struct dsort_error *err)
{
    size_t k = strlen(s) + 1;
    if (*len + k > *cap) {
        size_t nc = *cap ? 2 * *cap : 4096;
        while (nc < *len + k)
            nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb)
            return DSORT_ERR(err, DSORT_ENOMEM, errno, "out of memory");
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, s, k);
    *len += k;
    return DSORT_OK;
}

/* The records of each part against the manifest m (names and bytes agreed already): a size of
 * record other than the writer's. Rank 0 prints each difference; returns their number. */
static long check_records(const struct dsort_comm *c, const struct dsort_inputs *in,
                          const struct dsort_manifest *m, size_t rec_size)
{
    long bad = 0;
    for (size_t k = 0; rec_size && k < in->count; k++) {
        const char *slash = strrchr(in->files[k].path, '/');
        size_t i = dsort_manifest_find(m, slash ? slash + 1 : in->files[k].path);
        if (i == m->count || in->files[k].records == m->parts[i].records)
            continue;
        fprintf(stderr,
                "%s: '%s' holds %" PRIu64
                " records of %zu bytes; the manifest _SUCCESS says %" PRIu64
                " (written in another --format?)\n",
                c->prog, in->files[k].path, in->files[k].records, rec_size, m->parts[i].records);
        bad++;
    }
    return bad;
}

/* Rank 0: a file of dir that is neither a part (part-*) nor hidden ('.') nor the job's own
 * (a leading '_', as _SUCCESS, Hadoop's rule) would be left out of the sort without a word:
 * refused instead, naming it, so that no record a user put there is silently lost.
 * Directories (lost+found on a mount point) are not data and are passed over. */
static enum dsort_status stray_files(const char *dir, struct dsort_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot list '%s'", dir);
    enum dsort_status st = DSORT_OK;
    for (struct dirent *e; !st && (e = readdir(d));) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_' || !strncmp(e->d_name, "part-", 5))
            continue;
        char path[4352];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
            continue;
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "'%s' is not a part (part-*) of the input directory '%s': a directory "
                       "INPUT is sorted as its part-* files; move the file, or name the inputs",
                       path, dir);
    }
    closedir(d);
    return st;
}

/* Rank 0: directory dir's parts, checked against its manifest when it has one, appended. */
static enum dsort_status expand_one(const struct dsort_comm *c, char *dir,
                                    const struct dsort_format *fmt, size_t rec_size, char **buf,
                                    size_t *len, size_t *cap, struct dsort_error *err)
{
    char succ[4200], why[DSORT_ERROR_MSG_MAX];
    snprintf(succ, sizeof succ, "%s/_SUCCESS", dir);
    struct stat sb;
    int has_manifest = lstat(succ, &sb) == 0 || errno != ENOENT;
    struct dsort_manifest m = {0};
    long bad = 0;
    if (has_manifest) {
        if (dsort_manifest_read(dir, &m, why, sizeof why))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "%s", why);
        bad = dsort_manifest_check_files(c->prog, dir, &m, stderr);
    }
    struct dsort_inputs in = {0};
    enum dsort_status st = stray_files(dir, err);
    if (st) {
        dsort_manifest_free(&m);
        return st;
    }
    st = bad < 0 ? DSORT_ERR(err, DSORT_EIO, 0, "cannot check '%s' against its manifest", dir)
         : bad   ? DSORT_OK
                 : dsort_inputs_open_ex(&in, &dir, 1, fmt, DSORT_INPUTS_EXPAND_DIRS, NULL, err);
    if (!st && !bad && has_manifest)
        bad = check_records(c, &in, &m, rec_size);
    if (!st && bad > 0)
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "directory '%s' is not as its manifest _SUCCESS says (%ld difference%s, "
                       "above): not sorted",
                       dir, bad, bad == 1 ? "" : "s");
    if (!st && in.count == 0)
        st = DSORT_ERR(err, DSORT_EINVAL, 0,
                       "'%s' is a directory without parts (part-* files): nothing to sort", dir);
    for (size_t k = 0; k < in.count && !st; k++)
        st = append(buf, len, cap, in.files[k].path, err);
    dsort_inputs_destroy(&in);
    dsort_manifest_free(&m);
    return st;
}

const char *dsort_inputdir_holding(char *const *inputs, size_t n, const char *path)
{
    char rp[PATH_MAX], rd[PATH_MAX];
    int resolved = realpath(path, rp) != NULL; /* a link: where it points is written */
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (strcmp(inputs[i], "-") == 0 || stat(inputs[i], &sb) || !S_ISDIR(sb.st_mode))
            continue;
        if (dsort_cli_inside(path, inputs[i]) ||
            (realpath(inputs[i], rd) &&
             (dsort_cli_inside(path, rd) || (resolved && dsort_cli_inside(rp, rd)))))
            return inputs[i];
    }
    return NULL;
}

int dsort_inputdir_expand(const struct dsort_comm *c, char *const *inputs, size_t n,
                          const struct dsort_format *fmt, size_t rec_size, struct dsort_inputdir *d)
{
    struct dsort_error err = {0};
    enum dsort_status st = DSORT_OK;
    memset(d, 0, sizeof *d);
    uint64_t hdr[2] = {0, 0}; /* directories found, bytes of the list */
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < n && !st && c->rank == 0; i++) {
        struct stat sb;
        if (strcmp(inputs[i], "-") && !stat(inputs[i], &sb) && S_ISDIR(sb.st_mode)) {
            hdr[0]++;
            st = expand_one(c, inputs[i], fmt, rec_size, &d->buf, &len, &cap, &err);
        } else {
            st = append(&d->buf, &len, &cap, inputs[i], &err);
        }
    }
    hdr[1] = len;
    if (dsort_comm_agree(c, st, &err))
        return 2;
    dsort_agree_bcast(c, hdr, sizeof hdr, "sharing the parts of the input directories (MPI_Bcast)");
    if (!hdr[0]) {
        dsort_inputdir_free(d);
        return -1;
    }
    len = (size_t)hdr[1];
    if (c->rank != 0 && !(d->buf = malloc(len)))
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    for (size_t i = 0; i < len && c->rank == 0; i++)
        d->n += d->buf[i] == '\0';
    dsort_agree_bcast(c, &d->n, sizeof d->n, "sharing the number of inputs (MPI_Bcast)");
    if (!st && !(d->paths = calloc(d->n + 1, sizeof *d->paths)))
        st = DSORT_ERR(&err, DSORT_ENOMEM, errno, "out of memory");
    if (dsort_comm_agree(c, st, &err))
        return 2;
    dsort_agree_bcast(c, d->buf, len, "sharing the parts of the input directories (MPI_Bcast)");
    for (size_t i = 0, off = 0; i < d->n; i++) {
        d->paths[i] = d->buf + off;
        off += strlen(d->paths[i]) + 1;
    }
    return -1;
}

void dsort_inputdir_free(struct dsort_inputdir *d)
{
    free(d->buf);
    free(d->paths);
    memset(d, 0, sizeof *d);
}
