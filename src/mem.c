#include "mem.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned char mem_empty;

void *dsort_mem_alloc(size_t len)
{
    if (len == 0)
        return &mem_empty;
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    /* Transparent huge pages only when asked (mem.h): on the development machines a fresh
     * huge page costs 0.2-4.4 s/GiB to touch, swinging run to run, against 0.4-0.8 s/GiB for
     * small pages (docs/performance.md, "The copying path"). */
    const char *huge = len >= (2u << 20) ? getenv("DSORT_MEM_HUGEPAGES") : NULL;
    if (huge && *huge == '1')
        madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

void dsort_mem_populate(void *p, size_t len)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (!p || p == &mem_empty || len == 0)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t lo = (uintptr_t)p / page * page, hi = (uintptr_t)p + len;
    (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE); /* a hint: EINVAL on old kernels */
}

void dsort_mem_free(void *p, size_t len)
{
    if (!p || p == &mem_empty || len == 0)
        return;
    munmap(p, len);
}

uint64_t dsort_mem_physical(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return 0;
    return (uint64_t)pages * (uint64_t)size;
}

enum dsort_status dsort_mem_parse_size(const char *text, uint64_t *bytes, struct dsort_error *err)
{
    const char *s = text;
    if (!isdigit((unsigned char)*s))
        goto bad;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        goto bad;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0':
        break;
    case '%': {
        uint64_t phys = dsort_mem_physical();
        if (phys == 0 || v > 100 || end[1])
            goto bad;
        *bytes = (uint64_t)(v / 100.0 * (double)phys);
        return DSORT_OK;
    }
    case 'B':
        end++;
        break;
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        goto bad;
    }
    if (mult > 1 && toupper((unsigned char)*end) == 'B')
        end++;
    if (*end || v * mult > 1.8e19)
        goto bad;
    *bytes = (uint64_t)(v * mult);
    return DSORT_OK;
bad:
    return DSORT_ERR(err, DSORT_EINVAL, 0, "invalid size '%s' (examples: 512M, 4G, 25%%)", text);
}

char *dsort_mem_format(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}
