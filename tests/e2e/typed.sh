#!/bin/bash
# Typed keys in dsort, dsort-gen and dsort-validate (issue 28), against numpy (python3-numpy; the test
# is skipped without it): dsort-gen --format/--field writes typed fields (duplicates, NaNs,
# corner values) and the same file at any rank count; numpy's stable lexsort of it by the
# same keys (mixed directions) validates; a swapped pair of records with different keys is
# reported as the first unordered record with its number; bad keys exit 2 naming the key.
# Then dsort sorts by typed keys (every type, both directions, -s, the default and -u, at 1,
# 2, 3 and 7 ranks, in memory and out of core) byte for byte as numpy does; -c checks by them.
# Usage: typed.sh NRANKS
. "$(dirname "$0")/lib.sh"
suite_init "$1"

NUMPY_PY=""
for p in python3 /usr/bin/python3; do
    if "$p" -c "import numpy" 2>/dev/null; then
        NUMPY_PY=$p
        break
    fi
done
[ -n "$NUMPY_PY" ] || skip "numpy is missing (apt-get install python3-numpy)"

FMT=fixed:40:0:40
FIELDS=(--field 0:u64le:distinct=300 --field 8:f64le:nan=10:special=10 --field 16:i32be:special=20
    --field 20:f32be:distinct=7:nan=5 --field 24:u16le:distinct=3 --field 26:bytes:6:distinct=4)
ok "$N" "$GEN" --format "$FMT" "${FIELDS[@]}" --seed "$SEED" 20000 "$T/in.bin"
ok 1 "$GEN" --format "$FMT" "${FIELDS[@]}" --seed "$SEED" 20000 "$T/in1.bin"
same_file "dsort-gen --field at $N ranks and at 1" 40 "$T/in1.bin" "$T/in.bin"

# oracle IN SIZE MODE OUT KEY...: numpy's order of IN (records of SIZE bytes) by the -k specs KEY
# (descending: minus the dense rank under numpy's order), most significant first, into OUT;
# MODE s (stable lexsort), rec (the record's bytes as the last key) or u (-u: the first of each
# run of equal keys).
oracle() {
    "$NUMPY_PY" - "$@" <<'PY'
import sys
import numpy as np
inp, size, mode, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
T = {"u8": "u1", "i8": "i1", "u16le": "<u2", "u16be": ">u2", "i16le": "<i2", "i16be": ">i2",
     "u32le": "<u4", "u32be": ">u4", "i32le": "<i4", "i32be": ">i4", "u64le": "<u8",
     "u64be": ">u8", "i64le": "<i8", "i64be": ">i8", "f32le": "<f4", "f32be": ">f4",
     "f64le": "<f8", "f64be": ">f8"}
raw = np.fromfile(inp, np.uint8).reshape(-1, size)
def rank(v):
    if v.ndim == 2:  # bytes: lexicographic
        o = np.lexsort(v.T[::-1])
        s = v[o]
        new = np.any(s[1:] != s[:-1], axis=1)
    else:
        o = np.argsort(v, kind="stable")
        s = v[o]
        new = s[1:] != s[:-1]
        if v.dtype.kind == "f":
            new &= ~(np.isnan(s[1:]) & np.isnan(s[:-1]))
    r = np.empty(len(v), np.int64)
    r[o] = np.concatenate([[0], np.cumsum(new)]) if len(v) else []
    return r
lex = []
for spec in sys.argv[5:]:
    f = spec.split(":")
    off, t, desc = int(f[0]), f[1], f[-1] == "r"
    if t == "bytes":
        v = raw[:, off:off + int(f[2])]
    else:
        dt = np.dtype(T[t])
        v = raw[:, off:off + dt.itemsize].copy().view(dt).reshape(-1)
    lex.append(-rank(v) if desc else rank(v))
keys = np.array(lex).T
if mode == "rec":
    lex.append(rank(raw))
o = np.lexsort(lex[::-1])
res = raw[o]
if mode == "u":
    k = keys[o]
    keep = np.concatenate([[True], np.any(k[1:] != k[:-1], axis=1)])
    res = res[keep]
res.tofile(out)
PY
}

