#!/usr/bin/env bash
# Install what dsort needs to build and test on Debian 12, if it is missing.
# Usage: scripts/deps.sh [--test]   (--test adds what the test suite uses)
set -euo pipefail
pkgs=(cmake gcc make pkg-config libopenmpi-dev openmpi-bin libhwloc-dev hwloc libcmocka-dev
      python3 time coreutils)
if [ "${1:-}" = "--test" ]; then
    pkgs+=(util-linux iproute2 fdisk e2fsprogs)
    pkgs+=(clang libclang-rt-14-dev) # libFuzzer for scripts/fuzz.sh
    pkgs+=(chromium) # renders dsort-report's page headless (tests/report)
fi
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
