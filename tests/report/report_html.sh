#!/bin/bash
# dsort-report on a real run (issues 12, 29): sorts 200000 gensort records on 4 ranks with
# --stats, turns the stats into a page with dsort-report, and checks the page: a timeline row
# "rank 0".."rank 3", inline <svg>, every phase of the file named, nothing that loads from
# elsewhere (no http:// or https://, no <script>, no <link>). The stats hold real times (each
# rank's started, ended and spans, in order, inside its start and end) and the disks' job
# totals; check_page.py traces every number on the page to the JSON (data-j), and fails a page
# with one figure changed or one number added. A synthetic 1,024-rank file (gen_stats.py, three
# stragglers) gives a page that names the straggler of each phase. Then the errors: a
# malformed JSON file, a missing file and an unwritable -o each give exit 2 and one line naming
# the file. Last, headless Chromium: the 4-rank page's screenshot is decoded by python3
# (standard library only): 1200 px wide, more than one colour, the read and sort bars' colours;
# and the 1,024-rank page's height, measured by Chromium's layout (a copy of the page with a
# script that writes the document's height into the DOM, read back with --dump-dom), must be
# under 3,000 px. Exit 77 (skipped) when Chromium or python3 is missing; the checks before the
# rendering have run and passed by then. DSORT_REPORT_SHOTS=DIR keeps the screenshots there.
# Usage: report_html.sh BIN_DIR
set -u
bin=${1:?usage: report_html.sh BIN_DIR}
mpiexec=${DSORT_MPIEXEC:-mpiexec}
# skip (exit 77), fail (exit 1 at once: FAIL_FAST), kto and MPI_PREFLAGS are tests/lib/check.sh's.
# shellcheck disable=SC2034 # read by check.sh
FAIL_FAST=1
# shellcheck source=../lib/check.sh
. "$(dirname "$0")/../lib/check.sh"
command -v python3 >/dev/null 2>&1 || skip "python3 is missing"
work=$(mktemp -d "${TMPDIR:-/tmp}/dsort-report-XXXXXX") || fail mktemp
trap 'rm -rf "$work"' EXIT
trap 'exit 1' INT TERM HUP
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_pml=${OMPI_MCA_pml:-ob1}

# A real 4-rank sort with --stats.
kto 60 "$mpiexec" "${MPI_PREFLAGS[@]}" -n 2 "$bin/dsort-gen" 200000 "$work/in.dat" || fail "dsort-gen failed"
# shellcheck disable=SC2086
# A CPU rate (MB/s of records a core) so that the roofline has a floor whatever the disks did.
DSORT_ROOFLINE_RATES="cpu=200" kto 120 "$mpiexec" "${MPI_PREFLAGS[@]}" -n 4 "$bin/dsort" --stats "$work/s.json" \
    -o "$work/out.dat" "$work/in.dat" || fail "dsort failed"
[ -s "$work/s.json" ] || fail "dsort wrote no stats"

# The page.
page=$work/page.html
"$bin/dsort-report" "$work/s.json" -o "$page" 2>"$work/err" || {
    cat "$work/err" >&2
    fail "dsort-report failed"
}
[ -s "$work/err" ] && { cat "$work/err" >&2; fail "dsort-report wrote to stderr"; }
[ -s "$page" ] || fail "no page"
for r in 0 1 2 3; do
    grep -qF "rank <tspan data-j=\"per_rank[$r].rank\">$r</tspan> (" "$page" ||
        fail "no timeline row labelled 'rank $r'"
done
grep -qF "per_rank[4]" "$page" && fail "a fifth rank in the page"
grep -qF 'data-j="(sum(per_rank[*].cpu_user_seconds_all)+sum(per_rank[*].cpu_sys_seconds_all))/seconds"' "$page" ||
    fail "no cores busy in the throughput table"
grep -qF "<svg" "$page" || fail "no <svg in the page"
for bad in "http://" "https://" "<script src" "<script" "<link" "@import" "url("; do
    grep -qiF "$bad" "$page" && fail "the page holds '$bad'"
done
ls "$work" | grep -q '^page\.html\.tmp' && fail "a temp file is left beside the page"
python3 - "$work/s.json" "$page" <<'PY' || fail "the page does not show the stats"
import json, sys
s, page = json.load(open(sys.argv[1])), open(sys.argv[2], encoding="utf-8").read()
for name in s["per_rank"][0]["phases"]:
    assert "</i>" + name + "</span>" in page, "phase %s not in the legend" % name
assert "%.4f" % s["balance"] in page, "balance %.4f not shown" % s["balance"]
assert s["per_rank"][0]["memory_budget_reason"] in page, "no budget reason"
for h in ("Where the time went", "Each phase across ranks", "Devices", "Memory: peak resident",
          "Network: bytes sent and received", "Balance: records out"):
    assert "<h2>" + h in page, "no section %r" % h
print("page: %d bytes, %d phases, balance %.4f" % (len(page), len(s["per_rank"][0]["phases"]),
                                                 s["balance"]))
