#!/usr/bin/env python3
"""keys_diff.py - differential test of keys.h (through keys_tool) against `LC_ALL=C sort`.

Each iteration draws an input profile (tests/lines_gen.py) and an option set (-k specs with
per-key options, global -bdfghiMnrV, -t, -s, -u, -z), runs GNU sort and keys_tool on the same
bytes, and requires byte-identical output. Some iterations use options GNU rejects; then
both must fail, with the same message. keys_tool also runs with --check-prefix, which sorts
without trusting the cached key prefixes and then checks their contract on the result
(it must exit 0 with the same output). Some option sets favour a numeric (-n) or human (-h)
first key, whose prefixes encode values, and some iterations draw their lines from
number_case(): numbers built around the prefix encoding's corners. On a failure the input
is shrunk to a minimal one, and the seed, iteration, options and a diff are printed;
--seed S --only I replays it.

  python3 keys_diff.py --tool build/tests/unit/keys_tool [--seed N] [--iterations N]
                       [--max-seconds S] [--only I] [--sort /usr/bin/sort]

The seed defaults to $DSORT_TEST_SEED, else the time. Exit 0 when every iteration matched.
"""

import argparse
import os
import random
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import lines_gen  # noqa: E402

KINDS = {
    "mixed": "nghVM",
    "numbers": "nngg",
    "human": "hhn",
    "versions": "VVV",
    "months": "MMM",
    "csv": "ngV",
    "dups": "n",
    "long": "ng",
    "binary": "nghVM",
}

# Options GNU rejects, with the field specs that go with them.
BAD_OPTIONS = [
    ["-k", "0"], ["-k", "1.0"], ["-k", "a"], ["-k", "1."], ["-k", "1,"], ["-k", "1,0"],
    ["-k", "1x"], ["-k", "1,2x"], ["-k", "1.2.3"], ["-k", "-1"], ["-k", ""], ["-k", "1 "],
    ["-k", "1,2.x"], ["-k", "0.1"], ["-k", "1,0.5"], ["-k", "2.0,3"], ["-k", "1b,2bq"],
    ["-k", "1,1nd"], ["-k", "1,1ni"], ["-k", "1gn"], ["-k", "1hM"], ["-k", "1Vn"],
    ["-k", "1dM"], ["-k", "1,1fdn"], ["-k", "2,3gbrh"], ["-k", "1Vg"],
    ["-gn"], ["-h", "-M"], ["-n", "-d"], ["-V", "-g"], ["-i", "-n"],
    ["-n", "-d", "-k", "1,1"], ["-g", "-M", "-k", "2"],
    ["-t", "ab"], ["-t", ""], ["-t", ":", "-t", ","], ["-t", "\\t"], ["-t", "\\1"],
    ["-t", "\x01\x7f"], ["-k", "1\x1b"], ["-k", "2,3'"],
]

# Options GNU accepts although they look odd. (Not "-k 1.99999999999999999999": GNU adds the
# saturated offset to a pointer, which wraps to before the line.)
ODD_OPTIONS = [
    ["-k", " 1"], ["-k", "+2"], ["-k", "1,1.0"], ["-k", "99999999999999999999999"],
    ["-k", "1,99999999999999999999999.5"],
    ["-n", "-d", "-k", "1,1r"], ["-g", "-n", "-k", "1b"], ["-t", ":", "-t", ":"],
    ["-k", "1,1Vd"], ["-k", "1,1Vi"], ["-k", "1,1di"], ["-k", "1,1id"], ["-k", "1Mf"],
    ["-k", "1.3,1.2"], ["-k", "3,1"], ["-k", "1,1", "-r"], ["-r", "-s"], ["-r", "-u"],
    ["-s", "-u"], ["-k", "2b,2.3b"], ["-b", "-k", "2.2,2.4"],
]


def key_options(rng, kinds, pos):
    if rng.random() < 0.5:
        return ""
    out = ""
    if rng.random() < 0.5:
        out += "b"
    r = rng.random()
    if r < 0.55:
        out += rng.choice(kinds)
    elif r < 0.6:
        out += rng.choice("nghVM")
    if rng.random() < 0.25:
        out += "f"
    if rng.random() < 0.3:
        out += "r"
    if (not out or out[-1] in "bfrV") and rng.random() < 0.2:
        out += rng.choice("di")
    letters = list(out)
    rng.shuffle(letters)
    return "".join(letters)


