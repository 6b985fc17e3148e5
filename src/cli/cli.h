/* cli.h - what the three programs share: start-up, option values, the version. */
#ifndef DSORT_CLI_H
#define DSORT_CLI_H

#include <stdint.h>

#include "comm.h"

#define DSORT_VERSION "0.1.0"

/* MPI_Init, install the temp-file cleanup handlers, fill c for MPI_COMM_WORLD. */
void dsort_cli_start(int *argc, char ***argv, struct dsort_comm *c, const char *prog);

/* Leave: MPI_Finalize and return code for main. If code is 2 after an agreed error, all
 * ranks return 2, so mpirun's exit status is 2. */
int dsort_cli_finish(int code);

/* Print a usage error (rank 0 only) and return 2. */
int dsort_cli_usage_error(const struct dsort_comm *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parse a non-negative decimal count; -1 on a bad value. */
int dsort_cli_parse_u64(const char *s, uint64_t *out);

/* MPI-IO and some file systems mishandle one-character relative names; "./f" is safe. */
const char *dsort_cli_norm_path(const char *path, char *buf, size_t len);

#endif
