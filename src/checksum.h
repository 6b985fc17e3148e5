/* checksum.h - record checksums: zlib CRC-32, CRC-32C and valsort's 128-bit sum.
 *
 * valsort (Sort Benchmark, gensort 1.5) proves that no record was lost,
 * duplicated or changed by summing, as a 128-bit unsigned integer, the zlib
 * crc32 of every record.  The sum does not depend on record order, so the
 * checksum of a sorted output equals that of its input, and per-partition
 * sums can be merged in any order.
 *
 * Thread safety: every function here may be called from any thread at any
 * time.  The lookup tables are built on first use under pthread_once().
 * No function allocates memory, fails, or exits.
 */
#ifndef DSORT_CHECKSUM_H
#define DSORT_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Continues a zlib-compatible CRC-32 (reflected polynomial 0xEDB88320).
 * Start with crc = 0; the result of one call is the crc argument of the next,
 * so dsort_crc32(dsort_crc32(0, a, n), b, m) equals the CRC of a followed by b.
 * Gives the same result as zlib's crc32(crc, buf, len).
 * buf may be NULL only when len is 0. */
uint32_t dsort_crc32(uint32_t crc, const void *buf, size_t len);

/* Continues a CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used
 * by iSCSI, ext4 and SSE4.2.  Same chaining convention as dsort_crc32:
 * dsort_crc32c(0, "123456789", 9) == 0xE3069283.
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked at run
 * time), else dsort_crc32c_sw().  buf may be NULL only when len is 0. */
uint32_t dsort_crc32c(uint32_t crc, const void *buf, size_t len);

/* The portable table-driven CRC-32C, always available; same results as
 * dsort_crc32c().  Exposed so tests can compare both implementations. */
uint32_t dsort_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* A 128-bit unsigned sum, as valsort keeps it.  Zero-initialise before use
 * (struct dsort_sum128 s = {0, 0};).  Wraps modulo 2^128. */
struct dsort_sum128 {
    uint64_t lo;
    uint64_t hi;
};

/* s += v, carrying into s->hi. */
void dsort_sum128_add(struct dsort_sum128 *s, uint64_t v);

/* s += t (128-bit addition); t is unchanged.  s and t may be the same. */
void dsort_sum128_merge(struct dsort_sum128 *s, const struct dsort_sum128 *t);

/* Writes s as valsort and `gensort -c` print it: lowercase hexadecimal with
 * no leading zeros ("0" for zero), NUL-terminated, at most 32 digits. */
void dsort_sum128_hex(const struct dsort_sum128 *s, char out[33]);

/* Adds dsort_crc32(0, rec, rec_size) of each of the nrec records laid out
 * back to back at recs (nrec * rec_size bytes) to s.  recs may be NULL only
 * when nrec is 0. */
void dsort_checksum_records(struct dsort_sum128 *s, const unsigned char *recs, size_t nrec,
                            size_t rec_size);

/* The same with CRC32C (hardware-accelerated where the CPU has it: about 7 GB/s here against
 * 0.7 GB/s for the CRC-32 above): the sum behind dsort's always-on conservation check, which
 * compares what a job read with what it handed to the writer. Not valsort's figure. */
void dsort_checksum_records_c(struct dsort_sum128 *s, const unsigned char *recs, size_t nrec,
                              size_t rec_size);

/* SplitMix64: the next of a sequence of well-mixed 64-bit numbers from the state *s (the
 * generators' fields, the sampled splitters' positions). Not a checksum. */
static inline uint64_t dsort_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#endif /* DSORT_CHECKSUM_H */
