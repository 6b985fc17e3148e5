/* io.h - bulk file I/O: whole-buffer pread/pwrite loops, the input set, durable commits.
 *
 * All reads and writes move large buffers (never a record at a time); short transfers and
 * EINTR are retried. Errors name the file and, for data errors, the offset. Local.
 */
#ifndef DSORT_IO_H
#define DSORT_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"
#include "format.h"

/* Largest single read or write request; bigger buffers are moved in several calls. */
#define DSORT_IO_MAX_REQUEST ((size_t)1 << 30)

/* Read exactly len bytes at off; a short file is DSORT_EFORMAT ("unexpected end of file"). */
enum dsort_status dsort_io_pread_full(int fd, void *buf, size_t len, uint64_t off, const char *path,
                                      struct dsort_error *err);
/* Write exactly len bytes at off. ENOSPC and friends become DSORT_EIO naming path. */
enum dsort_status dsort_io_pwrite_full(int fd, const void *buf, size_t len, uint64_t off,
                                       const char *path, struct dsort_error *err);
/* Write all of buf at fd's offset (a pipe, a terminal, standard error), restarting after EINTR
 * and short writes; async-signal-safe. 0, or -1 with errno set (EIO for a write of nothing). */
int dsort_io_write_all(int fd, const void *buf, size_t len);
/* Is the file open on fd (sb: its fstat) a regular file whose stat size is not what it holds?
 * So for files of the kernel's file systems (/proc, /sys and kin, whatever their size) and for
 * other files of size 0 that read a byte (FUSE, network file systems): such files are read to
 * their end (dsort copies them, as standard input), never by their size. May read one byte at
 * fd's offset. 1 or 0. */
int dsort_io_unsized(int fd, const struct stat *sb);

/* Local: 1 if path, or a symbolic link on the way to its file, names a descriptor that the
 * process inherited (/dev/stdout, /dev/stderr, /dev/stdin, /dev/fd/N, /proc/PID/fd/N): a file
 * renamed over it would replace the file the shell opened (a log: its earlier content lost,
 * what is printed afterwards going to a deleted file). */
int dsort_io_names_descriptor(const char *path);
/* fsync the directory that holds path (so that a rename in it is durable). */
enum dsort_status dsort_io_fsync_parent(const char *path, struct dsort_error *err);
/* Allocate the blocks of bytes [0, len) of fd's file, name (fallocate(2); a file already len
 * long keeps its size): the space is then the file's, whatever else is written to the file
 * system meanwhile, and a file system without room says so now, not at the end of the work.
 * Never posix_fallocate, whose fallback writes every byte: a file system without fallocate
 * (EOPNOTSUPP) is left as it is, DSORT_OK. DSORT_EIO "cannot reserve N bytes for 'name'"
 * otherwise (ENOSPC, EDQUOT, EFBIG). */
enum dsort_status dsort_io_reserve(int fd, uint64_t len, const char *name, struct dsort_error *err);
/* fsync a directory by name. */
enum dsort_status dsort_io_fsync_dir(const char *dir, struct dsort_error *err);

struct dsort_input {
    char *path;
    size_t arg;       /* index of the path (in the list given to open) it came from */
    uint64_t size;    /* bytes */
    uint64_t first;   /* global index of the file's first record */
    uint64_t records; /* size / rec_size */
    dev_t dev;
    ino_t ino;
    struct timespec mtime, ctime; /* as opened: a change before the commit is an error */
};

/* The inputs, in command-line order, seen as one sequence of records. */
struct dsort_inputs {
    size_t count;
    struct dsort_input *files;
    size_t rec_size;
    uint64_t total_records;
};

/* Check and describe the inputs: each must exist, be a regular file whose size is what it
 * holds (not dsort_io_unsized), be readable, and hold a whole number of records. On failure
 * *in is left empty and err names the file and cause, e.g. "'f.dat': 12345 bytes is not a
 * whole number of 100-byte records (text lines? give --format lines)". */
enum dsort_status dsort_inputs_open(struct dsort_inputs *in, char *const *paths, size_t n,
                                    const struct dsort_format *fmt, struct dsort_error *err);
void dsort_inputs_destroy(struct dsort_inputs *in);

/* Flags for dsort_inputs_open_ex. */
#define DSORT_INPUTS_SKIP_MISSING 1 /* a path that does not exist here is left out */
#define DSORT_INPUTS_EXPAND_DIRS 2  /* a directory stands for its part-* files, in name order */

