#!/usr/bin/env bash
# Fetch coreutils' source from Debian (apt-get source, with an apt configuration of its own: the
# system's sources are not changed) and unpack its sort tests, for tests/e2e/gnusortpl.sh.
# Usage: scripts/coreutils_tests.sh [SUITE [DIR]]
#   SUITE: a Debian suite (default sid: coreutils 9.10, 166 cases of sort.pl; bookworm: 9.1, 164)
#   DIR: where (default ${XDG_CACHE_HOME:-~/.cache}/dsort/coreutils); prints the sort.pl path.
# Needs the network (deb.debian.org), apt-get and tar; no root.
set -euo pipefail
suite=${1:-sid}
dir=${2:-${XDG_CACHE_HOME:-$HOME/.cache}/dsort/coreutils}
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
echo "deb-src http://deb.debian.org/debian $suite main" >"$work/sources.list"
apt=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
     -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
apt-get "${apt[@]}" -qq update
(cd "$work/src" && apt-get "${apt[@]}" -qq source --download-only "coreutils/$suite" 2>/dev/null)
tarball=$(ls "$work"/src/coreutils_*.orig.tar.xz)
tar -xJf "$tarball" -C "$dir" --wildcards '*/tests/sort/sort.pl' 2>/dev/null ||
    tar -xJf "$tarball" -C "$dir" --wildcards '*/tests/misc/sort.pl'
ver=$(basename "$tarball" .orig.tar.xz)
ls -d "$dir/coreutils-${ver#coreutils_}"/tests/*/sort.pl
