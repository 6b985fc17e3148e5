#!/usr/bin/env bash
# fault.sh LIB DSORT DSORT_GEN LIB_LAYOUT: one rank's first MPI_Isend fails (fault.c, preloaded
# as LIB), as a transport's failure would. The program (the copying path's exchange, at 2 and 3
# ranks, the last rank failing) and libdsort's in-memory sort (lib_layout at 2 ranks, rank 1
# failing, MPI_COMM_WORLD with MPI's default error handler) must end the whole job at once:
# a non-zero exit well within the timeout (a rank that waited for the failed one would hang),
# the program's line naming the failing rank and MPI's error, no output, no process left.
# Environment (from tests/CMakeLists.txt): DSORT_MPIEXEC, DSORT_MPIEXEC_PREFLAGS (Open MPI's -x).
set -uo pipefail
lib=$1 dsort=$2 gen=$3 layout=$4
mpiexec=${DSORT_MPIEXEC:-mpiexec}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pmpi-fault.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*" && bad=1; }
# shellcheck disable=SC2086 # the preflags are words
launch() { # NP RANK:N PROGRAM ARGS...: under the fault, at most 60 s; sets rc, secs
    local np=$1 at=$2 t0
    shift 2
    t0=$(date +%s)
    timeout -k 5 60 "$mpiexec" ${DSORT_MPIEXEC_PREFLAGS:-} -n "$np" -x LD_PRELOAD="$lib" \
        -x DSORT_PMPI_FAIL_ISEND="$at" "$@" >"$tmp/log" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
}
# shellcheck disable=SC2086
"$mpiexec" ${DSORT_MPIEXEC_PREFLAGS:-} -n 1 "$gen" 20000 "$tmp/in" >/dev/null 2>&1 ||
    { echo "FAIL: dsort-gen" && exit 1; }

for np in 2 3; do
    last=$((np - 1))
    rm -f "$tmp/out"
    launch "$np" "$last:1" "$dsort" --no-map --exchange-chunk 100000 -o "$tmp/out" "$tmp/in"
    what="dsort --no-map at $np ranks, rank $last's first MPI_Isend failing"
    case $rc in 124 | 137) fail "$what: still running after 60 s (a rank waits)" ;; esac
    [ "$rc" -ne 0 ] || fail "$what: exit 0"
    grep -q "rank $last/$np .*MPI_ERR_OTHER" "$tmp/log" ||
        fail "$what: no line naming rank $last/$np and MPI's error: $(head -c 600 "$tmp/log")"
    [ ! -e "$tmp/out" ] || fail "$what: an output was left"
    echo "$what: exit $rc after $secs s"
done

ln -s "$layout" "$tmp/layout" # (its processes then carry $tmp in their command line)
launch 2 1:1 "$tmp/layout"
what="libdsort (lib_layout) at 2 ranks, rank 1's first MPI_Isend failing"
case $rc in 124 | 137) fail "$what: still running after 60 s (a rank waits)" ;; esac
[ "$rc" -ne 0 ] || fail "$what: exit 0"
# MPI's own report (MPI_ERRORS_ARE_FATAL's lines naming MPI_ERR_OTHER); under load Open MPI's
# launcher once lost it at the abort and printed only "ORTE_ERROR_LOG: ...": some error line
grep -qiE "MPI_ERR_OTHER|error" "$tmp/log" || fail "$what: no error reported: $(head -c 600 "$tmp/log")"
echo "$what: exit $rc after $secs s"

sleep 1
left=$(pgrep -f -- "$tmp/(in|layout)" || true)
if [ -n "$left" ]; then
    fail "processes left: $left"
    # shellcheck disable=SC2086 # (this test's own ranks, by PID: one a word)
    kill $left 2>/dev/null
fi
exit $bad
