#!/usr/bin/env bash
# Install what dsort needs to build and test on Debian 12, if it is missing.
# Usage: scripts/deps.sh [--test] [--mpich]
#   --test adds what the test suite uses; --mpich adds MPICH (mpicc.mpich, mpiexec.mpich) beside
#   Open MPI, for builds with -DDSORT_MPI=mpich (scripts/test.sh --mpi mpich).
# Installing a second MPI must not change which one mpicc and mpirun are: Debian ranks Open MPI
# first, but the alternatives are checked after the install and set back if they moved.
set -euo pipefail
pkgs=(cmake gcc make pkg-config libopenmpi-dev openmpi-bin libhwloc-dev hwloc libcmocka-dev
      python3 time coreutils)
for a in "$@"; do
    case $a in
    --test)
        pkgs+=(util-linux iproute2 fdisk e2fsprogs)
        pkgs+=(clang libclang-rt-14-dev) # libFuzzer for scripts/fuzz.sh
        pkgs+=(chromium) # renders dsort-report's page headless (tests/report)
        pkgs+=(python3-numpy) # the oracle of typed keys (tests/unit/typedkey_diff.py)
        pkgs+=(python3-mpi4py) # the Python module dsort over libdsort (tests/lib_example/python.sh)
        pkgs+=(universal-ctags) # scripts/fnlen.sh, the size lint (ctest build.sizes)
        ;;
    --mpich) pkgs+=(mpich libmpich-dev) ;;
    *)
        echo "usage: $0 [--test] [--mpich]" >&2
        exit 2
        ;;
    esac
done
# alt_value NAME: what the alternative NAME points to now (empty if it does not exist).
alt_value() {
    # No alternative yet (a fresh machine without any MPI) is an empty answer, not an error:
    # under set -e and pipefail a failing query would end this script silently.
    { update-alternatives --query "$1" 2>/dev/null || true; } | sed -n 's/^Value: //p'
}
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    declare -A alt_before=()
    for alt in mpi mpirun; do
        alt_before[$alt]=$(alt_value "$alt")
    done
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    for alt in mpi mpirun; do
        now=$(alt_value "$alt")
        if [ -n "${alt_before[$alt]}" ] && [ "$now" != "${alt_before[$alt]}" ]; then
            echo "deps: the install moved the '$alt' alternative to $now; setting it back to ${alt_before[$alt]}"
            $sudo update-alternatives --set "$alt" "${alt_before[$alt]}"
        fi
    done
fi
