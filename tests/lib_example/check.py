#!/usr/bin/env python3
"""The oracle of the libdsort example: PREFIX.in.r and PREFIX.out.r of p ranks (32-byte
particles, 8-byte key at 0). The concatenated outputs must be Python's sort of the
concatenated inputs under the flags (-r, -s), byte for byte, and rank r must hold exactly
the records of positions [floor(r*N/p), floor((r+1)*N/p)).

usage: check.py PREFIX P [-r] [-s]"""
import hashlib
import sys

prefix, p = sys.argv[1], int(sys.argv[2])
rev, stable = "-r" in sys.argv[3:], "-s" in sys.argv[3:]
RS = 32


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
key = (lambda rec: rec[:8]) if stable else (lambda rec: (rec[:8], rec))
want = sorted(inp, key=key, reverse=rev)
for r in range(p):
    lo, hi = r * n // p, (r + 1) * n // p
    if len(outs[r]) != hi - lo:
        sys.exit(f"rank {r}: {len(outs[r])} records, want {hi - lo} of {n}")
got = [rec for o in outs for rec in o]
if got != want:
    i = next(i for i in range(n) if got[i] != want[i])
    sys.exit(f"record {i} of {n}: {got[i].hex()} != {want[i].hex()}")
print(f"ok: {n} records on {p} ranks, sha256 {hashlib.sha256(b''.join(got)).hexdigest()[:16]}")
