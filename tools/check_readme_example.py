#!/usr/bin/env python3
"""Fails when the README's worked example drifts from the scenario file and from what ddlsim prints.

The README quotes `build/ddlsim run scenarios/examples/resnet50_ring_16xV100.json` in a ```text block (the
command line, then its output). This reruns the command and compares every line but the last one, which holds
the wall time. It also quotes the scenario in a ```json block after `$ cat scenarios/examples/...json`, which
must equal the file. The tables of simulated figures in docs/ are tools/gen_tables.py's (the sync-scheme table
this script used to check among them). The time-to-train example quotes the "time to train" part of
`build/ddlsim run scenarios/examples/resnet50_time_to_train_8x8xH100.json` after a "  ..." line; it must match too.
The comparison example quotes `build/ddlsim compare` of four variants of the Llama 2 FSDP example (the command
over several lines joined by backslashes, then its whole output).
Usage: check_readme_example.py --ddlsim PATH [--update]
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCENARIO = "scenarios/examples/resnet50_ring_16xV100.json"
COMMAND = "build/ddlsim run " + SCENARIO
TRAINING = "scenarios/examples/resnet50_time_to_train_8x8xH100.json"
TRAINING_COMMAND = "build/ddlsim run " + TRAINING


def training_excerpt(ddlsim):
    """The "time to train" lines of the time-to-train example's summary, after a "  ..." line."""
    out = subprocess.run([ddlsim] + TRAINING_COMMAND.split()[1:], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split("\n")
    start = out.index("  time to train")
    end = start
    while out[end].strip():
        end += 1
    return ["  ..."] + out[start:end]


# The comparison example: the shell line the README shows (continued with backslashes) and the same arguments.
COMPARE_FILE = "scenarios/examples/llama2_7b_fsdp_4x8xH100.json"
COMPARE_VARIANTS = ['ddp={"sharding": null}', 'zero2={"sharding": {"stage": 2, "prefetch": null}}', "fsdp={}",
                    'hsdp={"sharding": {"group": "node"}}']
COMPARE_PROMPT = ["$ build/ddlsim compare " + COMPARE_FILE + " --set iterations=1 \\"] + [
    f"    --variant '{v}'" + (" \\" if i + 1 < len(COMPARE_VARIANTS) else "") for i, v in enumerate(COMPARE_VARIANTS)]


def compare_output(ddlsim):
    args = [ddlsim, "compare", COMPARE_FILE, "--set", "iterations=1"]
    for v in COMPARE_VARIANTS:
        args += ["--variant", v]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=True).stdout.rstrip("\n").split("\n")


def compare_block(lines):
    """(start, end) of the comparison's output lines, after its multi-line command."""
    first = lines.index(COMPARE_PROMPT[0])
    if lines[first:first + len(COMPARE_PROMPT)] != COMPARE_PROMPT:
        raise SystemExit("README: the compare example's command differs from tools/check_readme_example.py's")
    start = end = first + len(COMPARE_PROMPT)
    while lines[end] != "```":
        end += 1
    return start, end


def block(lines, prompt):
    """(start, end) of the lines after the `prompt` line (`$ COMMAND`), up to the closing fence."""
    start = lines.index(prompt) + 1
    end = start
    while lines[end] != "```":
        end += 1
    return start, end


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddlsim", default=str(ROOT / "build" / "ddlsim"))
    ap.add_argument("--update", action="store_true", help="rewrite the README blocks instead of checking them")
    args = ap.parse_args()
    readme = ROOT / "README.md"
    lines = readme.read_text().split("\n")
    run = subprocess.run([args.ddlsim] + COMMAND.split()[1:], cwd=ROOT, capture_output=True, text=True, check=True)
    fresh = run.stdout.rstrip("\n").split("\n")
    scenario = (ROOT / SCENARIO).read_text().rstrip("\n").split("\n")
    s_start, s_end = block(lines, "$ cat " + SCENARIO)
    excerpt = training_excerpt(args.ddlsim)
    if args.update:
        lines[s_start:s_end] = scenario
        start, end = block(lines, "$ " + COMMAND)
        lines[start:end] = fresh
        start, end = block(lines, "$ " + TRAINING_COMMAND)
        lines[start:end] = excerpt
        start, end = compare_block(lines)
        lines[start:end] = compare_output(args.ddlsim)
        readme.write_text("\n".join(lines))
        print("README worked example updated")
        return 0
    stale = False
    if lines[s_start:s_end] != scenario:
        print(f"README: the quoted {SCENARIO} differs from the file", file=sys.stderr)
        stale = True
    start, end = block(lines, "$ " + TRAINING_COMMAND)
    if lines[start:end] != excerpt:
        print(f"README: the time-to-train example differs from ddlsim's output", file=sys.stderr)
        stale = True
    start, end = compare_block(lines)
    if lines[start:end] != compare_output(args.ddlsim):
        print("README: the compare example differs from ddlsim's output", file=sys.stderr)
        stale = True
    start, end = block(lines, "$ " + COMMAND)
    quoted = lines[start:end]
    # The last line holds the wall time; everything else must match exactly.
    if quoted[:-1] != fresh[:-1] or not quoted[-1].startswith(fresh[-1].split(" in ")[0]):
        for q, f in zip(quoted, fresh):
            if q != f:
                print(f"README: {q!r}\nddlsim: {f!r}")
                break
        else:
            print(f"README: {len(quoted)} lines, ddlsim: {len(fresh)} lines")
        stale = True
    if stale:
        print("the README's worked example is stale: run tools/check_readme_example.py --update", file=sys.stderr)
        return 1
    print("README worked example matches the scenario file and ddlsim's output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
