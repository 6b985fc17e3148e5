/* job_topo.h - the program's use of the topology layer (job_topo.c): the node's plan,
 * device-parallel reading within stream limits, the temp dirs in the order the plan prefers,
 * --plan, --bind and the per-device figures of --stats. Collective where marked; the rest is
 * local. t may be NULL where said (no plan: o's order, st_dev grouping).
 */
#ifndef DSORT_JOB_TOPO_H
#define DSORT_JOB_TOPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "comm.h"
#include "io.h"
#include "tempdir.h"

struct dsort_job_options;

/* The node's plan. Collective over comm (every rank calls it). On another node rank's failure
 * *t is NULL and DSORT_OK returned: the caller agrees (dsort_comm_agree) and gets that rank's
 * status. */
struct dsort_job_topo;
enum dsort_status dsort_job_topo_create(const struct dsort_comm *c,
                                        const struct dsort_job_options *o,
                                        const struct dsort_inputs *in, struct dsort_job_topo **t,
                                        struct dsort_error *err);
void dsort_job_topo_destroy(struct dsort_job_topo *t);
/* What discovery could not tell (for -v), or NULL. */
const char *dsort_job_topo_note(const struct dsort_job_topo *t);
/* The first time this rank read a device without its turn (a token holder passed after the
 * bound, a lock file refused), for -v; NULL if it never did. */
const char *dsort_job_topo_token_note(const struct dsort_job_topo *t);
/* Read records [first, first + count) of the inputs into dest, one thread per device, within
 * the devices' stream limits; adds to this rank's per-device figures. Local. */
enum dsort_status dsort_job_topo_read(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                      uint64_t first, uint64_t count, unsigned char *dest,
                                      struct dsort_error *err);
/* dsort_job_topo_read, but a piece that ends at the end of input file i is followed in dest by
 * pad[i] bytes that are left as they are (text lines: room for the eol that a file's last line
 * lacks, so that several files are read at once). pad NULL: none. Local. */
enum dsort_status dsort_job_topo_read_padded(struct dsort_job_topo *t,
                                             const struct dsort_inputs *in, uint64_t first,
                                             uint64_t count, unsigned char *dest,
                                             const unsigned char *pad, struct dsort_error *err);
/* dsort_job_topo_read, a MiB or so at a time: each piece of dest is faulted in just before it
 * is read and handed to each(arg, piece, len) just after, on the thread that read it (a share
 * on several devices calls it from several threads at once). Local. */
enum dsort_status dsort_job_topo_read_each(struct dsort_job_topo *t, const struct dsort_inputs *in,
                                           uint64_t first, uint64_t count, unsigned char *dest,
                                           void (*each)(void *arg, unsigned char *piece,
                                                        size_t len),
                                           void *arg, struct dsort_error *err);
/* The mapped input file i: fault in bytes [off, off + len) of map (dsort_inputs_populate),
 * taking the turn on the file's device that a read would take, so that ranks mapping one
 * disk do not read it with more streams than its limit when the page cache lacks the data.
 * Local. */
enum dsort_status dsort_job_topo_populate(struct dsort_job_topo *t, size_t i,
                                          const struct dsort_input_map *map, uint64_t off,
                                          uint64_t len, struct dsort_error *err);
/* The physical disk of each of the n temp dirs (as dsort_job_topo_temp_dirs gives them), as a
 * number per disk (the plan's device index), into devs. Returns 0 (devs untouched) when t is
 * NULL or has no plan for this rank: then the file systems' st_dev decide (tempdir.h). */
int dsort_job_topo_temp_devices(const struct dsort_job_topo *t, char *const *dirs, size_t n,
                                uint64_t *devs);
/* The number of disks under the job's temp dirs (at least 1), by the topology where there is
 * one, else by st_dev, at most DSORT_RUN_MAX_STRIPES: the files of a run striped over them
 * (runfile.h), for planning memory. */
size_t dsort_job_temp_disks(const struct dsort_job_options *o);
/* This rank's temp dirs, preferred first, avoiding the devices it reads when possible. out
 * needs o->ntemp entries. t may be NULL (then: o's order). */
void dsort_job_topo_temp_dirs(const struct dsort_job_topo *t, const struct dsort_job_options *o,
                              char **out, size_t *n);
/* --bind: bind near the NUMA node of the rank's devices, unless the launcher bound it. */
void dsort_job_topo_bind(const struct dsort_job_topo *t, const struct dsort_comm *c, int verbose);
/* Node leaders pack their plans (with the node's measured figures per device, when
 * with_stats); rank 0 gathers them. Returns the unpacked nodes on rank 0, *count of them
 * (NULL elsewhere, and on rank 0 when any rank ran out of memory: then nothing is gathered,
 * on every rank alike); dsort_job_topo_free_plans frees them. Collective. */
struct dsort_plan_node;
struct dsort_plan_node **dsort_job_topo_gather(const struct dsort_comm *c, struct dsort_job_topo *t,
                                               int with_stats, size_t *count);
void dsort_job_topo_free_plans(struct dsort_plan_node **nodes, size_t n);
/* --stats: rank 0 writes every node's plan with measured bytes and seconds per device to f
 * (NULL elsewhere). Collective. */
void dsort_job_topo_write_stats(const struct dsort_comm *c, struct dsort_job_topo *t, FILE *f);

/* Local: this rank's per-job temp directories for spilled runs, under the -T dirs that the
 * node's plan prefers (devices the rank does not read first). job: the same on every rank. */
enum dsort_status dsort_job_tempdirs(const struct dsort_job_options *o, const char *job, int rank,
                                     struct dsort_tempdirs *td, struct dsort_error *err);
/* Local: the -T dirs in the order this rank uses them (as dsort_job_tempdirs does): a new
 * array of *n borrowed strings, to free(); NULL when out of memory. */
char **dsort_job_temp_order(const struct dsort_job_options *o, size_t *n);
/* Local: after create or adopt of td over temps (dsort_job_temp_order's), group its directories
 * by physical disk where the topology knows them (dsort_tempdirs_regroup). */
void dsort_job_regroup_temps(const struct dsort_job_options *o, char *const *temps, size_t n,
                             struct dsort_tempdirs *td);

#endif
