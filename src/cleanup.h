/* cleanup.h - the temp-file registry.
 *
 * Every file or directory that must not outlive a failed run (temp output, staged parts,
 * later spilled runs) is registered here. dsort_cleanup_run removes them all (it is also an
 * atexit hook), and the handlers for SIGTERM, SIGINT, SIGHUP, SIGUSR2, SIGXCPU and SIGXFSZ (the
 * limits ulimit -t and -f; see on_xfsz in cleanup.c for the one a write raises) do nothing but
 * remove them and re-raise the signal with its default action - no MPI call, no stdio -
 * because mpirun and Slurm follow SIGTERM with SIGKILL about a second later. SIGUSR2 is the
 * stop the batch scripts pass on to mpirun for a SIGTERM (mpirun forwards it; it aborts on
 * SIGTERM). SIGUSR1, Slurm's time-limit warning, stops only a job that keeps a checkpoint
 * (stop mode, keep mode below); otherwise the job goes on (dsort_cleanup_usr1_speaker).
 * Paths are copied into fixed static slots, so that the handler needs no allocation.
 * Registration blocks those signals while it edits the list. Local; process-wide state.
 */
#ifndef DSORT_CLEANUP_H
#define DSORT_CLEANUP_H

#include <pthread.h>
#include <stddef.h>

#include "error.h"

#define DSORT_CLEANUP_SLOTS 256
#define DSORT_CLEANUP_PATH_MAX 4096

/* Install the signal handlers and the atexit hook (idempotent); call it from the main thread:
 * a handled signal that another thread takes (one of MPI's) is passed on to it. A handled
 * signal whose disposition is SIG_IGN when this is called (nohup, trap '' HUP) is left
 * ignored. */
void dsort_cleanup_install(void);

/* Note which handled signals are ignored now; call it first thing in main, before MPI_Init
 * (which may install handlers of its own), so that install keeps those ignored. */
void dsort_cleanup_remember_ignored(void);

/* pthread_create with the handled signals blocked in the new thread, so that a signal is
 * handled by a thread that does not block it (the main thread), never by a helper thread
 * while main goes on. Every helper thread of the project is created through this. name
 * (at most 15 characters, e.g. "dsort-writer"; may be NULL) names the thread for ps, top and
 * the tests. Returns pthread_create's result. */
int dsort_cleanup_thread_create(pthread_t *tid, void *(*fn)(void *), void *arg, const char *name);

/* The stack each thread of dsort_cleanup_thread_create gets: small, so that a tight
 * address-space limit (ulimit -v) still has room for the threads. */
#define DSORT_CLEANUP_THREAD_STACK (1024 * 1024)

/* Record in err (DSORT_ENOMEM) that the thread what ("a writer thread") could not be started,
 * rc being dsort_cleanup_thread_create's result; for EAGAIN and ENOMEM the message names the
 * likely cause, the limits ulimit -v and ulimit -u, and their values. Returns DSORT_ENOMEM. */
enum dsort_status dsort_cleanup_thread_error(struct dsort_error *err, int rc, const char *what);

/* What a registered path is: removed in this order: files, markers, directories. */
#define DSORT_CLEANUP_FILE 0
#define DSORT_CLEANUP_DIR 1    /* empty by the time it is removed */
#define DSORT_CLEANUP_MARKER 2 /* a file that must outlive the others (an owner file) */
#define DSORT_CLEANUP_SERIES 3 /* numbered files in a directory: see add_series */

/* Register a path (is_dir: DSORT_CLEANUP_FILE, _DIR or _MARKER) for removal. DSORT_ENOMEM if
 * all slots are taken. */
enum dsort_status dsort_cleanup_add(const char *path, int is_dir, struct dsort_error *err);

/* Register the numbered files dir/<name><N> for N in [0, *count), N written with `digits`
 * digits (e.g. "run-000042"): however many a job makes, they take one slot. *count is read
 * when cleaning up, so it may grow; it must stay valid until the series is forgotten (by
 * dsort_cleanup_forget(dir)). Missing files are fine. Removed before everything else. */
