#include "budget.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mem.h"

/* A Slurm memory figure (megabytes, or with a unit letter K, M, G or T) in bytes into *bytes:
 * 1 if the variable is set and valid, 0 if unset or empty, -1 if it is no memory size
 * (negative, no number, trailing junk, too large for 64 bits). */
static int env_mb(const char *name, uint64_t *bytes)
{
    const char *v = getenv(name);
    *bytes = 0;
    if (!v || !*v)
        return 0;
    if (*v < '0' || *v > '9') /* strtoull would take "-1" as 2^64 - 1 */
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    int shift = 20;
    switch (*end) {
    case 'K':
    case 'k':
        shift = 10;
        end++;
        break;
    case 'M':
    case 'm':
        end++;
        break;
    case 'G':
    case 'g':
        shift = 30;
        end++;
        break;
    case 'T':
    case 't':
        shift = 40;
        end++;
        break;
    }
    if (errno || *end || x > (UINT64_MAX >> shift))
        return -1;
    *bytes = (uint64_t)x << shift;
    return 1;
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

/* ---- the process's limits ---- */

void dsort_budget_process_limits(struct dsort_budget_env *env)
{
    struct rlimit rl;
    env->as_limit = env->data_limit = env->as_used = env->data_used = 0;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        env->as_limit = (uint64_t)rl.rlim_cur;
    if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        env->data_limit = (uint64_t)rl.rlim_cur;
    /* statm: size resident shared text lib data dt, in pages; data is VmData + VmStk, what
     * RLIMIT_DATA counts. */
    FILE *f = fopen("/proc/self/statm", "re");
    if (!f)
        return;
    unsigned long long size, res, shr, text, lib, data;
    long page = sysconf(_SC_PAGESIZE);
    if (fscanf(f, "%llu %llu %llu %llu %llu %llu", &size, &res, &shr, &text, &lib, &data) == 6 &&
        page > 0) {
        env->as_used = (uint64_t)size * (uint64_t)page;
        env->data_used = (uint64_t)data * (uint64_t)page;
    }
    fclose(f);
}

/* The most a budget may be within one limit: 3/4 of what it leaves beyond use and the reserve
 * (thread stacks, the exchange's and the MPI library's later mappings); UINT64_MAX for none. */
static uint64_t limit_room(uint64_t limit, uint64_t used)
{
    if (!limit)
        return UINT64_MAX;
    uint64_t left = limit > used + DSORT_BUDGET_RESERVE ? limit - used - DSORT_BUDGET_RESERVE : 0;
    return left / 4 * 3;
}

/* The tighter of the two limits: its room, and its name and figures in text ("" if none). */
static uint64_t limits_room(const struct dsort_budget_env *env, char *text, size_t len)
{
    uint64_t as = limit_room(env->as_limit, env->as_used);
    uint64_t data = limit_room(env->data_limit, env->data_used);
    char m[32], m2[32];
    text[0] = 0;
    if (as == UINT64_MAX && data == UINT64_MAX)
        return UINT64_MAX;
    const int is_as = as <= data;
    const uint64_t limit = is_as ? env->as_limit : env->data_limit;
    snprintf(text, len, "the %s limit of this process is %s (ulimit -%c %llu), %s of it in use",
             is_as ? "address-space" : "data", dsort_mem_format(limit, m, sizeof m),
             is_as ? 'v' : 'd', (unsigned long long)(limit >> 10),
             dsort_mem_format(is_as ? env->as_used : env->data_used, m2, sizeof m2));
    return is_as ? as : data;
}

char *dsort_budget_limits_text(char *buf, size_t len)
{
    struct dsort_budget_env env = {0};
    dsort_budget_process_limits(&env);
    limits_room(&env, buf, len);
    return buf;
}

/* bytes as an -S value that a user can type: whole MiB (at least 1M). */
static char *s_value(uint64_t bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20 ? bytes >> 20 : 1));
    return buf;
}

/* ---- the budget ---- */

/* Slurm's memory on this node for the job, into *node (0: none or not used) and the variable
 * it came from into *src; a figure that is no memory size or more than the node has is not
 * used, and b->note says so. */
static void slurm_memory(uint64_t node_memory, int node_ranks, uint64_t *node, const char **src,
                         struct dsort_budget *b)
{
    *src = "SLURM_MEM_PER_NODE";
    int ok = env_mb(*src, node);
    if (ok == 0) {
        uint64_t per_cpu = 0;
        const char *cpus = getenv("SLURM_CPUS_ON_NODE");
        uint64_t n = (uint64_t)(cpus && atoi(cpus) > 0 ? atoi(cpus) : node_ranks);
        *src = "SLURM_MEM_PER_CPU";
        ok = env_mb(*src, &per_cpu);
        if (ok > 0 && per_cpu > UINT64_MAX / n)
            ok = -1;
        *node = ok > 0 ? per_cpu * n : 0;
    }
    char m[32], m2[32];
    if (ok < 0)
        snprintf(b->note, sizeof b->note,
                 "%s='%.40s' is not a memory size: the node's memory is used instead", *src,
                 getenv(*src));
    else if (ok > 0 && node_memory && *node > node_memory)
        snprintf(b->note, sizeof b->note,
                 "%s='%.40s' (%s) is more than this node's memory (%s), which is used instead",
                 *src, getenv(*src), dsort_mem_format(*node, m, sizeof m),
                 dsort_mem_format(node_memory, m2, sizeof m2));
    else
        return;
    *node = 0;
}

