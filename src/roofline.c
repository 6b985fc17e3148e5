/* roofline.c - the roofline of one run (roofline.h); written to follow tests/bench/roofline.py
 * step by step, which is its oracle. */
#include "roofline.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonstr.h"

#define G DSORT_ROOFLINE_GROUPS
#define MB 1e6

const char *const dsort_roofline_group_names[G] = {"read", "sort", "exchange", "spill", "output"};

static const char *const group_phases[G][5] = {
    {"sample", "read", NULL},
    {"sort", "splitters", NULL},
    {"exchange", NULL},
    {"spill", NULL},
    {"merge", "final_merge", "write", "commit", NULL},
};

int dsort_roofline_group_of(const char *phase)
{
    for (int g = 0; g < G; g++)
        for (int i = 0; group_phases[g][i]; i++)
            if (strcmp(group_phases[g][i], phase) == 0)
                return g;
    return -1;
}

/* The next token of s (separated by spaces, tabs, newlines or commas) into tok; the rest. */
static const char *next_token(const char *s, char *tok, size_t n, size_t *len)
{
    s += strspn(s, " \t\n,");
    *len = strcspn(s, " \t\n,");
    snprintf(tok, n, "%.*s", (int)(*len < n ? *len : n - 1), s);
    return s + *len;
}

enum dsort_status dsort_roofline_rates_parse(struct dsort_roofline_rates *r, const char *s,
                                             struct dsort_error *err)
{
    char tok[2 * DSORT_ROOFLINE_KEY];
    size_t len;
    while (s) {
        s = next_token(s, tok, sizeof tok, &len);
        if (len == 0)
            break;
        char *eq = strchr(tok, '=');
        if (len >= sizeof tok || !eq)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "bad rate '%s' (KEY=MB/s)", tok);
        *eq = '\0';
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !isfinite(v) || v <= 0 || v > 1e12)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "rate '%s=%s' must be a positive number (MB/s)",
                             tok, eq + 1);
        size_t i = 0;
        while (i < r->n && strcmp(r->key[i], tok) != 0)
            i++;
        if (strlen(tok) >= DSORT_ROOFLINE_KEY || (i == r->n && r->n == DSORT_ROOFLINE_RATES))
            return DSORT_ERR(err, DSORT_EINVAL, 0, "rate '%s': too long a key or too many", tok);
        snprintf(r->key[i], DSORT_ROOFLINE_KEY, "%s", tok);
        r->rate[i] = v * MB;
        r->n += i == r->n;
    }
    return DSORT_OK;
}

enum dsort_status dsort_roofline_shared_parse(struct dsort_roofline_rates *r, const char *s,
                                              struct dsort_error *err)
{
    char tok[DSORT_ROOFLINE_KEY];
    size_t len;
    while (s) {
        s = next_token(s, tok, sizeof tok, &len);
        if (len == 0)
            break;
        if (len >= sizeof tok || r->nshared == DSORT_ROOFLINE_RATES)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "shared disk '%s': too long or too many", tok);
        snprintf(r->shared[r->nshared++], DSORT_ROOFLINE_KEY, "%s", tok);
    }
    return DSORT_OK;
}

double dsort_roofline_rate(const struct dsort_roofline_rates *r, const char *key)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->key[i], key) == 0)
            return r->rate[i];
    return 0;
}

static int is_shared(const struct dsort_roofline_rates *r, const char *disk)
{
    for (size_t i = 0; i < r->nshared; i++)
        if (strcmp(r->shared[i], disk) == 0)
            return 1;
    return 0;
}

/* A disk's rates (roofline.py's disk_rates): *rd, *wr separate or *rw combined (0: none of
 * that kind); the source. */
