/* gensort.h - the Sort Benchmark's gensort 1.5 record generator.
 *
 * Produces records byte-identical to `gensort [-a] [-s] [-bSTART] N FILE`
 * from gensort 1.5, for any starting record number, so that every rank can
 * generate its own slice of one global input: generating records [0, N) and
 * then [N, M) gives exactly the bytes of generating [0, M).
 *
 * The generator.  gensort draws 128-bit numbers from the linear congruential
 * generator X' = a*X + c (mod 2^128), starting from X = 0, with
 *   a = 0x2360ed051fc65da44385df649fccf645  (L'Ecuyer 1999)
 *   c = 0x4a696d47726179524950202020202001  ("JimGrayRIP" ..., odd).
 * Let r(n) be the (n+1)-th number drawn, i.e. f^(n+1)(0).  Record n uses
 * r(n) .. r(n+9); positioning at record n is a skip-ahead of n+1 steps that
 * costs O(log n) 128-bit multiplications.
 *
 * Record layouts (100 bytes each; the key is the first 10 bytes):
 * - binary: ten 10-byte groups; group k is the top 80 bits of r(n+k),
 *   big-endian, xor-ed with a fixed per-group mask (group 0 unmasked).
 *   Record 0's key is "JimGrayRIP".
 * - ascii (-a): from r(n) only.  10 printable key characters
 *   (' ' + successive base-95 digits of the high 64 bits, 8 characters, then of
 *   the low 64 bits, 2 characters), two spaces, the record number as 32
 *   uppercase hex digits, two spaces, 52 filler characters (13 uppercase hex
 *   digits of the low 52 bits of r(n), each repeated 4 times), "\r\n".
 * - skew (-s): the key of the unskewed record is then partly overwritten by
 *   the first key bytes of record number skew_index(n), where skew_index is
 *   the bit length of n (0 for 0), except that it is 64 when 2^60 <= n < 2^64
 *   and 128 when n >= 2^124.  Binary: the top b bits of the key, where
 *   b = bits 32..37 of r(n) when <= 48, else 0.  ASCII: the first b bytes,
 *   b = bits 32..34 of r(n) when <= 6, else 0.
 *
 * Thread safety: a struct dsort_gensort is used by one thread at a time;
 * distinct generators are independent.  Nothing here allocates or exits.
 */
#ifndef DSORT_GENSORT_H
#define DSORT_GENSORT_H

#include <stddef.h>
#include <stdint.h>

#define DSORT_GENSORT_REC_SIZE 100
#define DSORT_GENSORT_KEY_SIZE 10

enum dsort_gensort_kind {
    DSORT_GENSORT_BINARY, /* gensort default */
    DSORT_GENSORT_ASCII,  /* gensort -a */
};

/* A generator.  The struct is public only so that it can live on the stack
 * or inside other structs without allocation; its fields are private and may
 * change.  Copying a generator copies its position. */
struct dsort_gensort {
    uint64_t rec_lo, rec_hi;     /* number of the next record */
    uint64_t q_lo[10], q_hi[10]; /* r(next) .. r(next + 9) */
    int kind;                    /* enum dsort_gensort_kind */
    int skew;                    /* nonzero: skewed keys (-s) */
    int skew_index;              /* skew_index of skew_row, -1 if none */
    unsigned char skew_row[6];   /* key bytes used for skewing */
};

/* Positions g at absolute record number first_record (gensort -b), for
 * records of the given kind, skewed when skew is nonzero (gensort -s).
 * Takes O(log first_record) time.
 * Returns 0 on success; -1 if g is NULL or kind is not a valid
 * enum dsort_gensort_kind, in which case *g is left unchanged. */
int dsort_gensort_init(struct dsort_gensort *g, enum dsort_gensort_kind kind, int skew,
                       uint64_t first_record);

/* Writes the next nrec records (nrec * DSORT_GENSORT_REC_SIZE bytes) to out
 * and advances g past them.  g must have been set up by dsort_gensort_init.
 * out may be NULL only when nrec is 0.  Record numbers are 128-bit: a
 * generator may run past record 2^64 - 1. */
void dsort_gensort_fill(struct dsort_gensort *g, unsigned char *out, size_t nrec);

#endif /* DSORT_GENSORT_H */
