/* mem.h - big buffers and the memory budget.
 *
 * Large buffers come straight from mmap, allocated once per phase set and reused, because
 * memory that is touched fresh is the slow path on these machines (see docs/design.md). They
 * use small pages: a fresh transparent huge page was the slower and the less steady of the two
 * there (a host that takes freed memory back hands huge pages out fresh from the host each
 * time); DSORT_MEM_HUGEPAGES=1 in the environment asks for huge pages (MADV_HUGEPAGE) on
 * buffers of 2 MiB or more, to measure them. Local, thread-safe.
 */
#ifndef DSORT_MEM_H
#define DSORT_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Allocate len bytes (len may be 0: returns a non-NULL dummy). Returns NULL on failure. */
void *dsort_mem_alloc(size_t len);
/* Fault in [p, p + len) of a buffer from dsort_mem_alloc for writing, in one call
 * (MADV_POPULATE_WRITE, Linux 5.14): about half the cost of touching it page by page, where
 * each first touch is a page fault. Where the kernel lacks it, nothing (the pages fault in
 * when touched, as before). p need not be page-aligned: the pages that hold the range. */
void dsort_mem_populate(void *p, size_t len);
/* Free a buffer from dsort_mem_alloc with the same len. NULL does nothing. */
void dsort_mem_free(void *p, size_t len);

/* Parse a size such as "512M", "4G", "1000000" (bytes), with suffixes K, M, G, T (powers of
 * 1024) and an optional trailing "B". "N%" is a percentage of total physical memory.
 * Returns DSORT_EINVAL naming the text on a bad value. */
enum dsort_status dsort_mem_parse_size(const char *text, uint64_t *bytes, struct dsort_error *err);

/* Total physical memory in bytes (0 if unknown). */
uint64_t dsort_mem_physical(void);

/* Format bytes for humans ("1.50 GiB") into buf. Returns buf. */
char *dsort_mem_format(uint64_t bytes, char *buf, size_t len);

#endif
