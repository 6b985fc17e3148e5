/* roofline.h - a roofline for one dsort run (issue 27): per phase group, the busiest resource
 * (a disk's reads, its writes, the network, the CPU), its floor (the bytes the group moved on it
 * over its rate) and the group's time as a multiple of that floor; and the same for the whole
 * job, as if every phase overlapped. tests/bench/roofline.py computes the same table from a
 * --stats file and is the oracle of this module (tests/unit/roofline_oracle.py).
 *
 * Phase groups (a group's time: the slowest rank's sum of its phases):
 *   read sample, read | sort sort, splitters | exchange | spill | output merge, final_merge,
 *   write, commit.
 * Rates, in bytes a second, given (dsort_roofline_rates_parse: "KEY=MB/s" items, MB = 10^6
 * bytes) or measured:
 *   DISK.read, DISK.write  separate read and write limits (DISK: the block name, or * for all)
 *   DISK                   one rate for reads and writes together
 *   net                    each node's link, each way
 *   cpu                    MB of records sorted a second per core (the sort group)
 * A disk without a given rate gets the block layer's: its bytes over the job over its busy
 * seconds. The network and the CPU have no floor without a given rate. Network bytes: each
 * node's sent or received bytes (the larger, the busiest node), the part that crossed to other
 * nodes estimated as if keys were uniform when a node runs several ranks. Disks are per node
 * (the node's first rank's view), except a shared disk (one device every node sees), counted
 * once. A group whose largest floor is under a millisecond names no busiest resource.
 *
 * Local and pure: no I/O except the writers below, no MPI. "None" is -1 in the results.
 */
#ifndef DSORT_ROOFLINE_H
#define DSORT_ROOFLINE_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

#define DSORT_ROOFLINE_GROUPS 5
#define DSORT_ROOFLINE_KEY 64   /* a rate's key or a shared disk's name, with its NUL */
#define DSORT_ROOFLINE_RATES 32 /* at most this many rates, and shared disks */
#define DSORT_ROOFLINE_NAME 160 /* a resource's name, with its NUL */
#define DSORT_ROOFLINE_MIN_FLOOR 0.001

/* "read", "sort", "exchange", "spill", "output". */
extern const char *const dsort_roofline_group_names[DSORT_ROOFLINE_GROUPS];

/* The group of phase name (dsort's phase names, dsort(1) PHASES), or -1 if none. */
int dsort_roofline_group_of(const char *phase);

/* Given rates (bytes a second, later keys replacing earlier ones) and shared disks. */
struct dsort_roofline_rates {
    size_t n, nshared;
    char key[DSORT_ROOFLINE_RATES][DSORT_ROOFLINE_KEY];
    double rate[DSORT_ROOFLINE_RATES];
    char shared[DSORT_ROOFLINE_RATES][DSORT_ROOFLINE_KEY];
};

/* Add the rates in s ("KEY=MB/s" items separated by spaces or commas; NULL or "" adds none)
 * to r (zero it first). DSORT_EINVAL (r then holds the items before the bad one) for an item
 * without '=', a value that is not a positive finite number, a key too long, too many keys. */
enum dsort_status dsort_roofline_rates_parse(struct dsort_roofline_rates *r, const char *s,
                                             struct dsort_error *err);
/* Add the shared disks named in s (separated by spaces or commas) to r; DSORT_EINVAL for a
 * name too long or too many. */
enum dsort_status dsort_roofline_shared_parse(struct dsort_roofline_rates *r, const char *s,
                                              struct dsort_error *err);
/* The given rate of key in bytes a second, 0 if not given. */
double dsort_roofline_rate(const struct dsort_roofline_rates *r, const char *key);

/* One rank's view of one disk: bytes per group, and the block layer's figures over the job. */
struct dsort_roofline_disk {
    const char *name;
    double read[DSORT_ROOFLINE_GROUPS], written[DSORT_ROOFLINE_GROUPS];
    double job_bytes;    /* read and written over the job */
    double busy_seconds; /* the seconds it had I/O in flight over the job */
};

struct dsort_roofline_rank {
    const char *host;
    double seconds[DSORT_ROOFLINE_GROUPS]; /* the sum of the group's phases */
    const struct dsort_roofline_disk *disk;
    size_t ndisks;
    double bytes_sent, bytes_received, bytes_read;
};

struct dsort_roofline_input {
    const struct dsort_roofline_rank *rank;
    size_t nranks;
    double seconds; /* the job's */
    /* The cores of each node by host name (the plan's); a host not listed counts its ranks. */
    const char *const *core_host;
    const double *cores;
    size_t ncore_hosts;
};

struct dsort_roofline_resource {
    char name[DSORT_ROOFLINE_NAME]; /* "disk vda r+w", "disk n1:sda read", "network", "cpu" */
    const char *source;             /* "given", "measured" or "none" */
    double rate;                    /* bytes a second, -1 none */
    double bytes[DSORT_ROOFLINE_GROUPS];
    int estimated; /* network bytes estimated (several ranks on a node) */
};

struct dsort_roofline_row {
    int group;
    double seconds;
    int busiest;         /* index into res, -1 none */
    double floor, ratio; /* -1 none */
};

struct dsort_roofline {
    struct dsort_roofline_resource *res;
    size_t nres;
    struct dsort_roofline_row row[DSORT_ROOFLINE_GROUPS]; /* groups that took time or moved */
    size_t nrows;
    double seconds;
    int busiest;         /* over the whole job, -1 none */
    double floor, ratio; /* the busiest resource's floor over the job, -1 none */
    double serial_floor; /* the sum of the rows' floors (phases one after the other) */
    double serial_ratio; /* -1 none */
};

/* The roofline of in with the rates r into *out (free with dsort_roofline_free). DSORT_ENOMEM
 * (*out empty) if an allocation fails. */
enum dsort_status dsort_roofline_compute(const struct dsort_roofline_input *in,
                                         const struct dsort_roofline_rates *r,
                                         struct dsort_roofline *out, struct dsort_error *err);
void dsort_roofline_free(struct dsort_roofline *rl);

/* Resource i's floor in group g (g -1: over the job), in seconds; -1 without a rate. */
double dsort_roofline_floor(const struct dsort_roofline *rl, size_t i, int g);

/* The table as the members of a JSON object, without its braces (roofline.py --json's fields,
 * names escaped): each line starts with indent and a space, the last ends without a newline. */
void dsort_roofline_json(FILE *f, const struct dsort_roofline *rl, const char *indent);

/* The short text block of -v: each line starts with prefix. */
void dsort_roofline_print(FILE *f, const char *prefix, const struct dsort_roofline *rl);

#endif
