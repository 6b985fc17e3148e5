#!/usr/bin/env python3
"""Write the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/) and the hand-made
inputs of tests/fuzz/regress/ that are too long for a fuzzing run's max_len.

The seeds are committed; run this again only to change them:  python3 tests/fuzz/make_seeds.py
Each input's layout is described at the top of its target's source (fuzz_<target>.c).
"""
import os
import struct
import sys

TOP = os.path.dirname(os.path.abspath(__file__))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def lines(*ls):
    """Lines for fuzz_lines: a length byte, then the bytes."""
    out = b""
    for l in ls:
        assert len(l) < 254
        out += bytes([len(l)]) + l
    return out


def write(kind, target, name, data):
    d = os.path.join(TOP, kind, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def seeds_keyspec():
    K, T, G, S, U, END = b"\x00", b"\x03", b"\x04", b"\x05", b"\x06", b"\x07"
    common = lines(b"b 10 x", b"a 9 y", b"  c 010 z", b"a,2,3", b"", b"b 10 x", b"A -1.5e3 Jan")
    progs = {
        "n_field2": K + b"2,2n\0" + END,
        "tab_keys": T + b",\0" + K + b"2.3b,3.1nr\0" + K + b"1\0" + END,
        "global_n": G + b"n" + END,
        "global_rb_stable": G + b"r" + G + b"b" + S + K + b"1.2,1.5f\0" + END,
        "plus_blanks": K + b"+1.1,  2Mr\0" + U + END,
        "two_kinds": K + b"3V\0" + K + b"1,1g\0" + END,
        "human_rev": G + b"h" + G + b"r" + END,
        "nul_tab": T + b"\\0\0" + K + b"2di\0" + END,
        "bad_zero": K + b"0\0" + K + b"1.0\0" + K + b"1,1R\0" + G + b"R" + END,
        "incompatible": K + b"1ng\0" + END,
        "many": (K + b"1\0") * 33 + END,
        "fold_dict": G + b"f" + G + b"d" + K + b"2.1b,2.4b\0" + END,
        "huge_counts": K + b"99999999999999999999999.99999999999999999999\0" + END,
    }
    for name, prog in progs.items():
        write("corpus", "keyspec", name, prog + common)


def seeds_keycmp():
    kinds = {"n": 0, "g": 1, "h": 2, "M": 3, "V": 4}
    sets = {
        "n": lines(b"10", b"9", b"-1.50", b"-1.5", b" 0.000", b"-0", b"1\x802", b"12abc",
                   b"00007.25x", b".5", b"-.5"),
        "g": lines(b"1e3", b"-inf", b"nan", b"nan(0x12)", b"0x1p-3", b"abc", b" +12.5",
                   b"1" * 70, b"0." + b"0" * 70 + b"1", b"1e-4950", b"-0"),
        "h": lines(b"1K", b"1023", b"2M", b"-1G", b"0K", b"1.5k", b"-0.5T", b"3Y", b" 7E"),
        "M": lines(b"jan", b" FEB", b"\tmarch", b"Dec 1", b"xyz", b"ja", b"apr\x00il"),
        "V": lines(b"1.2.10", b"1.2.9", b"1.02", b"1.10a", b"a-1.0~rc1", b".hidden", b"..",
                   b"file.tar.gz", b"2.0", b"10"),
    }
    for kind, ls in sets.items():
        for shape in range(4):
            for flags in (0, 8, 16):
                b0 = kinds[kind] | flags
                write("corpus", "keycmp", "%s_s%d_f%d" % (kind, shape, flags),
                      bytes([b0, shape]) + ls)
    # Numbers that share their first 16 significant digits (the -n prefix) or 15 (-h).
    same16 = lines(b"12345678901234567", b"12345678901234560", b"1234567890123456",
                   b"-12345678901234567.5", b"-12345678901234567", b"0.000123456789012345670001",
                   b"0.00012345678901234567")
    write("corpus", "keycmp", "n_same16", bytes([kinds["n"], 0]) + same16)
    write("corpus", "keycmp", "h_same15", bytes([kinds["h"], 1]) +
          lines(b"123456789012345K", b"1234567890123456K", b"123456789012345.1K", b"-9M"))
    # -g: 1 + 2^-64 is the midpoint between the long doubles 1 and 1 + 2^-63 (64 fraction
    # digits), which rounds to even (1); a nonzero digit after GNUM_DEC_DIGITS (11600)
    # significant digits must round it up, as strtold does. keys_general.c keeps such a digit as a
    # sticky digit. Too long for max_len: replayed from regress/ only.
    half_ulp = str(5 ** 64).rjust(64, "0").encode()  # 2^-64 = 5^64 / 10^64
    mid = b"1." + half_ulp
    a = mid + b"0" * 11600 + b"1"
    long = b"".join(bytes([254]) + struct.pack(">H", len(x)) + x for x in (a, mid, a + b"e0"))
    write("regress", "keycmp", "g_long_sticky", bytes([kinds["g"], 0]) + long)


def seeds_format():
    for i, s in enumerate([b"gensort", b"fixed:100:0:10", b"fixed:1:0:1", b"fixed:16777216:0:1",
                           b"fixed:00010:2:3", b"lines", b"fixed:4:4:1", b"fixed:8:0:",
                           b"fixed:18446744073709551617:0:1", b"fixed:10:2:3:"]):
        write("corpus", "format", "spec%02d" % i, s)


def seeds_size():
    for i, s in enumerate([b"512M", b"4G", b"25%", b"1.5K", b"100%", b"0x1p10", b"1e3", b"4KB",
                           b"7b", b"0", b"17179869184T", b"50.5%", b"1e-320%", b"inf%"]):
        write("corpus", "size", "size%02d" % i, bytes([i * 37 & 0xFF]) + s)


def run_block(recs, rec_size, stride):
    payload = b"".join(recs)
    h = struct.pack("<IIQQ", 0x42525344, crc32c(payload), len(payload), len(payload) // rec_size)
    blk = h + payload
    return blk + b"\0" * (-len(blk) % stride if stride else 0)


def seeds_runfile():
    # rec_size = 1 + (b0 & 63), block = 1 + 48 * b1, stride = 4 KiB here.
    rec = 10
    b0, b1 = rec - 1, 2  # block 97: 9 records of 10 bytes per block
    recs = [bytes([65 + i]) * rec for i in range(20)]
    blocks = [recs[0:9], recs[9:18], recs[18:20]]
    # Compact ("BLK!"-separated) runs, valid CRCs.
    compact = b"BLK!".join(run_block(b, rec, 0) for b in blocks)
    write("corpus", "runfile", "compact3", bytes([b0, b1, 0]) + struct.pack("<H", 20) + compact)
    write("corpus", "runfile", "compact3_unknown_pf",
          bytes([b0, b1, 4]) + struct.pack("<H", 0xFFFF) + compact)
    write("corpus", "runfile", "compact3_fix",
          bytes([b0, b1, 3]) + struct.pack("<H", 19) + compact)
    write("corpus", "runfile", "empty", bytes([b0, b1, 8]) + struct.pack("<H", 0))
    # A raw file: one block padded to the 4 KiB stride, then a partial second one.
    raw = run_block(blocks[0], rec, 4096) + run_block(blocks[2], rec, 0)
    write("corpus", "runfile", "raw2", bytes([b0, b1, 8]) + struct.pack("<H", 11) + raw)
    # An empty block in the middle (payload 0).
    mid = b"BLK!".join([run_block(blocks[0], rec, 0), run_block([], rec, 0),
                        run_block(blocks[2], rec, 0)])
    write("corpus", "runfile", "empty_middle", bytes([b0, b1, 0]) + struct.pack("<H", 11) + mid)


def line_block(frames):
    """One framed DSRB block of runfile.h: header and payload, no padding."""
    p = b"".join(frames)
    return struct.pack("<IIQQ", 0x42525344, crc32c(p), len(p), len(frames)) + p


def seeds_linerun():
    # The input layout is at the top of fuzz_linerun.c.
    def pad(b):
        return b + b"\0" * (-len(b) % 4096)

    def head(flags, b1, b2, lines=0, nbytes=0):
        return bytes([flags, b1, b2]) + struct.pack("<HH", lines, nbytes)

    def w(name, data):
        write("corpus", "linerun", name, data)

    block = line_block
    NUL, POS, NUM, FCRC, FREC, PF, PIECES, FIXP = 1, 2, 4, 8, 16, 32, 64, 128

    plain = [b"apple\n", b"banana\n", b"cherry\n"]
    more = [b"10\n", b"9\n"]
    nl = sum(len(f) for f in plain + more)
    # two blocks, the file as is (the first padded to 4 KiB), counts known (bytes 3-6)
    w("plain2", head(0, 0, 1 | 4, 5, nl) + pad(block(plain)) + block(more))
    # the same blocks as "BLK!" pieces, counts unknown, read ahead
    w("plain2_unknown", head(PIECES | PF, 0, 0) + block(plain) + b"BLK!" + block(more))
    # NUL eol, positions, -n, an empty block between, blocks of 8 KiB, the right counts
    pos = [struct.pack(">Q", 100 * i) + b"%d line\0" % (7 - i) for i in range(4)]
    w("pos_nul", head(NUL | POS | NUM | PIECES, 1, 2 | 8) +
      block(pos[:3]) + b"BLK!" + block([]) + b"BLK!" + block(pos[3:]))
    # a line longer than a block: an oversize block (max_payload 8 KiB), then a short block
    big = [b"x" * 5000 + b"\n"]
    w("long_line", head(PIECES, 8 << 1, 2 | 8) + block(big) + b"BLK!" + block(plain))
    # the file ends inside the payload of its only block, counts known: an error
    w("truncated", head(0, 0, 1 | 4, 3, 20) + block(plain)[:-3])
    # headers made by the harness (magic, payload, CRC, line count) for mutated payloads
    w("fixed_chain", head(PIECES | FIXP | FCRC | FREC, 0, 2 | 8) +
      bytes(24) + b"a\nb\n" + b"BLK!" + bytes(24) + b"c\nd\ne\n")


def main():
    seeds_keyspec()
    seeds_keycmp()
    seeds_format()
    seeds_size()
    seeds_runfile()
    seeds_linerun()
    return 0


if __name__ == "__main__":
    sys.exit(main())
