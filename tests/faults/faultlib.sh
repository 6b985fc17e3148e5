# shellcheck shell=bash disable=SC2034
# (SC2034: the variables set here are used by the scripts that source this file.)
# Shared helpers of the fault matrix (issue 9, "Proven, not promised"). Each tests/faults/NAME.sh
# sources this file, which builds on tests/lib/check.sh (check, eq, contains, cond, gen, the
# temporary directory $T and its cleanup, tmpfs mounts; the settings of the ext suite). A script
# runs cases; a case is one scenario: case_begin, start a job, make the fault happen, check what
# must hold, case_end. case_end prints one RESULT line and, when DSORT_FAULTS_RESULTS_DIR is set,
# appends a row to DIR/NAME.tsv (scenario, pipeline, what must happen, outcome, ms to exit, why it
# failed); the table in docs/reliability.md is made from those rows by tests/faults/table.py.
#
# Faults come from the LD_PRELOAD shim (shim.c, DSORT_FAULT_SHIM), configured by the FAULT_*
# variables in the array FX (see shim.c). Phases are reached through the shim's phase hook: a
# rank stops when dsort enters the phase (FAULT_PHASE, FAULT_PHASE_NTH, FAULT_PHASE_IO) and
# waits until the test has done its damage (a kill, a signal, a damaged file) and removes the
# rank's marker file. No sleeps: every wait polls for a condition and has a deadline.
#
# Oracles: GNU sort (LC_ALL=C) on gensort ASCII records, which are also text lines; sha256sum
# and cmp for "unchanged"; find for "nothing left".

# Keep Open MPI's default kill delays (mpirun waits 1 s before SIGKILL): they are what users get.
FAST_KILL=0
SUITE=ext
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"

# Our temp dirs are /tmp/dsort-ext-faults-NAME-nN.*: tests/ext has scripts of the same names.
FAULTS_NAME=$TEST_NAME
TEST_NAME=faults-$FAULTS_NAME
FX=()
BEFORE_MPIEXEC=()
BEFORE_RANK=()
K=0
CASE=""
JOB=""
GONE_MS=0
# Limits of the expected behaviour: every fault ends the whole job within LIMIT_S seconds.
LIMIT_S=10
# How long a phase may take to be reached (a slow, loaded machine; never normally hit).
REACH_S=90

# fail is check.sh's, plus the first reason of the current case for its RESULT line.
eval "$(declare -f fail | sed '1s/^fail/check_fail/')"
fail() {
    [ -z "$CASE" ] || [ -n "$CASE_WHY" ] || CASE_WHY=$*
    check_fail "$@"
}

# faults_init N: check.sh's set-up, the shim, the offset of dsort's phase variable, the results.
faults_init() {
    suite_init "$1"
    SHIM=${DSORT_FAULT_SHIM:-}
    [ -f "$SHIM" ] || die "DSORT_FAULT_SHIM ($SHIM) is not built (run through ctest)"
    # The phase hook reads dsort's `phase` (src/cleanup.c), a static variable: its offset in the
    # executable comes from the symbol table. A build without it cannot reach phases.
    PHASE_SYM=""
    if command -v nm >/dev/null; then
        PHASE_SYM=$(nm "$DSORT" 2>/dev/null | awk '$3 == "phase" && $2 ~ /^[bBdD]$/ {print "0x" $1}')
        [ "$(echo "$PHASE_SYM" | wc -w)" = 1 ] || PHASE_SYM=""
    fi
    RESULTS=""
    if [ -n "${DSORT_FAULTS_RESULTS_DIR:-}" ]; then
        mkdir -p "$DSORT_FAULTS_RESULTS_DIR"
        RESULTS=$DSORT_FAULTS_RESULTS_DIR/$FAULTS_NAME${FAULTS_SUFFIX:-}.tsv
        : >"$RESULTS"
    fi
}

# need_phase_hook: fail (and return 1) when the phase hook cannot work with this build.
need_phase_hook() {
    [ -n "$PHASE_SYM" ] && return 0
    fail "dsort's 'phase' symbol is not in $DSORT (stripped build, or renamed): phases cannot be reached"
    return 1
}