static const char *disk_rates(const struct dsort_roofline_rates *r,
                              const struct dsort_roofline_disk *d, double *rd, double *wr,
                              double *rw)
{
    char k[DSORT_ROOFLINE_KEY + 8];
    const char *keys[2] = {d->name, "*"};
    *rd = *wr = *rw = 0;
    for (int i = 0; i < 2; i++) {
        snprintf(k, sizeof k, "%s.read", keys[i]);
        *rd = dsort_roofline_rate(r, k);
        snprintf(k, sizeof k, "%s.write", keys[i]);
        *wr = dsort_roofline_rate(r, k);
        if (*rd > 0 || *wr > 0)
            return "given";
        if ((*rw = dsort_roofline_rate(r, keys[i])) > 0)
            return "given";
    }
    if (d->job_bytes > 0 && d->busy_seconds > 0) {
        *rw = d->job_bytes / d->busy_seconds;
        return "measured";
    }
    return "none";
}

/* Resource name in rl (added with source and rate, -1 none, if new); NULL if out of memory.
 * Adding one may move rl->res: earlier pointers into it are then stale. */
static struct dsort_roofline_resource *resource(struct dsort_roofline *rl, const char *name,
                                                const char *source, double rate)
{
    for (size_t i = 0; i < rl->nres; i++)
        if (strcmp(rl->res[i].name, name) == 0)
            return &rl->res[i];
    struct dsort_roofline_resource *p = realloc(rl->res, (rl->nres + 1) * sizeof *p);
    if (!p)
        return NULL;
    rl->res = p;
    p = &p[rl->nres++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->source = source;
    p->rate = rate > 0 ? rate : -1;
    return p;
}

/* The hosts, numbered as first seen: rank i's host hid[i]; per host its first rank, its
 * ranks and their bytes sent, received and read. */
struct hosts {
    size_t n, *hid, *first, *ranks_on;
    double *sent, *received, *read;
};

static void hosts_free(struct hosts *h)
{
    free(h->hid);
    free(h->first);
    free(h->ranks_on);
    free(h->sent);
    free(h->received);
    free(h->read);
}

static int hosts_make(const struct dsort_roofline_input *in, struct hosts *h)
{
    size_t n = in->nranks + 1;
    memset(h, 0, sizeof *h);
    h->hid = calloc(n, sizeof *h->hid);
    h->first = calloc(n, sizeof *h->first);
    h->ranks_on = calloc(n, sizeof *h->ranks_on);
    h->sent = calloc(n, sizeof *h->sent);
    h->received = calloc(n, sizeof *h->received);
    h->read = calloc(n, sizeof *h->read);
    if (!h->hid || !h->first || !h->ranks_on || !h->sent || !h->received || !h->read)
        return -1;
    for (size_t i = 0; i < in->nranks; i++) {
        size_t k = 0;
        while (k < h->n && strcmp(in->rank[h->first[k]].host, in->rank[i].host) != 0)
            k++;
        if (k == h->n)
            h->first[h->n++] = i;
        h->hid[i] = k;
        h->ranks_on[k]++;
        h->sent[k] += in->rank[i].bytes_sent;
        h->received[k] += in->rank[i].bytes_received;
        h->read[k] += in->rank[i].bytes_read;
    }
    return 0;
}

/* The disks counted so far: (host, name), host SIZE_MAX for a shared disk. */
struct seen {
    size_t n, *host;
    const char **name;
};

/* 1 if (host, name) was seen, else 0 and it is added now (-1 if out of memory). */
static int seen_add(struct seen *s, size_t host, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->host[i] == host && strcmp(s->name[i], name) == 0)
            return 1;
    size_t *hp = realloc(s->host, (s->n + 1) * sizeof *hp);
    if (hp)
        s->host = hp;
    const char **np = realloc(s->name, (s->n + 1) * sizeof *np);
    if (np)
        s->name = np;
    if (!hp || !np)
        return -1;
    s->host[s->n] = host;
    s->name[s->n++] = name;
    return 0;
}