# The real times: each rank's spans in order, within its start and end, on one clock.
for r in s["per_rank"]:
    assert 0 <= r["started"] <= r["ended"] <= s["seconds"] + 1, "rank %d: times" % r["rank"]
    names = [p for p, _, _ in r["spans"]]
    assert "read" in names and "commit" in names, "rank %d: spans %r" % (r["rank"], names)
    t = r["started"]
    for p, a, b in r["spans"]:
        assert t <= a + 1e-6 and a <= b <= r["ended"] + 1e-6, "rank %d: %s" % (r["rank"], p)
        t = b
    for d in r["devices"]:
        assert d["job_seconds"] > 0 and d["job_read_bytes"] >= 0, "rank %d: disk totals" % r["rank"]
print("stats: real times and disk totals on every rank")
# The roofline (issue 27): every group's figures on the page, by their paths in the file (their
# values are check_page.py's to trace), the busiest resources named as the file names them.
rl = s["roofline"]
assert rl["groups"] and any(g["busiest"] == "cpu" for g in rl["groups"]), "no cpu floor: %r" % rl
for i, g in enumerate(rl["groups"]):
    for k in ("group", "seconds", "busiest", "floor_seconds", "ratio", "busiest_rate_MBps"):
        if g[k] is not None:
            assert 'data-j="roofline.groups[%d].%s"' % (i, k) in page, "roofline group %d %s" % (i, k)
for k in ("seconds", "busiest", "floor_seconds", "ratio", "serial_floor_seconds", "serial_ratio"):
    assert 'data-j="roofline.%s"' % k in page, "roofline.%s not on the page" % k
assert "<h2>Roofline" in page
print("roofline: %d groups on the page, busiest %s, %.2fx its floor" % (len(rl["groups"]),
                                                                      rl["busiest"], rl["ratio"]))
PY
here=$(dirname "$0")
python3 "$here/check_page.py" "$work/s.json" "$page" || fail "a number on the 4-rank page does not trace"
# The checker fails a page that does not match its file: a figure changed, a number added.
sed 's/\(data-j="records">\)[0-9]/\19/' "$page" >"$work/bad1.html"
sed 's/ records (/ records 7 (/' "$page" >"$work/bad2.html"
sed 's/\(data-j="roofline.ratio">\)[0-9]*/\1999/' "$page" >"$work/bad3.html"
for b in bad1 bad2 bad3; do
    cmp -s "$page" "$work/$b.html" && fail "$b: the page was not changed"
    python3 "$here/check_page.py" "$work/s.json" "$work/$b.html" >/dev/null 2>&1 &&
        fail "check_page.py passed a page with $b"
done

# A file from a dsort before the roofline: the section says so, and the page still traces.
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); del s["roofline"]; json.dump(s, open(sys.argv[2], "w"))' \
    "$work/s.json" "$work/old.json" || fail "old.json"
"$bin/dsort-report" "$work/old.json" -o "$work/old.html" || fail "dsort-report on a file without a roofline"
grep -qF "This file has no roofline" "$work/old.html" || fail "no note for a file without a roofline"
grep -qF "cores busy" "$work/old.html" || fail "the page without a roofline lost the CPU columns"
# A file from a dsort before the CPU figures: no CPU columns, and the page still traces.
python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))
for r in s["per_rank"]:
    del r["cpu_user_seconds_all"], r["cpu_sys_seconds_all"]
json.dump(s, open(sys.argv[2], "w"))' "$work/s.json" "$work/nocpu.json" || fail "nocpu.json"
"$bin/dsort-report" "$work/nocpu.json" -o "$work/nocpu.html" || fail "dsort-report on a file without CPU figures"
grep -qF "cores busy" "$work/nocpu.html" && fail "CPU columns on a page from a file without CPU figures"
python3 "$here/check_page.py" "$work/nocpu.json" "$work/nocpu.html" >/dev/null || fail "the page without CPU figures does not trace"
python3 "$here/check_page.py" "$work/old.json" "$work/old.html" >/dev/null || fail "the page without a roofline does not trace"

# 1,024 synthetic ranks: the stragglers are named, every number traces.
python3 "$here/gen_stats.py" 1024 "$work/s1024.json" || fail "gen_stats.py"
big=$work/page1024.html
"$bin/dsort-report" "$work/s1024.json" -o "$big" || fail "dsort-report at 1024 ranks"
python3 "$here/check_page.py" "$work/s1024.json" "$big" || fail "a number on the 1024-rank page does not trace"
grep -qF '<span data-j="roofline.groups[2].busiest">network</span>' "$big" ||
    fail "the 1024-rank page does not name the network as the exchange's busiest resource"
for r in 341 512 1019; do # gen_stats.py's stragglers in read, sort and merge
    grep -qF "last: rank <tspan data-j=\"per_rank[$r].rank\">$r</tspan>" "$big" ||
        fail "the 1024-rank page does not name straggler rank $r"
done

