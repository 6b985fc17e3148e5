#!/usr/bin/env python3
"""roofline_synth.py TOOL: src/roofline.c (through roofline_tool, on the figures of a --stats
file) against tests/bench/roofline.py (the oracle) on synthetic --stats files of shapes one
machine cannot run: many nodes of several ranks (the network's bytes estimated), one rank a
node (exact), a disk every node shares, several disks a node, a disk with no busy time (no
rate), nodes with fewer cores than ranks; each under several rate sets. The files are
tests/report/gen_stats.py's (a fixed seed) with seeded changes. Exits 1 on any difference."""
import copy
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CMP = load("roofline_cmp", os.path.join(TOP, "tests", "e2e", "roofline_cmp.py"))


def gen(work, ranks, per_node):
    out = os.path.join(work, f"g{ranks}_{per_node}.json")
    subprocess.run([sys.executable, os.path.join(TOP, "tests", "report", "gen_stats.py"),
                    str(ranks), out, str(per_node)], check=True)
    with open(out) as f:
        return json.load(f)


def vary(doc, seed):
    """Seeded changes: a second disk on the nodes' ranks, one with no busy time, spill and
    output bytes, a node with one core."""
    rng = random.Random(seed)
    doc = copy.deepcopy(doc)
    for r in doc["per_rank"]:
        d = r["devices"][0]
        d["write_bytes"]["spill"] = rng.randrange(10 ** 9)
        d["read_bytes"]["final_merge"] = rng.randrange(10 ** 9)
        r["phases"]["spill"] = round(rng.uniform(0, 2), 6)
        extra = copy.deepcopy(d)
        extra["disk"] = "sdb"
        extra["read_bytes"] = {k: rng.randrange(10 ** 8) for k in d["read_bytes"]}
        extra["job_busy_seconds"] = 0 if rng.random() < 0.5 else 1.5
        r["devices"].append(extra)
        r["bytes_read"] = rng.randrange(10 ** 9)
    doc["plan"]["nodes"][0]["cores"] = 1
    return doc


def main(tool):
    fails = 0
    with tempfile.TemporaryDirectory() as work:
        many = gen(work, 64, 8)
        single = gen(work, 3, 1)
        pairs = gen(work, 6, 2)
        cases = [
            ("64 ranks on 8 nodes", many, "", ""),
            ("64 ranks on 8 nodes", many, "net=1250 cpu=300", ""),
            ("64 ranks, varied", vary(many, 1), "net=1250 cpu=30 sdb.read=100 *.write=400", ""),
            ("64 ranks, varied, shared sdb", vary(many, 2), "net=125,nvme0n1=2000", "sdb"),
            ("3 nodes of one rank", single, "net=250 *.read=200,*.write=50", ""),
            ("3 nodes of one rank, varied", vary(single, 3), "nvme0n1=900 cpu=1", ""),
            ("6 ranks, shared nvme0n1", pairs, "", "nvme0n1"),
            ("6 ranks, varied", vary(pairs, 4), "cpu=50 net=100", "nvme0n1 sdb"),
        ]
        for i, (what, doc, rates, shared) in enumerate(cases):
            path = os.path.join(work, f"case{i}.json")
            with open(path, "w") as f:
                json.dump(doc, f)
            got = subprocess.run([tool, path, rates, shared], capture_output=True, text=True)
            if got.returncode != 0:
                print(f"{what}: roofline_tool failed: {got.stderr.strip()}")
                fails += 1
                continue
            doc["roofline"] = json.loads(got.stdout)
            with open(path, "w") as f:
                json.dump(doc, f)
            CMP.FAILS.clear()
            print(f"{what} [{rates or 'no rates'}{'; shared ' + shared if shared else ''}]: ",
                  end="")
            sys.stdout.flush()
            fails += CMP.main(path, rates, shared)
    print("roofline_synth:", "FAILED" if fails else "ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