def key_spec(rng, kinds):
    f1 = rng.choice([1, 1, 1, 2, 2, 3, 4])
    spec = str(f1)
    if rng.random() < 0.25:
        spec += "." + str(rng.randint(1, 5))
    spec += key_options(rng, kinds, 1)
    if rng.random() < 0.7:
        f2 = max(1, f1 + rng.choice([0, 0, 0, 1, 2, -1]))
        spec += "," + str(f2)
        if rng.random() < 0.3:
            spec += "." + str(rng.randint(0, 6))
        spec += key_options(rng, kinds, 2)
    return spec


def numeric_first(rng, profile):
    """Options whose first key is -n or -h: global letters alone, or a -k with n or h and some
    of b, f, r, followed by other keys and global options."""
    kind = rng.choice("nnh")
    opts = []
    if profile == "csv" or rng.random() < 0.3:
        opts += ["-t", rng.choice([",", ",", ":", " ", "\t", "."])]
    if rng.random() < 0.25:
        letters = kind + "".join(c for c in "bfr" if rng.random() < 0.4)
        opts.append("-" + "".join(rng.sample(letters, len(letters))))
    else:
        f1 = rng.choice([1, 1, 2, 3])
        spec = str(f1)
        if rng.random() < 0.15:
            spec += "." + str(rng.randint(1, 3))
        letters = kind + "".join(c for c in "bfr" if rng.random() < 0.35)
        spec += "".join(rng.sample(letters, len(letters)))
        if rng.random() < 0.7:
            spec += "," + str(f1 + rng.choice([0, 0, 0, 1]))
            if rng.random() < 0.2:
                spec += "." + str(rng.randint(0, 4))
            if rng.random() < 0.3:
                spec += "b"
        opts += ["-k", spec]
        for _ in range(rng.choice([0, 0, 1, 2])):
            opts += ["-k", key_spec(rng, KINDS[profile])]
        if rng.random() < 0.3:
            opts.append("-" + rng.choice(["r", "b", "f", "rb", kind]))
    if rng.random() < 0.2:
        opts.append("-s")
    if rng.random() < 0.2:
        opts.append("-u")
    return opts


def option_set(rng, profile):
    """A random option list (without -z) for one iteration."""
    r = rng.random()
    if r < 0.06:
        return list(rng.choice(BAD_OPTIONS))
    if r < 0.10:
        return list(rng.choice(ODD_OPTIONS))
    if r < 0.25:
        return numeric_first(rng, profile)
    kinds = KINDS[profile]
    opts = []
    if profile == "csv" or rng.random() < 0.2:
        if profile == "csv":
            tab = rng.choice([",", ",", ":", ";"])
        else:
            tab = rng.choice([" ", "\t", ",", ":", "\\0", "a", ".", "-", "0", "e"])
        opts += ["-t", tab]
    for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3])):
        opts += ["-k", key_spec(rng, kinds)]
    if rng.random() < 0.45:
        letters = ""
        if rng.random() < 0.6:
            letters += rng.choice(kinds)
        for c in "bfrdi":
            if rng.random() < {"b": 0.3, "f": 0.2, "r": 0.3, "d": 0.05, "i": 0.05}[c]:
                letters += c
        if letters:
            if rng.random() < 0.5:
                opts.append("-" + letters)
            else:
                opts += ["-" + c for c in letters]
    if rng.random() < 0.2:
        opts.append("-s")
    if rng.random() < 0.2:
        opts.append("-u")
    return opts


def run(cmd, data):
    env = dict(os.environ, LC_ALL="C")
    p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    return p.returncode, p.stdout, p.stderr


def first_message(stderr, prefix):
    line = stderr.decode("latin-1").split("\n")[0]
    return line[len(prefix):] if line.startswith(prefix) else line


