/* runfile.h - sorted runs spilled to disk, in checksummed blocks, moved with O_DIRECT.
 *
 * A run file is a sequence of blocks. Each block is a 24-byte header (magic "DSRB", the
 * CRC32C of the payload, payload bytes, records), a payload of whole records, and zero
 * padding to a multiple of 4 KiB. Every block but the last has the same payload size, so a
 * block is one aligned read of `stride` bytes. Every block's CRC32C is checked when it is
 * read back; a mismatch is DSORT_EFORMAT naming the file and the block's offset.
 *
 * Records are fixed-size (rec_size > 0: a block's payload is whole records) or framed (rec_size
 * 0: records of any length that frame themselves, such as text lines with their eol; the
 * caller parses them). A framed block holds whole records up to its payload size; a record
 * longer than that gets a block of its own, as large as it needs ("oversize"), written and
 * read synchronously. Every block starts at a multiple of 4 KiB and takes
 * align_up(24 + payload) bytes, so a reader finds the next block from the header.
 *
 * Runs are written and read with O_DIRECT where the file system allows it (not tmpfs): they
 * are read once, soon, and filling the page cache with them is the slow path on these
 * machines. The writer is a merge sink whose full buffers go to a writer thread; the reader
 * is a merge cursor with two buffers, one being merged while a prefetch thread fills the other.
 *
 * Striped runs (RAID-0 style, for temp dirs on several disks): a run may be k files ("stripes",
 * one per disk), block b of the run being the next block of file b % k. Each file is a
 * sequence of blocks as above, with its own offsets (framed blocks vary in size); a run of
 * one file is exactly the plain format. The writer keeps a write in flight on every file (one
 * writer thread each) and the reader asks for block b from the read-ahead thread of file
 * b % k, so all the disks work at once. Messages name the file (stripe) and its offset.
 * Local; one thread per writer or reader.
 */
#ifndef DSORT_RUNFILE_H
#define DSORT_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "awrite.h"
#include "error.h"
#include "merge.h"
#include "prefetch.h"

#define DSORT_RUN_HEADER 24
#define DSORT_RUN_ALIGN 4096
#define DSORT_RUN_MAX_STRIPES 8 /* files of one run, at most */
#define DSORT_RUN_READ_BUFS 3   /* a reader's buffers, at most (dsort_runreader_bufs) */
#define DSORT_RUN_PATH_MAX 4096 /* bytes of a run file's name, with its NUL */

/* Payload bytes of a full block for records of rec_size within `block` bytes (>= 1 record);
 * framed (rec_size 0): a block is `block` bytes rounded up to 4 KiB, header included. */
size_t dsort_run_payload(size_t rec_size, size_t block);
/* Bytes a full block takes on disk (header + payload, padded to DSORT_RUN_ALIGN). */
size_t dsort_run_stride(size_t rec_size, size_t block);

struct dsort_runwriter {
    struct dsort_sink sink; /* merge into this */
    size_t k;               /* files (stripes) of the run: 1 is a plain run file */
    struct dsort_awriter *aw[DSORT_RUN_MAX_STRIPES]; /* k = 1: double-buffered; else swap mode */
    int fd[DSORT_RUN_MAX_STRIPES];
    uint64_t soff[DSORT_RUN_MAX_STRIPES]; /* bytes of each file submitted so far */
    unsigned char *fill;                  /* k > 1: the buffer being filled (the sink's) */
    size_t fill_len;
    uint64_t nblk; /* blocks submitted: the next goes to file nblk % k */
    size_t rec_size;
    uint64_t off;        /* bytes of all the files submitted so far */
    uint64_t records;    /* records written */
    unsigned char *last; /* the last record written (rec_size bytes), once records > 0 */
    /* framed records */
    uint64_t blk_records; /* in the open block */
    size_t resv;          /* bytes reserved by dsort_runwriter_reserve, not yet committed */
    unsigned char *big;   /* an oversize block being filled (4 KiB-aligned), or NULL */
    char path[4096];      /* the first file's name */
    char *paths;          /* the k names, DSORT_RUN_PATH_MAX bytes each (owned) */
};

/* Create the run file (O_EXCL, mode 0600). Its removal on signals is the caller's (a run
 * file named by dsort_tempdirs_run_path is covered by its directory's cleanup series). */
enum dsort_status dsort_runwriter_open(struct dsort_runwriter *w, const char *path, size_t rec_size,
                                       size_t block, struct dsort_error *err);
/* A striped run: the k files paths[0..k) (1 <= k <= DSORT_RUN_MAX_STRIPES), each created as
 * open's, block b going to file b % k. k = 1 is open. With k > 1 there are k writer threads,
 * each with one buffer, and the buffer being filled: dsort_runwriter_buf_len bytes in all. */
enum dsort_status dsort_runwriter_open_striped(struct dsort_runwriter *w, const char *const *paths,
                                               size_t k, size_t rec_size, size_t block,
                                               struct dsort_error *err);
/* Bytes of the buffers of a writer of k files (to count against the budget). */
size_t dsort_runwriter_buf_len(size_t rec_size, size_t block, size_t k);
/* The name of file i (< k) of the run (until free). */
const char *dsort_runwriter_path(const struct dsort_runwriter *w, size_t i);
/* A writer of framed records (rec_size 0) in blocks of `block` bytes (see the top). */
enum dsort_status dsort_runwriter_open_framed(struct dsort_runwriter *w, const char *path,
                                              size_t block, struct dsort_error *err);
