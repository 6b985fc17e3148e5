#!/usr/bin/env python3
"""table.py - the fault matrix's table for docs/reliability.md, from the rows the tests wrote.

Usage: table.py DIR [--update FILE]
  DIR     the tests' results (DSORT_FAULTS_RESULTS_DIR; build/faults-results under ctest):
          one NAME.tsv per test, rows of scenario, pipeline, what must happen, outcome
          (PASS, FAIL or SKIP), milliseconds from the fault to the end of the job, what was
          measured, why it failed.
  --update FILE  replace the text between the lines '<!-- faults-table -->' and
          '<!-- /faults-table -->' of FILE with the table; without it, print the table.
"""
import os
import sys

# The order of the sections: test name prefix, heading.
SECTIONS = [
    ("kill9.mem", "kill -9 of one rank, in memory"),
    ("kill9.ext", "kill -9 of one rank, out of core (fixed records)"),
    ("kill9.lines", "kill -9 of one rank, out of core (--format lines)"),
    ("signals.mem", "Signals, in memory"),
    ("signals.ext", "Signals, out of core"),
    ("enospc", "No space left on device (4 MiB tmpfs)"),
    ("io.retry", "Short reads and writes, EINTR (LD_PRELOAD shim)"),
    ("io.eio", "EIO (LD_PRELOAD shim)"),
    ("corrupt", "A damaged spilled run"),
    ("inputchange", "An input that changes during the sort"),
    ("inputchange.inplace", "An input rewritten in place during a mapped sort (same size)"),
    ("inputkinds.n1", "Inputs that are not what their size says, 1 rank"),
    ("inputkinds.n2", "Inputs that are not what their size says, 2 ranks"),
    ("resume", "Stop and resume under faults"),
    ("conserve", "Silent corruption on the wire (conservation check)"),
    ("outputs", "Outputs that cannot or must not be written"),
    ("outtargets", "Output targets a rename does not fit: mount points, long names, stats, xattrs"),
    ("nohup", "SIGHUP ignored by the user (singleton, no mpirun)"),
    ("limits.1", "Process limits: ulimit -f and -t (SIGXFSZ, SIGXCPU), singleton"),
    ("limits.2", "Process limits: ulimit -f and -t (SIGXFSZ, SIGXCPU), 2 ranks"),
    ("lostline", "An error on a full disk that also holds mpirun's log"),
    ("usr1", "SIGUSR1 without --checkpoint: Slurm's time-limit warning, the sort goes on"),
    ("agreealloc", "An allocation that fails on one rank before a collective"),
]


def cell(text):
    return text.replace("|", "\\|").strip()


def load(d):
    tables = {}
    for name in sorted(os.listdir(d)):
        if not name.endswith(".tsv"):
            continue
        rows = []
        with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 7:
                    rows.append(parts[:7])
        tables[name[:-4]] = rows
    return tables


def render(tables):
    out = []
    n = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    order = [k for k, _ in SECTIONS] + sorted(set(tables) - {k for k, _ in SECTIONS})
    heads = dict(SECTIONS)
    i = 0
    for key in order:
        rows = tables.get(key)
        if not rows:
            continue
        out.append(f"\n**{heads.get(key, key)}** (`faults.{key}`)\n")
        out.append("| # | scenario | pipeline | what must happen | outcome | time to exit | measured; why it failed |")
        out.append("|---|---|---|---|---|---|---|")
        last = None
        for scen, pipe, expect, outcome, ms, note, why in rows:
            i += 1
            shown = "as above" if expect == last else expect
            last = expect
            n[outcome] = n.get(outcome, 0) + 1
            t = f"{int(ms) / 1000:.1f} s" if ms.strip().isdigit() else "-"
            mark = {"PASS": "PASS", "FAIL": "**FAIL**", "SKIP": "SKIP"}.get(outcome, outcome)
            detail = cell(note)
            if why.strip():
                detail += ("; " if detail else "") + "**" + cell(why) + "**"
            out.append(f"| {i} | {cell(scen)} | {cell(pipe)} | {cell(shown)} | {mark} | {t} | {detail} |")
    summary = f"{i} cases: {n.get('PASS', 0)} pass, {n.get('FAIL', 0)} fail, {n.get('SKIP', 0)} skipped."
    return summary + "\n" + "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    text = render(load(argv[1]))
    if len(argv) >= 4 and argv[2] == "--update":
        path = argv[3]
        with open(path, encoding="utf-8") as f:
            doc = f.read()
        begin, end = "<!-- faults-table -->", "<!-- /faults-table -->"
        if begin not in doc or end not in doc:
            print(f"{path} has no {begin} ... {end} markers", file=sys.stderr)
            return 2
        head, rest = doc.split(begin, 1)
        _, tail = rest.split(end, 1)
        with open(path, "w", encoding="utf-8") as f:
            f.write(head + begin + "\n" + text + end + tail)
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
