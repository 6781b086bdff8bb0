#!/usr/bin/env python3
"""Fails when the README's worked example drifts from what ddlsim prints.

The README quotes `build/ddlsim run scenarios/examples/resnet50_ring_16xV100.json` in a ```text block (the
command line, then its output). This reruns the command and compares every line but the last one, which holds
the wall time. Usage: check_readme_example.py --ddlsim PATH [--update]
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMMAND = "build/ddlsim run scenarios/examples/resnet50_ring_16xV100.json"


def block(lines):
    """(start, end) of the output lines after the `$ COMMAND` line, up to the closing fence."""
    start = lines.index("$ " + COMMAND) + 1
    end = start
    while lines[end] != "```":
        end += 1
    return start, end


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
    if args.update:
        readme.write_text("\n".join(lines[:start] + fresh + lines[end:]))
        print("README worked example updated")
        return 0
    quoted = lines[start:end]
    # The last line holds the wall time; everything else must match exactly.
    if quoted[:-1] != fresh[:-1] or not quoted[-1].startswith(fresh[-1].split(" in ")[0]):
        for q, f in zip(quoted, fresh):
            if q != f:
                print(f"README: {q!r}\nddlsim: {f!r}")
                break
        print("the README's worked example is stale: run tools/check_readme_example.py --update", file=sys.stderr)
        return 1
    print("README worked example matches ddlsim's output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
