#!/usr/bin/env python3
"""Old vs new A/B of the benchmark harness (benches/compare.rs), same machine, same run.

Not part of the test suite. `scripts/bench.sh ab REV` builds the harness for git revision REV
and for the current tree, then calls this script with both binaries:

  ab.py --old BIN --new BIN [--rounds N] [--out FILE] [--log FILE]

It runs the two binaries alternately, OLD NEW NEW OLD OLD NEW … (so a drift of the machine's
speed weighs on both alike), N rounds of one run each (default 3), with the environment it
was given (scripts/bench.sh sets ZARRSHARD_BENCH_NO_PEERS=1: Rust rows only), parses each
run's Markdown table and prints one table: per row (workload, implementation), the median
over the runs of each binary's median, new/old, and the speed ratio (new/old for MB/s, old/new
for times; above 1 means the new binary is faster). zarrshard rows whose speed ratio is below
0.9 are flagged. The zarrs rows and the raw-codec ceilings run the same code in both binaries:
their ratios show how much the machine itself moved. Stdlib only.
"""

import argparse
import re
import statistics
import subprocess
import sys
import time

# "123 MB/s (…)", "4.5 µs per chunk (…)", "1.2 ms", "3.4 MiB".
VALUE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(MB/s|µs|ms|s|MiB|KiB|B)\b")
SCALE = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "MiB": 1048576.0, "KiB": 1024.0, "B": 1.0, "MB/s": 1.0}


def parse(table):
    """{(workload, implementation): (value, kind)} from one run's table; kind is "rate",
    "time" or "bytes"."""
    rows = {}
    workload = None
    for line in table.splitlines():
        if not line.startswith("|") or line.startswith("| ---") or line.startswith("| workload"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        if cells[0]:
            # A disturbed measurement's title carries a warning after " ⚠".
            workload = cells[0].split(" ⚠")[0]
        m = VALUE.match(cells[2])
        if workload is None or not m:
            continue
        unit = m.group(2)
        kind = "rate" if unit == "MB/s" else "bytes" if unit in ("MiB", "KiB", "B") else "time"
        rows[(workload, cells[1])] = (float(m.group(1)) * SCALE[unit], kind)
    return rows


def fmt(v, kind):
    if kind == "rate":
        return f"{v:.0f} MB/s" if v >= 100 else f"{v:.1f} MB/s"
    if kind == "bytes":
        return f"{v / 1048576:.2f} MiB"
    for unit, k in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if v >= k or unit == "µs":
            return f"{v / k:.3g} {unit}"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--log", help="append each run's stderr here (default: this script's stderr)")
    ap.add_argument("--old-label", default="old")
    ap.add_argument("--new-label", default="new")
    a = ap.parse_args()

    runs = {"old": [], "new": []}
    order = []
    for r in range(a.rounds):
        order += ["old", "new"] if r % 2 == 0 else ["new", "old"]
    log = open(a.log, "a") if a.log else None
    for i, which in enumerate(order):
        binary = a.old if which == "old" else a.new
        print(f"[ab] run {i + 1}/{len(order)}: {which} ({binary})", file=sys.stderr, flush=True)
        t = time.time()
        p = subprocess.run([binary], stdout=subprocess.PIPE, stderr=log or None, text=True)
        if p.returncode != 0:
            print(f"[ab] {which} exited with status {p.returncode}", file=sys.stderr)
            return 1
        rows = parse(p.stdout)
        if not rows:
            print(f"[ab] no table in the {which} run's output", file=sys.stderr)
            return 1
        runs[which].append(rows)
        print(f"[ab] … {time.time() - t:.0f} s, {len(rows)} rows", file=sys.stderr, flush=True)

    keys = []
    for rows in runs["new"] + runs["old"]:
        for k in rows:
            if k not in keys:
                keys.append(k)
    out = [
        f"Old ({a.old_label}) vs new ({a.new_label}): {a.rounds} runs of each, alternated; medians over the runs.\n",
        "| workload | implementation | old | new | new/old | speed new/old |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    last = None
    slow = []
    for k in keys:
        olds = [r[k][0] for r in runs["old"] if k in r]
        news = [r[k][0] for r in runs["new"] if k in r]
        kinds = {r[k][1] for r in runs["old"] + runs["new"] if k in r}
        kind = kinds.pop()
        o = statistics.median(olds) if olds else None
        n = statistics.median(news) if news else None
        ratio = speed = ""
        if o and n:
            ratio = f"{n / o:.3f}"
            if kind != "bytes":
                s = n / o if kind == "rate" else o / n
                speed = f"{s:.3f}"
                if k[1].startswith("zarrshard") and s < 0.9:
                    speed += " ⚠"
                    slow.append(k)
        w = "" if k[0] == last else k[0]
        last = k[0]
        out.append(
            f"| {w} | {k[1]} | {fmt(o, kind) if o is not None else '–'} | "
            f"{fmt(n, kind) if n is not None else '–'} | {ratio} | {speed} |"
        )
    out.append("")
    out.append(
        f"{len(slow)} zarrshard row(s) more than 10 % slower in the new binary."
        if slow
        else "No zarrshard row more than 10 % slower in the new binary."
    )
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