/* Disk d of a rank on host label (NULL: one host, or d is shared) into rl. */
static enum dsort_status add_disk(const struct dsort_roofline_rates *r,
                                  const struct dsort_roofline_disk *d, const char *host,
                                  struct dsort_roofline *rl)
{
    double rd, wr, rw;
    const char *how = disk_rates(r, d, &rd, &wr, &rw);
    char label[DSORT_ROOFLINE_NAME], name[DSORT_ROOFLINE_NAME + 16];
    if (host)
        snprintf(label, sizeof label, "%s:%s", host, d->name);
    else
        snprintf(label, sizeof label, "%s", d->name);
    int combined = rw > 0 || strcmp(how, "none") == 0;
    struct dsort_roofline_resource *a, *b = NULL;
    snprintf(name, sizeof name, "disk %s %s", label, combined ? "r+w" : "read");
    if (!(a = resource(rl, name, how, combined ? rw : rd)))
        return DSORT_ENOMEM;
    size_t ai = (size_t)(a - rl->res); /* adding b may move the array */
    snprintf(name, sizeof name, "disk %s write", label);
    if (!combined && !(b = resource(rl, name, how, wr)))
        return DSORT_ENOMEM;
    a = &rl->res[ai];
    for (int g = 0; g < G; g++) {
        a->bytes[g] += d->read[g] + (combined ? d->written[g] : 0);
        if (b)
            b->bytes[g] += d->written[g];
    }
    return DSORT_OK;
}

static enum dsort_status add_disks(const struct dsort_roofline_input *in,
                                   const struct dsort_roofline_rates *r, const struct hosts *h,
                                   struct dsort_roofline *rl)
{
    struct seen seen = {0};
    enum dsort_status st = DSORT_OK;
    for (size_t i = 0; i < in->nranks && st == DSORT_OK; i++)
        for (size_t k = 0; k < in->rank[i].ndisks && st == DSORT_OK; k++) {
            const struct dsort_roofline_disk *d = &in->rank[i].disk[k];
            int shared = is_shared(r, d->name);
            int got = seen_add(&seen, shared ? SIZE_MAX : h->hid[i], d->name);
            if (got < 0)
                st = DSORT_ENOMEM;
            else if (!got)
                st = add_disk(r, d, h->n > 1 && !shared ? in->rank[i].host : NULL, rl);
        }
    free(seen.host);
    free(seen.name);
    return st;
}

/* The network (several hosts) and the CPU (a given cpu rate): the busiest node's bytes. */
static enum dsort_status add_net_cpu(const struct dsort_roofline_input *in,
                                     const struct dsort_roofline_rates *r, const struct hosts *h,
                                     struct dsort_roofline *rl)
{
    double p = (double)in->nranks;
    if (h->n > 1) {
        double worst = 0;
        int exact = 1;
        for (size_t k = 0; k < h->n; k++) {
            double cross = (p - (double)h->ranks_on[k]) / (p - 1);
            worst = fmax(worst, fmax(h->sent[k] * cross, h->received[k] * cross));
            exact &= h->ranks_on[k] == 1;
        }
        double rate = dsort_roofline_rate(r, "net");
        struct dsort_roofline_resource *e =
            resource(rl, "network", rate > 0 ? "given" : "none", rate);
        if (!e)
            return DSORT_ENOMEM;
        e->bytes[2] = fmax(e->bytes[2], worst);
        e->estimated = !exact;
    }
    double cpu = dsort_roofline_rate(r, "cpu");
    if (cpu > 0) {
        double worst = 0;
        for (size_t k = 0; k < h->n; k++) {
            double cores = (double)h->ranks_on[k];
            for (size_t c = 0; c < in->ncore_hosts; c++) /* the last one, as a dict's */
                if (strcmp(in->core_host[c], in->rank[h->first[k]].host) == 0)
                    cores = in->cores[c];
            worst = fmax(worst, h->read[k] / fmax(1, fmin(cores, (double)h->ranks_on[k])));
        }
        struct dsort_roofline_resource *e = resource(rl, "cpu", "given", cpu);
        if (!e)
            return DSORT_ENOMEM;
        e->bytes[1] += worst;
    }
    return DSORT_OK;
}

double dsort_roofline_floor(const struct dsort_roofline *rl, size_t i, int g)
{
    const struct dsort_roofline_resource *e = &rl->res[i];
    if (e->rate <= 0)
        return -1;
    double n = 0;
    for (int k = 0; k < G; k++)
        n += g < 0 || g == k ? e->bytes[k] : 0;
    return n / e->rate;
}

