#!/usr/bin/env python3
"""The oracle of the libdsort example: PREFIX.in.r and PREFIX.out.r of p ranks (48-byte
particles, docs/examples/libdsort/sort_particles.c). The concatenated outputs must be Python's
sort of the concatenated inputs by the example's typed keys (decoded here with struct) under
the flags (-r, -s), byte for byte, and rank r must hold exactly the records of positions
[floor(r*N/p), floor((r+1)*N/p)).

usage: check.py PREFIX P [-r] [-s] [-c | -k KEYS] [other flags of the example]"""
import hashlib
import struct
import sys

prefix, p = sys.argv[1], int(sys.argv[2])
args = sys.argv[3:]
rev, stable = "-r" in args, "-s" in args
keys = "0:u64le"  # the example's default: by id
if "-c" in args:
    keys = "32:i32le,0:u64le"
if "-k" in args:
    keys = args[args.index("-k") + 1]
RS = 48
CODES = {"u8": "B", "i8": "b", "u16": "H", "i16": "h", "u32": "I", "i32": "i", "u64": "Q",
         "i64": "q", "f32": "f", "f64": "d"}


def decoder(spec):
    """OFF:TYPE[:r] -> a function of a record giving the key's value (negated when descending:
    the example's keys are numbers, and its floats hold no NaN)."""
    parts = spec.split(":")
    off, t, desc = int(parts[0]), parts[1], parts[2:] == ["r"]
    fmt = ("<" if t.endswith("le") else ">") + CODES[t[:-2] if t[-2:] in ("le", "be") else t]
    return lambda rec: (-1 if desc else 1) * struct.unpack_from(fmt, rec, off)[0]


decoders = [decoder(k) for k in keys.split(",")]


def records(what, r):
    with open(f"{prefix}.{what}.{r}", "rb") as f:
        b = f.read()
    assert len(b) % RS == 0, f"{what}.{r}: {len(b)} bytes, not whole records"
    return [b[i:i + RS] for i in range(0, len(b), RS)]


inp = [rec for r in range(p) for rec in records("in", r)]
outs = [records("out", r) for r in range(p)]
n = len(inp)


# Python's sort is stable, with reverse=True too: -s keeps input order among equal keys;
# otherwise the whole record breaks ties, reversed with -r as dsort -r does.
def key(rec):
    return tuple(d(rec) for d in decoders) + (() if stable else (rec,))


want = sorted(inp, key=key, reverse=rev)
for r in range(p):
    lo, hi = r * n // p, (r + 1) * n // p
    if len(outs[r]) != hi - lo:
        sys.exit(f"rank {r}: {len(outs[r])} records, want {hi - lo} of {n}")
got = [rec for o in outs for rec in o]
if got != want:
    i = next(i for i in range(n) if got[i] != want[i])
    sys.exit(f"record {i} of {n}: {got[i].hex()} != {want[i].hex()}")
print(f"ok: {n} records on {p} ranks by {keys}, "
      f"sha256 {hashlib.sha256(b''.join(got)).hexdigest()[:16]}")