oracle "$T/in.bin" 40 s "$T/by_id_x.bin" 0:u64le 8:f64le || fail "numpy failed"
"$NUMPY_PY" -c "import numpy as np, sys; x = np.fromfile(sys.argv[1], np.uint8).reshape(-1, 40)[:, 8:16].copy().view('<f8'); print('nan %d negzero %d inf %d' % (np.isnan(x).sum(), ((x == 0) & np.signbit(x)).sum(), np.isinf(x).sum()))" \
    "$T/in.bin" >"$T/np.out" || fail "numpy failed"
contains "the generated x has NaNs, -0.0 and infinities" "$T/np.out" '^nan [1-9][0-9]* negzero [1-9][0-9]* inf [1-9]'
ok "$N" "$VALIDATE" --no-manifest --format "$FMT" -k 0:u64le -k 8:f64le "$T/by_id_x.bin" &&
    contains "numpy's order by id, x" "$T/stdout" '^SUCCESS'
# The unsorted input is not in order.
expect_rc 1 "$N" "$VALIDATE" --no-manifest --format "$FMT" -k 0:u64le -k 8:f64le "$T/in.bin"

# Mixed directions, three and four keys, every kind of field.
oracle "$T/in.bin" 40 s "$T/mixed.bin" 20:f32be:r 24:u16le 8:f64le:r || fail "numpy failed"
ok "$N" "$VALIDATE" --format "$FMT" -k 20:f32be:r -k 24:u16le -k 8:f64le:r "$T/mixed.bin"
oracle "$T/in.bin" 40 s "$T/mixed4.bin" 26:bytes:6 24:u16le:r 16:i32be 0:u64le:r || fail "numpy failed"
ok "$N" "$VALIDATE" --format "$FMT" -k 26:bytes:6 -k 24:u16le:r -k 16:i32be -k 0:u64le:r \
    "$T/mixed4.bin"
# -r reverses every key: numpy's order by id, x read backwards.
"$NUMPY_PY" -c "import numpy as np, sys; np.fromfile(sys.argv[1], np.uint8).reshape(-1, 40)[::-1].tofile(sys.argv[2])" \
    "$T/by_id_x.bin" "$T/rev.bin"
ok "$N" "$VALIDATE" --format "$FMT" -r -k 0:u64le -k 8:f64le "$T/rev.bin"

