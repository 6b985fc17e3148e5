/* ext_job.h - the out-of-core pipeline for fixed records: its state, shared by job_ext.c
 * (memory plan, splitters, rounds of read, sort, exchange and spill; the merge phase is the
 * skeleton's, ooc_merge.c). Internal to src/pipeline/.
 */
#ifndef DSORT_EXT_JOB_H
#define DSORT_EXT_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "keysort.h"
#include "merge.h"
#include "ooc.h"
#include "output.h"
#include "recfmt.h"
#include "runmerge.h"
#include "runset.h"
#include "tempdir.h"

struct ext {
    struct dsort_ooc j; /* the skeleton's state (ooc.h) */
    size_t rs, irs;     /* record size in the input and in flight (irs = rs + 8 when tagged) */
    int tagged;
    struct dsort_cmp cmp; /* on in-flight records */
    size_t ks;            /* composite key bytes */
    uint64_t budget;      /* the smallest memory budget of all ranks (the plan's, memplan.h) */
    unsigned char *splitters;
    uint64_t first, n; /* this rank's share of the inputs it opened */
    uint64_t g0;       /* global position of its first record */
    uint64_t chunk;    /* records per chunk */
    size_t block;
    size_t abytes, bbytes, ebytes; /* A also receives: 1/16 more than a chunk */
    unsigned char *a, *b;
    struct dsort_sortent *ents, *scratch; /* scratch only when records are < 16 bytes */
    /* stop and resume (job_ckpt.c) */
    uint64_t consumed; /* records of the share read by earlier runs of a resumed job */
    uint64_t ck_upto;  /* --checkpoint: the records of the share the checkpoint has consumed */
};

#endif
