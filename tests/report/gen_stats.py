#!/usr/bin/env python3
"""Write a synthetic dsort --stats file: gen_stats.py RANKS OUT.json [RANKS_PER_NODE].

The keys and shapes of the stats dsort writes (src/cli/dsort.c, statsjson.c), with made-up
figures from a fixed seed (and the roofline tests/bench/roofline.py computes from them): an in-memory run whose phases follow one another with collectives
between them, so every rank waits for the slowest at each; three ranks are stragglers (a slow
read, a slow sort, a slow merge), so the report has someone to name. Standard library only."""
import importlib.util
import json
import os
import random
import sys

_spec = importlib.util.spec_from_file_location(
    "roofline", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "roofline.py"))
ROOF = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ROOF)

PHASES = ["sample", "read", "sort", "splitters", "exchange", "merge", "spill", "final_merge",
          "write", "commit"]


def per_phase(values):
    return {p: values.get(p, 0) for p in PHASES}


def main():
    nranks, out = int(sys.argv[1]), sys.argv[2]
    per_node = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    rng = random.Random(29)
    share = 10_000_000  # records per rank
    slow = {nranks // 3: "read", nranks // 2: "sort", nranks - 5: "merge"}
    base = {"read": 2.0, "sort": 3.0, "splitters": 0.4, "exchange": 5.0, "merge": 2.5,
            "commit": 0.6}
    starts = [rng.uniform(0, 0.05) for _ in range(nranks)]
    t = max(starts) + 0.02
    spans = [[] for _ in range(nranks)]
    secs = [dict() for _ in range(nranks)]
    for ph in ["read", "sort", "splitters", "exchange", "merge", "commit"]:
        ends = []
        for r in range(nranks):
            d = base[ph] * rng.uniform(0.9, 1.1) * (2.2 if slow.get(r) == ph else 1)
            s0 = t + rng.uniform(0, 0.01)
            spans[r].append([ph, round(s0, 6), round(s0 + d, 6)])
            secs[r][ph] = round(d, 6)
            ends.append(s0 + d)
        t = max(ends) + 0.005  # the collective after the phase: everyone waits for the last
    ranks = []
    for r in range(nranks):
        host = "node%03d" % (r // per_node)
        sent = int(share * 100 * rng.uniform(0.9, 1.1))
        disk = {"disk": "nvme0n1",
                "read_bytes": per_phase({"read": per_node * share * 100}),
                "write_bytes": per_phase({"merge": per_node * share * 100}),
                "busy_seconds": per_phase({"read": 1.9, "merge": 2.4}),
                "job_read_bytes": per_node * share * 100 + rng.randrange(1 << 20),
                "job_write_bytes": per_node * share * 100 + rng.randrange(1 << 20),
                "job_busy_seconds": round(rng.uniform(3, 6), 3), "job_seconds": round(t, 6)}
        ranks.append({
            "rank": r, "host": host, "phases": per_phase(secs[r]),
            "io_read_bytes": per_phase({"read": share * 100}),
            "io_write_bytes": per_phase({"merge": share * 100}),
            "page_faults": per_phase({"sort": 4000}),
            "cpu_user_seconds": per_phase({"sort": round(secs[r]["sort"] * 0.9, 6)}),
            "cpu_sys_seconds": per_phase({"read": round(secs[r]["read"] * 0.3, 6)}),
            "cpu_user_seconds_all": round(rng.uniform(2, 4), 6),
            "cpu_sys_seconds_all": round(rng.uniform(0.5, 1.5), 6), "devices": [disk],
            "records_in": share, "records_out": share + rng.randrange(-50000, 50000),
            "bytes_read": share * 100, "bytes_written": share * 100,
            "bytes_sent": sent, "bytes_received": sent + rng.randrange(-10 ** 6, 10 ** 6),
            "memory_budget": 6 << 30,
            "memory_budget_reason": "default: 75% of 256.00 GiB node memory / 32 ranks",
            "memory_needed": 3 << 30, "runs": 0, "merge_passes": 0, "spill_bytes": 0,
            "extra_merge_bytes": 0, "fan_in": 0, "extra_pass_reason": "",
            "splitter_rounds": 20, "exchange_rounds": 1, "exchanges": 1,
            "exchanges_by_node": 0, "rounds": 0,
            "rss_peak_kb": int((3 << 20) * rng.uniform(0.8, 1.3 if r % 97 == 0 else 1.05)),
            "rss_file_kb": 0, "started": round(starts[r], 6), "ended": round(t + rng.uniform(0, 0.004), 6),
            "spans": spans[r], "spans_merged": 0})
    nodes = []
    for n in range((nranks + per_node - 1) // per_node):
        nodes.append({"hostname": "node%03d" % n, "cores": 64, "pus": 128, "numa_nodes": 2,
                      "devices": [{"key": "nvme0n1", "bytes": per_node * share * 100,
                                   "read_bytes": per_node * share * 100,
                                   "read_seconds": round(rng.uniform(1.8, 2.2), 6)}],
                      "ranks": []})
    total = nranks * share
    outs = [x["records_out"] for x in ranks]
    doc = {"version": "0.1.0", "ranks": nranks, "format": "gensort", "records": total,
           "bytes": total * 100, "seconds": round(t, 6),
           "balance": round(max(outs) / (sum(outs) / nranks), 6), "out_of_core": False,
           "mapped": True, "started_unix": 1796332051.0, "per_rank": ranks,
           "plan": {"dsort_plan": 1, "nodes": nodes}}
    # The roofline, as dsort writes it (src/roofline.c), by its oracle tests/bench/roofline.py:
    # each node's link at 12500 MB/s (100 Gbit/s), the disks measured.
    doc["roofline"] = {"rates": {"net": 12500}, "shared_disks": []}
    doc["roofline"].update(ROOF.roofline(doc, ROOF.parse_rates(["net=12500"])))
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


main()