# A swapped pair of neighbours with different keys: record P is the first unordered one.
"$NUMPY_PY" - "$T/by_id_x.bin" "$T/swapped.bin" <<'PY' >"$T/pos" || fail "numpy failed"
import sys
import numpy as np
raw = np.fromfile(sys.argv[1], np.uint8).reshape(-1, 40)
ids = raw[:, :8].copy().view("<u8").reshape(-1)
p = int(np.nonzero(ids[1:] != ids[:-1])[0][len(ids) // 3000]) + 1  # ids[p-1] < ids[p]
raw[[p - 1, p]] = raw[[p, p - 1]]
raw.tofile(sys.argv[2])
print(p)
PY
P=$(cat "$T/pos")
expect_rc 1 "$N" "$VALIDATE" --format "$FMT" -k 0:u64le -k 8:f64le "$T/swapped.bin" &&
    contains "swapped pair" "$T/stdout" "^First unordered record is record $P\$" &&
    contains "swapped pair" "$T/stdout" '^ERROR - there are 1 unordered records$'

# Bad keys and fields: exit 2 naming them.
expect_rc 2 "$N" "$VALIDATE" --format "$FMT" -k 36:u64le "$T/in.bin" &&
    contains "key past the record" "$T/stderr" "bad key '36:u64le'.*past the end of the 40-byte record"
expect_rc 2 "$N" "$VALIDATE" --format "$FMT" -k 0:float "$T/in.bin" &&
    contains "bad type" "$T/stderr" "unknown type 'float'"
expect_rc 2 "$N" "$VALIDATE" --format "$FMT" -k 0:bytes:0 "$T/in.bin" &&
    contains "zero length" "$T/stderr" "LEN must be at least 1"
expect_rc 2 "$N" "$VALIDATE" --format lines -k 0:u8 "$T/in.bin" &&
    contains "typed keys with lines" "$T/stderr" "go with a fixed format"
expect_rc 2 "$N" "$GEN" --format "$FMT" --field 0:u64le:nan=5 10 "$T/x.bin" &&
    contains "nan= on an integer" "$T/stderr" "bad field '0:u64le:nan=5': nan= goes with floats"

# dsort itself sorts by typed keys, at 1, 2, 3 and 7 ranks, in memory and out of core
# (--out-of-core -S 1M), byte for byte as numpy orders: with -s its stable lexsort by the keys;
# without, the record's bytes as the last key; with -u, the first record of each run of equal
# keys. Every type and both directions: in.bin above (u64le f64le i32be f32be u16le bytes) and
# all.bin (the other thirteen types), with ties, NaNs and signed zeros.
ok "$N" "$GEN" --format fixed:64:0:64 --field 0:u8:distinct=3 --field 1:i8:special=30 \
    --field 2:u16be:distinct=4 --field 4:i16le:distinct=3 --field 6:i16be:special=20 \
    --field 8:u32le:distinct=5 --field 12:u32be:special=20 --field 16:i32le:distinct=4 \
    --field 20:u64be:distinct=3 --field 28:i64le:distinct=4 --field 36:i64be:special=30 \
    --field 44:f32le:distinct=5:nan=10:special=20 --field 48:f64be:distinct=6:nan=10:special=20 \
    --seed "$SEED" 6000 "$T/all.bin"


# typed_case RANKS IN SIZE MODE WHERE KEY...: dsort at RANKS (WHERE: mem, or ooc) against numpy.
typed_case() {
    local n=$1 in=$2 size=$3 mode=$4 where=$5
    shift 5
    local ks=() opts=() k
    for k in "$@"; do ks+=(-k "$k"); done
    case $mode in s) opts+=(-s) ;; u) opts+=(-u) ;; esac
    [ "$where" = ooc ] && opts+=(--out-of-core -S 1M)
    local tag="$n ranks $where -$mode $*"
    oracle "$in" "$size" "$mode" "$T/want.bin" "$@" || fail "numpy failed ($tag)"
    rm -f "$T/got.bin"
    ok "$n" "$DSORT" --format "fixed:$size:0:$size" "${ks[@]}" "${opts[@]}" -o "$T/got.bin" "$in" &&
        same_file "dsort $tag" "$size" "$T/want.bin" "$T/got.bin"
}
A1=(20:f32be:r 24:u16le 8:f64le:r)
A2=(26:bytes:6 24:u16le:r 16:i32be 0:u64le:r)
A3=(8:f64le 0:u64le)
A4=(16:i32be:r 20:f32be 26:bytes:6:r)
B1=(0:u8 1:i8:r 44:f32le 2:u16be:r 4:i16le 6:i16be 8:u32le:r)
B2=(48:f64be:r 12:u32be 16:i32le:r 20:u64be 28:i64le:r 36:i64be)
B3=(0:u8:r 1:i8 44:f32le:r 2:u16be 4:i16le:r 6:i16be:r 8:u32le 48:f64be 12:u32be:r 16:i32le
    20:u64be:r 28:i64le 36:i64be:r)
# Integer and bytes keys back to back are normalised in place of their bytes (no widening):
# every integer type, mixed directions; and a single little-endian id.
C1=(0:u8:r 1:i8 2:u16be:r 4:i16le 6:i16be:r 8:u32le 12:u32be:r 16:i32le 20:u64be:r 28:i64le
    36:i64be:r)
