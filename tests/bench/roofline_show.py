#!/usr/bin/env python3
"""Print dsort's own roofline (issue 27): the "roofline" object of a --stats file, as dsort's
-v prints it (src/roofline.c, dsort_roofline_print). It computes nothing: the rates are those
dsort was given (DSORT_ROOFLINE_RATES, DSORT_ROOFLINE_SHARED) or measured. roofline.py, which
computes the same table on its own, stays the cross-check (tests/e2e/roofline.sh).

    roofline_show.py STATS.json [--job]     (--job: only the job's line)
Exits 1 if the file has no roofline (an older dsort, or one that could not compute it)."""
import json
import sys


def rate_note(r):
    if r.get("rate_MBps") is None:
        return "no rate"
    return "%s %.1f MB/s" % (r.get("rate_source") or "given", r["rate_MBps"])


def show(rl, job_only):
    res = rl.get("resources", {})
    if not job_only:
        print("roofline (group: seconds, busiest resource and its rate, floor, x floor):")
        for g in rl["groups"]:
            line = "  %-8s %8.3f s" % (g["group"], g["seconds"])
            b = g.get("busiest")
            if b is not None:
                line += "  %s (%s)  floor %.3f s  %.2fx" % (
                    b, rate_note(res.get(b, {"rate_MBps": g["busiest_rate_MBps"],
                                             "rate_source": g["busiest_rate_source"]})),
                    g["floor_seconds"], g["ratio"])
            else:
                line += "  -"
            print(line)
        for name, r in res.items():  # what moved but has no rate, so no floor
            if r.get("rate_MBps") is None and r.get("bytes", 0) > 0:
                print("  %s: no rate, no floor (DSORT_ROOFLINE_RATES)" % name)
    if rl.get("busiest") is None:
        print("roofline: job %.3f s; no resource with a rate" % rl["seconds"])
        return
    line = "roofline: job %.3f s; busiest %s: floor %.3f s, %.2fx (phases overlapped)" % (
        rl["seconds"], rl["busiest"], rl["floor_seconds"], rl["ratio"])
    if rl.get("serial_ratio") is not None:
        line += "; serial floor %.3f s, %.2fx" % (rl["serial_floor_seconds"], rl["serial_ratio"])
    print(line)


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--job"):
        sys.exit("usage: roofline_show.py STATS.json [--job]")
    rl = json.load(open(argv[1])).get("roofline")
    if not rl:
        print("roofline: none in %s" % argv[1])
        return 1
    show(rl, len(argv) == 3)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
