/* launcher.h - where a launcher (mpirun, mpiexec) writes this process's output.
 *
 * Under mpirun, a rank's standard output and error are pipes or pseudo-terminals to the
 * launcher, which writes what it reads to its own descriptors (the user's terminal or files)
 * and reports no error doing so: a full disk loses the bytes without a word. Where that
 * launcher runs on this node and started this process (directly, or through a proxy of its
 * own such as MPICH's hydra_pmi_proxy), its descriptors can be seen in /proc, so that a rank
 * can tell a terminal from a file and watch what the launcher wrote. Local; Linux /proc.
 */
#ifndef DSORT_LAUNCHER_H
#define DSORT_LAUNCHER_H

#include <stddef.h>
#include <sys/types.h>

/* The pid of the launcher that writes this process's output (its /proc/PID/fd and fdinfo show
 * where to and how far): the parent when it is mpirun or mpiexec (Open MPI's, MPICH's Hydra),
 * or the parent of a Hydra proxy. -1 when no such launcher started this process here (srun's
 * slurmstepd, an orted relaying to a remote mpirun, a shell): its destination cannot be seen. */
pid_t dsort_launcher_pid(void);

#endif
