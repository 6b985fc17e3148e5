#include "owner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OWNER_MAGIC "dsort-owner/1"
#define TEMP_MARK ".dsort-"
#define TEMP_RANDOM 6 /* the XXXXXX of mkstemp */

/* Read a small /proc file into buf (NUL-terminated). 0, or -1 with errno. */
static int read_small(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t n = read(fd, buf + got, len - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    buf[got] = '\0';
    close(fd);
    return 0;
}

/* Digits only, no sign, no overflow. */
static int parse_ull(const char *s, size_t n, unsigned long long *v)
{
    if (n == 0 || n > 20)
        return 0;
    unsigned long long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        unsigned d = (unsigned)(s[i] - '0');
        if (x > (ULLONG_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

static int parse_pid(const char *s, size_t n, long *pid)
{
    unsigned long long v;
    if (!parse_ull(s, n, &v) || v == 0 || v > INT_MAX)
        return 0;
    *pid = (long)v;
    return 1;
}

/* Start time of process pid: field 22 of /proc/PID/stat. The command name (field 2) is in
 * parentheses and may itself hold blanks and ')', so fields are counted after the last ')'. */
/* The start time of process pid (field 22 of /proc/PID/stat); *state gets field 3 (R, S, Z...;
 * may be NULL). */
static int read_start(long pid, unsigned long long *start, char *state)
{
    char path[64], buf[2048];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (read_small(path, buf, sizeof buf))
        return -1;
    const char *p = strrchr(buf, ')');
    if (!p) {
        errno = EINVAL;
        return -1;
    }
    p++;
    for (int field = 3; field <= 22; field++) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " \n");
        if (n == 0)
            break;
        if (field == 3 && state)
            *state = *p;
        if (field == 22)
            return parse_ull(p, n, start) ? 0 : (errno = EINVAL, -1);
        p += n;
    }
    errno = EINVAL;
    return -1;
}

static int complete(const struct dsort_owner *o)
{
    return o->boot_id[0] && o->pidns && o->pid > 0 && o->start;
}

static int boot_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
}

enum dsort_status dsort_owner_self(struct dsort_owner *o, struct dsort_error *err)
{
    memset(o, 0, sizeof *o);
    o->pid = (long)getpid();
    if (gethostname(o->host, sizeof o->host - 1) || !o->host[0])
        snprintf(o->host, sizeof o->host, "unknown");
    for (char *p = o->host; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 127)
            *p = '_';

    const char *what = "/proc/sys/kernel/random/boot_id";
    char buf[128];
    if (read_small(what, buf, sizeof buf))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot read '%s'", what);
    size_t n = strspn(buf, "0123456789abcdefABCDEF-");
    if (n == 0 || n >= sizeof o->boot_id || (buf[n] && buf[n] != '\n'))
        return DSORT_ERR(err, DSORT_EIO, 0, "cannot parse '%s'", what);
    memcpy(o->boot_id, buf, n);
    o->boot_id[n] = '\0';

    /* A /proc of another pid namespace (the host's, mounted into a container) would name
     * other processes by our pids: then we cannot judge any pid. */
    char self[32];
    ssize_t len = readlink("/proc/self", self, sizeof self - 1);
    long seen = 0;
    if (len <= 0 || !parse_pid(self, (size_t)len, &seen) || seen != o->pid) {
        o->boot_id[0] = '\0';
        return DSORT_ERR(err, DSORT_EIO, 0, "/proc is not of this process's pid namespace");
    }
    struct stat sb;
    what = "/proc/self/ns/pid";
    if (stat(what, &sb)) {
        o->boot_id[0] = '\0';
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot stat '%s'", what);
    }
    unsigned long long start;
    if (read_start(o->pid, &start, NULL) || start == 0) {
        o->boot_id[0] = '\0';
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot read the start time of process %ld",
                         o->pid);
    }
    o->pidns = (unsigned long long)sb.st_ino;
    o->start = start;
    return DSORT_OK;
}

size_t dsort_owner_format(const struct dsort_owner *o, char *buf, size_t len)
{
    int n = snprintf(buf, len, OWNER_MAGIC " host=%s boot=%s pidns=%llu pid=%ld start=%llu\n",
                     o->host, o->boot_id[0] ? o->boot_id : "-", o->pidns, o->pid, o->start);
    return n < 0 ? 0 : (size_t)n;
}

