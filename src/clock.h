/* clock.h - monotonic wall-clock time for phase timings. Local, thread-safe. */
#ifndef DSORT_CLOCK_H
#define DSORT_CLOCK_H

/* Seconds since an arbitrary fixed point (CLOCK_MONOTONIC). */
double dsort_clock_now(void);

#endif
