/* dsort.h - libdsort, the public interface: sort fixed-size records across an MPI
 * communicator, in memory.
 *
 * Records are opaque fixed-size byte strings (struct dsort_records): every record is rec_size
 * bytes. Their key is either
 *  - raw bytes (keys NULL or ""): the key_len bytes at key_off, compared as unsigned bytes,
 *    most significant first (memcmp), exactly as dsort --format fixed:SIZE:KEYOFF:KEYLEN
 *    compares them; or
 *  - typed keys (keys a list such as "8:f64le,0:u64le:r"): one or more fields of the record,
 *    each an integer, a float or raw bytes, spelled as dsort's -k option takes them for fixed
 *    records, OFF:TYPE[:LEN][:r], joined by commas. TYPE is one of u8 i8 u16le u16be i16le
 *    i16be u32le u32be i32le i32be u64le u64be i64le i64be f32le f32be f64le f64be bytes
 *    (unsigned, two's complement and IEEE 754 binary32/64 numbers of 8 to 64 bits, little- or
 *    big-endian; u64le is numpy's '<u8'), LEN the length of a bytes key (and only of one), a
 *    final :r makes that key descending. The first key decides, the next breaks its ties, and
 *    so on. Floats order as numpy's sort does: -inf < ... < -0.0 == +0.0 < ... < +inf < NaN,
 *    every NaN (whatever its sign and payload) equal to every other. key_off and key_len are
 *    then ignored.
 * Records with equal keys (all of them) are ordered by their whole bytes (GNU sort's last
 * resort; numpy: the record's bytes as the last key), unless DSORT_STABLE is given: then they
 * keep their input order, where the input order is rank 0's records first, in array order,
 * then rank 1's, and so on. DSORT_REVERSE sorts descending (every key, :r ones included, and
 * the last-resort comparison too, as dsort -r does). Records come out unchanged.
 *
 * Collective semantics: every function marked collective must be called by every rank of the
 * communicator, with the same format and flags, like an MPI collective. The library works on
 * its own duplicate of the communicator (it never changes the caller's: no error handler is
 * set on it, no message of the caller's can match one of the library's). On an error, every
 * rank returns the same code and the same message (struct dsort_errinfo), naming the lowest
 * rank that failed; the library never prints, exits or aborts, and frees what it allocated.
 * A failure of MPI itself is handled by the communicator's error handler, which the duplicate
 * keeps: with MPI's default (MPI_ERRORS_ARE_FATAL) it ends the job; with MPI_ERRORS_RETURN on
 * comm it comes back as DSORT_ERR_MPI, but a call that failed on one rank only, in the middle
 * of the exchange, can leave the other ranks waiting for that rank (MPI cannot tell them).
 *
 * Thread safety: calls on different communicators may run concurrently if MPI was initialised
 * with MPI_THREAD_MULTIPLE; the library starts no threads.
 *
 * Link: pkg-config --cflags --libs dsort, or find_package(dsort) and the target dsort::dsort.
 */
#ifndef DSORT_PUBLIC_H
#define DSORT_PUBLIC_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DSORT_VERSION_MAJOR 0
#define DSORT_VERSION_MINOR 2
#define DSORT_VERSION_PATCH 0

/* Return codes. */
#define DSORT_SUCCESS 0
#define DSORT_ERR_ARG 1      /* a bad argument (format, flags, counts): on any rank */
#define DSORT_ERR_NOMEM 2    /* an allocation failed on some rank */
#define DSORT_ERR_MPI 3      /* an MPI call returned an error */
#define DSORT_ERR_INTERNAL 4 /* a check inside the library failed (a bug: please report) */

/* Flags of struct dsort_records. */
#define DSORT_REVERSE 1u /* descending keys (dsort -r) */
#define DSORT_STABLE 2u  /* equal keys keep input order (dsort -s), no whole-record tie-break */

/* The record layout; the same on every rank. rec_size >= 1; without typed keys key_len >= 1
 * and key_off + key_len <= rec_size; with them every key lies within the record, and there
 * are at most 16 keys. A bad key list is DSORT_ERR_ARG, with a message naming the bad key. */