# data PIPE...: the inputs the pipelines need, gensort ASCII records (which are text lines too)
# with their GNU sort order: $IN (30 MB: out of core at -S 8M) and $IN_REF for ext and lines,
# $MEM (5 MB: in memory) and $MEM_REF for mem, and always $SMALL (200 KB) and $SMALL_REF. The
# records are fixed (the faults do not depend on the keys), so that the scripts share one copy
# in DSORT_FAULTS_DATA_DIR when it is set (made once, under a lock); else they go in $T. Tests
# never write these files (the ones that change an input change a copy).
data() {
    local d=${DSORT_FAULTS_DATA_DIR:-$T} p
    mkdir -p "$d"
    IN=$d/in.dat MEM=$d/mem.dat SMALL=$d/small.dat
    IN_REF=$d/in.ref MEM_REF=$d/mem.ref SMALL_REF=$d/small.ref
    exec 9>"$d/.lock"
    flock 9
    data_make "$SMALL" "$SMALL_REF" 1 1000000 2000
    for p in "$@"; do
        if [ "$p" = mem ] || [ "$p" = map ] || [ "$p" = mlines ]; then
            data_make "$MEM" "$MEM_REF" 2 2000000 50000
        else
            data_make "$IN" "$IN_REF" 2 3000000 300000
        fi
    done
    flock -u 9
    exec 9>&-
}

# data_make FILE REF RANKS FIRST COUNT: COUNT records from record FIRST into FILE and GNU sort's
# order into REF, unless a finished copy is there (FILE.ok names its size).
data_make() {
    local f=$1 ref=$2 n=$3 first=$4 count=$5
    [ "$(cat "$f.ok" 2>/dev/null)" = "$((count * 100))" ] && [ -f "$ref" ] && return 0
    rm -f "$f.ok"
    gen "$n" -a -b "$first" "$count" "$f" || suite_finish
    LC_ALL=C sort -S 64M "$f" >"$ref" || die "GNU sort failed"
    stat -c %s "$f" >"$f.ok"
}

# pipeline_args PIPE: PARGS, the options and input of a pipeline; PREF its oracle.
#   mem    fixed records in memory (5 MB, default budget), the input copied (--no-map)
#   map    the same, the input read through a mapping (the default on one node)
#   mlines --format lines in memory on the same 5 MB, the input mapped
#   ext    fixed records out of core (30 MB at -S 8M: 5-6 runs per rank at 2 ranks)
#   lines  --format lines out of core (the same 30 MB as lines, -S 8M: about 7 runs per rank)
pipeline_args() {
    case $1 in
    mem) PARGS=(--no-map "$MEM") PREF=$MEM_REF ;;
    map) PARGS=("$MEM") PREF=$MEM_REF ;;
    mlines) PARGS=(--format lines "$MEM") PREF=$MEM_REF ;;
    ext) PARGS=(-S 8M "$IN") PREF=$IN_REF ;;
    lines) PARGS=(--format lines -S 8M "$IN") PREF=$IN_REF ;;
    *) die "unknown pipeline $1" ;;
    esac
}

# case_begin NAME PIPE EXPECT: start a case; $C is its directory ($C/out for the output, $C/tmp
# the temp dir).
case_begin() {
    CASE=$1 CASE_PIPE=$2 CASE_EXPECT=$3
    CASE_FAILS0=$FAILS CASE_WHY="" CASE_NOTE="" CASE_SKIP="" GONE_MS="" CASE_T0=$(date +%s%N)
    K=$((K + 1))
    C=$T/c$K
    mkdir -p "$C/out" "$C/tmp"
    OUT_DIR=$C/out TMP_DIR=$C/tmp
    FX=() BEFORE_MPIEXEC=() BEFORE_RANK=()
    echo "--- case $K: $CASE [$CASE_PIPE]"
}

# note TEXT: add to the measured column of the case's row.
note() {
    CASE_NOTE="${CASE_NOTE:+$CASE_NOTE; }$*"
}

case_skip() {
    CASE_SKIP=$*
}

