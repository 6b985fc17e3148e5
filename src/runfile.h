/* runfile.h - sorted runs spilled to disk, in checksummed blocks.
 *
 * A run file is a sequence of blocks: a 24-byte header (magic "DSRB", the CRC32C of the
 * payload, payload bytes, records) and a payload of whole records. Full blocks all have the
 * same payload size, so a reader fetches a header and its payload with one pread. Every
 * block's CRC32C is checked when it is read back; a mismatch is DSORT_EFORMAT naming the file
 * and the block's offset.
 *
 * The writer is a merge sink (the merge appends records; a full buffer becomes a block and
 * is handed to an asynchronous writer thread). The reader is a merge cursor whose refill
 * reads the next block into a caller-provided buffer and asks the kernel to start reading
 * the block after it. Local; one thread per writer or reader.
 */
#ifndef DSORT_RUNFILE_H
#define DSORT_RUNFILE_H

#include <stddef.h>
#include <stdint.h>

#include "awrite.h"
#include "error.h"
#include "merge.h"

#define DSORT_RUN_HEADER 24

/* Payload bytes of a full block for records of rec_size within `block` bytes (>= 1 record). */
size_t dsort_run_payload(size_t rec_size, size_t block);

struct dsort_runwriter {
    struct dsort_sink sink; /* merge into this */
    struct dsort_awriter *aw;
    int fd;
    size_t rec_size;
    uint64_t off;        /* bytes of the file submitted so far */
    uint64_t records;    /* records written */
    unsigned char *last; /* the last record written (rec_size bytes), once records > 0 */
    char path[4096];
};

/* Create the run file (O_EXCL, mode 0600) and register it for cleanup. */
enum dsort_status dsort_runwriter_open(struct dsort_runwriter *w, const char *path, size_t rec_size,
                                       size_t block, struct dsort_error *err);
/* Write the last block, wait for the writer, close. The file stays registered for cleanup. */
enum dsort_status dsort_runwriter_close(struct dsort_runwriter *w, struct dsort_error *err);
/* Give up: stop the writer, close and remove the file. */
void dsort_runwriter_abort(struct dsort_runwriter *w);
/* Release what close keeps (the last record) once it is no longer needed. */
void dsort_runwriter_free(struct dsort_runwriter *w);

struct dsort_runreader {
    struct dsort_cursor cur; /* merge from this; cur.ctx points back here */
    int fd;
    size_t rec_size, payload;
    uint64_t off, size; /* next block's offset, file size */
    unsigned char *buf; /* DSORT_RUN_HEADER + payload bytes, caller's */
    uint64_t records, bytes_read;
    char path[4096];
};

/* Bytes of buffer a reader needs. */
size_t dsort_runreader_buf_len(size_t rec_size, size_t block);

/* Open a run and load its first block (an empty run is exhausted at once). */
enum dsort_status dsort_runreader_open(struct dsort_runreader *r, const char *path, size_t rec_size,
                                       size_t block, unsigned char *buf, struct dsort_error *err);
void dsort_runreader_close(struct dsort_runreader *r);

#endif