C2=(24:u16le:r 26:bytes:6)
C3=(0:u64le)
C4=(16:i32be 20:f32be:r) # a float: widened
# (CI time: each rank count in memory and out of core, the key sets spread over them.)
typed_case 1 "$T/in.bin" 40 s mem "${A1[@]}"
typed_case 1 "$T/all.bin" 64 rec ooc "${B2[@]}"
typed_case 2 "$T/in.bin" 40 rec mem "${A4[@]}"
typed_case 2 "$T/all.bin" 64 s ooc "${B1[@]}"
typed_case 3 "$T/all.bin" 64 rec ooc "${B3[@]}"
typed_case 3 "$T/in.bin" 40 s mem "${A2[@]}"
typed_case 3 "$T/in.bin" 40 u ooc "${A3[@]}"
typed_case 7 "$T/in.bin" 40 rec ooc "${A2[@]}"
typed_case 7 "$T/all.bin" 64 s mem "${B3[@]}"
typed_case 7 "$T/in.bin" 40 u mem "${A3[@]}"
typed_case 1 "$T/all.bin" 64 rec mem "${C1[@]}"
typed_case 2 "$T/all.bin" 64 s ooc "${C1[@]}"
typed_case 3 "$T/in.bin" 40 u mem "${C2[@]}"
typed_case 3 "$T/in.bin" 40 rec ooc "${C3[@]}"
typed_case 7 "$T/all.bin" 64 rec ooc "${C1[@]}"
typed_case 7 "$T/in.bin" 40 s mem "${C4[@]}"
typed_case 7 "$T/in.bin" 40 rec mem "${C3[@]}"
# Typed keys keep the mapped in-memory path (job_map.c: the records stay the user's in the page
# cache, the entries carry their normalised keys) where raw keys take it, i.e. without -u: the
# default run's --stats says mapped exactly then, its output is byte for byte what the copying
# path (--no-map) writes with the same keys and options, and what numpy gives (without -r),
# and every rank writes as many records on both paths (the exact balance). At 1, 2, 3, 4 and 7
# ranks: -s, the default (ties by the record's bytes: NaNs of other payloads, -0.0 and +0.0,
# equal ids), -u, -r, one to thirteen keys (a normalised key longer than the entries' 10-byte
# prefix, and one shorter), in place and widened.
# mapped_case RANKS IN SIZE MODE R KEY...: MODE s, rec or u as for typed_case; R r for -r, or -.
mapped_case() {
    local n=$1 in=$2 size=$3 mode=$4 r=$5
    shift 5
    local ks=() opts=() k
    for k in "$@"; do ks+=(-k "$k"); done
    case $mode in s) opts+=(-s) ;; u) opts+=(-u) ;; esac
    [ "$r" = r ] && opts+=(-r)
    local tag="$n ranks -$mode${opts[*]:+ ${opts[*]}} $*" want_mapped=True
    [ "$mode" = u ] && want_mapped=False
    rm -f "$T/map.bin" "$T/copy.bin" "$T/map.json" "$T/copy.json"
    ok "$n" "$DSORT" --format "fixed:$size:0:$size" "${ks[@]}" "${opts[@]}" --stats "$T/map.json" \
        -o "$T/map.bin" "$in" || return
    ok "$n" "$DSORT" --format "fixed:$size:0:$size" "${ks[@]}" "${opts[@]}" --no-map \
        --stats "$T/copy.json" -o "$T/copy.bin" "$in" || return
    same_file "mapped and copying paths, $tag" "$size" "$T/copy.bin" "$T/map.bin"
    "$NUMPY_PY" - "$T/map.json" "$T/copy.json" >"$T/mc" 2>&1 <<'PY'
import json, sys
m, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("mapped %s copied %s" % (m["mapped"], c["mapped"]))
print("records_out %s %s" % ([r["records_out"] for r in m["per_rank"]],
                             [r["records_out"] for r in c["per_rank"]]))