/* The rows and the job's busiest resource, from the resources and the group times. */
static void rows(struct dsort_roofline *rl, const double *times)
{
    double serial = 0;
    for (int g = 0; g < G; g++) {
        int best = -1;
        double bf = 0;
        for (size_t i = 0; i < rl->nres; i++) {
            double f = dsort_roofline_floor(rl, i, g);
            if (f >= DSORT_ROOFLINE_MIN_FLOOR && (best < 0 || f > bf)) {
                best = (int)i;
                bf = f;
            }
        }
        if (times[g] <= 0 && best < 0)
            continue;
        rl->row[rl->nrows++] = (struct dsort_roofline_row){.group = g,
                                                           .seconds = times[g],
                                                           .busiest = best,
                                                           .floor = best < 0 ? -1 : bf,
                                                           .ratio = best < 0 ? -1 : times[g] / bf};
        serial += best < 0 ? 0 : bf;
    }
    rl->busiest = -1;
    rl->floor = rl->ratio = rl->serial_floor = rl->serial_ratio = -1;
    for (size_t i = 0; i < rl->nres; i++) {
        double f = dsort_roofline_floor(rl, i, -1);
        if (f > 0 && (rl->busiest < 0 || f > rl->floor)) {
            rl->busiest = (int)i;
            rl->floor = f;
        }
    }
    if (rl->busiest >= 0) {
        rl->ratio = rl->seconds / rl->floor;
        rl->serial_floor = serial;
        rl->serial_ratio = serial > 0 ? rl->seconds / serial : -1;
    }
}

enum dsort_status dsort_roofline_compute(const struct dsort_roofline_input *in,
                                         const struct dsort_roofline_rates *r,
                                         struct dsort_roofline *out, struct dsort_error *err)
{
    memset(out, 0, sizeof *out);
    out->seconds = in->seconds;
    struct hosts h;
    if (hosts_make(in, &h)) {
        hosts_free(&h);
        return DSORT_ERR(err, DSORT_ENOMEM, 0, "roofline: out of memory");
    }
    double times[G] = {0};
    for (size_t i = 0; i < in->nranks; i++)
        for (int g = 0; g < G; g++)
            times[g] = fmax(times[g], in->rank[i].seconds[g]);
    enum dsort_status st = add_disks(in, r, &h, out);
    if (st == DSORT_OK)
        st = add_net_cpu(in, r, &h, out);
    hosts_free(&h);
    if (st != DSORT_OK) {
        dsort_roofline_free(out);
        return DSORT_ERR(err, st, 0, "roofline: out of memory");
    }
    rows(out, times);
    return DSORT_OK;
}

void dsort_roofline_free(struct dsort_roofline *rl)
{
    if (!rl)
        return;
    free(rl->res);
    rl->res = NULL;
    rl->nres = 0;
}

/* A number, or null for none (negative) or one that is not finite. */
static void num(FILE *f, double v)
{
    if (v < 0 || !isfinite(v))
        fprintf(f, "null");
    else
        fprintf(f, "%.9g", v);
}

static void json_resources(FILE *f, const struct dsort_roofline *rl, const char *in)
{
    fprintf(f, "%s \"resources\": {", in);
    for (size_t i = 0; i < rl->nres; i++) {
        const struct dsort_roofline_resource *e = &rl->res[i];
        double bytes = 0;
        for (int g = 0; g < G; g++)
            bytes += e->bytes[g];
        fprintf(f, "%s\n%s  ", i ? "," : "", in);
        dsort_jsonstr_write(f, e->name);
        fprintf(f, ": {\"rate_MBps\": ");
        num(f, e->rate > 0 ? e->rate / MB : -1);
        fprintf(f, ", \"rate_source\": \"%s\", \"bytes\": %.17g, \"floor_seconds\": ", e->source,
                bytes);
        num(f, dsort_roofline_floor(rl, i, -1));
        fprintf(f, "%s}", e->estimated ? ", \"bytes_estimated\": true" : "");
    }
    fprintf(f, "},\n");
}

