#!/usr/bin/env python3
"""Draws a `ddlsim sweep` result: throughput and scaling efficiency against the first varied key (one line per
combination of the other varied keys, and per job), and a stacked bar of compute / exposed communication time
per point. Reads the CSV (or the --format json output); writes .png or .svg by the output's extension.

usage: plot_sweep.py RESULTS.csv OUT.png [--keys first.key,other.key]
Without --keys the varied keys are the columns between `point` (and `job`) and `iteration_time_s`.
Needs python3-matplotlib (Debian) / matplotlib (pip).
"""
import argparse
import csv
import json
import re
import sys


def flatten(obj, prefix, out):
    for k, v in obj.items():
        name = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict):
            flatten(v, name, out)
        elif not isinstance(v, list):
            out[name] = "" if v is None else (v if isinstance(v, str) else json.dumps(v))


def read_rows(path):
    """Rows as dicts of strings, and the column order."""
    if path.endswith(".json"):
        rows, keys = [], []
        for o in json.load(open(path, encoding="utf-8")):
            values = {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in o["values"].items()}
            keys = list(o["values"].keys())
            results = (o.get("result") or {})
            jobs = results.get("jobs") or [None]
            for job in jobs:
                row = {"point": str(o["point"]), **values, "error": o.get("error") or ""}
                flatten({k: v for k, v in results.items() if k != "jobs"}, "", row)
                if job is not None:
                    flatten(job, "", row)
                    row["job"] = job.get("scenario", {}).get("name", "")
                rows.append(row)
        return rows, ["point"] + keys + ["iteration_time_s"]
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader), reader.fieldnames or []


def as_number(text):
    """A float for '4', '0.5', '10Gbps'-like values (leading number), else None."""
    m = re.match(r"^\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", text or "")
    return float(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--keys", help="the varied keys, comma-separated, first one on the x axis")
    args = ap.parse_args()
    if not (args.out.endswith(".png") or args.out.endswith(".svg")):
        sys.exit(f"error: {args.out}: expected a .png or .svg file name")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("error: plot_sweep.py needs matplotlib: install the Debian package python3-matplotlib")

    rows, columns = read_rows(args.results)
    if args.keys:
        keys = args.keys.split(",")
    else:
        stop = columns.index("iteration_time_s") if "iteration_time_s" in columns else len(columns)
        keys = [c for c in columns[:stop] if c not in ("point", "job")]
    if not keys:
        sys.exit("error: no varied keys found; pass --keys")
    x_key, others = keys[0], keys[1:]
    ok = [r for r in rows if not r.get("error") and r.get("throughput_samples_per_s")]
    if not ok:
        sys.exit(f"error: {args.results}: no successful points to plot")

    xs_text = list(dict.fromkeys(r[x_key] for r in ok))
    numeric = all(as_number(x) is not None for x in xs_text)
    if numeric and len({as_number(x) for x in xs_text}) == len(xs_text):
        pos = {x: as_number(x) for x in xs_text}
    else:
        numeric = False
        pos = {x: i for i, x in enumerate(xs_text)}

    series = {}
    for r in ok:
        label = ", ".join(f"{k}={r[k]}" for k in others)
        if r.get("job"):
            label = f"{r['job']}" + (f", {label}" if label else "")
        series.setdefault(label, []).append(r)

    fig, (ax_t, ax_e, ax_b) = plt.subplots(3, 1, figsize=(9, 12))
    for label, rs in series.items():
        rs = sorted(rs, key=lambda r: pos[r[x_key]])
        xs = [pos[r[x_key]] for r in rs]
        marker = "o" if len(rs) <= 50 else None
        ax_t.plot(xs, [float(r["throughput_samples_per_s"]) for r in rs], marker=marker, label=label or None)
        ax_e.plot(xs, [float(r["scaling_efficiency"]) for r in rs], marker=marker, label=label or None)
    values = sorted(pos.values())
    geometric = numeric and len(values) >= 3 and values[0] > 0 and values[-1] / values[0] >= 16
    for ax, title in ((ax_t, "throughput (samples/s)"), (ax_e, "scaling efficiency")):
        ax.set_xlabel(x_key)
        ax.set_ylabel(title)
        ax.grid(True, alpha=0.3)
        if geometric:
            ax.set_xscale("log", base=2)
        if not numeric:
            ax.set_xticks(list(pos.values()), list(pos.keys()), rotation=30, ha="right")
        if any(series.keys()) and len(series) <= 12:
            ax.legend(fontsize="small")
    ax_e.set_ylim(bottom=0)

    idx = list(range(len(ok)))
    compute = [float(r.get("compute_time_s") or 0) for r in ok]
    exposed = [float(r.get("exposed_communication_time_s") or 0) for r in ok]
    if len(ok) <= 300:
        ax_b.bar(idx, compute, label="compute")
        ax_b.bar(idx, exposed, bottom=compute, label="exposed communication")
        if len(ok) <= 40:
            labels = [", ".join(r[k] for k in keys) + (f" {r['job']}" if r.get("job") else "") for r in ok]
            ax_b.set_xticks(idx, labels, rotation=60, ha="right", fontsize="small")
    else:
        ax_b.stackplot(idx, compute, exposed, labels=["compute", "exposed communication"])
    ax_b.set_xlabel("point (" + ", ".join(keys) + ")")
    ax_b.set_ylabel("time per iteration (s)")
    ax_b.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
