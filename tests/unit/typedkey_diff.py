#!/usr/bin/env python3
"""typedkey_diff.py - differential test of typed keys (typedkey.h, through typedkey_tool)
against numpy's stable lexsort.

Each iteration draws a record layout (a numpy structured dtype: fields of every type at
packed, unaligned offsets, little- or big-endian, plus filler bytes), one to three keys among
its fields with random directions, and records full of corner values: NaNs of both signs with
any payload, signed zeros, infinities, subnormals, min and max, and many duplicates. numpy
sorts them with np.lexsort (stable), the keys as the primary sort keys (a descending key as
the negated dense rank of its values under numpy's own order), and then either nothing (-s:
equal keys keep input order) or the record's bytes (the whole-record last resort). typedkey_tool
sorts the same bytes by normalised keys; the outputs must be byte-identical.

  python3 typedkey_diff.py --tool build/tests/unit/typedkey_tool [--seed N]
                           [--iterations N] [--only I]

The seed defaults to $DSORT_TEST_SEED, else the time. Exit 0 when every iteration matched,
1 on a difference (seed, iteration, keys and the first differing record are printed), 77
(skipped) when no python3 with numpy (Debian's python3-numpy) is found.
"""

import argparse
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from typed_numpy import TYPES, numpy_or_skip  # noqa: E402

np = numpy_or_skip("typedkey_diff")


def corner_bits(rng, dt):
    """Bit patterns of the corner values of dtype dt (as unsigned integers)."""
    w = dt.itemsize * 8
    mask = (1 << w) - 1
    top = 1 << (w - 1)
    if dt.kind == "f":
        mant = 52 if w == 64 else 23
        inf = (mask >> 1) & ~((1 << mant) - 1)
        sign = top if rng.random() < 0.5 else 0
        pay = rng.getrandbits(mant) or 1
        return rng.choice([
            sign, sign | inf, sign | inf | pay, sign | inf | (1 << (mant - 1)),
            sign | inf | 1, sign | (inf - 1), sign | (1 << mant), sign | 1,
            sign | rng.getrandbits(mant),
        ])
    return rng.choice([0, 1, mask, top, top - 1, top + 1, rng.getrandbits(w)])


def column(rng, dt, n):
    """n values of dtype dt: corners, random bits, small numbers, repeats."""
    w = dt.itemsize
    vals = np.frombuffer(rng.randbytes(n * w), dtype=dt).copy()
    small = np.arange(-3, 4).astype(dt) if dt.kind != "u" else np.arange(0, 4).astype(dt)
    for i in range(n):
        r = rng.random()
        if r < 0.3:
            b = corner_bits(rng, dt).to_bytes(w, "little")
            vals[i] = np.frombuffer(b, dtype=dt.newbyteorder("<"))[0]
        elif r < 0.55:
            vals[i] = small[rng.randrange(len(small))]
        elif r < 0.7 and i > 0:
            vals[i] = vals[rng.randrange(i)]
    return vals


def layout(rng):
    """A structured dtype: 2-5 fields at packed offsets, filler bytes around them."""
    names, formats, offsets, specs = [], [], [], []
    off = rng.randrange(3)
    for j in range(rng.randint(2, 5)):
        t = rng.choice(list(TYPES) + ["bytes"])
        if t == "bytes":
            ln = rng.randint(1, 6)
            fmt = "V%d" % ln
        else:
            fmt = TYPES[t]
            ln = np.dtype(fmt).itemsize
        names.append("f%d" % j)
        formats.append(fmt)
        offsets.append(off)
        specs.append((off, t, ln))
        off += ln + rng.randrange(2)
    size = off + rng.randrange(3)
    dt = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})
    return dt, specs


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