/* " KEY=VALUE" at *p: the value's start and length; advances *p past it. 0 if not there. */
static int field(const char **p, const char *key, const char **val, size_t *n)
{
    const char *s = *p;
    if (*s != ' ')
        return 0;
    s++;
    size_t k = strlen(key);
    if (strncmp(s, key, k) || s[k] != '=')
        return 0;
    s += k + 1;
    *val = s;
    *n = strcspn(s, " \t\r\n");
    *p = s + *n;
    return *n > 0;
}

enum dsort_status dsort_owner_parse(const char *text, struct dsort_owner *o,
                                    struct dsort_error *err)
{
    memset(o, 0, sizeof *o);
    const char *p = text, *v;
    size_t n;
    if (strncmp(p, OWNER_MAGIC, strlen(OWNER_MAGIC)))
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "not a dsort owner description");
    p += strlen(OWNER_MAGIC);
    if (!field(&p, "host", &v, &n) || n >= sizeof o->host)
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad host");
    memcpy(o->host, v, n);
    if (!field(&p, "boot", &v, &n) || n >= sizeof o->boot_id)
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad boot id");
    if (!(n == 1 && *v == '-')) {
        for (size_t i = 0; i < n; i++)
            if (!boot_char(v[i]))
                return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad boot id");
        memcpy(o->boot_id, v, n);
    }
    if (!field(&p, "pidns", &v, &n) || !parse_ull(v, n, &o->pidns))
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad pid namespace");
    if (!field(&p, "pid", &v, &n) || !parse_pid(v, n, &o->pid))
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad pid");
    if (!field(&p, "start", &v, &n) || !parse_ull(v, n, &o->start))
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: bad start time");
    p += strspn(p, " \t\r\n");
    if (*p)
        return DSORT_ERR(err, DSORT_EFORMAT, 0, "owner: trailing text");
    return DSORT_OK;
}

/* Same host, boot and pid namespace established: is process pid, started at start, alive? */
static enum dsort_owner_state judge_pid(long pid, unsigned long long start)
{
    if (pid <= 0 || pid > INT_MAX || start == 0)
        return DSORT_OWNER_UNKNOWN;
    if (kill((pid_t)pid, 0) && errno == ESRCH)
        return DSORT_OWNER_DEAD;
    unsigned long long now;
    char state = '?';
    if (read_start(pid, &now, &state))
        /* Gone between the two looks, or unreadable: only the first proves anything. */
        return errno == ENOENT || errno == ESRCH ? DSORT_OWNER_DEAD : DSORT_OWNER_ALIVE;
    /* A zombie (Z; X: being reaped) has exited: it touches no file any more, though its
     * parent has not reaped it yet (mpirun may be gone, and pid 1 slow to). (A leader thread
     * that exited while others run shows Z too; dsort's main thread never does.) */
    if (state == 'Z' || state == 'X')
        return DSORT_OWNER_DEAD;
    return now == start ? DSORT_OWNER_ALIVE : DSORT_OWNER_DEAD;
}

enum dsort_owner_state dsort_owner_judge(const struct dsort_owner *o)
{
    struct dsort_owner self;
    if (dsort_owner_self(&self, NULL) || !complete(o))
        return DSORT_OWNER_UNKNOWN;
    if (strcmp(o->host, self.host) || strcmp(o->boot_id, self.boot_id) || o->pidns != self.pidns)
        return DSORT_OWNER_UNKNOWN;
    return judge_pid(o->pid, o->start);
}

