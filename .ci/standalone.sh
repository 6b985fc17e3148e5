#!/usr/bin/env bash
# Fail if a tracked file reaches outside the repository for something the build or the tests
# need. The development machines keep documents beside the project (a sibling folder named shared); a user's clone
# has no such sibling, so nothing in the project may name it.
#   .ci/standalone.sh        exit 0 if clean; else list the offending lines and exit 1
set -euo pipefail
cd "$(dirname "$0")/.."
# The patterns: the sibling folder itself, and a build file or script that climbs above the
# repository's top from a variable that names it.
pattern='[.][.][/]shared\b|shared/(reference|seeds|notes)/|CMAKE_SOURCE_DIR\}/\.\.|PROJECT_SOURCE_DIR\}/\.\.|\$top/\.\.|\$\{?root\}?/\.\./'
hits=$(git grep -nIE "$pattern" -- . ':!.ci/standalone.sh' || true)
if [ -n "$hits" ]; then
    echo "standalone: tracked files refer to paths outside the repository:" >&2
    echo "$hits" >&2
    exit 1
fi
echo "standalone: no tracked file refers to a path outside the repository"
