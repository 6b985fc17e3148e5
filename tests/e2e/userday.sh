#!/bin/bash
# A cluster user's day (issue 29): what a batch job should learn in its first second, and the
# words of the messages. Each case failed on ce51767.
#   - item 2: a --stats FILE that cannot be written (no such directory; a path through a
#     regular file) is refused before any work: exit 2, one line naming the file and the cause,
#     no output written (it used to be found after the whole sort: exit 0, the stats lost);
#   - item 4: --checkpoint and --stop-after on a sort that fits in memory: rank 0 says at the
#     start, in one line, that no checkpoint will be kept; the sort completes (exit 0, GNU
#     sort's output); a later --resume is refused (exit 2) as dsort(1) says, the output kept;
#   - item 12: an unknown --format lists lines; "--progress 10" (a space) gets a hint; an
#     ambiguous long option (--p=1) names its candidates. Usage errors: exit 2, rank 0 only;
#   - item 9: --stats on the mapped, --no-map, out-of-core and lines paths: "write" is more than
#     0 s and holds the output's bytes, "final_merge" is 0, no phase beyond dsort(1)'s list;
#     the phases' CPU seconds (cpu_user_seconds, cpu_sys_seconds) name the same phases, each
#     at most 8 threads' worth of its time, in all at most the rank's process's
#     (cpu_*_seconds_all), and those of all ranks at most what the kernel counted for the
#     launcher and everything it waited for (getrusage of the children, the oracle).
# Usage: userday.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"
E2E_TIMEOUT=60
RUN_FLAGS=(-q)

gen 2 -a 20000 "$T/in.dat"
LC_ALL=C sort "$T/in.dat" >"$T/want"
mkdir -p "$T/o"
: >"$T/afile"

