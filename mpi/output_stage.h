/* output_stage.h - the output's stage, inside the MPI layer (output.c calls it; output.h has
 * the contract of open and commit). The stage owner (rank 0, or with --local-output the first
 * rank of each node) resolves the target's links, refuses what cannot be replaced (a device,
 * FIFO, socket, a file mounted on, a non-empty DIR, a name too long), sweeps the temps that
 * killed jobs left, and creates the temp file or staging directory. */
#ifndef DSORT_OUTPUT_STAGE_H
#define DSORT_OUTPUT_STAGE_H

#include "output.h"

/* Local (the stage owner alone). Fills o->target, o->stage and, for -o FILE, null_sink,
 * keep_mode and what the commit compares (target_existed, _dev, _ino); for -O DIR, inside.
 * The temp file is sized to total bytes and keeps an existing file's mode, owner and kept
 * attributes (a warning on c when one cannot be copied). What it created is registered with
 * the cleanup module. Returns DSORT_OK, or a status with err set; when the stage was created
 * before the failure, o->stage names it (open's caller then owns it and removes it). */
enum dsort_status dsort_output_stage_create(const struct dsort_comm *c, struct dsort_output *o,
                                            uint64_t total, struct dsort_error *err);

#endif