enum dsort_status dsort_cleanup_add_series(const char *dir, const char *name, int digits,
                                           const volatile unsigned *count, struct dsort_error *err);

/* Forget a path (it was committed or removed by its owner). Unknown paths are ignored. */
void dsort_cleanup_forget(const char *path);

/* Remove everything registered now. Async-signal-safe. */
void dsort_cleanup_run(void);

/* Stop mode (--checkpoint, while a job can keep its work): SIGUSR1 does not clean up and stop
 * but only sets a flag that the job reads at its next safe point (stop_requested), where it
 * keeps a checkpoint and exits. The other signals are unchanged. */
void dsort_cleanup_stop_mode(int on);
int dsort_cleanup_stop_requested(void);

/* SIGUSR1 outside stop and keep mode (no checkpoint to write) neither cleans up nor stops:
 * the job goes on, and a process made the speaker (on != 0: rank 0, so that a job says it
 * once) prints "<prefix>SIGUSR1 (the time-limit warning) in the PHASE phase: there is no
 * checkpoint to write (see --checkpoint), so the sort goes on", once. */
void dsort_cleanup_usr1_speaker(int on);

/* Keep mode (a job whose temp directories hold a valid checkpoint, see --checkpoint): from
 * now on a handled signal removes only what is registered outside the n directories dirs
 * (copied; at most DSORT_CLEANUP_KEEP_MAX), leaving them and everything registered in them
 * (runs, the checkpoint, owner files), says so, and ends the process: SIGUSR1 (when not taken
 * by stop mode), SIGTERM, SIGUSR2, SIGXCPU and SIGXFSZ with exit status 3 (stopped, resumable),
 * SIGINT and SIGHUP by their default action. dsort_cleanup_run (errors, exit) still removes
 * everything. n 0 ends keep mode. Paths longer than DSORT_CLEANUP_PATH_MAX are refused with
 * DSORT_EINVAL (keep mode then unchanged). */
#define DSORT_CLEANUP_KEEP_MAX 16
enum dsort_status dsort_cleanup_keep_dirs(char *const *dirs, size_t n, struct dsort_error *err);

/* Mapped input files (mapin.h). A read through a file's shared mapping beyond the file's end
 * raises SIGBUS: the file shrank while it was mapped (or its disk failed). While a mapping is
 * watched, a SIGBUS at an address inside it removes everything registered, prints
 * "<prefix>'PATH' changed while it was being sorted (...)" in one line and ends the process
 * with exit status 2; a SIGBUS anywhere else takes its default action. At most
 * DSORT_CLEANUP_MAPS watched at once (DSORT_ENOMEM beyond); path is copied. */
#define DSORT_CLEANUP_MAPS 8
enum dsort_status dsort_cleanup_watch_map(const void *base, size_t len, const char *path,
                                          struct dsort_error *err);
/* Stop watching the mapping at base (before it is unmapped). Unknown bases are ignored. */
void dsort_cleanup_unwatch_map(const void *base);

/* The signal that interrupted us, or 0. Set before the handler cleans up. */
int dsort_cleanup_signal(void);

/* What the handler prints before it re-raises: "<prefix>stopped by SIGTERM in the <phase>
 * phase; temp files removed, no output written". Both strings are copied (prefix) or kept
 * (phase: must be a string literal or otherwise live forever). Without a prefix the handler
 * prints nothing. */
void dsort_cleanup_set_prefix(const char *prefix);
void dsort_cleanup_set_phase(const char *phase);

/* The output is committed (published, complete): from now on the handler says "<prefix>
 * stopped by SIGTERM after the output was committed; the output is complete" instead of
 * claiming that nothing was written, and still ends the process by the signal. */
void dsort_cleanup_set_committed(void);

#endif
