"""The independent oracle of dsort's shell tests (tests/e2e, tests/ext, tests/faults): record
sums, the order dsort must write, generated inputs, -O manifests and --stats queries. python3's
standard library only; no code of dsort's. Usage: oracle.py CMD ARGS... (see the cmd_*)."""
import json, os, random, sys, zlib

def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(2)

def load(paths, size):
    recs = []
    for p in paths:
        with open(p, 'rb') as f:
            data = f.read()
        if len(data) % size:
            die(f"{p}: {len(data)} bytes is not a whole number of {size}-byte records")
        recs.extend(data[i:i + size] for i in range(0, len(data), size))
    return recs

def crcsum(recs):
    return format(sum(zlib.crc32(r) for r in recs) % (1 << 128), 'x')

def cmd_sum(size, *paths):
    """Print 'RECORDS CHECKSUM' (valsort's checksum: the sum of the crc32 of each record)."""
    recs = load(paths, int(size))
    print(len(recs), crcsum(recs))

def cmd_sort(out, size, keyoff, keylen, flags, *paths):
    """Write the records of paths (in order) as dsort must order them.

    Keys compare as unsigned bytes, descending with r. Ties: with s or u, input order (files
    in the order given, then offset); u keeps the first record in input order of each key.
    Without s and u, ties go by the whole record (GNU sort's last-resort comparison), reversed
    too by r; with DSORT_E2E_TIES=position they go by input position instead (descending
    with r), the order of dsort before commit d6ef490."""
    size, ko, kl = int(size), int(keyoff), int(keylen)
    recs = load(paths, size)
    key = lambda r: r[ko:ko + kl]
    rev = 'r' in flags
    if 'u' in flags:
        seen, kept = set(), []
        for r in recs:
            if key(r) not in seen:
                seen.add(key(r))
                kept.append(r)
        recs = sorted(kept, key=key, reverse=rev)
    elif 's' in flags:
        recs = sorted(recs, key=key, reverse=rev)  # python's sort is stable, reverse too
    elif os.environ.get('DSORT_E2E_TIES', 'record') == 'position':
        recs = sorted(recs, key=key)
        if rev:
            recs.reverse()
    else:
        recs = sorted(recs, key=lambda r: (key(r), r), reverse=rev)
    with open(out, 'wb') as f:
        f.write(b''.join(recs))

