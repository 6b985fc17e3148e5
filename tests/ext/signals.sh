#!/bin/bash
# Signals (issue 3): a run that spills for a few seconds (50 MB, -S 1M --block-size 4K) is
# interrupted once its first run files exist:
#   - SIGTERM to mpirun, SIGINT to mpirun (mpirun passes them on to the ranks), SIGTERM to
#     every rank at once (what Slurm does): the job exits non-zero within 5 s, no dsort
#     process is left, no dsort-* directory is left in the temp dir, and nothing (not even a
#     hidden .NAME.dsort-* file or a staging directory) is under the output directory;
#   - SIGKILL to one rank: the job exits non-zero within 10 s; the killed rank's dsort-*
#     directory stays, and the next out-of-core run on the same temp dir removes it and says
#     "removed N temp directories left by dead dsort jobs".
# Open MPI's default kill delays are kept: they are what users get. Usage: signals.sh NRANKS
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
suite_init "$1"

COUNT=500000 # 50 MB
gen "$N" -b $(((SEED % 100000) * 1000)) "$COUNT" "$T/in.dat" || suite_finish
gen 1 -b 7 2000 "$T/small.dat" || suite_finish
K=0

# start_sort TEMPDIR OUTPUT-ARGS...: start the slow sort in the background; JOB is mpirun's PID.
start_sort() {
    local td=$1
    shift
    mkdir -p "$td"
    LAST_CMD="$MPIEXEC -q ${MPI_PREFLAGS[*]} -n $N $DSORT -S 1M --block-size 4K -T $td $* $T/in.dat"
    "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$N" "$DSORT" -S 1M --block-size 4K -T "$td" "$@" \
        "$T/in.dat" </dev/null >"$T/stdout" 2>"$T/stderr" &
    JOB=$!
}

# wait_runs TEMPDIR: wait (up to 60 s) until a run file exists; returns 1 if the job ended first.
wait_runs() {
    local i
    for ((i = 0; i < 6000; i++)); do
        compgen -G "$1/dsort-*/run-*" >/dev/null && return 0
        kill -0 "$JOB" 2>/dev/null || return 1
        sleep 0.01
    done
    return 1
}

# wait_gone TEMPDIR SECONDS: wait until mpirun and every dsort process of this temp dir are
# gone; sets RC (mpirun's status) and GONE_MS; kills what is left after SECONDS.
wait_gone() {
    local td=$1 limit_ms=$(($2 * 1000)) t0 left
    t0=$(date +%s%N)
    while :; do
        GONE_MS=$((($(date +%s%N) - t0) / 1000000))
        left=$(dsort_procs "$td")
        if ! kill -0 "$JOB" 2>/dev/null && [ -z "$left" ]; then
            break
        fi
        if [ "$GONE_MS" -gt "$limit_ms" ]; then
            fail "still running ${2} s after the signal: mpirun $(kill -0 "$JOB" 2>/dev/null && echo "$JOB" || echo gone), dsort processes: ${left:-none}"
            # shellcheck disable=SC2086
            [ -n "$left" ] && kill -KILL $left 2>/dev/null
            kill -KILL "$JOB" 2>/dev/null
            break
        fi
        sleep 0.02
    done
    wait "$JOB"
    RC=$?
}

# sig_case NAME SIGNAL TARGET OUTPUT-KIND: TARGET mpirun or ranks; OUTPUT-KIND -o or -O.
sig_case() {
    local name=$1 sig=$2 target=$3 kind=$4
    K=$((K + 1))
    local td=$T/tmp-$K od=$T/out-$K
    mkdir -p "$od"
    if [ "$kind" = -o ]; then start_sort "$td" -o "$od/sorted.dat"; else start_sort "$td" -O "$od/parts"; fi
    if ! wait_runs "$td"; then
        fail "$name: no run file appeared in $td before the job ended (exit: $(wait "$JOB"; echo $?))"
        show_output
        return
    fi
    local pids
    pids=$(dsort_procs "$td")
    eq "$name: dsort processes running when the first runs exist" "$N" "$(echo "$pids" | wc -w)"
    if [ "$target" = mpirun ]; then
        kill -s "$sig" "$JOB"
    else
        # shellcheck disable=SC2086
        kill -s "$sig" $pids
    fi
    wait_gone "$td" 5
    echo "  $name: exit $RC, all gone $GONE_MS ms after the signal; stderr:"
    sed 's/^/  | /' "$T/stderr"
    CHECKS=$((CHECKS + 1))
    [ "$RC" -ne 0 ] || fail "$name: exit status 0 after SIG$sig"
    empty_dir "$name: left in the temp dir" "$td"
    empty_dir "$name: left under the output directory" "$od"
}

sig_case "SIGTERM to mpirun" TERM mpirun -o
sig_case "SIGINT to mpirun" INT mpirun -O
sig_case "SIGTERM to every rank" TERM ranks -o
sig_case "SIGINT to every rank" INT ranks -O

# SIGKILL to one rank: nothing can clean up its files; the next run sweeps them.
K=$((K + 1))
td=$T/tmp-$K
od=$T/out-$K
mkdir -p "$od"
start_sort "$td" -o "$od/sorted.dat"
if wait_runs "$td"; then
    victim=$(dsort_procs "$td" | tail -n 1)
    kill -KILL "$victim"
    wait_gone "$td" 10
    echo "  SIGKILL to rank process $victim: exit $RC, all gone $GONE_MS ms after the signal; stderr:"
    sed 's/^/  | /' "$T/stderr"
    CHECKS=$((CHECKS + 1))
    [ "$RC" -ne 0 ] || fail "SIGKILL to one rank: exit status 0"
    left=$(cd "$td" && ls -d dsort-* 2>/dev/null | wc -l)
    echo "  directories left by the killed job: $(ls -A "$td" | tr '\n' ' ')"
    cond "SIGKILL to one rank: the killed rank's directory is left for the next run to sweep" "$left >= 1"
    hidden=$(ls -A "$od")
    [ -z "$hidden" ] || echo "  note: left under the output directory after SIGKILL: $hidden"
    ok 1 "$DSORT" --out-of-core -S 2M -T "$td" -o "$T/swept.dat" "$T/small.dat"
    contains "the next run reports the sweep" "$T/stderr" \
        "removed $left temp director(y|ies) left by dead dsort jobs"
    empty_dir "SIGKILL to one rank: left in the temp dir after the next run" "$td"
else
    fail "SIGKILL case: no run file appeared in $td before the job ended"
    show_output
fi
suite_finish