def check(args, opts, lines, zero):
    """None if keys_tool agrees with sort on these lines, else a description."""
    term = b"\0" if zero else b"\n"
    data = b"".join(line + term for line in lines)
    zopt = ["-z"] if zero else []
    rs, outs, errs = run([args.sort] + zopt + opts, data)
    rt, outt, errt = run([args.tool] + zopt + opts, data)
    if rs == 0 and rt == 0:
        rc, outc, errc = run([args.tool, "--check-prefix"] + zopt + opts, data)
        if rc != 0:
            return "keys_tool --check-prefix exits %d: %s" % (rc, errc.decode("latin-1").strip())
        if outc != outt:
            return "keys_tool --check-prefix: " + diff_text(outt, outc, term)
    if rs != 0 or rt != 0:
        if rs == 0 or rt == 0:
            return ("exit status: sort %d, keys_tool %d\n  sort: %s\n  keys_tool: %s"
                    % (rs, rt, errs.decode("latin-1").strip(), errt.decode("latin-1").strip()))
        ms = first_message(errs, args.sort + ": ")
        mt = first_message(errt, "keys_tool: ")
        if ms != mt:
            return "messages differ:\n  sort:      %s\n  keys_tool: %s" % (ms, mt)
        return None
    if outs != outt:
        return diff_text(outs, outt, term)
    return None


def diff_text(expected, got, term):
    a, b = expected.split(term), got.split(term)
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    lo = max(0, i - 2)
    out = ["outputs differ at line %d (sort %d lines, keys_tool %d):" % (i + 1, len(a) - 1,
                                                                         len(b) - 1)]
    for j in range(lo, min(max(len(a), len(b)), i + 4)):
        x = a[j] if j < len(a) else None
        y = b[j] if j < len(b) else None
        mark = " " if x == y else "!"
        out.append("  %s %4d  sort: %-30r keys_tool: %r" % (mark, j + 1, x, y))
    return "\n".join(out)