PY
    contains "the default path of $tag" "$T/mc" "^mapped $want_mapped copied False\$"
    contains "every rank's records, mapped and copying, $tag" "$T/mc" \
        '^records_out (\[[0-9, ]*\]) \1$'
    if [ "$r" != r ]; then
        oracle "$in" "$size" "$mode" "$T/want.bin" "$@" || fail "numpy failed ($tag)"
        same_file "mapped path against numpy, $tag" "$size" "$T/want.bin" "$T/map.bin"
    fi
}
mapped_case 1 "$T/in.bin" 40 rec - "${A3[@]}"
mapped_case 1 "$T/all.bin" 64 s r "${B3[@]}"
mapped_case 2 "$T/in.bin" 40 rec - 8:f64le
mapped_case 2 "$T/in.bin" 40 s - "${A1[@]}"
mapped_case 2 "$T/all.bin" 64 rec r "${C1[@]}"
mapped_case 3 "$T/in.bin" 40 rec r "${A2[@]}"
mapped_case 3 "$T/all.bin" 64 rec - "${B3[@]}"
mapped_case 3 "$T/in.bin" 40 u - "${C3[@]}"
mapped_case 4 "$T/in.bin" 40 s r 8:f64le:r
mapped_case 4 "$T/all.bin" 64 rec - "${B2[@]}"
mapped_case 4 "$T/in.bin" 40 rec - "${C3[@]}"
mapped_case 4 "$T/in.bin" 40 s r "${C3[@]}"
mapped_case 7 "$T/in.bin" 40 rec - "${A4[@]}"
mapped_case 7 "$T/in.bin" 40 s - "${C2[@]}"
mapped_case 7 "$T/all.bin" 64 rec r 44:f32le 48:f64be:r
# -c checks by the same keys; a key past the record is refused before any work.
ok "$N" "$DSORT" --format "$FMT" -k 26:bytes:6 -k 24:u16le:r -k 16:i32be -k 0:u64le:r -s \
    -c "$T/mixed4.bin"
expect_rc 1 "$N" "$DSORT" --format "$FMT" -k 0:u64le -c "$T/in.bin"
expect_rc 2 "$N" "$DSORT" --format "$FMT" -k 36:u64le -o "$T/x.bin" "$T/in.bin" &&
    contains "dsort: key past the record" "$T/stderr" "bad key '36:u64le'"
# --plan and --stats of the same job agree with typed keys (a float key: the pipelines hold
# widened records, normkey || record, 32 bytes here for 16; the output and the input are the
# user's 16): the plan decides in memory or out of core, mapped or copied, as the job does,
# also where the budget lies between the narrow records' need and the widened ones' (-S one
# byte short of what the job reports it needs); its output bytes are the output's size, its
# share the input's bytes each rank read (--stats bytes_read: the input's, not widened); its
# spill is at least 90% of what the runs took over all ranks (their blocks add a few %; narrow
# records would be half), no rank's runs exceed its spill and margin, and the space it asks
# for holds the output and every run. The file sizes are the oracle.
ok "$N" "$GEN" --format fixed:16:0:16 --field 0:u64le --field 8:f64le:nan=5 --seed "$SEED" 60000 \
    "$T/p16.bin"
