#include "budget.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

static uint64_t env_mb(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    /* Slurm gives megabytes, possibly with a unit letter. */
    if (*end == 'G' || *end == 'g')
        x *= 1024;
    else if (*end == 'T' || *end == 't')
        x *= 1024 * 1024;
    return (uint64_t)x << 20;
}

/* ---- the cgroup memory limit ---- */

#define CG_NONE ((uint64_t)1 << 62) /* v1 says "no limit" with about 2^63 */
#define CG_PATH 4096

/* The first line of root/path, without its newline, into buf. 0, or -1 if unreadable. */
static int read_line(const char *root, const char *path, char *buf, size_t n)
{
    char full[CG_PATH * 2];
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "re");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok)
        return -1;
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* A limit file's value: bytes, or 0 for none ("max", huge, missing, unparsable). */
static uint64_t read_limit(const char *root, const char *path)
{
    char line[64];
    if (read_line(root, path, line, sizeof line))
        return 0;
    char *end;
    unsigned long long v = strtoull(line, &end, 10);
    if (end == line || (*end && *end != ' ') || v == 0 || v >= CG_NONE)
        return 0; /* "max" and the v1 "unlimited" */
    return (uint64_t)v;
}

static uint64_t smaller(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

/* Undo mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
    char *o = s;
    for (char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
            p[3] >= '0' && p[3] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *p;
        }
    }
    *o = 0;
}

/* Is word one of the comma-separated items of list? */
static int has_item(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == 0))
            return 1;
    return 0;
}

/* The mount of a cgroup hierarchy from mountinfo: v2 (fstype cgroup2) or v1 with the memory
 * controller. Fills mnt (mount point) and mroot (the cgroup path mounted there). 0 if found. */
static int find_mount(const char *root, int version, char *mnt, char *mroot)
{
    char full[CG_PATH * 2];
    snprintf(full, sizeof full, "%s/proc/self/mountinfo", root);
    FILE *f = fopen(full, "re");
    if (!f)
        return -1;
    char line[CG_PATH * 2];
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS */
        char *sep = strstr(line, " - ");
        if (!sep)
            continue;
        *sep = 0;
        char *save = NULL, *tok[5] = {0};
        tok[0] = strtok_r(line, " ", &save);
        for (int i = 1; i < 5 && tok[i - 1]; i++)
            tok[i] = strtok_r(NULL, " ", &save);
        char *fstype = strtok_r(sep + 3, " \n", &save);
        strtok_r(NULL, " \n", &save); /* source */
        char *opts = strtok_r(NULL, " \n", &save);
        if (!tok[4] || !fstype)
            continue;
        if (version == 2 ? strcmp(fstype, "cgroup2") != 0
                         : strcmp(fstype, "cgroup") != 0 || !has_item(opts, "memory"))
            continue;
        unescape(tok[3]);
        unescape(tok[4]);
        snprintf(mroot, CG_PATH, "%s", tok[3]);
        snprintf(mnt, CG_PATH, "%s", tok[4]);
        found = 0;
    }
    fclose(f);
    return found;
}

/* The cgroup path of this process in hierarchy version (2: the "0::" line; 1: the memory
 * controller's line) from /proc/self/cgroup. 0 if found. */
static int find_path(const char *root, int version, char *path)
{
    char full[CG_PATH * 2];
    snprintf(full, sizeof full, "%s/proc/self/cgroup", root);
    FILE *f = fopen(full, "re");
    if (!f)
        return -1;
    char line[CG_PATH * 2];
    int found = -1;
    while (found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/')
            continue;
        *c2 = 0;
        int v2 = !strcmp(line, "0:"); /* hierarchy 0, no controllers listed */
        if (version == 2 ? !v2 : v2 || !has_item(c1 + 1, "memory"))
            continue;
        snprintf(path, CG_PATH, "%s", c2 + 1);
        found = 0;
    }
    fclose(f);
    return found;
}

/* The directory of cgroup path under the mount (mnt holds the cgroup mroot): mnt + the part of
 * path below mroot; mnt itself when path is not below mroot (another cgroup namespace). */
static void cgroup_dir(const char *mnt, const char *mroot, const char *path, char *dir)
{
    size_t rl = strlen(mroot);
    const char *rest = "";
    if (!strcmp(mroot, "/"))
        rest = path;
    else if (!strncmp(path, mroot, rl) && (path[rl] == '/' || path[rl] == 0))
        rest = path + rl;
    snprintf(dir, CG_PATH, "%s%s", mnt, !strcmp(rest, "/") ? "" : rest);
}

/* The smallest limit in file name of dir and of its parents down to (and with) mnt. */
static uint64_t walk_up(const char *root, const char *mnt, char *dir, const char *name)
{
    uint64_t best = 0;
    size_t ml = strlen(mnt);
    for (;;) {
        char file[CG_PATH + 64];
        snprintf(file, sizeof file, "%s/%s", dir, name);
        best = smaller(best, read_limit(root, file));
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= ml || !slash || (size_t)(slash - dir) < ml)
            break;
        *slash = 0;
    }
    return best;
}

