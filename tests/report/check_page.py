#!/usr/bin/env python3
"""Trace every number on a dsort-report page to its --stats file: check_page.py STATS PAGE.

The page wraps each figure in an element whose data-j attribute is the JSON expression it shows
(src/cli/report.h): a path ("per_rank[3].rss_peak_kb", "[*]" and ".*" for all items) or
arithmetic on paths with sum(), count() and distinct(). Each figure's text must equal the
expression's value as printed: to the decimals shown, in the unit shown (B, KiB ... PiB
scale by 1024). Text with a digit anywhere else in the body fails, except percentile labels
(data-k, "p50"), axis ticks (class "tick", "2.5 s") and the stats file's own name (data-file).
The block layer's table (data-source="block") may show only per_rank[..].devices figures: the
read calls and the plan's read bytes (page cache or disk) are not disk reads. Prints how many
figures it traced; exits 1 on the first that does not trace. Standard library only."""
import html.parser
import json
import os
import re
import sys

PATH = re.compile(r"\d+(?:\.\d+)?(?:e\d+)?|[A-Za-z_]\w*(?:\[(?:\d+|\*)\]|\.(?:[A-Za-z_]\w*|\*))*")
FIGURE = re.compile(r"^(-?\d+(?:\.(\d+))?)\s*(B|KiB|MiB|GiB|TiB|PiB|s|MB/s|%|x)?$")
SCALE = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "PiB": 1 << 50}


def resolve(doc, path):
    """The value at path; a list (flattened) if it has a wildcard."""
    vals, wild = [doc], False
    for step in re.findall(r"\[(\d+|\*)\]|\.?([A-Za-z_]\w*|\*)", path):
        index, key = step
        nxt = []
        for v in vals:
            if index == "*" or key == "*":
                wild = True
                nxt.extend(v if isinstance(v, list) else v.values())
            elif index:
                nxt.append(v[int(index)])
            else:
                nxt.append(v[key])
        vals = nxt
    return vals if wild else vals[0]


def evaluate(doc, expr):
    """expr's value: each path becomes a variable, and what is left must be arithmetic."""
    out, pos, env = "", 0, {"sum": sum, "count": len, "distinct": lambda v: len(set(v))}
    for m in PATH.finditer(expr):
        out += expr[pos:m.start()]
        name, pos = m.group(0), m.end()
        if name in ("sum", "count", "distinct") and expr[pos:pos + 1] == "(":
            out += name
        elif name[0].isdigit():
            out += name
        else:
            env["v%d" % len(env)] = resolve(doc, name)
            out += "v%d" % (len(env) - 1)
    out += expr[pos:]
    if not re.fullmatch(r"(?:[-+*/(). 0-9]|e\d+|v\d+|sum|count|distinct)*", out):
        raise ValueError("not arithmetic on paths: %r" % expr)
    try:
        return eval(out, {"__builtins__": {}}, env)  # noqa: S307 (checked above)
    except ZeroDivisionError:
        return 0.0


class Page(html.parser.HTMLParser):
    VOID = {"meta", "br", "line", "rect", "path", "circle", "img", "input", "hr", "i"}

    def __init__(self):
        super().__init__()
        self.stack, self.figures, self.loose = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID or tag in ("line", "rect"):
            return
        self.stack.append([tag, dict(attrs), ""])

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        while self.stack:
            t, attrs, text = self.stack.pop()
            if "data-j" in attrs:
                self.figures.append((attrs["data-j"], text, self.source()))
            if self.stack:
                self.stack[-1][2] += text
            if t == tag:
                break

    def source(self):
        for _, attrs, _ in reversed(self.stack):
            if "data-source" in attrs:
                return attrs["data-source"]
        return ""

    def handle_data(self, data):
        if not self.stack:
            return
        self.stack[-1][2] += data
        tags = [t for t, _, _ in self.stack]
        if "style" in tags or "title" in tags or "head" in tags or not re.search(r"\d", data):
            return
        for _, attrs, _ in reversed(self.stack):
            if "data-j" in attrs:
                return
            if "data-k" in attrs:
                if not re.fullmatch(r"p\d{1,3}", data.strip()):
                    self.loose.append(data)
                return
            if "tick" in attrs.get("class", "").split():
                if not re.fullmatch(r"\d+(\.\d+)?(e-?\d+)? s", data.strip()):
                    self.loose.append(data)
                return
            if "data-file" in attrs:
                if data != os.path.basename(sys.argv[1]):
                    self.loose.append(data)
                return
        self.loose.append(data)


def main():
    doc = json.load(open(sys.argv[1]))
    page = Page()
    page.feed(open(sys.argv[2], encoding="utf-8").read())
    page.close()
    if page.loose:
        sys.exit("a number not traced to the JSON: %r" % page.loose[0])
    numbers = 0
    for expr, text, source in page.figures:
        paths = [p for p in PATH.findall(expr)
                 if not p[0].isdigit() and p not in ("sum", "count", "distinct")]
        if source == "block" and not all(
                re.match(r"per_rank\[\d+\]\.(devices\[\d+\]|host$|phases\.)", p) for p in paths):
            sys.exit("the block layer's table shows %r, not a disk counter" % expr)
        value = evaluate(doc, expr)
        if isinstance(value, str):
            if text != value:
                sys.exit("%s is %r in the JSON, %r on the page" % (expr, value, text))
            continue
        m = FIGURE.match(text.strip())
        if not m:
            sys.exit("%s: %r is not a figure" % (expr, text))
        shown = float(m.group(1)) * SCALE.get(m.group(3), 1)
        step = 10.0 ** -len(m.group(2) or "") * SCALE.get(m.group(3), 1)
        if abs(shown - value) > step / 2 * 1.000001 + 1e-9 * abs(value):
            sys.exit("%s is %r in the JSON, %r on the page" % (expr, value, text))
        numbers += 1
    print("page: %d figures traced to the JSON (%d numbers), no number untraced" %
          (len(page.figures), numbers))


main()