# -- item 2: --stats that cannot be written
for s in "$T/nodir/s.json:No such file or directory" "$T/afile/s.json:Not a directory"; do
    stats=${s%%:*} cause=${s#*:}
    echo "--stats $stats"
    expect_rc 2 "$N" "$DSORT" "$T/in.dat" -o "$T/o/sorted" --stats "$stats"
    contains "--stats refused: the file and the cause" "$T/stderr" \
        "^dsort: rank 0/$N \([^)]+\): cannot write stats '$stats': .*$cause"
    eq "--stats refused: the error lines" 1 "$(grep -c '^dsort: ' "$T/stderr")"
    eq "--stats refused: nothing written" "" "$(ls -A "$T/o")"
done
# A --stats that can be written still works, and its probe leaves nothing beside it.
ok "$N" "$DSORT" "$T/in.dat" -o "$T/o/sorted" --stats "$T/o/s.json"
same_file "with --stats" 1 "$T/want" "$T/o/sorted"
eq "beside the stats" "s.json sorted" "$(find "$T/o" -mindepth 1 -printf '%f\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
rm -f "$T/o"/*

# -- item 4: a checkpoint that cannot happen is said at the start
for opt in --checkpoint --stop-after=1; do
    echo "$opt in memory"
    ok "$N" "$DSORT" "$opt" "$T/in.dat" -o "$T/o/sorted"
    contains "$opt in memory: the note" "$T/stderr" \
        "^dsort: rank 0/$N \([^)]+\): note: the sort fits in memory, so it has no rounds to keep: ${opt%%=*} writes no checkpoint"
    eq "$opt in memory: the note is one line" 1 "$(grep -c 'fits in memory' "$T/stderr")"
    same_file "$opt in memory: the output" 1 "$T/want" "$T/o/sorted"
done
# Documented: a later --resume finds nothing and is refused; the output stays as it was.
expect_rc 2 "$N" "$DSORT" --resume "$T/in.dat" -o "$T/o/sorted"
contains "--resume after an in-memory --checkpoint" "$T/stderr" "--resume: no checkpoint of this job"
same_file "the output after the refused --resume" 1 "$T/want" "$T/o/sorted"
# Out of core the note is not said (a checkpoint is kept there).
ok "$N" "$DSORT" --checkpoint --out-of-core -S 1M "$T/in.dat" -o "$T/o/sorted"
eq "--checkpoint out of core: no note" 0 "$(grep -c 'fits in memory' "$T/stderr")"

# -- item 12: messages
usage_error() {
    local what=$1 re=$2
    shift 2
    expect_rc 2 "$N" "$DSORT" "$@"
    contains "$what" "$T/stderr" "$re"
    eq "$what: said once" 1 "$(grep -Ec "$re" "$T/stderr")"
}
usage_error "unknown --format lists lines" "^dsort: unknown format 'foo' \(expected gensort, lines or fixed:SIZE:KEYOFF:KEYLEN\)$" \
    --format foo "$T/in.dat" -o "$T/o/x"
usage_error "--progress 10 gets a hint" "^dsort: --progress takes its seconds after '=': --progress=10 " \
    --progress 10 "$T/in.dat" -o "$T/o/x"
usage_error "--p=1 names the candidates" "^dsort: option '--p=1' is ambiguous; possibilities: '--parallel' '--plan' '--progress'$" \
    --p=1 "$T/in.dat" -o "$T/o/x"
usage_error "-c --local-inputs points at dsort-validate" "^dsort: -c does not take --local-inputs \(use dsort-validate --local-inputs\)$" \
    -c --local-inputs "$T/in.dat"
usage_error "-c --local-inputs of lines does not" "^dsort: -c does not take --local-inputs \(nor does dsort-validate under --format lines\)$" \
    -c --local-inputs --format lines "$T/in.dat"
# A usage error that one rank alone sees (an MPMD launch here; -S N% of a node's memory, or a
# list a node sees differently, on a cluster) ends every rank at once: before, the other rank
# went on into the inputs' collectives (MPI_ERR_TRUNCATE, or a hang).
expect_rc 2 1 "$DSORT" -S 1M "$T/in.dat" -o "$T/o/x" : -n 1 "$DSORT" -S 0 "$T/in.dat" -o "$T/o/x"
contains "one rank's usage error names the rank" "$T/stderr" \
    "^dsort: rank 1/2 \([^)]*\): invalid --memory '0' \(must be > 0\)$"
eq "one rank's usage error: said once" 1 "$(grep -c "invalid --memory" "$T/stderr")"
eq "no output after the usage errors" "" "$(find "$T/o" -mindepth 1 ! -name sorted)"
# A file named like a number is an input, as before.
cp "$T/in.dat" "$T/10"
cd "$T" || die "cd $T"
ok "$N" "$DSORT" --progress 10 -o "$T/o/p"
cd - >/dev/null || die "cd back"
same_file "--progress FILE with a file named 10" 1 "$T/want" "$T/o/p"

# -- item 9: the phases mean the same on every path (dsort(1), PHASES): "write" is the output's
# bytes going out, with the final merge where that streams into the output (it was "merge" on
# the mapped path, "final_merge" out of core for fixed records: "write 0.000 s"); the extra merge
# passes are "merge" for both formats (lines called them "final_merge"), which is always 0 now.
# With the input copied on several ranks the merge writes during the exchange (dsort(1),
# PHASES, exchange): the output's bytes are then in the exchange and write phases
# (PH_OVERLAP=1).
# The launcher run through a wrapper that writes the CPU seconds of everything it waited for
# (the launcher, its daemons, the ranks: each waits for its own children) to $T/o/cpu.
# Signals (a timeout's TERM) are passed on to the launcher, which is waited for. The input is
# 20 MB, so that the phases' CPU is not lost beside MPI's start (a phase's CPU counted 10 times
# over passes on 2 MB).
gen 2 -a 200000 "$T/ph.dat"
LC_ALL=C sort "$T/ph.dat" >"$T/ph.want"
cat >"$T/cpuwrap" <<EOF
#!/bin/sh
exec python3 -c 'import resource, signal, subprocess, sys
p = subprocess.Popen(sys.argv[2:])
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, lambda sig, frame: p.send_signal(sig))
rc = p.wait()
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%.6f" % (u.ru_utime + u.ru_stime))
sys.exit(128 - rc if rc < 0 else rc)' "$T/o/cpu" "$MPIEXEC" "\$@"
EOF
chmod +x "$T/cpuwrap"
phases_case() {
    local what=$1 want=$2 overlap=${PH_OVERLAP:-0} mpiexec=$MPIEXEC
    shift 2
    echo "phases: $what"
    rm -f "$T/o/ph" "$T/o/ph.json" "$T/o/cpu"
    MPIEXEC=$T/cpuwrap
    ok "$N" "$DSORT" "$@" "$T/ph.dat" -o "$T/o/ph" --stats "$T/o/ph.json"
    MPIEXEC=$mpiexec
    [ -s "$T/o/cpu" ] || fail "phases, $what: the launcher's CPU seconds were not written"
    same_file "phases, $what: the output" 1 "$T/ph.want" "$T/o/ph"
    CHECKS=$((CHECKS + 1))
    if ! python3 - "$T/o/ph.json" "$want" "$overlap" "$T/o/cpu" <<'PY' >"$T/phases.err" 2>&1; then
import json, sys
st, want = json.load(open(sys.argv[1])), set(sys.argv[2].split())
overlap = sys.argv[3] == "1"
launched = float(open(sys.argv[4]).read())
ranks = 0.0
for rk in st["per_rank"]:
    ph, cu, cs = rk["phases"], rk["cpu_user_seconds"], rk["cpu_sys_seconds"]
    assert set(cu) == set(ph) == set(cs), "rank %d: CPU of phases %s %s" % (rk["rank"], sorted(cu), sorted(cs))
    cpu = {p: cu[p] + cs[p] for p in ph}
    assert all(0 <= cpu[p] <= 8 * ph[p] + 0.01 for p in ph), "rank %d: CPU %s, phases %s" % (rk["rank"], cpu, ph)
    assert cpu["sort"] > 0, "rank %d: no CPU in the sort" % rk["rank"]
    whole = rk["cpu_user_seconds_all"] + rk["cpu_sys_seconds_all"]
    assert sum(cpu.values()) <= whole + 0.002, "rank %d: phases %.6f s of CPU, the process %.6f s" % (rk["rank"], sum(cpu.values()), whole)
    ranks += whole
assert 0 < ranks <= launched + 0.01, "the ranks' CPU %.6f s, the launcher's and its children's %.6f s" % (ranks, launched)
for rk in st["per_rank"]:
    ph = rk["phases"]
    assert ph["write"] > 0, "rank %d: write %s s" % (rk["rank"], ph["write"])
    assert ph["final_merge"] == 0, "rank %d: final_merge %s s" % (rk["rank"], ph["final_merge"])
    io = rk["io_write_bytes"]
    out = io["write"] + (io["exchange"] if overlap else 0)
    assert out >= rk["bytes_written"] > 0, io
    got = {k for k, v in ph.items() if v > 0}
    assert got <= want, "rank %d: phases %s beyond %s" % (rk["rank"], sorted(got - want), sorted(want))
    spans = {s[0] for s in rk.get("spans", [])}
    assert not spans or "final_merge" not in spans, spans
PY
        fail "phases, $what: $(cat "$T/phases.err")"
    fi
}
inmem="read sort splitters exchange merge write commit"
ooc="sample read sort splitters exchange spill merge write commit"
phases_case "mapped" "$inmem"
# (the copying path at several ranks: sampled splitters, so that its network starts early)
PH_OVERLAP=$((N > 1)) phases_case "--no-map" "sample $inmem" --no-map
phases_case "fixed, out of core" "$ooc" --out-of-core -S 1M
phases_case "lines in memory" "sample $inmem" --format lines # (a sample for its rounds' cuts)
phases_case "lines, out of core" "$ooc" --format lines --out-of-core -S 1M
suite_finish
