#!/usr/bin/env python3
"""roofline.py - a roofline for one dsort run, from its --stats JSON (issue 27).

    roofline.py STATS.json [--rate KEY=MB/s ...] [--shared-disk DISK ...] [--json]

dsort computes the same table itself (src/roofline.c: -v prints it, --stats holds it as
"roofline", dsort-report shows it); this script is its oracle (tests/e2e/roofline_cmp.py) and
recomputes a file's roofline under other rates.

For each phase group (and the whole job) it names the busiest resource - a disk's reads, its
writes, the network, the CPU - and that resource's floor: the bytes the group moved on it
divided by its rate. The group's time (slowest rank, as -v prints phases) is then given as a
multiple of the floor: 1.0x means the group ran at the speed of its busiest resource.

Phase groups (dsort's phases, summed per rank, the slowest rank's sum):
    read      sample, read
    sort      sort, splitters
    exchange  exchange
    spill     spill
    output    merge, final_merge, write, commit
The job's floor is that of its busiest resource over the whole job, as if every phase
overlapped perfectly; the "serial floor" is the sum of the groups' floors, what a run whose
phases follow each other (as they do today) could reach at best.

Rates (MB/s = 10^6 bytes a second), each --rate KEY=VALUE or in $DSORT_ROOFLINE_RATES
(separated by spaces or commas); what is not given is measured where it can be:
    DISK.read=R, DISK.write=W  separate read and write limits (as tests/lib/throttle.sh sets a
                               loop disk up: reading it and writing it overlap); DISK is the
                               name in --stats ("vda", "loop3") or * for every disk
    DISK=R                     one rate for reads and writes together (a disk that moves R in
                               all, as this machine's virtual disk does)
    net=R                      each node's link, each way (tc ... tbf rate 2gbit: net=250)
    cpu=R                      records sorted a second per core, in MB of records (the sort
                               group's radix sort and gather; dsort-floor-probe measures it)
Without a given rate a disk's rate is MEASURED by the block layer: its bytes over the job
divided by its busy seconds (the rate it achieved while busy; one figure for reads and writes
together, and on a virtual disk whose host caches the backing file it can exceed what the
device sustains). The network and the CPU have no floor without a given rate: a rate the run
itself achieved would make every ratio 1.
Network bytes are the bytes each rank sent and received; with several ranks on a node the
part that crossed to other nodes is estimated as if keys were uniform (exact with one rank a
node). Disk bytes are the block layer's, per node (ranks of one node see the same counters:
the lowest rank's view is used). --shared-disk DISK (or $DSORT_ROOFLINE_SHARED): DISK is one device that every node sees
(the simulated nodes of tests/cluster share this machine's disk), counted once, as the lowest
rank sees it. A group whose largest floor is under a millisecond has no busiest resource (it
moved next to nothing on any modelled resource: reading from the page cache, for one).
"""
import json
import math
import os
import sys

GROUPS = [
    ("read", ("sample", "read")),
    ("sort", ("sort", "splitters")),
    ("exchange", ("exchange",)),
    ("spill", ("spill",)),
    ("output", ("merge", "final_merge", "write", "commit")),
]
MB = 1e6
MIN_FLOOR = 0.001  # seconds: a smaller floor says the group hardly used the resource


def parse_rates(items):
    rates = {}
    for item in items:
        for tok in item.replace(",", " ").split():
            if "=" not in tok:
                raise SystemExit(f"roofline: bad rate '{tok}' (KEY=MB/s)")
            k, v = tok.split("=", 1)
            try:
                rates[k] = float(v) * MB
            except ValueError:
                raise SystemExit(f"roofline: bad rate '{tok}' (KEY=MB/s)")
            if not math.isfinite(rates[k]) or rates[k] <= 0 or rates[k] > 1e12 * MB or "_" in v:
                raise SystemExit(f"roofline: rate '{tok}' must be a positive number (MB/s)")
    return rates