def shrink(args, opts, lines, zero, budget=400):
    """Greedy delta debugging: drop chunks of lines while the failure persists."""
    calls = 0
    n = max(1, len(lines) // 2)
    while n >= 1 and calls < budget:
        i = 0
        removed = False
        while i < len(lines) and calls < budget:
            trial = lines[:i] + lines[i + n:]
            calls += 1
            if trial and check(args, opts, trial, zero) is not None:
                lines = trial
                removed = True
            else:
                i += n
        if not removed:
            n //= 2
    return lines


NAN_RE = re.compile(rb"(-?)nan(?:\(([0-9a-z_]*)\))?")


def nan_payload(seq):
    """The payload glibc's strtold gives "nan(SEQ)" (strtoull base 0, all of SEQ or nothing)."""
    seq = (seq or b"").decode()
    for pattern, base in ((r"0x[0-9a-f]+", 16), (r"0[0-7]*", 8), (r"[1-9][0-9]*", 10)):
        if re.fullmatch(pattern, seq):
            return int(seq, base) & ((1 << 62) - 1)
    return 0


def distinct_nans(lines, cut):
    """Drop lines until no two hold NaNs with the same bits (sign and payload). GNU 9.1
    compares two NaNs by memcmp of long doubles including their uninitialized padding bytes,
    so the order of two NaNs with the same bits is up to stack garbage; other NaNs are
    ordered by their bits. With cut (-t or character positions), a key may start after the
    '-' or end inside "nan(...)", which leaves the default payload 0: then count both signs
    and payload 0 as taken too."""
    seen, out = set(), []
    for line in lines:
        bits = set()
        for m in NAN_RE.finditer(line.lower()):
            payload = nan_payload(m.group(2))
            if cut:
                bits |= {(sign, p) for sign in (b"", b"-") for p in (payload, 0)}
            else:
                bits.add((m.group(1), payload))
        if bits & seen:
            continue
        seen |= bits
        out.append(line)
    return out


def nan_case(rng):
    """NaNs with distinct payloads, which GNU 9.1 orders by their bits (low byte first on
    x86), mixed with a few numbers, under -g."""
    payloads = rng.sample(range(0, 3000), rng.randint(2, 12))
    payloads += payloads[:rng.randint(0, 2)]
    lines = []
    for i, p in enumerate(payloads):
        text = "-nan" if i >= len(payloads) // 2 else rng.choice(["nan", "NaN"])
        if p or rng.random() < 0.5:
            text += "(" + rng.choice(["%d", "0x%x", "0%o"]) % p + ")"
        lines.append((text + rng.choice(["", " x", "\t9"])).encode())
    lines += [lines_gen.number(rng).encode("latin-1") for _ in range(rng.randint(0, 4))]
    opts = rng.choice([["-g"], ["-k", "1,1g"], ["-k", "1g"], ["-gr"], ["-k", "1,1gr"]])
    return opts + rng.choice([[], ["-s"], ["-r"]]), lines


def corner_number(rng):
    """A token around the number prefix's corners: signs, leading zeros, byte 0x80 among the
    integer digits, trailing fraction zeros, digit counts near 16 significant digits and near
    the exponent clamps (63 integer digits or 62 leading fraction zeros for -n, 31 and 30
    for -h), values that agree in many leading digits (exact against inexact), SI suffixes,
    junk and NULs."""
    r = rng.random()
    sign = rng.choice(["", "", "-", "-", "+", " ", "\t-", "- "])
    zeros = rng.choice(["", "", "0", "00", "0\x80", "\x80"])
    if r < 0.25:
        count = rng.choice([1, 2, 3, 7, 14, 15, 16, 17, 18, 30, 31, 32, 33, 62, 63, 64, 65,
                            126, 127, 128, 200])
        head = rng.choice(["1", "9", "5", "12345678901234567"[:rng.randint(1, 17)]])
        digits = (head + rng.choice("09") * count)[:count]
        if digits[0] == "0":
            digits = "1" + digits[1:]
        if rng.random() < 0.2:
            at = rng.randint(1, len(digits))
            digits = digits[:at] + "\x80" + digits[at:]
        frac = rng.choice(["", "", ".", ".0", ".5", ".50", ".000", ".05", ".9999"])
        s = sign + zeros + digits + frac
    elif r < 0.45:
        z = rng.choice([0, 1, 2, 15, 16, 29, 30, 31, 32, 61, 62, 63, 64, 125, 126, 127, 150])
        tail = rng.choice(["1", "5", "9", "10", "12345678901234567", "99999999999999999"])
        s = sign + zeros + "." + "0" * z + tail + rng.choice(["", "0", "00"])
    elif r < 0.6:
        base = "1234567890123456"[:rng.randint(10, 16)]
        s = sign + base + rng.choice(["", "7", "8", "70", ".5", "7.5", "0", "00", ".0", ".01",
                                      "0.0001", "00.5"])
    elif r < 0.8:
        s = rng.choice(["", "-", "-0", "+0", ".", "-.", "0", "00", "0.000", "-0.000", "0.",
                        ".0", "-.0", "1.5", "1.50", "-1.5", "-1.50", "0.5", ".5", "-.5",
                        "1\x805", "15", "\x80\x801", "1\x80", "1\x80.5", "1.\x805", "5abc",
                        "1e5", "--1", "- 1", "\x80", "-\x80", "1\x80K", "1K", "-0K", "0.0K"])
    else:
        s = sign + rng.choice(["", "0"]) + lines_gen._digits(rng, 1, 4) + rng.choice(
            ["", ".5", ".50"]) + rng.choice(["K", "k", "M", "m", "G", "Y", "Ki", "KB", "\x80K",
                                             " K", "", ""])
    if rng.random() < 0.05:
        cut = rng.randint(0, len(s))
        s = s[:cut] + "\0" + s[cut:]
    return s


def number_case(rng, zero):
    """Corner numbers in one or two fields, under -n or -h first keys."""
    sep = rng.choice([",", " ", "\t"])
    lines = []
    for _ in range(rng.choice([5, 20, 50, 120])):
        line = corner_number(rng)
        if rng.random() < 0.5:
            line += sep + corner_number(rng)
        if zero:
            line = line.replace("\0", "")
        lines.append(line.encode("latin-1"))
    # Repeat some values, with another spelling now and then.
    for line in rng.sample(lines, min(len(lines), rng.randint(0, 10))):
        lines.append(line + rng.choice([b"", b"0" if b"." in line else b"", b" x"]))
    kind = rng.choice("nnh")
    first = rng.choice(["1", "1,1", "1b", "1,1b"]) + kind + rng.choice(["", "r", "b", "rb", "f"])
    if sep == ",":
        first = first.replace("1", "2", 1) if rng.random() < 0.3 else first
        opts = ["-t", ","]
    else:
        opts = ["-t", sep] if sep == "\t" and rng.random() < 0.5 else []
    if rng.random() < 0.2:
        opts.append("-" + kind + rng.choice(["", "r", "b", "rb"]))
    else:
        opts += ["-k", first]
        if rng.random() < 0.5:
            opts += ["-k", rng.choice(["2n", "2,2nr", "2", "1", "2h"])]
    opts += rng.choice([[], [], ["-s"], ["-u"], ["-r"]])
    return opts, lines


def short_case(rng, zero):
    """Short plain keys (around the 7 bytes a plain prefix holds whole, with bytes below 8)
    that repeat, under plain first keys and later keys."""
    alphabet = ["a", "b", "B", "\x01", "\x07", "\x08", "\x00", "\x80", " "]
    words = []
    for _ in range(rng.randint(2, 12)):
        word = "".join(rng.choice(alphabet) for _ in range(rng.choice([0, 1, 3, 6, 7, 8, 9])))
        words.append(word.replace("\x00", "") if zero else word)
    lines = []
    for _ in range(rng.choice([5, 20, 60])):
        line = rng.choice(words) + "," + rng.choice(words) + "," + str(rng.randint(0, 3))
        lines.append(line.encode("latin-1"))
    opts = rng.choice([[], ["-r"], ["-t", ",", "-k", "1,1"], ["-t", ",", "-k", "2,2r", "-k", "3n"],
                       ["-t", ",", "-k", "1,1f", "-k", "3,3r"], ["-t", ",", "-k", "1b,1b"],
                       ["-f"], ["-t", ",", "-k", "2,2", "-k", "1,1"]])
    return opts + rng.choice([[], [], ["-s"], ["-u"], ["-r"]]), lines


def iteration(args, seed, i):
    rng = random.Random(seed * 1000003 + i)
    profile = rng.choice(sorted(lines_gen.PROFILES))
    zero = rng.random() < 0.15
    opts = option_set(rng, profile)
    count = rng.choice([0, 1, 2, 5, 20, 50, 100, 200])
    if profile == "long":
        count = min(count, 60)
    lines = lines_gen.generate(rng, profile, count, zero)
    if rng.random() < 0.03:
        profile, zero = "nans", False
        opts, lines = nan_case(rng)
    elif rng.random() < 0.06:
        profile = "corners"
        opts, lines = number_case(rng, zero)
    elif rng.random() < 0.03:
        profile = "short"
        opts, lines = short_case(rng, zero)
    if "g" in "".join(opts):
        cut = "-t" in opts or any("." in o for o in opts)
        lines = distinct_nans(lines, cut)
    failure = check(args, opts, lines, zero)
    if failure is None:
        return True
    small = shrink(args, opts, lines, zero)
    failure = check(args, opts, small, zero) or failure
    cmd = "LC_ALL=C sort " + " ".join(shlex.quote(o) for o in (["-z"] if zero else []) + opts)
    print("keys_diff: FAIL seed=%d iteration=%d profile=%s" % (seed, i, profile))
    print("  options: %s" % cmd)
    print("  minimal input (%d of %d lines):" % (len(small), len(lines)))
    for line in small[:40]:
        print("    %r" % line)
    print("  " + failure.replace("\n", "\n  "))
    print("  replay: %s %s --tool %s --seed %d --only %d" % (
        sys.executable, os.path.abspath(__file__), args.tool, seed, i))
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tool", required=True, help="the keys_tool binary")
    ap.add_argument("--sort", default="/usr/bin/sort")
    env_seed = os.environ.get("DSORT_TEST_SEED")
    ap.add_argument("--seed", type=int, default=int(env_seed, 0) if env_seed else None)
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--max-seconds", type=float, default=60.0,
                    help="stop (passing) after this long")
    ap.add_argument("--only", type=int, help="run just this iteration")
    ap.add_argument("--max-failures", type=int, default=3)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    print("keys_diff: seed %d (--seed or DSORT_TEST_SEED replays)" % seed)
    sys.stdout.flush()
    todo = [args.only] if args.only is not None else range(args.iterations)
    start = time.monotonic()
    failures = done = 0
    for i in todo:
        if time.monotonic() - start > args.max_seconds:
            print("keys_diff: time limit reached after %d iterations" % done)
            break
        done += 1
        if not iteration(args, seed, i):
            failures += 1
            sys.stdout.flush()
            if failures >= args.max_failures:
                break
    print("keys_diff: %d iterations, %d failures (seed %d)" % (done, failures, seed))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