mkdir -p "$T/tmp"
plan_vs_stats() {
    local tag=$1
    shift
    local args=(--format fixed:16:0:16 "${PVS_KEYS[@]}" -T "$T/tmp" "$@")
    rm -f "$T/p.out" "$T/st.json"
    ok "$N" "$DSORT" "${args[@]}" --plan --json -o "$T/p.out" "$T/p16.bin" || return
    cp "$T/stdout" "$T/plan.json"
    ok "$N" "$DSORT" "${args[@]}" --stats "$T/st.json" -o "$T/p.out" "$T/p16.bin" || return
    "$NUMPY_PY" - "$T/plan.json" "$T/st.json" "$T/p16.bin" "$T/p.out" >"$T/cmp" 2>&1 <<'PY'
import json, os, sys
plan, st = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
isize, osize = os.path.getsize(sys.argv[3]), os.path.getsize(sys.argv[4])
job, ranks, pr = plan["job"], plan["budgets"], st["per_rank"]
bad = []
def want(what, ok):
    if not ok:
        bad.append(what)
want("sort %s, the job out_of_core %s" % (job["sort"], st["out_of_core"]),
     job["sort"] == ("out_of_core" if st["out_of_core"] else "in_memory"))
want("input %s, the job mapped %s" % (job["input"], st["mapped"]),
     (job["input"] == "mapped") == st["mapped"])
want("output %d bytes, the file %d" % (job["output"]["bytes"], osize), job["output"]["bytes"] == osize)
want("input %d bytes, the output %d" % (isize, osize), isize == osize)
want("written %d bytes" % sum(r["bytes_written"] for r in pr), sum(r["bytes_written"] for r in pr) == osize)
want("read %d bytes" % sum(r["bytes_read"] for r in pr), sum(r["bytes_read"] for r in pr) == isize)
spill = 0
for p, r in zip(ranks, pr):
    want("rank %d share %d, read %d" % (r["rank"], p["share_bytes"], r["bytes_read"]),
         p["share_bytes"] == r["bytes_read"])
    margin = p["spill_bytes"] // 32 + (1 << 20) if p["spill_bytes"] else 0
    want("rank %d spill %d + margin, the runs %d" % (r["rank"], p["spill_bytes"], r["spill_bytes"]),
         r["spill_bytes"] <= p["spill_bytes"] + margin)
    spill += r["spill_bytes"]
pspill = sum(p["spill_bytes"] for p in ranks)
want("spill %d, the runs %d" % (pspill, spill), pspill >= spill * 0.9)
need = sum(fs["need"] for fs in plan["space"])
want("space %d for output %d + runs %d" % (need, osize, spill), need >= osize + spill)
print("\n".join(bad) if bad else "agree")
PY
    contains "--plan and --stats of $tag" "$T/cmp" '^agree$'
}
PVS_KEYS=(-k 0:u64le -k 8:f64le)
plan_vs_stats "the default budget"
plan_vs_stats "out of core" --out-of-core -S 2M
plan_vs_stats "-S 2M" -S 2M
if [ -f "$T/st.json" ]; then
    W=$("$NUMPY_PY" -c "import json, sys; print(max(r['memory_needed'] for r in json.load(open(sys.argv[1]))['per_rank']))" "$T/st.json")
    plan_vs_stats "-S one byte short of the widened need" -S "$((W - 1))b"
    plan_vs_stats "-S the widened need" -S "${W}b"
fi
PVS_KEYS=(-k 0:u64le) # normalised in place: the runs hold 16-byte records
plan_vs_stats "an in-place key out of core" --out-of-core -S 2M

# Balance within 1.05 under all-equal typed keys, at 2, 3, 4 and 7 ranks, in memory and out of
# core: records equal in the key (the rest random: ties by the record) and whole records equal.
ok "$N" "$GEN" --format fixed:32:0:32 --field 0:u64le:distinct=1 --seed "$SEED" 100000 "$T/eq.bin"
ok "$N" "$GEN" --format fixed:32:0:32 --field 0:u64le:distinct=1 --field 8:bytes:24:distinct=1 \
    --seed "$SEED" 100000 "$T/same.bin"
for n in 2 3 4 7; do
    for where in mem ooc; do
        opts=()
        [ "$where" = ooc ] && opts=(--out-of-core -S 2M)
        f=$T/eq.bin
        [ "$n" = 3 ] || [ "$n" = 7 ] && f=$T/same.bin
        [ "$where" = ooc ] && [ "$f" = "$T/eq.bin" ] && opts+=(-s)
        rm -f "$T/st.json"
        ok "$n" "$DSORT" --format fixed:32:0:32 -k 0:u64le:r "${opts[@]}" --stats "$T/st.json" \
            -o "$T/eq.out" "$f" || continue
        B=$("$NUMPY_PY" -c "import json, sys; s = json.load(open(sys.argv[1])); r = [x['records_out'] for x in s['per_rank']]; print(max(r) * len(r) / sum(r))" "$T/st.json")
        cond "balance $B at $n ranks $where ${opts[*]} $(basename "$f"): within 1.05" "$B <= 1.05"
        # equal records, or -s: the output is the input
        [ "$f" = "$T/same.bin" ] || [ "${opts[*]}" != "${opts[*]%-s}" ] &&
            same_file "all-equal keys at $n ranks $where" 32 "$f" "$T/eq.out"
    done
done
suite_finish