def disk_rates(name, dev, rates):
    """(how, read_rate, write_rate, combined_rate); how: given or measured."""
    for key in (name, "*"):
        r, w = rates.get(key + ".read"), rates.get(key + ".write")
        if r or w:
            return ("given", r, w, None)
        if key in rates:
            return ("given", None, None, rates[key])
    moved = dev.get("job_read_bytes", 0) + dev.get("job_write_bytes", 0)
    busy = dev.get("job_busy_seconds", 0.0)
    if moved > 0 and busy > 0:
        return ("measured", None, None, moved / busy)
    return ("none", None, None, None)


def roofline(stats, rates, shared=()):
    ranks = stats["per_rank"]
    p = len(ranks)
    hosts = {}
    for r in ranks:
        hosts.setdefault(r["host"], []).append(r)
    # Group times: the slowest rank's sum of the group's phases.
    times = {g: max(sum(r["phases"].get(ph, 0.0) for ph in phs) for r in ranks) for g, phs in GROUPS}
    # Resources: name -> {"how": ..., "rate": ..., "bytes": {group: n}}.
    res = {}

    def add(name, how, rate, group, nbytes):
        e = res.setdefault(name, {"how": how, "rate": rate, "bytes": {g: 0 for g, _ in GROUPS}})
        e["bytes"][group] = max(e["bytes"][group], nbytes) if name.startswith("net") else e["bytes"][group] + nbytes

    seen = set()
    for r in ranks:
        for dev in r.get("devices", []):
            key = ("", dev["disk"]) if dev["disk"] in shared else (r["host"], dev["disk"])
            if key in seen:
                continue
            seen.add(key)
            how, rr, wr, cr = disk_rates(dev["disk"], dev, rates)
            label = f"{r['host']}:{dev['disk']}" if len(hosts) > 1 and key[0] else dev["disk"]
            for g, phs in GROUPS:
                rd = sum(dev["read_bytes"].get(ph, 0) for ph in phs)
                wr_b = sum(dev["write_bytes"].get(ph, 0) for ph in phs)
                if cr is not None or how == "none":
                    add(f"disk {label} r+w", how, cr, g, rd + wr_b)
                else:
                    add(f"disk {label} read", how, rr, g, rd)
                    add(f"disk {label} write", how, wr, g, wr_b)
    # Network: each node's bytes out and in (the larger), the busiest node's.
    if len(hosts) > 1:
        worst = 0
        for h, rs in hosts.items():
            cross = (p - len(rs)) / (p - 1)
            out = sum(r.get("bytes_sent", 0) for r in rs) * cross
            inn = sum(r.get("bytes_received", 0) for r in rs) * cross
            worst = max(worst, out, inn)
        exact = all(len(rs) == 1 for rs in hosts.values())
        add("network", "given" if "net" in rates else "none", rates.get("net"), "exchange", worst)
        res["network"]["estimated"] = not exact
    # CPU: the sort group's records on the busiest node over its cores.
    if "cpu" in rates:
        cores = {}
        for node in stats.get("plan", {}).get("nodes", []):
            cores[node.get("hostname")] = node.get("cores", 1)
        worst = 0
        for h, rs in hosts.items():
            nbytes = sum(r.get("bytes_read", 0) for r in rs)
            worst = max(worst, nbytes / max(1, min(cores.get(h, len(rs)), len(rs))))
        add("cpu", "given", rates["cpu"], "sort", worst)

    def floor_of(name, group=None):
        e = res[name]
        if not e["rate"]:
            return None
        n = sum(e["bytes"].values()) if group is None else e["bytes"][group]
        return n / e["rate"]

    out = {"seconds": stats["seconds"], "groups": [], "resources": {}}
    for name, e in res.items():
        out["resources"][name] = {
            "rate_MBps": e["rate"] / MB if e["rate"] else None,
            "rate_source": e["how"],
            "bytes": sum(e["bytes"].values()),
            "floor_seconds": floor_of(name),
        }
        if e.get("estimated"):
            out["resources"][name]["bytes_estimated"] = True
    serial = 0.0
    for g, _ in GROUPS:
        best = None
        for name in res:
            f = floor_of(name, g)
            if f is not None and f >= MIN_FLOOR and (best is None or f > best[1]):
                best = (name, f)
        if times[g] <= 0 and best is None:
            continue
        row = {"group": g, "seconds": times[g], "busiest": best[0] if best else None,
               "busiest_rate_MBps": res[best[0]]["rate"] / MB if best else None,
               "busiest_rate_source": res[best[0]]["how"] if best else None,
               "floor_seconds": best[1] if best else None,
               "ratio": times[g] / best[1] if best else None}
        serial += best[1] if best else 0.0
        out["groups"].append(row)
    best = None
    for name in res:
        f = floor_of(name)
        if f is not None and f > 0 and (best is None or f > best[1]):
            best = (name, f)
    out["busiest"] = best[0] if best else None
    out["floor_seconds"] = best[1] if best else None
    out["ratio"] = stats["seconds"] / best[1] if best else None
    out["serial_floor_seconds"] = serial if best else None
    out["serial_ratio"] = stats["seconds"] / serial if best and serial > 0 else None
    return out