def numpy_order(arr, dt, keys, stable):
    """The permutation numpy's stable lexsort gives: keys first, then the record's bytes."""
    raw = arr.view(np.uint8).reshape(len(arr), dt.itemsize)
    lex = []  # least significant first
    if not stable:
        pad = -dt.itemsize % 8
        words = np.concatenate([raw, np.zeros((len(arr), pad), np.uint8)], axis=1)
        words = words.copy().view(">u8")
        lex.extend(words[:, k] for k in reversed(range(words.shape[1])))
    for (name, t, desc) in reversed(keys):
        if t == "bytes":
            col = arr[name].copy().view(np.uint8).reshape(len(arr), -1)
            r = dense_rank(col)
            lex.append(-r if desc else r)
        elif desc:
            lex.append(-dense_rank(arr[name]))
        else:
            lex.append(arr[name])  # numpy compares the values itself
    return np.lexsort(lex)


def describe(arr, i):
    return " ".join("%s=%r" % (n, arr[n][i]) for n in arr.dtype.names)


def one(tool, rng, it, verbose):
    dt, specs = layout(rng)
    n = rng.choice([1, 2, 5, 50, 400, 1500])
    arr = np.zeros(n, dtype=dt)
    raw = arr.view(np.uint8).reshape(n, dt.itemsize)
    raw[:] = np.frombuffer(rng.randbytes(n * dt.itemsize), np.uint8).reshape(n, dt.itemsize)
    for (name, (off, t, ln)) in zip(dt.names, specs):
        if t == "bytes":
            pool = [rng.randbytes(ln) for _ in range(3)] + [bytes(ln), b"\xff" * ln]
            for i in range(n):
                arr[name][i] = np.void(rng.choice(pool) if rng.random() < 0.8 else rng.randbytes(ln))
        else:
            arr[name] = column(rng, np.dtype(TYPES[t]), n)
    picked = rng.sample(range(len(specs)), rng.randint(1, min(3, len(specs))))
    keys, args = [], []
    for j in picked:
        off, t, ln = specs[j]
        desc = rng.random() < 0.5
        keys.append((dt.names[j], t, desc))
        args += ["-k", "%d:%s%s%s" % (off, t, ":%d" % ln if t == "bytes" else "",
                                      ":r" if desc else "")]
    stable = rng.random() < 0.5
    cmd = [tool, "-R", str(dt.itemsize)] + (["-s"] if stable else []) + args
    got = subprocess.run(cmd, input=arr.tobytes(), capture_output=True)
    if got.returncode:
        print("iteration %d: %s failed: %s" % (it, " ".join(cmd), got.stderr.decode()))
        return False
    perm = numpy_order(arr, dt, keys, stable)
    # (from the raw bytes: numpy's fancy indexing need not copy the bytes between fields)
    want_bytes = raw[perm].tobytes()
    want = np.frombuffer(want_bytes, dtype=dt)
    if got.stdout == want_bytes:
        if verbose:
            print("iteration %d: %d records, %s: ok" % (it, n, " ".join(cmd[1:])))
        return True
    out = np.frombuffer(got.stdout, dtype=dt)
    w = dt.itemsize
    i = next(i for i in range(n) if got.stdout[i * w:(i + 1) * w] != want_bytes[i * w:(i + 1) * w])
    print("iteration %d: %s: record %d differs\n  dsort: %s %s\n  numpy: %s %s"
          % (it, " ".join(cmd), i, describe(out, i), got.stdout[i * w:(i + 1) * w].hex(),
             describe(want, i), want_bytes[i * w:(i + 1) * w].hex()))
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("DSORT_TEST_SEED", 0))
                    or int(time.time()))
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--only", type=int)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    print("typedkey_diff: seed %d (numpy %s)" % (a.seed, np.__version__))
    bad = 0
    for it in range(a.iterations):
        rng = random.Random("%d/%d" % (a.seed, it))
        if a.only is not None and it != a.only:
            continue
        if not one(a.tool, rng, it, a.verbose):
            bad += 1
            print("replay: --seed %d --only %d" % (a.seed, it))
            if bad >= 3:
                break
    print("typedkey_diff: %s" % ("FAILED" if bad else "all %d iterations matched numpy"
                                  % a.iterations))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
