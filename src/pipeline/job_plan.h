/* job_plan.h - --plan: what the job will do, printed before it does any of it (docs/plan.md).
 * Above job_topo (the nodes' plans) and job_space (the space estimate). Internal to
 * src/pipeline/.
 */
#ifndef DSORT_JOB_PLAN_H
#define DSORT_JOB_PLAN_H

#include "comm.h"

struct dsort_job_topo;
struct dsort_job_space;

/* Rank 0 prints the job's space estimate sp (job_space.h) and every node's plan (text or
 * JSON, docs/plan.md). Collective; returns the exit code (agreed). */
int dsort_job_plan_print(const struct dsort_comm *c, struct dsort_job_topo *t,
                         const struct dsort_job_space *sp, int json);

#endif
