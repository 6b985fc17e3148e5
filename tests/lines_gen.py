#!/usr/bin/env python3
"""lines_gen.py - seeded random text lines for testing sort orders (keys.h, dsort on lines).

CLI:  python3 tests/lines_gen.py --seed N --profile NAME --lines N [-z]
      writes N lines to stdout, each ended by a newline (or by NUL with -z). The same seed,
      profile, count and -z always give the same bytes.
Module: import lines_gen; lines_gen.generate(rng, profile, count, zero) returns a list of
      bytes (lines without terminators); PROFILES maps names to the generators.

Lines never contain their terminator: without -z they may contain NUL but no newline; with
-z they may contain newline (a blank for GNU's field splitting) but no NUL.

Profiles:
  mixed     a bit of everything below: words, numbers, sizes, versions, months, separators
            (space, tab, ',', ':'), leading blanks, empty lines and fields, mixed case,
            bytes >= 0x80, the odd NUL (or newline with -z).
  Every profile but binary now and then puts a control byte, DEL or a byte >= 0x80 into a
  line, and a NUL (or, with -z, a newline).
  numbers   numeric fields for -n and -g: signs (- and +), leading zeros, '.' forms ("1.",
            ".5", "-.0"), thousands commas, exponents, hex floats, -0/+0, inf/nan in many
            spellings (NaN payloads too), byte 0x80 inside numbers, trailing junk, leading blanks, long digit
            strings (to 400 digits), values near the long double limits; 1-3 per line.
  human     sizes for -h: numbers with K M G T P E Z Y (and lower case, R, Q, "Ki", "B"),
            signs, zeros, decimals; 1-2 per line.
  versions  version strings and file names for -V: 1.2.10 / 1.2.9a / 1.02, '~' pre-releases,
            file-1.0.tar.gz, .hidden, ".", "..", "", digits with leading zeros, upper case.
  months    month names for -M in mixed case, abbreviated or full, with leading blanks,
            near misses ("JU", "Janx"), other words; sometimes a second field.
  csv       fields separated by ',', ':' or ';' with empty fields, separators at the start
            and end of lines, quoted values, numbers; for -t and multi-key tests.
  dups      few distinct values (keys and whole lines repeat, differing only in case, blanks
            or a trailing field): for -u and -s.
  long      mostly short lines plus a few long ones (1-20 KiB of text, or digit strings of
            100-3000 digits, some with exponents).
  binary    random bytes of every value (except the terminator), lengths 0-40.
"""

import argparse
import random
import sys

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
FULL_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august",
               "september", "october", "november", "december"]
WORDS = ["a", "b", "ab", "abc", "foo", "bar", "Foo", "BAR", "baz", "x", "Y", "zz", "hello",
         "World", "lib", "file", "data", "item", "alpha", "Beta", "_", "-", "a-b", "a_b"]


def _case(rng, s):
    """Random mixed case."""
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in s)


def _blanks(rng):
    return rng.choice(["", "", "", " ", "  ", "\t", " \t", "   "])


def word(rng):
    r = rng.random()
    if r < 0.6:
        return rng.choice(WORDS)
    if r < 0.8:
        return "".join(rng.choice("abcdefgxyzABCXYZ0123456789") for _ in range(rng.randint(1, 8)))
    return "".join(rng.choice("abcXYZ019 .,:;!?~-_+*/\\'\"#$%&()[]{}<>=@^`|")
                   for _ in range(rng.randint(1, 6)))


def _digits(rng, lo, hi):
    return "".join(rng.choice("0123456789") for _ in range(rng.randint(lo, hi)))