case_end() {
    local outcome=PASS
    [ "$FAILS" -eq "$CASE_FAILS0" ] || outcome=FAIL
    [ -z "$CASE_SKIP" ] || outcome=SKIP
    local why note
    why=$(printf '%s' "${CASE_SKIP:-$CASE_WHY}" | tr '\t\n' '  ' | cut -c1-300)
    note=$(printf '%s' "$CASE_NOTE" | tr '\t\n' '  ' | cut -c1-400)
    local took=$((($(date +%s%N) - CASE_T0) / 1000000))
    echo "RESULT $outcome | $CASE | $CASE_PIPE | ${GONE_MS:-?} ms | $note${why:+ | $why} (case: $took ms)"
    [ -z "$RESULTS" ] ||
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$CASE" "$CASE_PIPE" "$CASE_EXPECT" "$outcome" \
            "${GONE_MS:-}" "$note" "$why" >>"$RESULTS"
    # Whatever the case left running is killed here (only our own processes, by their ids).
    stop_leftovers
    CASE=""
}

# stop_leftovers: kill -KILL what this case started that still runs (mpirun, dsort ranks).
stop_leftovers() {
    local left
    if [ -n "$JOB" ] && kill -0 "$JOB" 2>/dev/null; then
        kill -KILL "$JOB" 2>/dev/null
    fi
    left=$(dsort_procs "$C")
    # shellcheck disable=SC2086
    [ -z "$left" ] || kill -KILL $left 2>/dev/null
    [ -z "$JOB" ] || wait "$JOB" 2>/dev/null
    JOB=""
}

# phase_hook PHASE NTH IO RANK: stop rank RANK (or all) in the NTH stretch of PHASE, at its start
# (IO 0) or in its IOth read or write of a file. Adds to FX.
phase_hook() {
    FX+=("FAULT_PHASE=$1" "FAULT_PHASE_NTH=$2" "FAULT_PHASE_IO=$3" "FAULT_RANK=$4"
        "FAULT_PHASE_SYM=$PHASE_SYM" "FAULT_READY=$C/ready" "FAULT_LOG=$C/fault.log")
}

