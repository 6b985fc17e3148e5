#!/usr/bin/env python3
"""roofline_cmp.py STATS.json RATES SHARED [VERBOSE_LOG]: the "roofline" object that dsort wrote
into its --stats file (src/roofline.c) against tests/bench/roofline.py's table computed from the
same file (the oracle: written separately, in another language). RATES and SHARED are what the
job's environment gave (DSORT_ROOFLINE_RATES, DSORT_ROOFLINE_SHARED); the file must record them.
With VERBOSE_LOG (dsort -v's standard error), its roofline block must show the same figures.
Prints one line per difference and exits 1 if there is any."""
import importlib.util
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "roofline", os.path.join(HERE, "..", "bench", "roofline.py"))
rl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rl)

FAILS = []


def close(what, got, want, abs_tol=1e-5):
    """Numbers within rounding: --stats keeps phase times to 1 us (a group's time sums up to 4
    of them: 2 us; a ratio's error is that over the floor), busy seconds to 1 ms."""
    if want is None or got is None:
        if got is not want:
            FAILS.append(f"{what}: dsort {got!r}, roofline.py {want!r}")
        return
    if isinstance(want, str) or isinstance(got, str):
        if got != want:
            FAILS.append(f"{what}: dsort {got!r}, roofline.py {want!r}")
        return
    if not math.isclose(got, want, rel_tol=1e-4, abs_tol=abs_tol):
        FAILS.append(f"{what}: dsort {got!r}, roofline.py {want!r}")


def main(path, rates, shared, log=None):
    with open(path) as f:
        stats = json.load(f)
    mine = stats.get("roofline")
    if not isinstance(mine, dict):
        print(f"{path}: no roofline object")
        return 1
    given = rl.parse_rates([rates])
    got_rates = {k: v * rl.MB for k, v in mine["rates"].items()}
    if set(got_rates) != set(given) or any(
            not math.isclose(got_rates[k], given[k], rel_tol=1e-9) for k in given):
        FAILS.append(f"rates: dsort {mine['rates']}, given {rates!r}")
    want_shared = shared.replace(",", " ").split()
    if mine["shared_disks"] != want_shared:
        FAILS.append(f"shared_disks: dsort {mine['shared_disks']}, given {want_shared}")
    want = rl.roofline(stats, given, want_shared)
    for k in ("seconds", "busiest", "floor_seconds", "serial_floor_seconds"):
        close(k, mine.get(k), want[k])
    for k, f in (("ratio", "floor_seconds"), ("serial_ratio", "serial_floor_seconds")):
        close(k, mine.get(k), want[k], 3e-6 / want[f] if want[f] else 1e-5)
    if [g["group"] for g in mine["groups"]] != [g["group"] for g in want["groups"]]:
        FAILS.append(f"groups: dsort {[g['group'] for g in mine['groups']]}, "
                     f"roofline.py {[g['group'] for g in want['groups']]}")
    else:
        for a, b in zip(mine["groups"], want["groups"]):
            for k in ("seconds", "busiest", "busiest_rate_MBps", "busiest_rate_source",
                      "floor_seconds"):
                close(f"groups[{b['group']}].{k}", a.get(k), b[k])
            close(f"groups[{b['group']}].ratio", a.get("ratio"), b["ratio"],
                  3e-6 / b["floor_seconds"] if b["floor_seconds"] else 1e-5)
    if list(mine["resources"]) != list(want["resources"]):
        FAILS.append(f"resources: dsort {list(mine['resources'])}, "
                     f"roofline.py {list(want['resources'])}")
    else:
        for name, b in want["resources"].items():
            a = mine["resources"][name]
            for k in ("rate_MBps", "rate_source", "bytes", "floor_seconds"):
                close(f"resources[{name}].{k}", a.get(k), b[k])
            close(f"resources[{name}].bytes_estimated", a.get("bytes_estimated", False),
                  b.get("bytes_estimated", False))
    if log is not None:
        with open(log) as f:
            text = f.read()
        m = re.search(r"^dsort: roofline: job ([0-9.]+) s; (busiest (.*?): floor ([0-9.]+) s.*|.*)$",
                      text, re.M)
        if not m:
            FAILS.append("-v: no 'dsort: roofline: job' line")
        elif want["busiest"] is None:
            if "no resource with a rate" not in m.group(2):
                FAILS.append(f"-v: '{m.group(0)}' names a resource, roofline.py none")
        elif m.group(3) != want["busiest"] or abs(float(m.group(4)) - want["floor_seconds"]) > 2e-3:
            FAILS.append(f"-v: '{m.group(0)}', roofline.py: busiest {want['busiest']}, "
                         f"floor {want['floor_seconds']:.4f} s")
        rows = {g: float(t) for g, t in re.findall(r"^dsort:   (\w+) +([0-9.]+) s", text, re.M)}
        for g in want["groups"]:
            if g["group"] not in rows or abs(rows[g["group"]] - g["seconds"]) > 2e-3:
                FAILS.append(f"-v: group {g['group']}: {rows.get(g['group'])} s, roofline.py "
                             f"{g['seconds']:.4f} s")
        if len(rows) != len(want["groups"]):
            FAILS.append(f"-v: groups {sorted(rows)}, roofline.py {len(want['groups'])}")
    for line in FAILS:
        print(f"{path}: {line}")
    if not FAILS:
        print(f"{path}: roofline agrees with roofline.py: busiest {want['busiest']}, "
              f"{len(want['groups'])} groups, {len(want['resources'])} resources")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
