"""lib.python: dsort.sort (src/lib/python/dsort) under mpirun, against numpy on rank 0.

Every rank builds the same global arrays from the seed, keeps its slice (uneven, some empty),
sorts it with dsort, and rank 0 gathers the shares and checks them against an independent
oracle: np.lexsort (stable) by each key's rank (np.unique; descending: the negated rank; bytes
fields: one column per byte), then, without stable, the record's bytes as the last keys
(descending=True: reversed too, as dsort -r). With stable the result must be byte-identical to
the oracle (input order is rank 0's records first, then rank 1's...); without it too, since
the record's bytes break every tie. The shares must be exactly the balanced ones. Cases that
need typed keys (libdsort 0.2) are skipped on 0.1, after checking that dsort refuses them.
Environment: DSORT_TEST_SEED replays a run.
"""

import os
import sys
import traceback

import numpy as np
from mpi4py import MPI

import dsort

COMM = MPI.COMM_WORLD
RANK, SIZE = COMM.Get_rank(), COMM.Get_size()


def abort_hook(kind, value, tb):
    """An uncaught exception on one rank ends the whole job, not a hang in the next collective."""
    traceback.print_exception(kind, value, tb)
    sys.stderr.write(f"lib.python: rank {RANK}/{SIZE}: uncaught {kind.__name__}, seed {SEED}\n")
    sys.stderr.flush()
    COMM.Abort(1)


SEED = COMM.bcast(int(os.environ.get("DSORT_TEST_SEED", np.random.SeedSequence().entropy % 2**32)))
sys.excepthook = abort_hook
LIB = dsort._lib.get()  # pylint: disable=protected-access
FAILS = []
SKIPS = []
CASES = 0

PARTICLE = np.dtype([("id", "<u8"), ("x", "<f8"), ("y", "<f8"), ("z", "<f8"), ("v", "<f4", (3,))])
CELL = np.dtype([("level", "<i4"), ("morton", "<u8")])
TAGGED = np.dtype([("tag", "S10"), ("hi", ">u2"), ("lo", "u1"), ("blob", "V3"), ("id", "<u8"),
                   ("x", "<f8")])


def odd_floats(rng, n, dtype):
    """Floats with duplicates, +-0.0, +-inf and NaNs of both signs and several payloads."""
    v = rng.choice([-2.5, -1.0, 0.0, 0.5, 1.0, 3.25, 1e300 if dtype == "<f8" else 1e30], n)
    v = v.astype(dtype)
    pick = rng.random(n)
    v[pick < 0.08] = -0.0
    v[(pick >= 0.08) & (pick < 0.12)] = np.inf
    v[(pick >= 0.12) & (pick < 0.15)] = -np.inf
    nan = (pick >= 0.15) & (pick < 0.25)
    bits = v.view("<u8" if dtype == "<f8" else "<u4")
    exp = 0x7FF0000000000000 if dtype == "<f8" else 0x7F800000
    sign = 0x8000000000000000 if dtype == "<f8" else 0x80000000
    payload = rng.integers(1, 1000, n).astype(bits.dtype)
    signs = np.where(rng.random(n) < 0.5, sign, 0).astype(bits.dtype)
    bits[nan] = (exp | payload | signs)[nan]
    smallr = pick >= 0.9  # some distinct values too
    v[smallr] = rng.normal(size=int(smallr.sum())).astype(dtype)
    return v


