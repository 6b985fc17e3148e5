# shellcheck shell=bash
# Sourced by the scripts: settings that mpirun needs on these machines, per MPI.
# DSORT_MPI=openmpi|mpich picks an implementation by the names Debian gives its programs
# (mpicc.openmpi, mpiexec.openmpi; mpicc.mpich, mpiexec.mpich), whatever update-alternatives
# makes mpicc and mpirun; unset, mpicc and mpiexec are used as they are (Open MPI on Debian).
# Sets DSORT_MPICC, DSORT_MPIEXEC and DSORT_MPIEXEC_PREFLAGS (the launcher's flags that let a
# small machine run more ranks than cores).
case ${DSORT_MPI:-} in
openmpi | mpich)
    DSORT_MPICC=/usr/bin/mpicc.$DSORT_MPI
    DSORT_MPIEXEC=/usr/bin/mpiexec.$DSORT_MPI
    ;;
"")
    DSORT_MPICC=mpicc
    DSORT_MPIEXEC=mpiexec
    ;;
*)
    echo "env.sh: DSORT_MPI must be openmpi or mpich, not '$DSORT_MPI'" >&2
    return 2
    ;;
esac
if [ "${DSORT_MPI:-}" = mpich ]; then
    # MPICH's hydra runs as root and more ranks than cores as it is; on one machine it forks
    # its ranks (no ssh, nor srun inside a Slurm allocation).
    DSORT_MPIEXEC_PREFLAGS=""
    export HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork}
else
    DSORT_MPIEXEC_PREFLAGS="--oversubscribe"
    # Open MPI refuses to run as root unless told that it is wanted (CI and containers run as root).
    if [ "$(id -u)" -eq 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    # Let small machines run more ranks than cores.
    export OMPI_MCA_rmaps_base_oversubscribe=1
fi
export DSORT_MPICC DSORT_MPIEXEC DSORT_MPIEXEC_PREFLAGS