/* 64-bit FNV-1a of host, boot id and pid namespace: where a process runs, for temp names. */
static uint64_t place_hash(const struct dsort_owner *o)
{
    char text[DSORT_OWNER_HOST_MAX + DSORT_OWNER_BOOT_MAX + 32];
    int n = snprintf(text, sizeof text, "%s\n%s\n%llu", o->host, o->boot_id, o->pidns);
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (int i = 0; i < n && i < (int)sizeof text - 1; i++) {
        h ^= (unsigned char)text[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

enum dsort_status dsort_owner_temp_name(char *buf, size_t len, const char *dir, const char *base,
                                        const struct dsort_owner *o, struct dsort_error *err)
{
    if (!*base || strchr(base, '/'))
        return DSORT_ERR(err, DSORT_EINVAL, 0, "bad output file name '%s'", base);
    /* The tag adds about 45 bytes to BASE; a legal name near the directory's limit (NAME_MAX,
     * 255 on most file systems) would make a temp name that cannot be created. BASE is cut
     * instead: the tag alone makes the name unique, and the sweep reads only the tag. */
    char tag[96];
    int t = snprintf(tag, sizeof tag, TEMP_MARK "%016llx-%ld-%llu-XXXXXX",
                     (unsigned long long)place_hash(o), o->pid, o->start);
    long name_max = pathconf(*dir ? dir : ".", _PC_NAME_MAX);
    if (name_max <= 0 || name_max > NAME_MAX)
        name_max = NAME_MAX;
    size_t keep = strlen(base);
    if (1 + keep + (size_t)t > (size_t)name_max)
        keep = (size_t)name_max > (size_t)t + 2 ? (size_t)name_max - (size_t)t - 1 : 1;
    /* never half a UTF-8 character (file systems such as ZFS with utf8only refuse one) */
    while (keep > 1 && keep < strlen(base) && ((unsigned char)base[keep] & 0xC0) == 0x80)
        keep--;
    int n = snprintf(buf, len, "%s%s.%.*s%s", dir, *dir ? "/" : "", (int)keep, base, tag);
    if (n < 0 || (size_t)n >= len)
        return DSORT_ERR(err, DSORT_EINVAL, 0, "output path too long: '%s%s%s'", dir,
                         *dir ? "/" : "", base);
    return DSORT_OK;
}

enum dsort_status dsort_owner_temp_file(char *path, size_t len, const char *dir, const char *base,
                                        int *fd, struct dsort_error *err)
{
    *fd = -1;
    struct dsort_owner self;
    dsort_owner_self(&self, NULL); /* incomplete: judged UNKNOWN, never swept */
    enum dsort_status st = dsort_owner_temp_name(path, len, dir, base, &self, err);
    if (st)
        return st;
    /* O_EXCL: an existing name, a symlink included, fails and mkostemp tries another. */
    *fd = mkostemp(path, O_CLOEXEC);
    if (*fd < 0)
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create a temp file for '%s%s%s'", dir,
                         *dir ? "/" : "", base);
    return DSORT_OK;
}

enum dsort_status dsort_owner_temp_dir(char *path, size_t len, const char *dir, const char *base,
                                       struct dsort_error *err)
{
    struct dsort_owner self;
    dsort_owner_self(&self, NULL);
    enum dsort_status st = dsort_owner_temp_name(path, len, dir, base, &self, err);
    if (st)
        return st;
    if (!mkdtemp(path))
        return DSORT_ERR(err, DSORT_EIO, errno, "cannot create a temp directory for '%s%s%s'", dir,
                         *dir ? "/" : "", base);
    return DSORT_OK;
}

static int hex_digit(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ".BASE.dsort-HASH-PID-START-XXXXXX" -> HASH, PID, START. 0 if not that form. The tag and
 * suffix hold no ".dsort-", so the last one starts the tag even if BASE holds one. */
static int parse_temp_name(const char *name, uint64_t *hash, long *pid, unsigned long long *start)
{
    if (name[0] != '.')
        return 0;
    const char *mark = NULL;
    for (const char *p = strstr(name, TEMP_MARK); p; p = strstr(p + 1, TEMP_MARK))
        mark = p;
    if (!mark || mark < name + 2)
        return 0;
    const char *p = mark + strlen(TEMP_MARK);
    uint64_t h = 0;
    for (int i = 0; i < 16; i++, p++) {
        if (!hex_digit(*p))
            return 0;
        h = h << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
    }
    if (*p++ != '-')
        return 0;
    size_t n = strspn(p, "0123456789");
    if (!parse_pid(p, n, pid) || p[n] != '-')
        return 0;
    p += n + 1;
    n = strspn(p, "0123456789");
    if (!parse_ull(p, n, start) || p[n] != '-')
        return 0;
    p += n + 1;
    for (int i = 0; i < TEMP_RANDOM; i++)
        if (!alnum(p[i]))
            return 0;
    if (p[TEMP_RANDOM])
        return 0;
    *hash = h;
    return 1;
}

int dsort_owner_temp_judge(const char *name, enum dsort_owner_state *state)
{
    uint64_t hash;
    long pid;
    unsigned long long start;
    if (!parse_temp_name(name, &hash, &pid, &start))
        return 0;
    struct dsort_owner self;
    if (dsort_owner_self(&self, NULL) || hash != place_hash(&self))
        *state = DSORT_OWNER_UNKNOWN;
    else
        *state = judge_pid(pid, start);
    return 1;
}
