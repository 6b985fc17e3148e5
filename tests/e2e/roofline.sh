#!/bin/bash
# The roofline of every run (issue 27): dsort's own table (src/roofline.c), in --stats and
# under -v, against tests/bench/roofline.py on the same --stats file (roofline_cmp.py: the
# oracle, written separately), on jobs in memory, out of core and of text lines, with rates
# given in DSORT_ROOFLINE_RATES (disks read and write apart or together, the CPU, the network),
# a shared disk (DSORT_ROOFLINE_SHARED) and none; a bad rate is a warning that names rank 0 and
# the variable, never a failed job. And issue 26: every string in --stats is escaped, so a -T
# dir, an input, an output and a host name holding a quote and a backslash leave a file that
# parses, holding those names as they are. Usage: roofline.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"
CMP=$(dirname "$0")/roofline_cmp.py

mkdir -p "$T/in" "$T/tmp"
gen "$N" 30000 "$T/in/a.dat"

# job WHAT RATES SHARED DSORT-ARGS...: dsort -v --stats under the rates; its roofline agrees
# with roofline.py's, and the output is the input sorted (python oracle).
job() {
    local what=$1 rates=$2 shared=$3
    shift 3
    rm -f "$T/st.json" "$T/out"
    DSORT_ROOFLINE_RATES=$rates DSORT_ROOFLINE_SHARED=$shared \
        ok "$N" "$DSORT" -v --stats "$T/st.json" -o "$T/out" "$@" || return 1
    cp "$T/stderr" "$T/v.log"
    CHECKS=$((CHECKS + 1))
    python3 "$CMP" "$T/st.json" "$rates" "$shared" "$T/v.log" >"$T/cmp" 2>&1 ||
        { fail "$what: dsort's roofline differs from roofline.py's" && cat "$T/cmp" >&2; }
    sed "s/^/  $what: /" "$T/cmp"
}

job "in memory, no rates" "" "" "$T/in/a.dat"
sums_equal "in memory" 100 "$(py sum 100 "$T/in/a.dat")" "$T/out"
DISK=$(python3 -c 'import json,sys; d=[x["disk"] for r in json.load(open(sys.argv[1]))["per_rank"] for x in r.get("devices", [])]; print(d[0] if d else "")' "$T/st.json")
job "out of core, disks apart, cpu, net" "*.read=300,*.write=200 cpu=500 net=100" "" \
    -S 1M -T "$T/tmp" "$T/in/a.dat"
sums_equal "out of core" 100 "$(py sum 100 "$T/in/a.dat")" "$T/out"
eq "out of core: the rates as given, in the file" '{"*.read": 300, "*.write": 200, "cpu": 500, "net": 100}' \
    "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["roofline"]["rates"]))' "$T/st.json")"
if [ -n "$DISK" ]; then
    job "one rate for $DISK, shared" "$DISK=400 cpu=50" "$DISK" --no-map "$T/in/a.dat"
    job "$DISK's reads only (its writes: no rate, no floor)" "$DISK.read=400 *.write=5" "" \
        -S 1M -T "$T/tmp" "$T/in/a.dat"
fi
python3 -c 'import random; r = random.Random(7); print("\n".join("%x %d" % (r.getrandbits(40), i) for i in range(20000)))' >"$T/in/l.txt"
job "text lines" "cpu=100" "" --format lines "$T/in/l.txt"
eq "text lines: sorted" "$(LC_ALL=C sort "$T/in/l.txt" | cksum)" "$(cksum <"$T/out")"

# A bad rate: a warning naming rank 0 and the variable; the job succeeds with measured rates.
DSORT_ROOFLINE_RATES="net=fast" ok "$N" "$DSORT" -v --stats "$T/st.json" -o "$T/out" "$T/in/a.dat"
contains "bad DSORT_ROOFLINE_RATES: a warning" "$T/stderr" \
    "^dsort: rank 0/$N \(.*\): DSORT_ROOFLINE_RATES ignored: rate 'net=fast' must be a positive number"
CHECKS=$((CHECKS + 1))
python3 "$CMP" "$T/st.json" "" "" >"$T/cmp" 2>&1 || { fail "bad rate: roofline differs" && cat "$T/cmp" >&2; }

# ---- issue 26: hostile names in --stats ----------------------------------------------------
H="$T/q\"uo\\te"
mkdir -p "$H/tmp"
cp "$T/in/a.dat" "$H/in\"\\.dat"
ok "$N" "$DSORT" -S 1M -T "$H/tmp" --stats "$H/st\"\\.json" -o "$H/out\"\\" "$H/in\"\\.dat"
names=$(python3 - "$H/st\"\\.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
plan = json.dumps(s["plan"])
t = sorted({d for n in s["plan"]["nodes"] for r in n["ranks"] for d in r.get("temp_dirs", [])})
f = sorted({x["file"] for n in s["plan"]["nodes"] for r in n["ranks"] for x in r.get("reads", [])})
print(" | ".join(t + f), "|", "roofline" in s)
PY
)
eq "--stats with a quote and a backslash in -T, the input and the output: parses, names kept" \
    "$H/tmp | $H/in\"\\.dat | True" "$names"
sums_equal "hostile names: output" 100 "$(py sum 100 "$T/in/a.dat")" "$H/out\"\\"
# A host name with a quote and a backslash (a UTS namespace, one process without mpiexec).
if [ "$N" -eq 1 ] && unshare -u true 2>/dev/null; then
    rm -f "$T/st.json"
    unshare -u python3 -c 'import os, socket, sys; socket.sethostname(sys.argv[1]); os.execv(sys.argv[2], sys.argv[2:])' \
        'h"o\st' "$DSORT" -v --stats "$T/st.json" -o "$T/out" "$T/in/a.dat" >"$T/stdout" 2>"$T/stderr"
    eq "a hostile host name: dsort's exit status" 0 "$?"
    eq "a hostile host name: the host in --stats, escaped and read back" 'h"o\st h"o\st' \
        "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["per_rank"][0]["host"], s["plan"]["nodes"][0]["hostname"])' "$T/st.json" 2>&1)"
    CHECKS=$((CHECKS + 1))
    python3 "$CMP" "$T/st.json" "" "" "$T/stderr" >"$T/cmp" 2>&1 ||
        { fail "hostile host: roofline differs" && cat "$T/cmp" >&2; }
fi
suite_finish