/* dsort_inputs_open with flags. found (n entries, may be NULL) tells which paths exist. */
enum dsort_status dsort_inputs_open_ex(struct dsort_inputs *in, char *const *paths, size_t n,
                                       const struct dsort_format *fmt, int flags, int *found,
                                       struct dsort_error *err);

/* One piece of a record range that lies in one file: bytes [offset, offset + length) of
 * in->files[index]. */
struct dsort_input_segment {
    const struct dsort_input *file;
    size_t index;
    uint64_t offset, length;
};

/* Call fn(ctx, seg) for the pieces of records [first, first + count), in order. Stops at and
 * returns fn's first non-OK status. */
enum dsort_status
dsort_inputs_segments(const struct dsort_inputs *in, uint64_t first, uint64_t count,
                      enum dsort_status (*fn)(void *ctx, const struct dsort_input_segment *seg),
                      void *ctx);

/* Read records [first, first + count) of the concatenated inputs into buf. */
enum dsort_status dsort_inputs_read(const struct dsort_inputs *in, uint64_t first, uint64_t count,
                                    unsigned char *buf, struct dsort_error *err);

/* How much of an input dsort_inputs_sniff_text reads: its first 64 KiB (whole records, at
 * least one). */
#define DSORT_INPUTS_SNIFF ((size_t)64 << 10)

/* Does input i look like text lines rather than records? So if its first DSORT_INPUTS_SNIFF
 * bytes hold no control byte but tab, newline, VT, FF, CR and ESC (no NUL: gensort's binary
 * records have one each), and a newline that is not a record's last byte: *text is then 1 and
 * *at that newline's offset in the file (else both 0). Never so for 1-byte records. DSORT_OK,
 * or a read error naming the file. */
enum dsort_status dsort_inputs_sniff_text(const struct dsort_inputs *in, size_t i, int *text,
                                          uint64_t *at, struct dsort_error *err);

/* Ask the kernel to start reading records [first, first + count) into the page cache, so
 * that a later dsort_inputs_read overlaps with work done meanwhile. Best effort. */
void dsort_inputs_advise(const struct dsort_inputs *in, uint64_t first, uint64_t count);

/* Is every input still what it was when opened (the same file, size, modification and change
 * times)? DSORT_EFORMAT naming the first that changed ("'f.dat' changed while it was being
 * sorted: ..."), or DSORT_EIO if one cannot be examined. Called before the output is committed:
 * an input truncated, appended to or rewritten after it was read gives no output. */
enum dsort_status dsort_inputs_check_unchanged(const struct dsort_inputs *in,
                                               struct dsort_error *err);

/* One input read through a shared, read-only mapping of the page cache instead of a copy in
 * fresh memory (the in-memory pipeline of ranks on one node, docs/design.md). The mapping
 * shows the file as it was opened; it is watched (dsort_cleanup_watch_map), so that a read
 * beyond the end of a file that shrank meanwhile ends the process with a line naming it
 * instead of a crash. A page beyond the file's end is mapped and watched too, so that a scan
 * that runs off the end (for a line's eol that was overwritten) ends the same way. Local. */
struct dsort_input_map {
    const unsigned char *base; /* the file's first byte (NULL for an empty file) */
    size_t len;
    const struct dsort_input *file;
};
/* Map f whole. A file that is no longer what was opened is DSORT_EFORMAT naming it; a file
 * system that cannot map files gives DSORT_EIO (the caller may read instead). */
enum dsort_status dsort_inputs_map(struct dsort_input_map *m, const struct dsort_input *f,
                                   struct dsort_error *err);
/* Fault in bytes [off, off + len) of the mapping at once (reading what the page cache lacks),
 * instead of a page fault per page later. Where the file has become shorter: DSORT_EFORMAT
 * naming it. */
enum dsort_status dsort_inputs_populate(const struct dsort_input_map *m, uint64_t off, uint64_t len,
                                        struct dsort_error *err);
/* Unmap (m may be unmapped already). */
void dsort_inputs_unmap(struct dsort_input_map *m);

/* Does path name one of the inputs (same device and inode)? A path that does not exist is
 * not an input. */
int dsort_inputs_contains(const struct dsort_inputs *in, const char *path);

/* The record range [*first, *first + *count) that part `part` of `parts` owns when `total`
 * records are cut into near-equal parts (sizes differ by at most one). */
void dsort_io_split(uint64_t total, int part, int parts, uint64_t *first, uint64_t *count);

#endif
