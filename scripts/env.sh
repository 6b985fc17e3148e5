# Sourced by the scripts: settings that mpirun needs on these machines.
# Open MPI refuses to run as root unless told that it is wanted (CI and containers run as root).
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Let small machines run more ranks than cores.
export OMPI_MCA_rmaps_base_oversubscribe=1
