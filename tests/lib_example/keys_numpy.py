#!/usr/bin/env python3
"""lib.keys_numpy: libdsort's typed keys (struct dsort_records.keys) against numpy.

One structured array with a field of every type (u8 .. i64be, f32/f64 in both byte orders
full of NaNs of both signs and any payload, signed zeros, infinities, subnormals, and
duplicates; a bytes field; a constant field), at packed, unaligned offsets. keys_sort (the
MPI side) sorts it through dsort_sort at each rank count, for every case: each type alone in
both directions, two and three keys with mixed directions, back-to-back integer keys (the
records normalised in place instead of widened), all-equal keys, a few records on many ranks,
each under the flags -, r, s and rs. The oracle is numpy's stable np.lexsort by the same keys
(each key as the dense rank of its values under numpy's own sort order: NaNs last and equal,
-0.0 == +0.0; negated when descending, by :r or by DSORT_REVERSE), then with DSORT_STABLE
nothing (input order), else the record's bytes (also negated under DSORT_REVERSE). The
concatenated outputs must be byte-identical to it, and rank i must hold exactly the records
of global positions [floor(i*N/p), floor((i+1)*N/p)). Bad key lists must fail on every rank
with DSORT_ERR_ARG and a message naming the bad key.

  python3 keys_numpy.py --tool BUILD/tests/lib_example/keys_sort [--ranks 1,2,3,4,7]
                        [--seed N] [--records N]

The launcher is $DSORT_MPIEXEC (default mpirun) with $DSORT_MPIEXEC_PREFLAGS. Exit 0 when
every case matched, 1 otherwise (the seed, case and first differing record are printed), 77
(skipped) without numpy (Debian's python3-numpy).
"""

import argparse
import os
import random
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from typed_numpy import TYPES, numpy_or_skip  # noqa: E402

np = numpy_or_skip("lib.keys_numpy")
BYTES_LEN = 3


def layout():
    """A filler byte, every type once (in TYPES' order, packed: the integers lie back to back),
    a bytes field, a constant u32le, a filler byte."""
    names, formats, offsets, specs = [], [], [], {}
    off = 1
    for t in list(TYPES) + ["bytes", "const"]:
        fmt = {"bytes": "V%d" % BYTES_LEN, "const": "<u4"}.get(t, TYPES.get(t))
        names.append(t)
        formats.append(fmt)
        offsets.append(off)
        specs[t] = (off, "u32le" if t == "const" else t, np.dtype(fmt).itemsize)
        off += np.dtype(fmt).itemsize
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": off + 1})
    return dt, specs


def float_pool(rng, dt):
    """Corner values of a float dtype as bit patterns: NaNs of both signs (quiet, signalling,
    payloads), signed zeros and infinities, subnormals, ordinary numbers."""
    w = dt.itemsize * 8
    mant = 52 if w == 64 else 23
    top = 1 << (w - 1)
    inf = ((1 << (w - 1)) - 1) & ~((1 << mant) - 1)
    pool = []
    for sign in (0, top):
        pool += [sign, sign | inf, sign | inf | (1 << (mant - 1)), sign | inf | 1,
                 sign | inf | rng.getrandbits(mant) | 1, sign | 1, sign | (inf - 1)]
    nums = np.array([1.0, -1.0, 2.5, -2.5, 1e-3, 7.0], dtype=dt.newbyteorder("<"))
    pool += [int.from_bytes(v.tobytes(), "little") for v in nums]
    return pool


def column(rng, dt, n):
    """n values of dtype dt from a small pool (so that keys tie and later keys decide), some
    random."""
    w = dt.itemsize
    if dt.kind == "f":
        le = dt.newbyteorder("<")
        pool = [np.frombuffer(b.to_bytes(w, "little"), le)[0] for b in float_pool(rng, le)]
    else:
        bits = w * 8
        lo = -(1 << (bits - 1)) if dt.kind == "i" else 0
        hi = (1 << (bits - 1)) - 1 if dt.kind == "i" else (1 << bits) - 1
        pool = [lo, hi, 0, 1, lo + 1, hi - 1, rng.randint(lo, hi), 3]
    vals = np.zeros(n, dtype=dt)
    for i in range(n):
        if rng.random() < 0.9:
            vals[i] = pool[rng.randrange(len(pool))]
        else:
            vals[i] = np.frombuffer(rng.randbytes(w), dtype=dt)[0]
    return vals