static void busiest(FILE *f, const struct dsort_roofline *rl, int i)
{
    if (i < 0)
        fprintf(f, "null");
    else
        dsort_jsonstr_write(f, rl->res[i].name);
}

void dsort_roofline_json(FILE *f, const struct dsort_roofline *rl, const char *in)
{
    fprintf(f, "%s \"seconds\": %.6f,\n%s \"groups\": [", in, rl->seconds, in);
    for (size_t i = 0; i < rl->nrows; i++) {
        const struct dsort_roofline_row *w = &rl->row[i];
        fprintf(f, "%s\n%s  {\"group\": \"%s\", \"seconds\": %.6f, \"busiest\": ", i ? "," : "", in,
                dsort_roofline_group_names[w->group], w->seconds);
        busiest(f, rl, w->busiest);
        fprintf(f, ", \"busiest_rate_MBps\": ");
        num(f, w->busiest >= 0 ? rl->res[w->busiest].rate / MB : -1);
        fprintf(f, ", \"busiest_rate_source\": ");
        if (w->busiest >= 0)
            fprintf(f, "\"%s\"", rl->res[w->busiest].source);
        else
            fprintf(f, "null");
        fprintf(f, ", \"floor_seconds\": ");
        num(f, w->floor);
        fprintf(f, ", \"ratio\": ");
        num(f, w->ratio);
        fprintf(f, "}");
    }
    fprintf(f, "],\n");
    json_resources(f, rl, in);
    fprintf(f, "%s \"busiest\": ", in);
    busiest(f, rl, rl->busiest);
    fprintf(f, ", \"floor_seconds\": ");
    num(f, rl->floor);
    fprintf(f, ", \"ratio\": ");
    num(f, rl->ratio);
    fprintf(f, ",\n%s \"serial_floor_seconds\": ", in);
    num(f, rl->serial_floor);
    fprintf(f, ", \"serial_ratio\": ");
    num(f, rl->serial_ratio);
}

static const char *rate_note(const struct dsort_roofline_resource *e, char *buf, size_t n)
{
    if (e->rate > 0)
        snprintf(buf, n, "%s %.1f MB/s", e->source, e->rate / MB);
    else
        snprintf(buf, n, "no rate");
    return buf;
}

void dsort_roofline_print(FILE *f, const char *prefix, const struct dsort_roofline *rl)
{
    char b[64];
    fprintf(f, "%sroofline (group: seconds, busiest resource and its rate, floor, x floor):\n",
            prefix);
    for (size_t i = 0; i < rl->nrows; i++) {
        const struct dsort_roofline_row *w = &rl->row[i];
        fprintf(f, "%s  %-8s %8.3f s", prefix, dsort_roofline_group_names[w->group], w->seconds);
        if (w->busiest >= 0)
            fprintf(f, "  %s (%s)  floor %.3f s  %.2fx\n", rl->res[w->busiest].name,
                    rate_note(&rl->res[w->busiest], b, sizeof b), w->floor, w->ratio);
        else
            fprintf(f, "  -\n");
    }
    for (size_t i = 0; i < rl->nres; i++) /* what moved but has no rate, so no floor */
        if (rl->res[i].rate <= 0 && dsort_roofline_floor(rl, i, -1) < 0 &&
            rl->res[i].bytes[0] + rl->res[i].bytes[1] + rl->res[i].bytes[2] + rl->res[i].bytes[3] +
                    rl->res[i].bytes[4] >
                0)
            fprintf(f, "%s  %s: no rate, no floor (DSORT_ROOFLINE_RATES)\n", prefix,
                    rl->res[i].name);
    if (rl->busiest < 0) {
        fprintf(f, "%sroofline: job %.3f s; no resource with a rate\n", prefix, rl->seconds);
        return;
    }
    fprintf(f, "%sroofline: job %.3f s; busiest %s: floor %.3f s, %.2fx (phases overlapped)",
            prefix, rl->seconds, rl->res[rl->busiest].name, rl->floor, rl->ratio);
    if (rl->serial_ratio >= 0)
        fprintf(f, "; serial floor %.3f s, %.2fx", rl->serial_floor, rl->serial_ratio);
    fprintf(f, "\n");
}