struct dsort_records {
    size_t rec_size;  /* bytes per record */
    size_t key_off;   /* offset of the key in the record (raw bytes) */
    size_t key_len;   /* bytes of the key (raw bytes) */
    unsigned flags;   /* DSORT_REVERSE | DSORT_STABLE, or 0 */
    const char *keys; /* typed keys, "OFF:TYPE[:LEN][:r],...", or NULL or "" (raw bytes) */
};

/* What went wrong: the same on every rank after a failed collective call. */
struct dsort_errinfo {
    int code;      /* DSORT_SUCCESS or a DSORT_ERR_* */
    int rank;      /* the lowest rank of the communicator that failed, or -1 */
    char msg[256]; /* one line, e.g. "rank 2: out of memory for 1048576 records" */
};

/* Collective over comm. Sort the n records at in (n * rec_size bytes; in may be NULL when
 * n = 0) held by this rank, together with every other rank's, and give this rank its share
 * of the sorted sequence: with N records in all and p ranks, rank i gets the records of
 * global sorted positions [floor(i*N/p), floor((i+1)*N/p)), so the shares differ by at most
 * one record whatever the keys (duplicates included), and their concatenation in rank order
 * is the sorted sequence. *out gets a new buffer of *n_out records (allocated with malloc,
 * to free(); NULL when *n_out is 0); in is not changed. n may differ between ranks, and may be
 * 0 on any of them.
 * Returns DSORT_SUCCESS, or a DSORT_ERR_* code, the same on every rank; then *out is NULL,
 * *n_out is 0, and err (if not NULL) says why (DSORT_ERR_ARG also, on the calling rank
 * alone, without communicating, when MPI is not initialised or comm is MPI_COMM_NULL; and on
 * every rank for an intercommunicator). dsort_sort is dsort_sort_layout with the balanced
 * counts and an output buffer allocated here. Memory besides in and the output: at most
 * n * (rec_size + 32) bytes during the local sort, then n * rec_size (the sorted copy, freed
 * once sent) plus *n_out * rec_size (the received pieces, merged into the output). With typed
 * keys the sort works on widened records, the normalised keys (a byte string as long as the
 * keys' sizes added up, made once per record) before each record, so read rec_size above as
 * rec_size + that length (but not for the output, which the merge writes narrowed, through a
 * staging buffer of about 64 KiB), and add n widened records during the local sort; when every
 * key is an integer or bytes and each starts where the one before it ends, the records are
 * not widened (their key bytes are normalised in a copy) and rec_size stays as it is. There is
 * no -u (DSORT_UNIQUE is the file API's alone): it would break the exact counts. */
int dsort_sort(MPI_Comm comm, const struct dsort_records *fmt, const void *in, size_t n, void **out,
               size_t *n_out, struct dsort_errinfo *err);

/* Collective over comm. dsort_sort with a given output layout, as DTCMP's sortv and MPI codes
 * that own their arrays want it: each rank says how many records it wants (n_out, 0 allowed)
 * and passes its own buffer of n_out * rec_size bytes at out (the caller's; it must not overlap
 * in or another rank's buffer; out may be NULL when n_out is 0). Rank i gets the records of
 * global sorted positions [S_i, S_i + n_out), where S_i is the sum of n_out over the ranks
 * below i; the concatenation in rank order is the sorted sequence, duplicates included.
 * The n_out of all ranks must add up to the n of all ranks: else DSORT_ERR_ARG on every rank,
 * with a message giving both sums (and DSORT_ERR_ARG for an n_out too large for memory, such
 * as a negative count cast to size_t, or a NULL out with n_out > 0). Format, keys, flags,
 * errors (the same code and message on every rank) and memory as dsort_sort's, with the
 * caller's buffer as the output; on an error out's contents are unspecified. */
int dsort_sort_layout(MPI_Comm comm, const struct dsort_records *fmt, const void *in, size_t n,
                      void *out, size_t n_out, struct dsort_errinfo *err);

/* Local: a constant English text for a code ("out of memory"); never NULL. */
const char *dsort_strerror(int code);

/* Local: the library's version, "MAJOR.MINOR.PATCH" (may differ from the header's macros
 * when a program runs against a newer shared library). */
const char *dsort_version(void);

#ifdef __cplusplus
}
#endif

/* Files to files, as the dsort program sorts them (dsort_sort_files). */
#include "dsort_file.h"

#endif
