#!/usr/bin/env python3
"""Fails when the README's worked example or its sync-scheme table drifts from what ddlsim prints.

The README quotes `build/ddlsim run scenarios/examples/resnet50_ring_16xV100.json` in a ```text block (the
command line, then its output). This reruns the command and compares every line but the last one, which holds
the wall time. The sync-scheme table (the rows that start with "| `sync_" or "| `bsp_heterogeneous") quotes
one example per row: its numeric columns are recomputed from `ddlsim run --out`; the first two columns (the
description) are kept. Usage: check_readme_example.py --ddlsim PATH [--update]
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMAND = "build/ddlsim run scenarios/examples/resnet50_ring_16xV100.json"


def block(lines):
    """(start, end) of the output lines after the `$ COMMAND` line, up to the closing fence."""
    start = lines.index("$ " + COMMAND) + 1
    end = start
    while lines[end] != "```":
        end += 1
    return start, end


SYNC_ROW = re.compile(r"^\| `((?:sync_|bsp_heterogeneous)[A-Za-z0-9_]+)`")


def sync_row(ddlsim, line):
    """The README row recomputed: description columns kept, the numbers from the example's result."""
    name = SYNC_ROW.match(line).group(1)
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "r.json"
        subprocess.run([ddlsim, "run", f"scenarios/examples/{name}.json", "--out", str(out)], cwd=ROOT,
                       capture_output=True, text=True, check=True)
        r = json.loads(out.read_text())
    cells = line.split(" | ")
    fedavg = "clients_per_round_mean" in r
    it = r["iteration_time_s"]
    iteration = f"{it:.2f} s per round" if fedavg else f"{it * 1e3:.1f} ms"
    st = r.get("staleness")
    staleness = f"{st['mean']:.2f} / {st['max']}" if st else "—"
    idle = r["workers"]["idle_s_mean"]
    versions = str(r["model_versions"]) if r["model_versions"] > 0 else "—"
    fresh = cells[:2] + [iteration, f"{r['throughput_samples_per_s']:.0f}", staleness,
                         f"{idle:.2f} s" if idle < 100 else f"{idle:.1f} s", versions + " |"]
    return " | ".join(fresh)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddlsim", default=str(ROOT / "build" / "ddlsim"))
    ap.add_argument("--update", action="store_true", help="rewrite the README block instead of checking it")
    args = ap.parse_args()
    readme = ROOT / "README.md"
    lines = readme.read_text().split("\n")
    start, end = block(lines)
    run = subprocess.run([args.ddlsim] + COMMAND.split()[1:], cwd=ROOT, capture_output=True, text=True, check=True)
    fresh = run.stdout.rstrip("\n").split("\n")
    stale = []
    rows = [i for i, line in enumerate(lines) if SYNC_ROW.match(line)]
    if len(rows) < 5:
        print(f"README: expected the sync-scheme table's rows, found {len(rows)}", file=sys.stderr)
        return 1
    for i in rows:
        row = sync_row(args.ddlsim, lines[i])
        if row != lines[i]:
            stale.append((lines[i], row))
            lines[i] = row
    if args.update:
        readme.write_text("\n".join(lines[:start] + fresh + lines[end:]))
        print("README worked example and sync-scheme table updated")
        return 0
    for q, f in stale:
        print(f"README: {q}\nddlsim: {f}")
    quoted = lines[start:end]
    # The last line holds the wall time; everything else must match exactly.
    if quoted[:-1] != fresh[:-1] or not quoted[-1].startswith(fresh[-1].split(" in ")[0]):
        for q, f in zip(quoted, fresh):
            if q != f:
                print(f"README: {q!r}\nddlsim: {f!r}")
                break
        print("the README's worked example is stale: run tools/check_readme_example.py --update", file=sys.stderr)
        return 1
    if stale:
        print("the README's sync-scheme table is stale: run tools/check_readme_example.py --update", file=sys.stderr)
        return 1
    print("README worked example and sync-scheme table match ddlsim's output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