def particles(rng, n):
    a = np.zeros(n, PARTICLE)
    a["id"] = rng.integers(0, max(1, n // 4), n)
    a["id"][rng.random(n) < 0.05] = 2**64 - 1
    a["id"][::7] = 2**63 + 5  # above int64: unsigned order
    for f in "xyz":
        a[f] = odd_floats(rng, n, "<f8")
    a["v"] = odd_floats(rng, 3 * n, "<f4").reshape(n, 3)
    return a


def cells(rng, n):
    a = np.zeros(n, CELL)
    a["level"] = rng.integers(-3, 4, n)
    a["level"][::11] = -2**31
    a["morton"] = rng.integers(0, 50, n).astype("<u8") * np.uint64(2**58 + 1)
    return a


def tagged(rng, n):
    a = np.zeros(n, TAGGED)
    letters = rng.integers(0, 3, (n, 10)).astype(np.uint8)
    letters[:, 4:] = rng.choice([0, 65, 0xFF], (n, 6))  # NULs and high bytes: compared unsigned
    a.view(np.uint8).reshape(n, TAGGED.itemsize)[:, 0:10] = letters
    a["hi"] = rng.integers(0, 4, n) * 300
    a["lo"] = rng.integers(0, 3, n) * 100
    a.view(np.uint8).reshape(n, TAGGED.itemsize)[:, 13:16] = rng.integers(0, 2, (n, 3)) * 0xC1
    a["id"] = rng.integers(0, 5, n)
    a["x"] = odd_floats(rng, n, "<f8")
    return a


def columns(arr, name, desc):
    """Oracle keys of one field, most significant first: its rank, or its bytes one by one."""
    n = len(arr)
    if arr.dtype.names is None:
        dt, off = arr.dtype, 0
    else:
        dt, off = arr.dtype.fields[name][:2]
    if dt.kind in "SV":
        raw = np.frombuffer(arr.tobytes(), np.uint8).reshape(n, arr.dtype.itemsize)
        cols = [raw[:, off + i].astype(np.int64) for i in range(dt.itemsize)]
        return [255 - c if desc else c for c in cols]
    vals = arr if arr.dtype.names is None else arr[name]
    ranks = np.unique(vals, return_inverse=True)[1].astype(np.int64).reshape(n)
    return [-ranks if desc else ranks]


def oracle(arr, order, stable, descending):
    """The records of arr (the global input, in rank order) as dsort.sort should order them."""
    n = len(arr)
    if n == 0:
        return arr
    if order is None:
        order = list(arr.dtype.names) if arr.dtype.names else [None]
    elif isinstance(order, str):
        order = [order]
    keys = []
    for name in order:
        desc = name is not None and name.startswith("-")
        keys += columns(arr, name[1:] if desc else name, desc != descending)
    if not stable:
        raw = np.frombuffer(arr.tobytes(), np.uint8).reshape(n, arr.dtype.itemsize)
        keys += [255 - raw[:, i].astype(np.int64) if descending else raw[:, i]
                 for i in range(arr.dtype.itemsize)]
    return arr[np.lexsort(keys[::-1])]


def slices(rng, n):
    """Uneven cut points of n records over the ranks (the same on every rank), some empty."""
    cuts = np.sort(rng.integers(0, n + 1, SIZE - 1)) if SIZE > 1 else np.array([], int)
    if SIZE > 2 and rng.random() < 0.5:
        cuts[0] = 0  # rank 0 holds nothing
    return np.concatenate([[0], cuts, [n]]).astype(int)


def check(name, arr, order=None, stable=False, descending=False, typed=False):
    """One case: dsort.sort of every rank's slice of arr against the oracle on rank 0."""
    global CASES  # pylint: disable=global-statement
    CASES += 1
    rng = np.random.default_rng([SEED, CASES])
    cut = slices(rng, len(arr))
    mine = arr[cut[RANK]:cut[RANK + 1]].copy()
    what = f"{name}: n={len(arr)} order={order} stable={stable} descending={descending}"
    if typed and not LIB.has_keys:
        try:
            dsort.sort(mine, order=order, stable=stable, descending=descending)
            got = "no error"
        except NotImplementedError as e:
            got = "refused" if "libdsort 0.2" in str(e) else f"unclear message: {e}"
        if got != "refused":
            FAILS.append(f"{what}: libdsort {LIB.version} must refuse typed keys: {got}")
        SKIPS.append(what)
        return
    out = dsort.sort(mine, order=order, stable=stable, descending=descending)
    if out.dtype != arr.dtype:
        FAILS.append(f"{what}: rank {RANK}: dtype {out.dtype}, want {arr.dtype}")
    # Bytes, not the arrays: a pickled array with a big-endian field comes back byte-swapped
    # (seen with numpy 1.24 through mpi4py's gather).
    parts = COMM.gather(out.tobytes(), root=0)
    if RANK != 0:
        return
    n = len(arr)
    want_counts = [(i + 1) * n // SIZE - i * n // SIZE for i in range(SIZE)]
    counts = [len(p) / arr.dtype.itemsize for p in parts]
    if counts != want_counts:
        FAILS.append(f"{what}: shares {counts}, balanced is {want_counts}")
    got = b"".join(parts)
    want = oracle(arr, order, stable, descending).tobytes()
    if got != want:
        rs = arr.dtype.itemsize
        first = next((i for i in range(0, min(len(got), len(want)), rs)
                      if got[i:i + rs] != want[i:i + rs]), None)
        FAILS.append(f"{what}: differs from numpy's order (first at record "
                     f"{None if first is None else first // rs} of {n})")


def expect_error(name, arr, kind, text, **kw):
    """sort must raise kind (whose message has text) on every rank, and not hang."""
    try:
        dsort.sort(arr, **kw)
        got = None
    except Exception as e:  # pylint: disable=broad-except
        got = e
    ok = isinstance(got, kind) and text in str(got)
    oks = COMM.gather((ok, repr(got)), root=0)
    if RANK == 0:
        bad = [f"rank {r}: {g}" for r, (o, g) in enumerate(oks) if not o]
        if bad:
            FAILS.append(f"{name}: want {kind.__name__} ({text!r}) everywhere, got " + "; ".join(bad))


def raw_cases(rng):
    """Keys libdsort 0.1 takes: a run of bytes, u1 and big-endian unsigned fields, ascending."""
    for n in (0, 1, 2, SIZE + 1, 997):
        a = tagged(rng, n)
        for stable in (False, True):
            for desc in (False, True):
                check("tagged by S10", a, "tag", stable, desc)
        check("tagged by >u2,u1 (one raw run)", a, ["hi", "lo"], stable=n % 2 == 0)
        check("tagged by S10,>u2,u1,V3", a, ["tag", "hi", "lo", "blob"], descending=True)
        check("tagged by V3", a, "blob", stable=True)
    same = tagged(rng, 1001)
    same["tag"] = b"same"
    check("all-equal S10 keys", same, "tag")
    check("all-equal S10 keys, stable", same, "tag", stable=True, descending=True)
    check("plain S6", np.array([b"b", b"a\xff", b"", b"a", b"ab"] * 41, "S6"), None, True)
    check("plain u1", rng.integers(0, 256, 500).astype("u1"), descending=True)


def typed_cases(rng):
    """Keys that need libdsort 0.2: numbers in either byte order, several keys, per-key r."""
    for n in (0, 3, 1000):
        p, c = particles(rng, n), cells(rng, n)
        check("particles by <u8 id", p, "id", typed=True)
        check("particles by <u8 id, stable", p, "id", stable=True, typed=True)
        check("particles by x (NaN, +-0)", p, "x", stable=True, typed=True)
        check("particles by -x, id", p, ["-x", "id"], typed=True)
        check("particles by x, y, z", p, ["x", "y", "z"], stable=True, descending=True, typed=True)
        check("particles by x, -id, descending", p, ["x", "-id"], descending=True, typed=True)
        check("cells by level, morton", c, ["level", "morton"], typed=True)
        check("cells by -level, morton, stable", c, ["-level", "morton"], stable=True, typed=True)
    check("plain <f8", odd_floats(rng, 800, "<f8"), stable=True, typed=True)
    check("plain >f4", odd_floats(rng, 800, "<f4").astype(">f4"), typed=True)
    check("plain >i2", rng.integers(-2**15, 2**15, 800).astype(">i2"), stable=True, typed=True)
    check("plain i1", rng.integers(-128, 128, 800).astype("i1"), descending=True, typed=True)
    check("plain bool (a raw key too)", rng.random(300) < 0.3, stable=True)
    t = tagged(rng, 500)
    check("tagged by <u8 id, S10", t, ["id", "tag"], typed=True)


def error_cases(rng):
    """Wrong arguments: the same exception on every rank, no hang."""
    p = particles(rng, 20)
    expect_error("array field", p, TypeError, "field 'v'", order="v")
    expect_error("float16", np.zeros(4, "<f2"), TypeError, "float16")
    expect_error("unicode", np.zeros(4, [("s", "U3")]), TypeError, "field 's'", order="s")
    expect_error("object field", np.zeros(4, [("k", "u1"), ("o", "O")]), TypeError,
                 "Python objects", order="k")
    expect_error("no such field", p, ValueError, "no field 'w'", order="w")
    expect_error("2-D", np.zeros((2, 2), "u1"), ValueError, "1-D")
    if SIZE > 1:  # one rank's own mistake: it raises it, the others learn who
        t = tagged(rng, 5)
        if RANK == SIZE - 1:
            expect_error("last rank's field", t, ValueError, "no field 'w'", order="w")
        else:
            expect_error("last rank's field", t, dsort.DsortError,
                         f"dsort: rank {SIZE - 1}: no field 'w'", order="tag")
        # A layout that differs between ranks: libdsort itself says so on every rank.
        rec = "S10" if RANK == 0 else "S12"
        expect_error("different record sizes", np.zeros(3, [("k", rec)]), dsort.DsortError,
                     "differ", order="k")


def main():
    rng = np.random.default_rng(SEED)
    raw_cases(rng)
    typed_cases(rng)
    error_cases(rng)
    if RANK == 0:
        for s in SKIPS:
            print(f"SKIP: {s}: typed keys need libdsort 0.2 (have {LIB.version}); checked "
                  "that it refuses them")
        for f in FAILS:
            print(f"FAIL: {f}", file=sys.stderr)
        if FAILS:
            print(f"lib.python: {len(FAILS)} failures at {SIZE} ranks, seed {SEED} "
                  "(DSORT_TEST_SEED replays)", file=sys.stderr)
        print(f"lib.python: library {LIB.path}")
        print(f"lib.python: {SIZE} ranks, libdsort {LIB.version}, seed {SEED}: "
              f"{len(FAILS)} failed, {len(SKIPS)} skipped")
    return COMM.bcast(1 if FAILS else 0, root=0)


if __name__ == "__main__":
    sys.exit(main())
