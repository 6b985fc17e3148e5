/* losertree.h - the k-way loser tree that every merge of dsort runs on (fixed records in
 * merge.c, text lines in lines.c).
 *
 * The tree has k leaves, one per sorted input (0..k-1); inner nodes 1..k-1 hold the loser of
 * the match played there and `w` is the overall winner: the input whose current item comes
 * first. After the winner's item is taken and its input has moved on, replay plays the matches
 * on the path from its leaf to the root again: log2(k) comparisons per item, half of a binary
 * heap's. The order is given by before(ctx, a, b): is input a's current item before input b's?
 * It must put exhausted inputs after everything and break ties by input index, so that the
 * merge is stable and the winner is exhausted only when all are.
 *
 * Header-only (static inline), so that each merge's before() is inlined into its loop. Local,
 * single-threaded. The only error is DSORT_ENOMEM from init.
 */
#ifndef DSORT_LOSERTREE_H
#define DSORT_LOSERTREE_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "error.h"

typedef int (*dsort_losertree_before)(const void *ctx, size_t a, size_t b);

struct dsort_losertree {
    size_t *t; /* losers at nodes 1..k-1 (NULL when k < 2) */
    size_t k;
    size_t w; /* the winner */
};

static inline size_t dsort_losertree_build_(struct dsort_losertree *lt,
                                            dsort_losertree_before before, const void *ctx,
                                            size_t node)
{
    if (node >= lt->k)
        return node - lt->k;
    size_t l = dsort_losertree_build_(lt, before, ctx, 2 * node);
    size_t r = dsort_losertree_build_(lt, before, ctx, 2 * node + 1);
    if (before(ctx, l, r)) {
        lt->t[node] = r;
        return l;
    }
    lt->t[node] = l;
    return r;
}

/* Play the first matches (every input positioned on its first item). */
static inline enum dsort_status dsort_losertree_init(struct dsort_losertree *lt, size_t k,
                                                     dsort_losertree_before before, const void *ctx,
                                                     struct dsort_error *err)
{
    lt->k = k;
    lt->w = 0;
    lt->t = NULL;
    if (k < 2)
        return DSORT_OK;
    if (!(lt->t = malloc(k * sizeof *lt->t)))
        return DSORT_ERR(err, DSORT_ENOMEM, errno, "cannot allocate the merge state");
    lt->w = dsort_losertree_build_(lt, before, ctx, 1);
    return DSORT_OK;
}

/* The winner has moved to its next item (or is exhausted): find the new winner. */
static inline void dsort_losertree_replay(struct dsort_losertree *lt, dsort_losertree_before before,
                                          const void *ctx)
{
    size_t w = lt->w;
    for (size_t node = (w + lt->k) / 2; node >= 1; node /= 2) {
        if (before(ctx, lt->t[node], w)) {
            size_t x = lt->t[node];
            lt->t[node] = w;
            w = x;
        }
    }
    lt->w = w;
}

static inline void dsort_losertree_free(struct dsort_losertree *lt)
{
    free(lt->t);
    lt->t = NULL;
}

#endif
