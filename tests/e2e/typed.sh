#!/bin/bash
# Typed keys in dsort-gen and dsort-validate (issue 28), against numpy (python3-numpy; the test
# is skipped without it): dsort-gen --format/--field writes typed fields (duplicates, NaNs,
# corner values) and the same file at any rank count; numpy's stable lexsort of it by the
# same keys (mixed directions) validates; a swapped pair of records with different keys is
# reported as the first unordered record with its number; bad keys exit 2 naming the key.
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

# numpy_sort OUT KEY...: numpy's stable lexsort of in.bin by KEY (NAME or -NAME: descending,
# as minus the dense rank under numpy's order), most significant first; prints a summary.
numpy_sort() {
    "$NUMPY_PY" - "$T/in.bin" "$@" <<'PY'
import sys
import numpy as np
dt = np.dtype({"names": ["id", "x", "c", "y", "s", "b"],
               "formats": ["<u8", "<f8", ">i4", ">f4", "<u2", "V6"],
               "offsets": [0, 8, 16, 20, 24, 26], "itemsize": 40})
raw = np.fromfile(sys.argv[1], dtype=np.uint8).reshape(-1, 40)
a = raw.view(dt).reshape(-1)
def rank(v):
    if v.dtype.kind == "V":
        v = v.copy().view(np.uint8).reshape(len(v), -1)
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
    r[o] = np.concatenate([[0], np.cumsum(new)])
    return r
lex = [(-rank(a[k[1:]]) if k[0] == "-" else rank(a[k])) for k in reversed(sys.argv[3:])]
raw[np.lexsort(lex)].tofile(sys.argv[2])
x = a["x"]
print("nan %d negzero %d inf %d" % (np.isnan(x).sum(), ((x == 0) & np.signbit(x)).sum(),
                                    np.isinf(x).sum()))
PY
}

numpy_sort "$T/by_id_x.bin" id x >"$T/np.out" || fail "numpy failed"
contains "the generated x has NaNs, -0.0 and infinities" "$T/np.out" '^nan [1-9][0-9]* negzero [1-9][0-9]* inf [1-9]'
ok "$N" "$VALIDATE" --no-manifest --format "$FMT" -k 0:u64le -k 8:f64le "$T/by_id_x.bin" &&
    contains "numpy's order by id, x" "$T/stdout" '^SUCCESS'
# The unsorted input is not in order.
expect_rc 1 "$N" "$VALIDATE" --no-manifest --format "$FMT" -k 0:u64le -k 8:f64le "$T/in.bin"

# Mixed directions, three and four keys, every kind of field.
numpy_sort "$T/mixed.bin" -y s -x >/dev/null || fail "numpy failed"
ok "$N" "$VALIDATE" --format "$FMT" -k 20:f32be:r -k 24:u16le -k 8:f64le:r "$T/mixed.bin"
numpy_sort "$T/mixed4.bin" b -s c -id >/dev/null || fail "numpy failed"
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
suite_finish