/* The budget without -S. */
static void default_budget(const char *root, uint64_t node_memory, int node_ranks,
                           struct dsort_budget *b)
{
    char m[32], m2[32];
    int v = 0;
    uint64_t cg = dsort_budget_cgroup_limit(root, &v);
    uint64_t node;
    const char *src;
    slurm_memory(node_memory, node_ranks, &node, &src, b);
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
}

/* -S text (a size or N%) into b. */
static enum dsort_status given_budget(const char *root, const char *text, uint64_t node_memory,
                                      int node_ranks, struct dsort_budget *b,
                                      struct dsort_error *err)
{
    char m[32], m2[32];
    size_t len = strlen(text);
    /* What the node, or its cgroup when that is less, has for all its ranks. */
    int v = 0;
    uint64_t cg = dsort_budget_cgroup_limit(root, &v);
    uint64_t base = cg && cg < node_memory ? cg : node_memory;
    if (len > 1 && text[len - 1] == '%') {
        char *end;
        double pct = strtod(text, &end);
        if (end != text + len - 1 || !(pct > 0) || pct > 100)
            return DSORT_ERR(err, DSORT_EINVAL, 0,
                             "invalid --memory '%s' (a percentage is 0-100%%)", text);
        b->bytes = (uint64_t)((double)base * pct / 100.0) / (uint64_t)node_ranks;
        if (base == node_memory)
            snprintf(b->why, sizeof b->why, "-S %s: %g%% of %s node memory / %d ranks", text, pct,
                     dsort_mem_format(node_memory, m, sizeof m), node_ranks);
        else
            snprintf(b->why, sizeof b->why,
                     "-S %s: %g%% of %s cgroup limit (cgroup v%d; node memory %s) / %d ranks", text,
                     pct, dsort_mem_format(cg, m, sizeof m), v,
                     dsort_mem_format(node_memory, m2, sizeof m2), node_ranks);
    } else {
        enum dsort_status st = dsort_mem_parse_size(text, &b->bytes, err);
        if (st)
            return st;
        snprintf(b->why, sizeof b->why, "-S %s", text);
        /* -S is per rank, where GNU sort's is per process of a node: -S 50G with 16 ranks on a
         * node is an OOM kill. Beyond the node's (or its cgroup's) memory for each of its ranks,
         * the default is safer than anything. */
        uint64_t share = base / (uint64_t)node_ranks;
        if (share && b->bytes > share) {
            struct dsort_budget d;
            memset(&d, 0, sizeof d);
            default_budget(root, node_memory, node_ranks, &d);
            char m3[32];
            snprintf(b->note, sizeof b->note,
                     "-S %s (per rank) is more than this node can give each of its %d ranks "
                     "(%s of %s%s): using %s instead (%s)",
                     text, node_ranks, dsort_mem_format(share, m, sizeof m),
                     dsort_mem_format(base, m2, sizeof m2),
                     base == node_memory ? " node memory" : " cgroup limit",
                     dsort_mem_format(d.bytes, m3, sizeof m3), d.why);
            snprintf(b->why, sizeof b->why, "-S %s, more than the node's memory: %s", text, d.why);
            b->bytes = d.bytes;
        }
    }
    if (b->bytes == 0)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid --memory '%s' (must be > 0)", text);
    return DSORT_OK;
}

enum dsort_status dsort_budget_resolve_env(const char *root, const char *text,
                                           const struct dsort_budget_env *env,
                                           struct dsort_budget *b, struct dsort_error *err)
{
    memset(b, 0, sizeof *b);
    const int node_ranks = env->node_ranks < 1 ? 1 : env->node_ranks;
    if (text) {
        enum dsort_status st = given_budget(root, text, env->node_memory, node_ranks, b, err);
        if (st)
            return st;
    } else {
        default_budget(root, env->node_memory, node_ranks, b);
    }
    /* The process's own limits (ulimit -v, -d) bound every budget: beyond them the buffers
     * cannot be allocated. */
    char lt[200], v1[32];
    uint64_t room = limits_room(env, lt, sizeof lt);
    if (b->bytes <= room)
        return DSORT_OK;
    room = room >> 20 << 20; /* what -S can say */
    if (room < ((uint64_t)1 << 20))
        room = (uint64_t)1 << 20; /* the pipelines then say that it is too small */
    if (text) {
        size_t n = strlen(b->note);
        snprintf(b->note + n, sizeof b->note - n, "%s-S %s does not fit: %s; using -S %s",
                 n ? "; " : "", text, lt, s_value(room, v1, sizeof v1));
        snprintf(b->why, sizeof b->why, "-S %s, cut to -S %s to fit the process's limits", text,
                 v1);
    } else {
        snprintf(b->why, sizeof b->why, "default: 75%% of what the process's limits leave (%s)",
                 lt);
    }
    b->bytes = room;
    return DSORT_OK;
}

enum dsort_status dsort_budget_resolve_at(const char *root, const char *text, uint64_t node_memory,
                                          int node_ranks, struct dsort_budget *b,
                                          struct dsort_error *err)
{
    struct dsort_budget_env env = {node_memory, node_ranks, 0, 0, 0, 0};
    dsort_budget_process_limits(&env);
    return dsort_budget_resolve_env(root, text, &env, b, err);
}

enum dsort_status dsort_budget_resolve(const char *text, uint64_t node_memory, int node_ranks,
                                       struct dsort_budget *b, struct dsort_error *err)
{
    return dsort_budget_resolve_at(NULL, text, node_memory, node_ranks, b, err);
}