def number(rng):
    """A token for -n / -g, as text (latin-1 safe)."""
    r = rng.random()
    sign = rng.choice(["", "", "", "-", "-", "+"])
    if r < 0.30:
        s = sign + rng.choice(["", "0", "00"]) + _digits(rng, 1, 4)
    elif r < 0.45:
        s = sign + rng.choice(["", "0"]) + _digits(rng, 0, 3) + "." + _digits(rng, 0, 4)
    elif r < 0.52:
        s = sign + _digits(rng, 1, 3) + "," + _digits(rng, 3, 3) + rng.choice(["", ",000", ".5"])
    elif r < 0.62:
        s = (sign + _digits(rng, 1, 2) + rng.choice(["", ".", ".5"]) + rng.choice("eE") +
             rng.choice(["", "+", "-"]) + _digits(rng, 1, 3))
    elif r < 0.67:
        s = sign + rng.choice(["0x1A", "0x1p3", "0X.8", "0x", "0xg", "0x1.8p-1", "0x10", "0xffp+2"])
    elif r < 0.72:
        s = sign + rng.choice(["inf", "INF", "Inf", "infinity", "infin", "nan", "NaN", "NAN",
                               "nan(123)", "nan(abc", "nanx", "in", "na", "nan()"])
    elif r < 0.75:
        v = rng.randint(1, 4000)
        s = sign + rng.choice(["nan", "NaN"]) + "(" + rng.choice(["%d", "0x%x", "0%o"]) % v + ")"
    elif r < 0.82:
        s = rng.choice(["-0", "+0", "0", "-0.0", "0.000", "-", "+", ".", "-.", "", "00",
                        "-00.00", ".0", "-.5", "+.5", "0.", "-0e5"])
    elif r < 0.86:
        s = sign + _digits(rng, 1, 2) + "\x80" + _digits(rng, 1, 3) + rng.choice(["", ".5", "\x80"])
    elif r < 0.90:
        s = sign + _digits(rng, 1, 3) + rng.choice(["abc", "x", " 5", "-", "..5", ".5.5", "e",
                                                    "e+", "K", "%"])
    elif r < 0.95:
        s = sign + rng.choice(["1e4932", "1.18973e4932", "1e4933", "1e5000", "3.6e-4951",
                               "1e-4951", "1e-5000", "1.7976931348623157e308", "4.9e-324",
                               "1e-400", "0.1", "0.10000000000000000001"])
    else:
        s = sign + _digits(rng, 60, 400) + rng.choice(["", "." + _digits(rng, 1, 50), "e-300",
                                                       "e10"])
    return _blanks(rng) + s


def human(rng):
    sign = rng.choice(["", "", "-"])
    r = rng.random()
    if r < 0.7:
        n = rng.choice(["0", "1", "2", "10", "999", "1023", "0.5", "1.5", ".5", "1.", "00",
                        "0.0", _digits(rng, 1, 4)])
    else:
        n = _digits(rng, 1, 3) + "." + _digits(rng, 1, 2)
    suffix = rng.choice(["", "", "K", "M", "G", "T", "P", "E", "Z", "Y", "k", "m", "g", "t",
                         "R", "Q", "Ki", "KB", "B", " K", "\x80"])
    return _blanks(rng) + sign + n + suffix