/* Framed: room for the next record of len bytes (fill it, then commit). A full block goes to
 * the writer thread first; a record longer than a block's payload gets an oversize block of
 * its own (allocated for it, past the writer's buffers). NULL on an error of an earlier write
 * or of the allocation (in err). */
unsigned char *dsort_runwriter_reserve(struct dsort_runwriter *w, size_t len,
                                       struct dsort_error *err);
/* Framed: the reserved record is filled in; an oversize block is written now. */
enum dsort_status dsort_runwriter_commit(struct dsort_runwriter *w, struct dsort_error *err);
/* Write the last block, wait for the writer, close. */
enum dsort_status dsort_runwriter_close(struct dsort_runwriter *w, struct dsort_error *err);
/* Give up: stop the writer, close and remove the files (those it made). */
void dsort_runwriter_abort(struct dsort_runwriter *w);
/* Release what close keeps (the last record) once it is no longer needed. */
void dsort_runwriter_free(struct dsort_runwriter *w);

struct dsort_runreader {
    struct dsort_cursor cur; /* merge from this; cur.ctx points back here */
    size_t k;                /* files of the run */
    int fd[DSORT_RUN_MAX_STRIPES];
    uint64_t ssize[DSORT_RUN_MAX_STRIPES];            /* each file's size */
    uint64_t snext[DSORT_RUN_MAX_STRIPES];            /* each file's next block's offset */
    struct dsort_prefetch *pf[DSORT_RUN_MAX_STRIPES]; /* each file's read-ahead (NULL: sync) */
    uint64_t nblk;   /* blocks requested: the next is block nblk, of file nblk % k */
    size_t end_file; /* the file whose end ended the run */
    size_t rec_size, payload, stride; /* rec_size 0: framed records */
    size_t max_payload;               /* framed: the largest payload an oversize block may have */
    unsigned char *big;               /* framed: the current oversize block (owned), or NULL */
    uint64_t blk_off, blk_records;    /* the current block: offset (in its file), records */
    /* nbuf stride-sized, 4 KiB-aligned buffers (the caller's, dsort_runreader_buf_len): one
     * being merged (cur_buf, -1 before the first), the others read ahead, in block order:
     * rq[(head + i) % (DSORT_RUN_READ_BUFS - 1)] for i < npend */
    unsigned char *buf[DSORT_RUN_READ_BUFS];
    int nbuf, cur_buf, head, npend;
    int ended; /* the next block is past a file's end: nothing more to ask for */
    struct dsort_runreq {
        struct dsort_preq pq;
        struct dsort_prefetch *pf; /* the thread it was posted to (NULL: read already) */
        size_t file;               /* the file it reads */
        int buf;
    } rq[DSORT_RUN_READ_BUFS - 1];
    uint64_t records, bytes_read;
    uint64_t expected; /* records the writer wrote, or UINT64_MAX if unknown */
    const char *path;  /* the file of the current block (for messages) */
    char *paths;       /* the k names, DSORT_RUN_PATH_MAX bytes each (owned) */
};

/* The buffers a reader of a run of k files uses: one being merged and one read ahead; with
 * k > 1 (a run striped over several temp disks) two read ahead, the next two blocks, which lie
 * on two different disks, so that in a merge of many runs every disk has reads queued while
 * the merge waits for one (with one block ahead a run, the other disks drain their queues and
 * stand idle while the merge waits). */
size_t dsort_runreader_bufs(size_t k);
/* Bytes of buffer a reader of a run of (at most) k files needs. */
size_t dsort_runreader_buf_len(size_t rec_size, size_t block, size_t k);

/* Open a run and load its first block (an empty run is exhausted at once). buf must be
 * 4 KiB-aligned and dsort_runreader_buf_len(rec_size, block, k) bytes long (k 1 for one file). pf
 * may be NULL. expected is the number of records the writer wrote (UINT64_MAX: unknown): a run that
 * ends early (a file cut at a block boundary) is then DSORT_EFORMAT instead of silently short. */
enum dsort_status dsort_runreader_open(struct dsort_runreader *r, const char *path, size_t rec_size,
                                       size_t block, unsigned char *buf, struct dsort_prefetch *pf,
                                       uint64_t expected, struct dsort_error *err);
/* A reader of framed records (rec_size 0) written in blocks of `block` bytes; an oversize
 * block's payload may be up to max_payload bytes (a larger one is corrupt). The cursor's
 * [cur, end) is a block's payload: whole framed records, blk_records of them by the header,
 * which the caller parses and counts. */
enum dsort_status dsort_runreader_open_framed(struct dsort_runreader *r, const char *path,
                                              size_t block, size_t max_payload, unsigned char *buf,
                                              struct dsort_prefetch *pf, uint64_t expected,
                                              struct dsort_error *err);
/* A striped run's reader: its k files paths[0..k) (as the writer had them), pf NULL or k
 * read-ahead threads (pf[i] reads file i; NULL entries read synchronously); max_payload as for
 * open_framed (rec_size 0), ignored for fixed records. A file that ends before the others (cut
 * on the disk) is DSORT_EFORMAT naming it, even where expected is unknown. */
enum dsort_status dsort_runreader_open_striped(struct dsort_runreader *r, const char *const *paths,
                                               size_t k, size_t rec_size, size_t block,
                                               size_t max_payload, unsigned char *buf,
                                               struct dsort_prefetch *const *pf, uint64_t expected,
                                               struct dsort_error *err);
/* Close (waiting for a request still in flight). */
void dsort_runreader_close(struct dsort_runreader *r);

#endif
