#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_min.h"

/* Integers that a double holds exactly (the JSON reader's numbers). */
#define EXACT_MAX 9007199254740992.0 /* 2^53 */

static int get_count(const struct dsort_json *p, const char *key, uint64_t *v)
{
    const struct dsort_json *x = dsort_json_get_type(p, key, DSORT_JSON_NUMBER);
    if (!x || x->number < 0 || x->number > EXACT_MAX || x->number != (double)(uint64_t)x->number)
        return -1;
    *v = (uint64_t)x->number;
    return 0;
}

/* valsort's hex (dsort_sum128_hex: lowercase, no leading zeros, at most 32 digits). */
static int get_sum(const struct dsort_json *p, struct dsort_sum128 *s)
{
    const char *h = dsort_json_string(p, "checksum");
    size_t n = h ? strlen(h) : 0;
    if (n == 0 || n > 32)
        return -1;
    s->lo = s->hi = 0;
    for (size_t i = 0; i < n; i++) {
        int d = h[i] >= '0' && h[i] <= '9'   ? h[i] - '0'
                : h[i] >= 'a' && h[i] <= 'f' ? h[i] - 'a' + 10
                                             : -1;
        if (d < 0)
            return -1;
        s->hi = s->hi << 4 | s->lo >> 60;
        s->lo = s->lo << 4 | (uint64_t)d;
    }
    return 0;
}

int dsort_manifest_read(const char *dir, struct dsort_manifest *m, char *why, size_t n)
{
    memset(m, 0, sizeof *m);
    char path[4200], e[256];
    snprintf(path, sizeof path, "%s/_SUCCESS", dir);
    struct stat sb;
    if (stat(path, &sb) && errno == ENOENT) {
        snprintf(why, n,
                 "'%s' has no _SUCCESS manifest: it is not a complete output (the job that wrote "
                 "it failed, was killed or still runs); --no-manifest checks its part-* files "
                 "anyway",
                 dir);
        return -1;
    }
    struct dsort_json j;
    if (dsort_json_read_file(path, &j, e, sizeof e)) {
        snprintf(why, n, "cannot read the manifest '%s': %s", path, e);
        return -1;
    }
    const struct dsort_json *parts = dsort_json_get_type(&j, "parts", DSORT_JSON_ARRAY);
    const struct dsort_json *local = dsort_json_get_type(&j, "node_local", DSORT_JSON_BOOL);
    int rc = -1;
    if (!parts) {
        snprintf(why, n, "the manifest '%s' has no list of parts", path);
        goto out;
    }
    m->node_local = local && local->boolean;
    if (!(m->parts = calloc(parts->count + 1, sizeof *m->parts))) {
        snprintf(why, n, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < parts->count; i++) {
        const struct dsort_json *p = &parts->items[i];
        struct dsort_manifest_part *q = &m->parts[i];
        const char *name = dsort_json_string(p, "name");
        if (!name || strncmp(name, "part-", 5) || strchr(name, '/') ||
            strlen(name) >= sizeof q->name || get_count(p, "records", &q->records) ||
            get_count(p, "bytes", &q->bytes) || get_sum(p, &q->checksum)) {
            snprintf(why, n,
                     "the manifest '%s': part %zu has no valid name, records, bytes or "
                     "checksum",
                     path, i);
            goto out;
        }
        snprintf(q->name, sizeof q->name, "%s", name);
        if (dsort_manifest_find(m, name) < i) {
            snprintf(why, n, "the manifest '%s' lists %s twice", path, name);
            goto out;
        }
        m->count = i + 1;
    }
    rc = 0;
out:
    dsort_json_free(&j);
    if (rc)
        dsort_manifest_free(m);
    return rc;
}

void dsort_manifest_free(struct dsort_manifest *m)
{
    free(m->parts);
    memset(m, 0, sizeof *m);
}

size_t dsort_manifest_find(const struct dsort_manifest *m, const char *name)
{
    size_t i = 0;
    while (i < m->count && strcmp(m->parts[i].name, name))
        i++;
    return i;
}

long dsort_manifest_check_files(const char *prog, const char *dir, const struct dsort_manifest *m,
                                FILE *out)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (out)
            fprintf(out, "%s: cannot read '%s': %s\n", prog, dir, strerror(errno));
        return -1;
    }
    char *seen = calloc(m->count + 1, 1);
    if (!seen) {
        closedir(d);
        if (out)
            fprintf(out, "%s: out of memory\n", prog);
        return -1;
    }
    long bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "part-", 5))
            continue;
        size_t i = dsort_manifest_find(m, e->d_name);
        if (i == m->count) {
            if (out)
                fprintf(out,
                        "%s: '%s/%s' is not in the manifest _SUCCESS (a part of another "
                        "job?)\n",
                        prog, dir, e->d_name);
            bad++;
            continue;
        }
        seen[i] = 1;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb)) {
            if (out)
                fprintf(out, "%s: cannot stat '%s': %s\n", prog, path, strerror(errno));
            bad++;
        } else if ((uint64_t)sb.st_size != m->parts[i].bytes) {
            if (out)
                fprintf(out,
                        "%s: '%s' is %" PRIu64 " bytes; the manifest _SUCCESS says %" PRIu64
                        " (cut short, or changed since the job)\n",
                        prog, path, (uint64_t)sb.st_size, m->parts[i].bytes);
            bad++;
        }
    }
    closedir(d);
    for (size_t i = 0; i < m->count; i++)
        if (!seen[i]) {
            if (out)
                fprintf(out, "%s: '%s/%s' is missing; the manifest _SUCCESS lists it%s\n", prog,
                        dir, m->parts[i].name,
                        m->node_local ? " (a --local-output job: check every node's parts "
                                        "with --local-inputs)"
                                      : "");
            bad++;
        }
    free(seen);
    return bad;
}