def make_data(rng, n):
    dt, specs = layout()
    arr = np.zeros(n, dtype=dt)
    raw = arr.view(np.uint8).reshape(n, dt.itemsize)
    raw[:] = np.frombuffer(rng.randbytes(n * dt.itemsize), np.uint8).reshape(n, dt.itemsize)
    for t in TYPES:
        arr[t] = column(rng, np.dtype(TYPES[t]), n)
    pool = [rng.randbytes(BYTES_LEN) for _ in range(3)] + [bytes(BYTES_LEN), b"\xff" * BYTES_LEN]
    for i in range(n):
        arr["bytes"][i] = np.void(rng.choice(pool))
    arr["const"] = 0
    return arr, dt, specs


def dense_rank(a):
    """Ranks 0.. of a's values under numpy's own sort order (equal values, NaNs among them,
    share a rank). a: 1-d numeric, or 2-d uint8 rows compared as byte strings."""
    if a.ndim == 2:
        order = np.lexsort(a.T[::-1]) if a.shape[1] else np.arange(len(a))
        s = a[order]
        new = np.any(s[1:] != s[:-1], axis=1)
    else:
        order = np.argsort(a, kind="stable")
        s = a[order]
        new = s[1:] != s[:-1]
        if a.dtype.kind == "f":
            new &= ~(np.isnan(s[1:]) & np.isnan(s[:-1]))
    ranks = np.empty(len(a), dtype=np.int64)
    ranks[order] = np.concatenate([[0], np.cumsum(new)]) if len(a) else []
    return ranks


def numpy_order(arr, keys, flags):
    """np.lexsort's stable permutation: the keys, then (without s) the record's bytes; all
    reversed with r. keys: (field, descending) pairs."""
    rev = "r" in flags
    raw = arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)
    lex = []  # least significant first
    if "s" not in flags:
        r = dense_rank(raw)
        lex.append(-r if rev else r)
    for (name, desc) in reversed(keys):
        col = arr[name]
        r = dense_rank(col.copy().view(np.uint8).reshape(len(arr), -1) if name == "bytes"
                       else col)
        lex.append(-r if desc != rev else r)
    return np.lexsort(lex)


def key_spec(specs, name, desc):
    off, t, ln = specs[name]
    return "%d:%s%s%s" % (off, t, ":%d" % ln if t == "bytes" else "", ":r" if desc else "")


def make_cases(rng, specs, n):
    """(flags, nrec, [(field, desc)]) good cases, and (nrec, keys string) bad ones."""
    flag_cycle = ["-", "r", "s", "rs"]
    lists = []
    for t in list(TYPES) + ["bytes"]:
        lists += [[(t, False)], [(t, True)]]
    fields = list(TYPES) + ["bytes"]
    for nk in (2, 2, 2, 2, 3, 3, 3, 3, 3, 3):
        lists.append([(f, rng.random() < 0.5) for f in rng.sample(fields, nk)])
    # back to back integers: the records are normalised in place (typedkey.h, wide_prefix 0)
    lists += [[("u8", False), ("i8", True), ("u16le", False)], [("u16be", True), ("i16le", False)],
              [("i64le", False), ("i64be", True)]]
    lists += [[("const", False)], [("const", True), ("f32le", False)]]
    good = []
    for i, keys in enumerate(lists):
        good.append((flag_cycle[i % 4], n, keys))
    for flags in flag_cycle:  # all-equal keys: balance and tie order alone
        good.append((flags, n, [("const", False)]))
    for nrec in (0, 1, 5):  # fewer records than ranks
        good.append((flag_cycle[nrec % 4], nrec, [("f64be", True), ("u8", False)]))
    bad = [(n, "1:u64"), (n, "1:u8,"), (n, ",1:u8"), (n, "1:u8,,2:u8"), (n, "1:u8:x"),
           (n, "%d:u64le" % (specs["const"][0] + 1)), (n, "0:bytes"), (n, "0:u8:2"),
           (n, "0:f64le 8:u8")]
    return good, bad