def cmd_mk(out, size, keyoff, keylen, count, mode, seed):
    """Write count records. The non-key bytes hold a random byte, then the record's index
    (so that records differ, and the whole-record order of equal keys is not their input
    order), then random bytes. Modes (keys): random; equal (all one key);
    few (3 keys: 00.., 80.., ff..); dup (about count/4 distinct keys); prefix (keys share a
    long prefix and differ in their last bytes; bytes >= 0x80 included)."""
    size, ko, kl, count = int(size), int(keyoff), int(keylen), int(count)
    rng = random.Random(int(seed) * 7919 + count)
    one = bytes([0x00, 0xff, 0x80, 0x7f] + [rng.randrange(256) for _ in range(kl)])[:kl]
    few = [b'\x00' * kl, b'\x80' + b'\x00' * (kl - 1), b'\xff' * kl]
    pool = [rng.randbytes(kl) for _ in range(max(1, count // 4))]
    pfx = [rng.randbytes(kl), bytes(x ^ 0x80 for x in rng.randbytes(kl))]
    tail = min(kl, 2)
    free = [j for j in range(size) if not ko <= j < ko + kl]
    with open(out, 'wb') as f:
        for i in range(count):
            r = bytearray(rng.randbytes(size))
            for j, b in zip(free, bytes([rng.randrange(256)]) + i.to_bytes(4, 'big')):
                r[j] = b
            if mode == 'random':
                k = rng.randbytes(kl)
            elif mode == 'equal':
                k = one
            elif mode == 'few':
                k = rng.choice(few)
            elif mode == 'dup':
                k = rng.choice(pool)
            elif mode == 'prefix':
                k = rng.choice(pfx)[:kl - tail] + bytes(rng.choice([0, 1, 0x7f, 0x80, 0xff])
                                                      for _ in range(tail))
            else:
                die(f"mk: unknown mode {mode}")
            r[ko:ko + kl] = k
            f.write(r)

def cmd_reverse(size, src, out):
    recs = load([src], int(size))
    with open(out, 'wb') as f:
        f.write(b''.join(recs[::-1]))

def cmd_slice(size, src, out, start, end):
    """Write records [start, end) of src to out."""
    recs = load([src], int(size))
    with open(out, 'wb') as f:
        f.write(b''.join(recs[int(start):int(end)]))

def cmd_swap(size, src, out, i, j):
    """Copy src to out with records i and j swapped."""
    recs = load([src], int(size))
    i, j = int(i), int(j)
    recs[i], recs[j] = recs[j], recs[i]
    with open(out, 'wb') as f:
        f.write(b''.join(recs))

def cmd_dups(size, keyoff, keylen, *paths):
    """Number of records whose key equals the previous record's key."""
    ko, kl = int(keyoff), int(keylen)
    recs = load(paths, int(size))
    print(sum(1 for a, b in zip(recs, recs[1:]) if a[ko:ko + kl] == b[ko:ko + kl]))

def cmd_firstdisorder(size, keyoff, keylen, flags, *paths):
    """'PATH INDEX GLOBAL' of the first record out of order (index within its file, and
    counting over all files), or 'none'."""
    size, ko, kl = int(size), int(keyoff), int(keylen)
    prev, g = None, 0
    for p in paths:
        for i, r in enumerate(load([p], size)):
            k = r[ko:ko + kl]
            if prev is not None:
                bad = k > prev if 'r' in flags else k < prev
                if 'u' in flags and k == prev:
                    bad = True
                if bad:
                    print(p, i, g)
                    return
            prev, g = k, g + 1
    print('none')

def cmd_firstdiff(size, a, b):
    """Describe where two files of records first differ."""
    size = int(size)
    x, y = open(a, 'rb').read(), open(b, 'rb').read()
    msg = f"expected {len(x)} bytes ({len(x) / size:g} records), got {len(y)} bytes ({len(y) / size:g} records)"
    for i in range(0, max(len(x), len(y)), size):
        if x[i:i + size] != y[i:i + size]:
            msg += (f"; first difference at record {i // size}: expected "
                    f"{x[i:i + size][:40]!r}..., got {y[i:i + size][:40]!r}...")
            break
    print(msg)

def cmd_manifest(d, nparts, size, want_records, want_sum):
    """Check DIR/_SUCCESS against the part files."""
    nparts, size = int(nparts), int(size)
    errs = []
    with open(os.path.join(d, '_SUCCESS')) as f:
        m = json.load(f)
    names = sorted(os.listdir(d))
    want_names = sorted([f'part-{i:05d}' for i in range(nparts)] + ['_SUCCESS'])
    if names != want_names:
        errs.append(f"directory holds {names}, expected {want_names}")
    parts = m.get('parts', [])
    if [p.get('name') for p in parts] != [f'part-{i:05d}' for i in range(nparts)]:
        errs.append(f"manifest parts {[p.get('name') for p in parts]}")
    tot_r = tot_b = tot_s = 0
    for i, p in enumerate(parts):
        path = os.path.join(d, p.get('name', '?'))
        if not os.path.isfile(path):
            errs.append(f"{path} is missing")
            continue
        recs = load([path], size)
        fsize = os.path.getsize(path)
        if p.get('rank') != i:
            errs.append(f"{p.get('name')}: rank {p.get('rank')}, expected {i}")
        if p.get('records') != len(recs):
            errs.append(f"{p.get('name')}: manifest records {p.get('records')}, file has {len(recs)}")
        if p.get('bytes') != fsize:
            errs.append(f"{p.get('name')}: manifest bytes {p.get('bytes')}, file has {fsize}")
        if p.get('checksum') != crcsum(recs):
            errs.append(f"{p.get('name')}: manifest checksum {p.get('checksum')}, file's is {crcsum(recs)}")
        tot_r += len(recs)
        tot_b += fsize
        tot_s += sum(zlib.crc32(r) for r in recs)
    t = m.get('total', {})
    want = {'parts': nparts, 'records': int(want_records), 'bytes': int(want_records) * size,
            'checksum': want_sum}
    got = {k: t.get(k) for k in want}
    if got != want:
        errs.append(f"manifest total {got}, expected {want}")
    if (tot_r, tot_b, format(tot_s % (1 << 128), 'x')) != (int(want_records), int(want_records) * size, want_sum):
        errs.append(f"part files hold {tot_r} records, {tot_b} bytes, checksum {format(tot_s % (1 << 128), 'x')}; "
                    f"expected {want_records}, {int(want_records) * size}, {want_sum}")
    for e in errs:
        print(e)
    sys.exit(1 if errs else 0)

def cmd_stats(path, nranks, total):
    """Check the --stats JSON: one entry per rank, records in and out add up to total; print
    'MAX AVG' of records_out."""
    with open(path) as f:
        s = json.load(f)
    pr = s['per_rank']
    errs = []
    if len(pr) != int(nranks) or [r['rank'] for r in pr] != list(range(int(nranks))):
        errs.append(f"per_rank has ranks {[r.get('rank') for r in pr]}, expected 0..{int(nranks) - 1}")
    out = [r['records_out'] for r in pr]
    if sum(out) != int(total):
        errs.append(f"records_out {out} add up to {sum(out)}, expected {total}")
    if sum(r['records_in'] for r in pr) != int(total):
        errs.append(f"records_in add up to {sum(r['records_in'] for r in pr)}, expected {total}")
    for e in errs:
        print(e, file=sys.stderr)
    print(max(out), sum(out) / len(out), ' '.join(map(str, out)))
    sys.exit(1 if errs else 0)

def cmd_rounds(path, chunk):
    """Print 'ROUNDS LOWER' : the exchange rounds every rank reports (all must agree) and the
    fewest rounds the traffic allows: a rank that sends B bytes to P-1 peers sends at least
    B/(P-1) bytes to one of them, which takes ceil(that/chunk) rounds."""
    with open(path) as f:
        pr = json.load(f)['per_rank']
    rounds = {r['exchange_rounds'] for r in pr}
    if len(rounds) != 1:
        die(f"ranks report different exchange_rounds: {rounds}")
    p, c = len(pr), int(chunk)
    lower = 0
    if p > 1:
        per_peer = [-(-r['bytes_sent'] // (p - 1)) for r in pr]
        lower = max(-(-b // c) for b in per_peer)
    print(rounds.pop(), lower)

def cmd_mkkeys(out, size, keyoff, keylen, count, nkeys, seed):
    """count random records; keys drawn from a pool of nkeys keys (0: random keys). The first
    non-key bytes hold the record's index (big-endian), so that the whole-record order of
    equal keys differs from their input order."""
    size, ko, kl, count, nkeys = int(size), int(keyoff), int(keylen), int(count), int(nkeys)
    rng = random.Random(int(seed))
    pool = [rng.randbytes(kl) for _ in range(nkeys)]
    free = [j for j in range(size) if not ko <= j < ko + kl]
    chunks = []
    for i in range(count):
        r = bytearray(rng.randbytes(size))
        idx = (i * 2654435761 % (1 << 32)).to_bytes(4, 'big')  # scrambled index
        for j, b in zip(free, idx):
            r[j] = b
        r[ko:ko + kl] = rng.choice(pool) if nkeys else rng.randbytes(kl)
        chunks.append(bytes(r))
    with open(out, 'wb') as f:
        f.write(b''.join(chunks))

def cmd_setkey(src, out, key):
    """Copy gensort records (100 bytes) with every key replaced by key (10 characters)."""
    k = key.encode()
    assert len(k) == 10
    data = bytearray(open(src, 'rb').read())
    for i in range(0, len(data), 100):
        data[i:i + 10] = k
    open(out, 'wb').write(data)

def stats(path):
    with open(path) as f:
        return json.load(f)

def cmd_st_top(path, field):
    """A top-level field."""
    v = stats(path)[field]
    print(json.dumps(v) if not isinstance(v, str) else v)

def cmd_st_ranks(path, field):
    """A per-rank field, one value per rank, space-separated."""
    print(' '.join(str(r[field]) for r in stats(path)['per_rank']))

def cmd_st_sum(path, field):
    print(sum(r[field] for r in stats(path)['per_rank']))

def cmd_st_max(path, field):
    print(max(r[field] for r in stats(path)['per_rank']))

def cmd_st_io(path):
    """'READ WRITE' : bytes read and written over all phases and ranks, as multiples of the
    data volume ('bytes')."""
    s = stats(path)
    d = s['bytes']
    rd = sum(sum(p['io_read_bytes'].values()) for p in s['per_rank'])
    wr = sum(sum(p['io_write_bytes'].values()) for p in s['per_rank'])
    print(f"{rd / d:.4f} {wr / d:.4f}")

def cmd_st_reasons(path):
    """The distinct memory_budget_reason values, one a line."""
    for r in sorted({r['memory_budget_reason'] for r in stats(path)['per_rank']}):
        print(r)

if __name__ == '__main__':
    globals()['cmd_' + sys.argv[1]](*sys.argv[2:])