def version(rng):
    r = rng.random()
    if r < 0.15:
        return rng.choice(["", ".", "..", ".hidden", ".a", "..a", "...", ".1", "~", "a~",
                           "1~", ".~", "a.", "a..", "#.b#", "a.b.c"])
    parts = [str(rng.choice([0, 1, 2, 9, 10, 11, 100, rng.randint(0, 50)]))
             for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.2:
        parts[0] = "0" + parts[0]
    v = ".".join(parts)
    if rng.random() < 0.3:
        v += rng.choice(["a", "b", "rc1", "~rc1", "~beta", "-1", "-2", "+git", "z"])
    name = rng.choice(["", "", "file-", "foo-", "lib", "a", "A", "v", "Prog_", ".hidden-"])
    suffix = rng.choice(["", "", "", ".tar.gz", ".txt", ".tar.bz2", ".~1~", ".1", ".a1", ".ZIP"])
    return name + v + suffix


def month(rng):
    r = rng.random()
    if r < 0.5:
        m = _case(rng, rng.choice(MONTHS))
    elif r < 0.7:
        m = _case(rng, rng.choice(FULL_MONTHS))
    else:
        m = rng.choice(["", "JU", "Ja", "Janx", "xjan", "MA", "j", "dec.", "Sept", "OCTOBER",
                        "13", "0", "\x80jan", word(rng)])
    return _blanks(rng) + m


def _join(rng, tokens, seps=(" ", "\t", "  ", " \t ")):
    out = _blanks(rng)
    for i, t in enumerate(tokens):
        if i:
            out += rng.choice(seps)
        out += t
    return out + rng.choice(["", "", "", " ", "\t"])


def _finish(rng, text, zero):
    """Encode, and now and then put in the byte a line may hold besides its terminator."""
    b = text.encode("latin-1")
    if rng.random() < 0.05:
        pos = rng.randint(0, len(b))
        junk = rng.choice([rng.randint(1, 9), rng.randint(11, 31), 0x7f, rng.randint(0x80, 0xff)])
        b = b[:pos] + bytes([junk]) + b[pos:]
    if rng.random() < 0.04:
        pos = rng.randint(0, len(b))
        b = b[:pos] + (b"\n" if zero else b"\0") + b[pos:]
    return b


def gen_mixed(rng, zero):
    r = rng.random()
    if r < 0.06:
        return b""
    makers = [word, word, number, human, version, month]
    tokens = [rng.choice(makers)(rng).strip() for _ in range(rng.randint(1, 5))]
    text = _join(rng, tokens, (" ", "\t", "  ", ",", ":", ", ", " : "))
    if rng.random() < 0.08:
        text += chr(rng.randint(0x80, 0xff))
    return _finish(rng, text, zero)


def gen_numbers(rng, zero):
    tokens = [number(rng) for _ in range(rng.randint(1, 3))]
    return _finish(rng, _join(rng, tokens, (" ", "\t", ",", ":", " , ")), zero)


def gen_human(rng, zero):
    tokens = [human(rng) for _ in range(rng.randint(1, 2))]
    return _finish(rng, _join(rng, tokens), zero)


def gen_versions(rng, zero):
    v = version(rng)
    if rng.random() < 0.3:
        v = v.upper()
    if rng.random() < 0.25:
        v += rng.choice([" ", "\t", ":"]) + version(rng)
    return _finish(rng, v, zero)


def gen_months(rng, zero):
    t = month(rng)
    if rng.random() < 0.4:
        t += rng.choice([" ", "\t", ","]) + rng.choice([month(rng), number(rng), word(rng)])
    return _finish(rng, t, zero)


def gen_csv(rng, zero):
    sep = rng.choice([",", ",", ":", ";"])
    fields = []
    for _ in range(rng.randint(1, 6)):
        r = rng.random()
        if r < 0.2:
            fields.append("")
        elif r < 0.5:
            fields.append(number(rng).strip())
        elif r < 0.6:
            fields.append('"' + word(rng) + '"')
        elif r < 0.7:
            fields.append(_blanks(rng) + word(rng))
        else:
            fields.append(word(rng))
    text = sep.join(fields)
    if rng.random() < 0.2:
        text = sep + text
    if rng.random() < 0.2:
        text += sep
    return _finish(rng, text, zero)


def gen_dups(rng, zero):
    base = rng.choice(["a", "A", "b", "a b", "a  b", " a", "1", "01", "-0", "1.0", "x:1", "x:2",
                       "X:1", "", "jan", "JAN", "1K", "1.2", "1.02"])
    r = rng.random()
    if r < 0.3:
        base += rng.choice([" 1", " 2", "\t1", ":z", " a"])
    elif r < 0.4:
        base = _case(rng, base)
    return _finish(rng, base, zero)


def gen_long(rng, zero):
    r = rng.random()
    if r < 0.85:
        return gen_mixed(rng, zero)
    if r < 0.93:
        n = rng.randint(1024, 20 * 1024)
        text = "".join(rng.choice("abc xyz\t0123456789,:.-") for _ in range(n))
        return _finish(rng, text, zero)
    digits = rng.choice(["", "-", "0.", "00"]) + _digits(rng, 100, 3000)
    if rng.random() < 0.3:
        digits += rng.choice(["e-4000", "e10", "e-100", ".5", "x"])
    return _finish(rng, digits, zero)


def gen_binary(rng, zero):
    bad = 0 if zero else 10
    n = rng.randint(0, 40)
    return bytes(b if b != bad else 0x41 for b in (rng.randrange(256) for _ in range(n)))


PROFILES = {
    "mixed": gen_mixed,
    "numbers": gen_numbers,
    "human": gen_human,
    "versions": gen_versions,
    "months": gen_months,
    "csv": gen_csv,
    "dups": gen_dups,
    "long": gen_long,
    "binary": gen_binary,
}


def generate(rng, profile, count, zero=False):
    """count lines (bytes, without terminators) of the profile."""
    make = PROFILES[profile]
    if profile == "dups":
        # A small pool of lines, drawn with repetition.
        pool = [make(rng, zero) for _ in range(max(1, count // 8))]
        return [rng.choice(pool) for _ in range(count)]
    return [make(rng, zero) for _ in range(count)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--profile", choices=sorted(PROFILES), default="mixed")
    ap.add_argument("--lines", type=int, required=True)
    ap.add_argument("-z", action="store_true", help="NUL-terminated lines")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    term = b"\0" if args.z else b"\n"
    out = sys.stdout.buffer
    for line in generate(rng, args.profile, args.lines, args.z):
        out.write(line + term)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