/* v1's memory.stat line "hierarchical_memory_limit N" of dir: N, or 0. */
static uint64_t v1_hierarchical(const char *root, const char *dir)
{
    char full[CG_PATH * 2 + 32];
    snprintf(full, sizeof full, "%s%s/memory.stat", root, dir);
    FILE *f = fopen(full, "re");
    if (!f)
        return 0;
    char line[256];
    uint64_t v = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long x;
        if (sscanf(line, "hierarchical_memory_limit %llu", &x) == 1) {
            v = x && x < CG_NONE ? (uint64_t)x : 0;
            break;
        }
    }
    fclose(f);
    return v;
}

static uint64_t limit_of(const char *root, int version)
{
    char path[CG_PATH], mnt[CG_PATH], mroot[CG_PATH], dir[CG_PATH];
    if (find_path(root, version, path))
        return 0;
    if (find_mount(root, version, mnt, mroot)) {
        snprintf(mnt, sizeof mnt, "%s", version == 2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory");
        snprintf(mroot, sizeof mroot, "/");
    }
    cgroup_dir(mnt, mroot, path, dir);
    if (version == 2)
        return walk_up(root, mnt, dir, "memory.max");
    uint64_t h = v1_hierarchical(root, dir);
    return smaller(h, walk_up(root, mnt, dir, "memory.limit_in_bytes"));
}

uint64_t dsort_budget_cgroup_limit(const char *root, int *version)
{
    if (!root)
        root = "";
    uint64_t v2 = limit_of(root, 2), v1 = limit_of(root, 1), best = smaller(v1, v2);
    if (version)
        *version = !best ? 0 : best == v2 ? 2 : 1;
    return best;
}

/* ---- the budget ---- */

enum dsort_status dsort_budget_resolve_at(const char *root, const char *text, uint64_t node_memory,
                                          int node_ranks, struct dsort_budget *b,
                                          struct dsort_error *err)
{
    memset(b, 0, sizeof *b);
    if (node_ranks < 1)
        node_ranks = 1;
    char m[32], m2[32];
    if (text) {
        size_t len = strlen(text);
        if (len > 1 && text[len - 1] == '%') {
            char *end;
            double pct = strtod(text, &end);
            if (end != text + len - 1 || !(pct > 0) || pct > 100)
                return DSORT_ERR(err, DSORT_EINVAL, 0,
                                 "invalid --memory '%s' (a percentage is 0-100%%)", text);
            int v = 0;
            uint64_t cg = dsort_budget_cgroup_limit(root, &v);
            uint64_t base = cg && cg < node_memory ? cg : node_memory;
            b->bytes = (uint64_t)((double)base * pct / 100.0) / (uint64_t)node_ranks;
            if (base == node_memory)
                snprintf(b->why, sizeof b->why, "-S %s: %g%% of %s node memory / %d ranks", text,
                         pct, dsort_mem_format(node_memory, m, sizeof m), node_ranks);
            else
                snprintf(b->why, sizeof b->why,
                         "-S %s: %g%% of %s cgroup limit (cgroup v%d; node memory %s) / %d ranks",
                         text, pct, dsort_mem_format(cg, m, sizeof m), v,
                         dsort_mem_format(node_memory, m2, sizeof m2), node_ranks);
        } else {
            enum dsort_status st = dsort_mem_parse_size(text, &b->bytes, err);
            if (st)
                return st;
            snprintf(b->why, sizeof b->why, "-S %s", text);
        }
        if (b->bytes == 0)
            return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid --memory '%s' (must be > 0)", text);
        return DSORT_OK;
    }
    int v = 0;
    uint64_t cg = dsort_budget_cgroup_limit(root, &v);
    uint64_t node = env_mb("SLURM_MEM_PER_NODE");
    const char *src = "SLURM_MEM_PER_NODE";
    if (!node) {
        uint64_t per_cpu = env_mb("SLURM_MEM_PER_CPU");
        const char *cpus = getenv("SLURM_CPUS_ON_NODE");
        if (per_cpu) {
            node = per_cpu * (uint64_t)(cpus && atoi(cpus) > 0 ? atoi(cpus) : node_ranks);
            src = "SLURM_MEM_PER_CPU";
        }
    }
    uint64_t from = node ? node : node_memory; /* what the rule starts from */
    if (cg && cg < from) {
        b->bytes = cg / 4 * 3 / (uint64_t)node_ranks;
        snprintf(b->why, sizeof b->why,
                 "default: 75%% of %s cgroup limit (cgroup v%d; %s %s) / %d ranks",
                 dsort_mem_format(cg, m, sizeof m), v, node ? src : "node memory",
                 dsort_mem_format(from, m2, sizeof m2), node_ranks);
    } else if (node) {
        b->bytes = node / 5 * 4 / (uint64_t)node_ranks;
        snprintf(b->why, sizeof b->why, "80%% of the Slurm allocation (%s: %s) / %d ranks", src,
                 dsort_mem_format(node, m, sizeof m), node_ranks);
    } else {
        b->bytes = node_memory / 4 * 3 / (uint64_t)node_ranks;
        snprintf(b->why, sizeof b->why, "default: 75%% of %s node memory / %d ranks",
                 dsort_mem_format(node_memory, m, sizeof m), node_ranks);
    }
    return DSORT_OK;
}

enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err)
{
    return dsort_budget_resolve_at(NULL, text, node_memory, node_ranks, b, err);
}
