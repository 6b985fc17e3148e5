/* progress.h - --progress: one line on rank 0's stderr saying how far the job is, for users
 * who watch a long sort or read its Slurm log.
 *
 *   dsort: [2026-12-03T21:50:01]  42% exchange     0.64 GB of 1.00 GB  206.3 MB/s  ETA 0:00:04
 *
 * (the time of day only off a terminal). Bytes and rates are the input's: the work done over
 * the job's passes, in decimal units, as -v and dsort-report count them.
 *
 * The percentage is of all ranks' work: a job is a number of passes over all ranks' input
 * bytes (in memory: read, exchange, write; out of core: the rounds, then the final merge), and
 * the pipelines report the bytes every rank has done at points where the ranks are together
 * anyway (after a round, after a phase), where the figures are summed on rank 0 (one
 * MPI_Reduce of 8 bytes, only with --progress). Between those points rank 0 may refine the
 * line from its own progress in a long local phase (the read and the sort in memory, the final
 * merge's writing), assuming its share is like the others'. The rate is bytes of work a second
 * since the start. The ETA comes from measured rates, not from equal shares of the time per
 * pass: the rest of the pass under way at that pass's own rate so far, the passes after it at
 * the rate of the passes done (until one is done, at the current pass's rate).
 *
 * On a terminal (rank 0's stderr, or that of the launcher that started it: mpirun forwards the
 * ranks' output through pipes) the line is redrawn in place (carriage return) at most 4 times a
 * second; otherwise (a log) a new line is written when `interval` seconds have passed since the
 * last one (0: at every step). The last line says 100% and ends the line. Without --progress every
 * function returns at once, on every rank (all ranks have the same options).
 *
 * Collective where marked (every rank calls it at the same point); the rest is local. One job
 * a process: the state is this module's. Nothing here fails: progress is never an error.
 */
#ifndef DSORT_PROGRESS_H
#define DSORT_PROGRESS_H

#include <stdint.h>

#include "comm.h"

/* Collective: start with this rank's input bytes (summed over the ranks) and the job's
 * passes over them. interval < 0: off. */
void dsort_progress_start(const struct dsort_comm *c, double interval, uint64_t mine, int passes);
/* Collective: this rank has done `done` bytes of work so far (all passes, cumulative); phase
 * names what it is doing now. */
void dsort_progress_step(const struct dsort_comm *c, const char *phase, uint64_t done);
/* Local: rank 0's own figure within a long phase: it has done `done` bytes of work so far
 * (as in step); the others are taken to be as far. Cheap enough for every block. */
void dsort_progress_local(const char *phase, uint64_t done);
/* Local, called by the phase clock (phase.c) as each phase begins and ends. In memory (fixed
 * records: four passes) the read and the sort are each a pass over the rank's input, and on
 * rank 0 the line moves inside them: the read by the bytes the process has read (rchar), or
 * with the input mapped faulted in (RssFile), sampled 5 times a second by a thread of its own;
 * the sort by the sort's own steps (keysort.h, lines.h). A job of other passes (text lines in
 * memory: two) says where its read and sort lie with dsort_progress_window. Elsewhere they
 * return at once. */
void dsort_progress_phase_begin(const char *phase);
void dsort_progress_phase_end(void);
/* Local: the next phase named `phase` ("read" or "sort"; anything else is ignored) covers
 * rank 0's figures [from, to) (bytes of work, as in step), and the line moves inside it as in
 * the four passes in memory. io (read only): the share of the read that the watcher's bytes
 * read measure (1: all of it; 0: no watcher, the read reports itself); the rest comes from the
 * read's own word (dsort_progress_within). For the next such phase only; without one, a job of
 * four passes takes each phase as a pass, and any other job does not move inside them. Call it
 * on every rank (it returns at once except on rank 0 with --progress). */
void dsort_progress_window(const char *phase, uint64_t from, uint64_t to, double io);
/* Local: the phase under way (a read or a sort being watched) is frac (0..1) done by its own
 * count (e.g. blocks indexed); the line moves at once, and keeps the further of this and the
 * watcher's bytes read (a lock orders the two threads). Cheap enough for every block;
 * elsewhere (not rank 0, no --progress, no phase watched) it returns at once. */
void dsort_progress_within(double frac);
/* Local: the job is over. ok: rank 0 prints 100% and the time taken; failed: a line redrawn
 * on a terminal is ended, so that the error starts a line of its own. */
void dsort_progress_finish(int ok);

#endif
