#!/usr/bin/env python3
"""unit.roofline: tests/bench/roofline.py on made-up --stats whose floors are known by hand."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("roofline", os.path.join(HERE, "roofline.py"))
rl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rl)
PHASES = ["sample", "read", "sort", "splitters", "exchange", "merge", "spill", "final_merge",
          "write", "commit"]
FAILS = []


def per_phase(**kw):
    return {p: kw.get(p, 0) for p in PHASES}


def rank(i, host):
    # Each rank: reads 100 MB from its disk, sends 250 MB, writes 100 MB; the disk was busy
    # 0.5 s for the 200 MB: 400 MB/s measured.
    return {"rank": i, "host": host, "bytes_read": 100e6, "bytes_sent": 250e6,
            "bytes_received": 250e6,
            "phases": per_phase(read=1.0, sort=0.5, exchange=2.0, merge=1.0, commit=0.1),
            "devices": [{"disk": "sda", "read_bytes": per_phase(read=100e6),
                         "write_bytes": per_phase(merge=100e6), "busy_seconds": per_phase(),
                         "job_read_bytes": 100e6, "job_write_bytes": 100e6,
                         "job_busy_seconds": 0.5, "job_seconds": 4.6}]}


def stats(hosts):
    return {"seconds": 5.0, "mapped": False, "bytes": 200e6 * len(hosts),
            "per_rank": [rank(i, h) for i, h in enumerate(hosts)],
            "plan": {"nodes": [{"hostname": h, "cores": 2} for h in sorted(set(hosts))]}}


def near(what, got, want):
    if got is None or abs(got - want) > 1e-6 * max(1, abs(want)):
        FAILS.append(f"{what}: got {got}, want {want}")


def expect(what, got, want):
    if got != want:
        FAILS.append(f"{what}: got {got!r}, want {want!r}")


def groups(out):
    return {g["group"]: g for g in out["groups"]}


# Two nodes, one rank each; disks measured (400 MB/s r+w), the network given (250 MB/s).
out = rl.roofline(stats(["a", "b"]), rl.parse_rates(["net=250"]))
g = groups(out)
near("measured disk rate", out["resources"]["disk a:sda r+w"]["rate_MBps"], 400)
expect("measured disk source", out["resources"]["disk a:sda r+w"]["rate_source"], "measured")
near("read floor", g["read"]["floor_seconds"], 0.25)
near("read ratio", g["read"]["ratio"], 4.0)
expect("exchange busiest", g["exchange"]["busiest"], "network")
near("exchange floor (250 MB at 250 MB/s)", g["exchange"]["floor_seconds"], 1.0)
near("exchange ratio", g["exchange"]["ratio"], 2.0)
expect("sort has no floor without a cpu rate", g["sort"]["busiest"], None)
near("output floor (merge and commit)", g["output"]["floor_seconds"], 0.25)
expect("job busiest", out["busiest"], "network")
near("job ratio", out["ratio"], 5.0)
near("serial floor", out["serial_floor_seconds"], 1.5)
expect("exact network bytes", out["resources"]["network"].get("bytes_estimated"), None)

# Separate read and write limits given for every disk, and a CPU rate.
out = rl.roofline(stats(["a", "b"]), rl.parse_rates(["net=250 *.read=200,*.write=50", "cpu=100"]))
g = groups(out)
expect("output busiest", g["output"]["busiest"], "disk a:sda write")
near("output floor (100 MB at 50 MB/s)", g["output"]["floor_seconds"], 2.0)
near("read floor (100 MB at 200 MB/s)", g["read"]["floor_seconds"], 0.5)
near("sort floor (100 MB at 100 MB/s a core, one rank a node)", g["sort"]["floor_seconds"], 1.0)
expect("job busiest", out["busiest"], "disk a:sda write")
near("job ratio", out["ratio"], 2.5)

# Two ranks on node a, one on b: a's ranks share a's disk (counted once) and the bytes that
# crossed are estimated (a's ranks send half of theirs to b).
out = rl.roofline(stats(["a", "a", "b"]), rl.parse_rates(["net=250"]))
near("node a's disk counted once", out["resources"]["disk a:sda r+w"]["bytes"], 200e6)
near("crossing bytes (a: 2 x 250 MB x 1/2)", out["resources"]["network"]["bytes"], 250e6)
expect("estimated flag", out["resources"]["network"].get("bytes_estimated"), True)

# One disk seen by every node (--shared-disk): counted once.
out = rl.roofline(stats(["a", "b"]), rl.parse_rates([]), ["sda"])
expect("shared disk", sorted(out["resources"]), ["disk sda r+w", "network"])

# The command line prints the table; a bad rate is refused.
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(stats(["a", "b"]), f)
cmd = [sys.executable, os.path.join(HERE, "roofline.py"), f.name]
p = subprocess.run(cmd + ["--rate", "net=250"], capture_output=True, text=True)
expect("exit status", p.returncode, 0)
if "busiest resource network: floor 1.000 s, 5.000x" not in p.stdout:
    FAILS.append("text output lacks the job line:\n" + p.stdout)
p = subprocess.run(cmd + ["--rate", "net=fast"], capture_output=True, text=True)
expect("bad rate refused", (p.returncode != 0, "bad rate" in p.stderr), (True, True))
os.unlink(f.name)

for msg in FAILS:
    print("FAIL:", msg)
print("unit.roofline:", "FAILED" if FAILS else "ok")
sys.exit(1 if FAILS else 0)
