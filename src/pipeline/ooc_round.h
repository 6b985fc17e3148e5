/* ooc_round.h - the out-of-core rounds, written once for every record format (ooc_round.c):
 * the loop (read a chunk of the share, one round, a checkpoint at its end, until every rank's
 * share is read) and one round (sort and frame the chunk, send every piece to its owner in
 * waves that fit the receiver's buffer, spill each wave into a run). What differs between
 * formats: the wave policy, sorting a chunk, cutting it after the splitters and framing its
 * pieces are in the engine's table (recfmt.h: wave_split, sort_chunk, cut, frame); reading a
 * chunk, lending the buffers the table's operations work in, timing them, and the end of a
 * round are the format pipeline's glue (struct dsort_ooc_round_ops, ooc_fixed.c and
 * ooc_lines.c). Internal to src/pipeline/. Collective where marked.
 */
#ifndef DSORT_OOC_ROUND_H
#define DSORT_OOC_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "ooc.h"

/* A round's send side, framed by the format: the piece for rank d is count[d] bytes at
 * buf + displ[d]; and its receive side: what a wave receives lands in rbuf (rsize bytes), at
 * most cap bytes a wave (whole pieces larger than rsize get memory of their own). */
struct dsort_ooc_send {
    unsigned char *buf;
    uint64_t *count, *displ; /* [p], set by the round; filled by frame */
    unsigned char *rbuf;
    uint64_t rsize, cap;
    size_t unit;     /* split waves cut pieces between records of unit bytes */
    uint64_t own;    /* bytes of buf to free after the round (dsort_mem_free; 0: the format's) */
    uint64_t rtotal; /* set by the round: the bytes this rank receives in the round */
};

/* A wave's pieces: the non-empty ones, in source order, in buf (off, len). waves: the round's
 * waves (whole pieces: known before the first; split pieces: 0). */
struct dsort_ooc_wave {
    unsigned char *buf;
    const uint64_t *off, *len;
    size_t n;
    void *cur; /* n cursors of the format over the pieces (recfmt.h's cursor_memory) */
    int wave, waves;
    uint64_t rtotal; /* the round's bytes received (every wave) */
};

struct dsort_ooc_round_ops {
    /* Collective: read the share's next chunk (counted in the stats); *more: whether any rank
     * has more to read after it. Agrees. */
    enum dsort_status (*read)(void *x, int *more);
    /* Local: sort the chunk, cut it and frame its pieces through the format's table (recfmt.h's
     * sort_chunk, cut, frame), setting s->buf, count, displ, rbuf, rsize, cap, unit, own;
     * timing its own phases. */
    enum dsort_status (*frame)(void *x, struct dsort_ooc_send *s);
    /* Collective: what a wave's pieces become; NULL: a run spilled (dsort_ooc_spill). */
    enum dsort_status (*wave)(void *x, const struct dsort_ooc_wave *w);
    /* Local: the share read so far (--progress's "rounds" figure). */
    uint64_t (*done)(void *x);
    /* Local, may be NULL: a checkpoint is about to be taken at the round's end (the format
     * notes the position its fill saves). */
    void (*mark)(void *x);
    /* Local, may be NULL: whether the round wrote the output (then no checkpoint); the same
     * on every rank. */
    int (*wrote)(void *x);
    /* Collective, may be NULL: before the next round. Agrees. */
    enum dsort_status (*next)(void *x);
};

/* Collective: one round of the format f: frame the chunk, exchange it in waves (f's policy),
 * spill or hand on every wave. Agrees. */
enum dsort_status dsort_ooc_round(struct dsort_ooc *j, const struct dsort_recfmt *f,
                                  const struct dsort_ooc_round_ops *ops, void *x);

/* Local, at the start: the format's context (copied to j->fx) and the run files' merge over
 * j's runs in blocks of block bytes (runmerge.h); under --checkpoint every extra pass rewrites
 * the checkpoint (dsort_ooc_ckpt_pass). */
void dsort_ooc_runs_init(struct dsort_ooc *j, const struct dsort_recfmt *f,
                         const struct dsort_recfmt_ctx *fx, size_t block);

/* Collective: the rounds, while more (agreed) and not stopped with a checkpoint; a checkpoint
 * at the end of every round under --checkpoint, and a stop when asked for (j->stopped):
 * SIGUSR1 stops at a round's end (cleanup.h's stop mode, for the rounds only). Agrees. */
enum dsort_status dsort_ooc_rounds(struct dsort_ooc *j, const struct dsort_recfmt *f,
                                   const struct dsort_ooc_round_ops *ops, void *x, int more);

#endif
