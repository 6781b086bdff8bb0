#!/usr/bin/env python3
"""Draws accuracy and loss of `ddlsim run` results with a convergence block (docs/CONTRACT.md §6) against simulated
time (or iterations): one line per result file, the target accuracy as a dashed line, and each run's time to accuracy
marked. Writes .png or .svg by the output's extension.

usage: plot_curve.py RESULT.json [MORE.json ...] OUT.png [--title T] [--labels a,b,...] [--x time|iteration]
Needs python3-matplotlib (Debian) / matplotlib (pip).
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+", help="result JSON files, then the output file")
    ap.add_argument("--title", default="")
    ap.add_argument("--labels", help="one label per result file, comma-separated (default: the file names)")
    ap.add_argument("--x", choices=("time", "iteration"), default="time", help="the x axis (default: simulated time)")
    args = ap.parse_args()
    if len(args.paths) < 2:
        sys.exit("error: give at least one result file and the output file")
    results, out = args.paths[:-1], args.paths[-1]
    if not (out.endswith(".png") or out.endswith(".svg")):
        sys.exit(f"error: {out}: expected a .png or .svg file name")
    labels = args.labels.split(",") if args.labels else [os.path.splitext(os.path.basename(p))[0] for p in results]
    if len(labels) != len(results):
        sys.exit(f"error: {len(labels)} labels for {len(results)} result files")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("error: plot_curve.py needs matplotlib: install the Debian package python3-matplotlib")

    runs = []
    for path, label in zip(results, labels):
        with open(path, encoding="utf-8") as f:
            r = json.load(f)
        if not r.get("curve"):
            sys.exit(f"error: {path}: no \"curve\" (run a scenario with a convergence block)")
        runs.append((label, r))

    x_key = "time_s" if args.x == "time" else "iteration"
    x_label = "simulated time (s)" if args.x == "time" else "iteration"
    fig, (ax_a, ax_l) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    targets = set()
    for label, r in runs:
        curve = r["curve"]
        xs = [p[x_key] for p in curve]
        marker = "o" if len(curve) <= 40 else None
        (line,) = ax_a.plot(xs, [p["accuracy"] for p in curve], marker=marker, markersize=3, label=label)
        ax_l.plot(xs, [p["loss"] for p in curve], marker=marker, markersize=3, color=line.get_color(), label=label)
        targets.add(r.get("target_accuracy"))
        reached = r.get("time_to_accuracy_s") if args.x == "time" else r.get("iterations_to_accuracy")
        if reached is not None:
            ax_a.axvline(reached, color=line.get_color(), linestyle=":", linewidth=1)
    for t in targets:
        if t is not None:
            ax_a.axhline(t, color="grey", linestyle="--", linewidth=1, label=f"target {t:g}")
    ax_a.set_ylabel("test accuracy")
    ax_l.set_ylabel("test loss (cross-entropy)")
    ax_l.set_xlabel(x_label)
    for ax in (ax_a, ax_l):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    task = runs[0][1].get("task", "")
    title = args.title or task
    if task and args.title:
        title += f" ({task})"
    if title:
        ax_a.set_title(title)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