def fmt(x, unit=""):
    return "-" if x is None else f"{x:.3f}{unit}"


def print_text(rl):
    print("roofline: resource        rate MB/s  (source)     bytes MB   floor s")
    for name, r in rl["resources"].items():
        if r["bytes"] == 0:
            continue
        est = " (estimated)" if r.get("bytes_estimated") else ""
        rate = "-" if r["rate_MBps"] is None else f"{r['rate_MBps']:.1f}"
        print(f"roofline:   {name:<22} {rate:>9}  ({r['rate_source']:<8})  {r['bytes'] / MB:9.1f}"
              f"   {fmt(r['floor_seconds'])}{est}")
    print("roofline: group       seconds   busiest resource         floor s   x floor")
    for g in rl["groups"]:
        print(f"roofline:   {g['group']:<9} {g['seconds']:8.3f}   {g['busiest'] or '-':<24} "
              f"{fmt(g['floor_seconds']):>7}   {fmt(g['ratio'], 'x'):>7}")
    print(f"roofline: job {rl['seconds']:.3f} s; busiest resource {rl['busiest'] or '-'}: floor "
          f"{fmt(rl['floor_seconds'])} s, {fmt(rl['ratio'], 'x')} of it (phases overlapped); "
          f"serial floor {fmt(rl['serial_floor_seconds'])} s, {fmt(rl['serial_ratio'], 'x')}")


def main(argv):
    args = [a for a in argv if a != "--json"]
    items = [os.environ.get("DSORT_ROOFLINE_RATES", "")]
    shared = os.environ.get("DSORT_ROOFLINE_SHARED", "").replace(",", " ").split()
    path = None
    i = 0
    while i < len(args):
        if args[i] == "--rate" and i + 1 < len(args):
            items.append(args[i + 1])
            i += 2
        elif args[i] == "--shared-disk" and i + 1 < len(args):
            shared.append(args[i + 1])
            i += 2
        elif args[i].startswith("--rate="):
            items.append(args[i][7:])
            i += 1
        elif path is None and not args[i].startswith("-"):
            path = args[i]
            i += 1
        else:
            raise SystemExit(__doc__.split("\n\n")[1])
    if path is None:
        raise SystemExit(__doc__.split("\n\n")[1])
    with open(path) as f:
        stats = json.load(f)
    rl = roofline(stats, parse_rates(items), shared)
    if "--json" in argv:
        json.dump(rl, sys.stdout, indent=1)
        print()
    else:
        print_text(rl)


if __name__ == "__main__":
    main(sys.argv[1:])