def check_case(outdir, k, p, arr, perm, label):
    rs = arr.dtype.itemsize
    n = len(perm)
    want = arr.view(np.uint8).reshape(n, rs)[perm].tobytes()
    if os.path.exists(os.path.join(outdir, "%d.err" % k)):
        with open(os.path.join(outdir, "%d.err" % k)) as f:
            return "%s: failed: %s" % (label, f.read().strip())
    got = b""
    for r in range(p):
        with open(os.path.join(outdir, "%d.%d" % (k, r)), "rb") as f:
            part = f.read()
        lo, hi = r * n // p, (r + 1) * n // p
        if len(part) != (hi - lo) * rs:
            return "%s: rank %d has %d bytes, want %d records (%d bytes)" % (
                label, r, len(part), hi - lo, (hi - lo) * rs)
        got += part
    if got == want:
        return None
    i = next(i for i in range(n) if got[i * rs:(i + 1) * rs] != want[i * rs:(i + 1) * rs])
    return "%s: record %d of %d differs\n  libdsort: %s\n  numpy:    %s" % (
        label, i, n, got[i * rs:(i + 1) * rs].hex(), want[i * rs:(i + 1) * rs].hex())


def check_bad(outdir, k, keys, label):
    path = os.path.join(outdir, "%d.err" % k)
    if not os.path.exists(path):
        return "%s: accepted" % label
    with open(path) as f:
        line = f.read().strip()
    if not line.startswith("1 ") or "bad key" not in line:
        return "%s: want code 1 and a message naming the bad key, got '%s'" % (label, line)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--ranks", default="1,2,3,4,7")
    ap.add_argument("--records", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("DSORT_TEST_SEED", 0))
                    or int(time.time()))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    print("lib.keys_numpy: seed %d (numpy %s)" % (a.seed, np.__version__))
    rng = random.Random(a.seed)
    arr, dt, specs = make_data(rng, a.records)
    good, bad = make_cases(rng, specs, a.records)
    tmp = tempfile.mkdtemp(prefix="keys_numpy.")
    data = os.path.join(tmp, "data")
    arr.tofile(data)
    lines = ["%s %d %s" % (fl, nrec, ",".join(key_spec(specs, f, d) for f, d in keys))
             for fl, nrec, keys in good] + ["- %d %s" % b for b in bad]
    with open(os.path.join(tmp, "cases"), "w") as f:
        f.write("\n".join(lines) + "\n")
    perms = [numpy_order(arr[:nrec], keys, fl) for fl, nrec, keys in good]
    launcher = [os.environ.get("DSORT_MPIEXEC", "mpirun")] + \
        shlex.split(os.environ.get("DSORT_MPIEXEC_PREFLAGS", "--oversubscribe"))
    fails = []
    for p in [int(x) for x in a.ranks.split(",")]:
        out = os.path.join(tmp, "out.%d" % p)
        os.mkdir(out)
        cmd = ["timeout", "120"] + launcher + ["-n", str(p), a.tool, data, str(dt.itemsize),
                                                os.path.join(tmp, "cases"), out]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            fails.append("%d ranks: %s exited %d: %s" % (p, " ".join(cmd), run.returncode,
                                                         run.stderr.strip()[-2000:]))
            continue
        for k, (fl, nrec, keys) in enumerate(good):
            label = "%d ranks, case %d (flags %s, %d records, keys %s)" % (
                p, k, fl, nrec, lines[k].split(" ", 2)[2])
            err = check_case(out, k, p, arr[:nrec], perms[k], label)
            if err:
                fails.append(err)
        for j, (nrec, keys) in enumerate(bad):
            k = len(good) + j
            err = check_bad(out, k, keys, "%d ranks, bad keys '%s'" % (p, keys))
            if err:
                fails.append(err)
        print("%d ranks: %d cases and %d bad key lists checked" % (p, len(good), len(bad)))
    if not a.keep:
        shutil.rmtree(tmp)
    for f in fails[:10]:
        print("FAIL:", f)
    if fails:
        print("lib.keys_numpy: FAILED (%d); replay with --seed %d" % (len(fails), a.seed))
        return 1
    print("lib.keys_numpy: ok, byte-identical to numpy's stable lexsort")
    return 0


if __name__ == "__main__":
    sys.exit(main())