# start_job N ARGS...: dsort ARGS under mpiexec in the background, with the shim if FX is set;
# JOB is mpiexec's pid. The commands in BEFORE_MPIEXEC and BEFORE_RANK (arrays, empty by default;
# e.g. prlimit --fsize=N) run mpiexec and each rank (they must exec what follows). stdout and stderr go to $T/stdout and $T/stderr.
# The shim and its variables reach the ranks through env, run by mpiexec in front of dsort (env
# execs dsort, so the ranks are dsort processes): that works under every MPI (no Open MPI -x)
# and keeps LD_PRELOAD out of mpiexec and its daemons (a FAULT_PATH may match their sockets).
start_job() {
    local n=$1 x=()
    shift
    # As in start_single: an ASan build must not insist on coming first in the preload list.
    [ ${#FX[@]} -eq 0 ] || x=(env "LD_PRELOAD=$SHIM"
        "ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0" "${FX[@]}")
    LAST_CMD="${BEFORE_MPIEXEC[*]} $MPIEXEC -q ${MPI_PREFLAGS[*]} -n $n ${BEFORE_RANK[*]} ${x[*]} $DSORT $*"
    T_START=$(date +%s%N)
    "${BEFORE_MPIEXEC[@]}" "$MPIEXEC" -q "${MPI_PREFLAGS[@]}" -n "$n" "${BEFORE_RANK[@]}" "${x[@]}" \
        "$DSORT" "$@" </dev/null >"$T/stdout" 2>"$T/stderr" &
    JOB=$!
}

# start_single PREFIX-CMD... -- ARGS...: dsort as a singleton (no mpirun), run by the command
# before -- (e.g. nohup, or env); the shim's variables go in its environment.
start_single() {
    local pre=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        pre+=("$1")
        shift
    done
    shift
    local envs=()
    # As in start_job: an ASan build must not insist on coming first in the preload list.
    [ ${#FX[@]} -eq 0 ] || envs=("LD_PRELOAD=$SHIM"
        "ASAN_OPTIONS=${ASAN_OPTIONS:-}:verify_asan_link_order=0" "${FX[@]}")
    LAST_CMD="${pre[*]} env ${envs[*]} $DSORT $*"
    T_START=$(date +%s%N)
    "${pre[@]}" env "${envs[@]}" "$DSORT" "$@" </dev/null >"$T/stdout" 2>"$T/stderr" &
    JOB=$!
}

# wait_ready RANK...: wait until each RANK stopped at the hook; READY_PID[RANK] its pid,
# READY_PHASE[RANK] the phase it reports. Returns 1 (after a fail) if the job ended first or
# the phase was not reached in REACH_S seconds.
declare -A READY_PID READY_PHASE
wait_ready() {
    local r deadline=$(($(date +%s) + REACH_S))
    for r in "$@"; do
        while [ ! -s "$C/ready.$r" ]; do
            if [ -e "$C/ready.error" ]; then
                fail "phase hook: $(cat "$C/ready.error")"
                return 1
            fi
            if ! kill -0 "$JOB" 2>/dev/null; then
                wait "$JOB"
                RC=$?
                fail "rank $r never reached the phase ($(printf '%s ' "${FX[@]}" | grep -o 'FAULT_PHASE[_A-Z]*=[^ ]*' | tr '\n' ' ')): the job ended first, exit $RC"
                show_output
                return 1
            fi
            if [ "$(date +%s)" -gt "$deadline" ]; then
                fail "rank $r did not reach the phase in $REACH_S s"
                return 1
            fi
            sleep 0.01
        done
        read -r "READY_PID[$r]" "READY_PHASE[$r]" <"$C/ready.$r"
    done
    return 0
}

# signal_rank SIG RANK: send SIG to rank RANK, stopped at the hook, let it go on, and wait_end
# from the signal (GONE_MS counts from it).
signal_rank() {
    local t0
    t0=$(date +%s%N)
    kill -"$1" "${READY_PID[$2]}"
    resume "$2"
    wait_end "$t0"
}

# resume RANK...: let stopped ranks go on.
resume() {
    local r
    for r in "$@"; do
        rm -f "$C/ready.$r"
    done
}

# wait_end [T0]: wait until mpiexec (or the singleton) and every dsort process of this case are
# gone; RC is the job's status, GONE_MS the time from T0 (ns, default now) to the end and T_END
# the end (check_prompt compares GONE_MS with LIMIT_S). A job still running REACH_S seconds
# after T0 fails the case and is killed.
wait_end() {
    local t0=${1:-$(date +%s%N)} left="" now p
    local limit=$((t0 + REACH_S * 1000000000))
    # mpiexec (or the singleton) first: a cheap test; then any dsort process it left behind.
    while kill -0 "$JOB" 2>/dev/null && [ "$(date +%s%N)" -lt "$limit" ]; do
        sleep 0.01
    done
    if ! kill -0 "$JOB" 2>/dev/null; then
        left=$(dsort_procs "$C")
        while [ -n "$left" ] && [ "$(date +%s%N)" -lt "$limit" ]; do
            sleep 0.01
            for p in $left; do
                kill -0 "$p" 2>/dev/null || left=$(echo "$left" | grep -vx "$p")
            done
        done
    fi
    now=$(date +%s%N)
    GONE_MS=$(((now - t0) / 1000000))
    if kill -0 "$JOB" 2>/dev/null || [ -n "$left" ]; then
        fail "still running $REACH_S s later: mpirun $(kill -0 "$JOB" 2>/dev/null && echo "$JOB" || echo gone), dsort processes: ${left:-none}"
        stop_leftovers
        RC=137
        return
    fi
    T_END=$now
    wait "$JOB"
    RC=$?
    JOB=""
    echo "  exit $RC, all gone ${GONE_MS} ms later"
    sed 's/^/  | /' "$T/stderr" | head -n 12
}

# run_job N ARGS...: start_job and wait_end from the start.
run_job() {
    start_job "$@"
    wait_end "$T_START"
}

# since_first_fault: GONE_MS from the shim's first fault (its log has the times) to the end of
# the job (T_END, from wait_end); unchanged when no fault was logged.
since_first_fault() {
    local first
    first=$(sed -n 's/^t=\([0-9]*\)\.\([0-9]*\) .* fault .*/\1\2/p' "$C/fault.log" 2>/dev/null |
        sort -n | head -n 1)
    [ -z "$first" ] || GONE_MS=$(((T_END - first) / 1000000))
}

# out_setup KIND [DIR]: the output of the case, in DIR (default $C/out). o-new: -o FILE that
# does not exist; o-old: -o FILE that holds an old version (which must survive every failure);
# O: -O DIR.
out_setup() {
    OUT_KIND=$1 OUT_DIR=${2:-$C/out}
    case $1 in
    o-new) OUTARGS=(-o "$OUT_DIR/sorted.dat") OUT_FINAL=$OUT_DIR/sorted.dat ;;
    o-old)
        OUTARGS=(-o "$OUT_DIR/sorted.dat") OUT_FINAL=$OUT_DIR/sorted.dat
        printf 'the old content of sorted.dat\n' >"$OUT_FINAL"
        OUT_OLD=$(sha256sum <"$OUT_FINAL")
        ;;
    O) OUTARGS=(-O "$OUT_DIR/parts") OUT_FINAL=$OUT_DIR/parts ;;
    *) die "out_setup $1" ;;
    esac
}