# Errors: exit 2 and one line "dsort-report: FILE: cause".
one_error() { # NAME FILE EXPECT ARGS...: run dsort-report ARGS, expect 2 and one line
    name=$1 file=$2 expect=$3
    shift 3
    "$bin/dsort-report" "$@" >"$work/out" 2>"$work/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$name: exit $rc, not 2"
    [ "$(wc -l <"$work/err")" -eq 1 ] || { cat "$work/err" >&2; fail "$name: not one line"; }
    grep -qF "dsort-report: $file: $expect" "$work/err" ||
        { cat "$work/err" >&2; fail "$name: the line does not name $file and the cause"; }
    [ -s "$work/out" ] && fail "$name: wrote to stdout"
    echo "$name: $(cat "$work/err")"
}
printf '{"records": 1, "per_rank": [1, 2,, 3]}\n' >"$work/bad.json"
one_error "malformed JSON" "$work/bad.json" "invalid JSON at byte offset 33:" \
    "$work/bad.json" -o "$work/bad.html"
one_error "missing file" "$work/none.json" "No such file or directory" \
    "$work/none.json" -o "$work/none.html"
printf '{"records": 1, "bytes": 100, "seconds": 1, "balance": 1}\n' >"$work/noranks.json"
one_error "no per_rank" "$work/noranks.json" "missing field 'per_rank'" "$work/noranks.json" \
    -o "$work/noranks.html"
one_error "unwritable -o" "$work/no/dir/r.html" "cannot create a temp file" "$work/s.json" \
    -o "$work/no/dir/r.html"
for f in bad none noranks; do
    [ -e "$work/$f.html" ] && fail "a page was written for the $f case"
done

# Rendering: headless Chromium, then the PNG decoded and looked at.
chromium=""
for c in chromium chromium-browser; do
    command -v "$c" >/dev/null 2>&1 && { chromium=$c; break; }
done
[ -n "$chromium" ] || skip "chromium not found (the checks before rendering passed)"
png=$work/page.png
HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
    --user-data-dir="$work/chromium" --screenshot="$png" --window-size=1200,1600 \
    "file://$page" >"$work/chromium.log" 2>&1 || { cat "$work/chromium.log" >&2; fail chromium; }
[ -s "$png" ] || { cat "$work/chromium.log" >&2; fail "chromium wrote no PNG"; }
python3 - "$png" <<'PY' || fail "the screenshot"
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG (magic bytes)"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0], kind
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = ihdr
assert depth == 8 and ctype in (0, 2, 4, 6) and interlace == 0, "unexpected PNG %r" % (ihdr,)
bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
raw, stride = zlib.decompress(idat), w * bpp
prev, colours = bytearray(stride), set()
for y in range(h):  # undo the scanline filters (PNG spec, section 9)
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    if f == 2:  # Up, the common one: no dependency along the line
        line, f = bytearray((x + u) & 255 for x, u in zip(line, prev)), 0
    for i in range(stride if f else 0):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1:
            line[i] = (line[i] + a) & 255
        elif f == 2:
            line[i] = (line[i] + b) & 255
        elif f == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    colours.update(bytes(line[i:i + min(bpp, 3)]) for i in range(0, stride, bpp))
    prev = line
print("screenshot: %dx%d, %d distinct colours" % (w, h, len(colours)))
assert w == 1200, "width %d, not 1200" % w
assert len(colours) > 1, "blank: one colour"
for name, rgb in (("read", "f28e2b"), ("sort", "e15759")):
    assert bytes.fromhex(rgb) in colours, "no %s bar (#%s) in the screenshot" % (name, rgb)
PY

# The 1,024-rank page's height as Chromium lays it out: a copy with a script at the end of the
# body that writes the height into the DOM (the page itself holds no script).
sed 's#</body>#<script>document.body.setAttribute("data-height", document.documentElement.scrollHeight)</script></body>#' \
    "$big" >"$work/measure.html"
HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
    --user-data-dir="$work/chromium" --window-size=1200,800 --dump-dom "file://$work/measure.html" \
    >"$work/dom.html" 2>"$work/chromium.log" || { cat "$work/chromium.log" >&2; fail "chromium --dump-dom"; }
height=$(grep -o 'data-height="[0-9]*"' "$work/dom.html" | tr -dc 0-9)
[ -n "$height" ] || fail "chromium did not report the page's height"
echo "1024 ranks: page height $height px"
[ "$height" -gt 1000 ] || fail "height $height px: the measurement did not see the page"
[ "$height" -lt 3000 ] || fail "the 1024-rank page is $height px high, not under 3000"
if [ -n "${DSORT_REPORT_SHOTS:-}" ]; then # to look at: both pages, whole
    mkdir -p "$DSORT_REPORT_SHOTS" && cp "$png" "$DSORT_REPORT_SHOTS/report4.png"
    HOME=$work timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
        --user-data-dir="$work/chromium" --screenshot="$DSORT_REPORT_SHOTS/report1024.png" \
        --window-size=1200,$((height + 20)) "file://$big" >/dev/null 2>&1
    cp "$page" "$big" "$DSORT_REPORT_SHOTS/"
fi
echo "PASS"
