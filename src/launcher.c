#include "launcher.h"

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* The launchers that write their ranks' output themselves, by the names /proc/PID/comm shows
 * (the name they were started by, at most 15 characters). orted and prted are not among them:
 * they relay the output to an mpirun elsewhere. */
static const char *const writers[] = {
    "mpirun",          "mpiexec",       "orterun",       "prterun",      "mpirun.openmpi",
    "mpiexec.openmpi", "mpiexec.hydra", "mpiexec.mpich", "mpirun.mpich", NULL};
/* Proxies that a launcher puts between itself and its ranks on its own node. */
static const char *const proxies[] = {"hydra_pmi_proxy", NULL};

/* The name (comm) and parent of process pid; -1 if it cannot be read. */
static int proc_info(pid_t pid, char *comm, size_t len, pid_t *ppid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[512];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    /* "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, so up to the last ')' */
    char *open = ok ? strchr(line, '(') : NULL, *close = ok ? strrchr(line, ')') : NULL;
    long parent = 0;
    if (!open || !close || close < open || sscanf(close + 1, " %*c %ld", &parent) != 1)
        return -1;
    size_t n = (size_t)(close - open - 1);
    n = n < len - 1 ? n : len - 1;
    memcpy(comm, open + 1, n);
    comm[n] = '\0';
    *ppid = (pid_t)parent;
    return 0;
}

static int listed(const char *const *names, const char *comm)
{
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(names[i], comm))
            return 1;
    return 0;
}

pid_t dsort_launcher_pid(void)
{
    pid_t pid = getppid(), up;
    char comm[64];
    for (int depth = 0; depth < 3 && pid > 1; depth++, pid = up) {
        if (proc_info(pid, comm, sizeof comm, &up))
            return -1;
        if (listed(writers, comm))
            return pid;
        if (!listed(proxies, comm))
            return -1;
    }
    return -1;
}