# check_final: nothing under the output's final name (an old -o FILE keeps its content).
check_final() {
    CHECKS=$((CHECKS + 1))
    if [ "$OUT_KIND" = o-old ]; then
        if [ ! -f "$OUT_FINAL" ] || [ "$(sha256sum <"$OUT_FINAL")" != "$OUT_OLD" ]; then
            fail "the old $OUT_FINAL was replaced or removed ($(ls -l "$OUT_FINAL" 2>&1))"
            return 1
        fi
    elif [ -e "$OUT_FINAL" ]; then
        fail "something is under the final name: $(ls -ld "$OUT_FINAL")"
        return 1
    fi
    return 0
}

# listing DIR: the names in DIR (hidden ones too), sorted, on one line.
listing() {
    find "$1" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>&1 | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}

# check_no_temps: no hidden temporary beside the output ($OUT_DIR), nothing in the temp dir
# ($TMP_DIR, default $C/tmp).
check_no_temps() {
    local want=""
    [ "$OUT_KIND" != o-old ] || want=sorted.dat
    eq "files in the output directory" "$want" "$(listing "$OUT_DIR")"
    eq "files in the temp dir" "" "$(listing "$TMP_DIR")"
}

# check_exit WANT: 2, or nz (any failure: non-zero or killed by a signal).
check_exit() {
    CHECKS=$((CHECKS + 1))
    if [ "$1" = nz ]; then
        [ "$RC" -ne 0 ] || fail "exit status 0 after the fault"
    elif [ "$RC" -ne "$1" ]; then
        fail "exit status $RC, expected $1"
    fi
    note "exit $RC"
}

# check_prompt: the job ended within LIMIT_S seconds of the fault.
check_prompt() {
    CHECKS=$((CHECKS + 1))
    [ "${GONE_MS:-999999}" -le $((LIMIT_S * 1000)) ] ||
        fail "the job ended ${GONE_MS} ms after the fault (limit ${LIMIT_S} s)"
}

# check_rank_line REGEX: stderr has a line "dsort: rank R/N (host): ..." matching REGEX after it;
# the line goes into the case's row (with the test's directories shortened).
check_rank_line() {
    local re="^dsort: rank [0-9]+/$N \([^)]+\): .*$1"
    contains "an error line naming the rank and /$1/" "$T/stderr" "$re" &&
        note "\"$(grep -Em1 -- "$re" "$T/stderr" | short_paths | cut -c1-160)\""
}

# short_paths: the test's and the data's directories replaced by ... in the text on stdin.
short_paths() {
    local d=${DSORT_FAULTS_DATA_DIR:-$T}
    sed -e "s|$C/|.../|g" -e "s|$T/|.../|g" -e "s|$d/|.../|g"
}

# check_faulted: the shim's log shows that a fault was injected (else the case proves nothing).
check_faulted() {
    CHECKS=$((CHECKS + 1))
    grep -q ' fault ' "$C/fault.log" 2>/dev/null || fail "the shim injected no fault (FAULT_PATH matched nothing?)"
}

# same_output: the output is byte-identical to the oracle PREF (-o FILE, or the parts of -O).
same_output() {
    if [ "$OUT_KIND" = O ]; then
        CHECKS=$((CHECKS + 1))
        if [ ! -f "$OUT_FINAL/_SUCCESS" ]; then
            fail "no $OUT_FINAL/_SUCCESS"
            return 1
        fi
        cat "$OUT_FINAL"/part-* >"$C/joined"
        same_file "the parts of -O, joined" 100 "$PREF" "$C/joined"
        rm -f "$C/joined"
    else
        same_file "the output" 100 "$PREF" "$OUT_FINAL"
    fi
}
