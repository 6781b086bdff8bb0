#!/usr/bin/env python3
"""Draws a `ddlsim sweep` result: throughput and scaling efficiency against the first varied key (one line per
combination of the other varied keys, and per job), and a stacked bar of where each point's iteration goes
(compute, codec, exposed communication, waiting). Reads the CSV (or the --format json output); writes .png or
.svg by the output's extension.

usage: plot_sweep.py RESULTS.csv OUT.png [--keys first.key,other.key] [--log-keys k,...] [--title T]
                     [--relative-to KEY=VALUE] [--describe AXES.json]

Axes:
  - the x axis is the first varied key. Values with units ("10Gbps", "1.25GBps", "5us", "25MB") are drawn in one
    unit (Gbit/s for bandwidths; s, ms, us or ns for times; B, kB, MB or GB for sizes) named in the axis label;
    plain numbers are drawn as they are, with the key's unit when the key has one (workers: GPUs, ...);
  - a numeric key is drawn on a linear axis, except the keys of --log-keys (ddlsim passes the keys it expanded
    from a geometric range A..B:xF) and, when the values span a factor of 4 or more, bandwidths and counts of
    machines (workers, nodes, hosts, servers, GPUs per node), which get a log2 axis;
  - a key with a non-numeric value (a name, a JSON object) is drawn as categories in the order of the sweep,
    as points (no line joins two categories);
  - legends sit outside the data, right of the panels; past 10 series the 9 with the highest throughput are
    named and the rest drawn thin and grey as one "N others" entry;
  - where the transport that `auto` picks changes along the x axis (tcp below 100 Gbit/s, rdma from it), or the
    all-reduce algorithm `auto` picks (scenario.algorithm_picked), a dotted vertical line marks the switch
    ("tcp -> rdma", "ring -> double_tree");
  - the breakdown panel draws every point up to 40; past that, only the points of the best series (along x);
  - legends and tick labels read key=value; a JSON object value reads key.field=value for the fields that
    differ between the key's values.
--relative-to KEY=VALUE divides every point's throughput and iteration time (and its breakdown) by those of the
point that differs from it only in KEY=VALUE (its baseline); KEY must be a varied key.
--describe writes the chosen title, axes, labels, scales and legend entries as JSON (for tests and scripts).
Without --keys the varied keys are the columns between `point` (and `job`) and `iteration_time_s`.
Needs python3-matplotlib (Debian) / matplotlib (pip).
"""
import argparse
import csv
import json
import math
import os
import re
import sys

# Unit families: factor of each unit to the family's base unit, and the display units (largest first) with
# their factor to the base. Bandwidths are always drawn in Gbit/s. Same spellings as sim/unit_parse.cpp.
BANDWIDTH = {"bps": 1 / 8, "kbps": 1e3 / 8, "Mbps": 1e6 / 8, "Gbps": 1e9 / 8, "Tbps": 1e12 / 8,
             "Bps": 1.0, "kBps": 1e3, "MBps": 1e6, "GBps": 1e9, "TBps": 1e12}  # to bytes/s
TIME = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}  # to seconds
SIZE = {"B": 1.0, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
        "KiB": 1024.0, "MiB": 1048576.0, "GiB": 1073741824.0}  # to bytes
FLOPS = {"FLOPS": 1.0, "MFLOPS": 1e6, "GFLOPS": 1e9, "TFLOPS": 1e12, "PFLOPS": 1e15}  # to FLOP/s
FAMILIES = {
    "bandwidth": (BANDWIDTH, [("Gbit/s", 1e9 / 8)]),
    "time": (TIME, [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)]),
    "size": (SIZE, [("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0)]),
    "flops": (FLOPS, [("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("FLOP/s", 1.0)]),
}
# The unit of a plain number, by the last part of the key path (scenario keys in SI base units or counts).
PLAIN_UNITS = {
    "workers": "GPUs", "batch_size": "samples per worker", "iterations": "iterations",
    "staleness": "iterations", "period": "iterations", "local_steps": "steps", "clients_per_round": "clients",
    "servers": "servers", "bits": "bits", "rank": "rank", "density": "fraction of gradients sent",
    "gpus_per_node": "GPUs per node", "oversubscription": "ratio", "efficiency": "fraction of peak",
    "gradient_accumulation": "micro-batches", "seed": "seed", "sigma": "lognormal sigma",
}
# Counts of machines: drawn on a log axis when their values span a factor of 4 (scaling studies double them).
LOG_COUNTS = {"workers", "num_nodes", "hosts", "servers", "gpus_per_node", "clients_per_round"}
PLAIN_FAMILY = {"latency": "time", "bucket_size": "size", "partition_size": "size", "segment_size": "size"}


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
            results = o.get("result") or {}
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


def parse_value(text):
    """A cell as a Python value: a JSON value when it parses as one (objects, numbers, quoted strings), else the
    text itself ("ring", "10Gbps")."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def quantity(key, text):
    """(family, value in the family's base unit) for '10Gbps'-like text, ('plain', number) for a plain number,
    None otherwise."""
    v = parse_value(text)
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        family = PLAIN_FAMILY.get(key.rsplit(".", 1)[-1])
        return (family, float(v)) if family else ("plain", float(v))
    if not isinstance(v, str):
        return None
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([A-Za-z]+)\s*", v)
    if not m:
        return None
    number, unit = float(m.group(1)), m.group(2)
    for family, (units, _) in FAMILIES.items():
        if unit in units:
            return family, number * units[unit]
    return None


class Axis:
    """How one varied key is drawn: 'linear', 'log' or 'category', the position of each value, its label."""

    def __init__(self, key, texts, log):
        self.key = key
        self.texts = texts
        q = [quantity(key, t) for t in texts]
        families = {x[0] for x in q if x is not None}
        numeric = all(x is not None for x in q) and len(families) == 1
        self.unit = ""
        if numeric:
            family = families.pop()
            base = [x[1] for x in q]
            if family == "plain":
                scale, self.unit = 1.0, PLAIN_UNITS.get(key.rsplit(".", 1)[-1], "")
            else:
                displays = FAMILIES[family][1]
                biggest = max(abs(b) for b in base) or 1.0
                self.unit, scale = next(((u, f) for u, f in displays if biggest >= f), displays[-1])
            values = [b / scale for b in base]
            numeric = len(set(values)) == len(values)  # two spellings of one value: draw as categories
        if numeric:
            spread = min(values) > 0 and max(values) / min(values) >= 4
            machines = family == "bandwidth" or (family == "plain" and key.rsplit(".", 1)[-1] in LOG_COUNTS)
            self.scale = "log" if min(values) > 0 and (log or (machines and spread)) else "linear"
            self.pos = dict(zip(texts, values))
        else:
            self.scale = "category"
            self.pos = {t: i for i, t in enumerate(texts)}
        self.value_labels, self.short_labels = value_labels(key, texts)

    def label(self):
        return f"{self.key} ({self.unit})" if self.unit else self.key


def value_labels(key, texts):
    """For each value text: key=value (the legend's and the category axis's label) and the value alone (a bar's
    label); a JSON object reads key.field=value (field=value) for the fields that differ between the values."""
    parsed = [parse_value(t) for t in texts]
    if all(isinstance(p, dict) for p in parsed):
        flat = []
        for p in parsed:
            f = {}
            flatten(p, "", f)
            flat.append(f)
        fields = list(dict.fromkeys(k for f in flat for k in f))
        varying = [k for k in fields if len({f.get(k) for f in flat}) > 1] or fields
        return ({t: ", ".join(f"{key}.{k}={f[k]}" for k in varying if k in f) for t, f in zip(texts, flat)},
                {t: " ".join(f"{k}={f[k]}" for k in varying if k in f) for t, f in zip(texts, flat)})
    plain = {t: (p if isinstance(p, str) else t) for t, p in zip(texts, parsed)}
    return {t: f"{key}={v}" for t, v in plain.items()}, plain


def same_value(a, b):
    """Two spellings of one value: equal text, equal JSON, or equal quantities ("100Gbps" and "12.5GBps")."""
    if a == b:
        return True
    pa, pb = parse_value(a), parse_value(b)
    if not isinstance(pa, str) or not isinstance(pb, str):
        return pa == pb
    qa, qb = quantity("", a), quantity("", b)
    return qa is not None and qa == qb


def fnum(r, key):
    try:
        return float(r.get(key) or 0)
    except ValueError:
        return 0.0


def breakdown(rows):
    """The stacked parts of an iteration: time_breakdown_s when the results carry it, else compute and exposed
    communication."""
    parts = [("compute", "compute"), ("codec", "codec"), ("exposed_communication", "exposed communication"),
             ("waiting", "waiting")]
    if any(r.get("time_breakdown_s.compute") for r in rows):
        return [(f"time_breakdown_s.{k}", name) for k, name in parts]
    return [("compute_time_s", "compute"), ("exposed_communication_time_s", "exposed communication")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--keys", help="the varied keys, comma-separated, first one on the x axis")
    ap.add_argument("--log-keys", default="", help="varied keys drawn on a log axis (geometric ranges)")
    ap.add_argument("--title", default="", help="the figure's title (default: the results file's name)")
    ap.add_argument("--relative-to", default="", metavar="KEY=VALUE", help="divide by the baseline point's values")
    ap.add_argument("--describe", help="also write the axes, labels and legend chosen as JSON to this file")
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
    log_keys = set(filter(None, args.log_keys.split(",")))
    x_key, others = keys[0], keys[1:]
    ok = [r for r in rows if not r.get("error") and r.get("throughput_samples_per_s")]
    if not ok:
        sys.exit(f"error: {args.results}: no successful points to plot")
    axes = {k: Axis(k, list(dict.fromkeys(r[k] for r in ok)), k in log_keys) for k in keys}
    x_axis = axes[x_key]

    def point_label(r, ks):
        text = ", ".join(axes[k].value_labels[r[k]] for k in ks)
        if r.get("job"):
            text = f"job={r['job']}" + (f", {text}" if text else "")
        return text

    # The baseline of a row: the row with KEY=VALUE and every other key (and the job) equal.
    rel_key = rel_value = None
    base_of = {}
    if args.relative_to:
        rel_key, eq, rel_value = args.relative_to.partition("=")
        if not eq or rel_key not in keys:
            sys.exit(f"error: --relative-to {args.relative_to}: expected KEY=VALUE with KEY one of {', '.join(keys)}")
        matches = [t for t in axes[rel_key].texts if same_value(t, rel_value)]
        if not matches:
            sys.exit(f"error: --relative-to {args.relative_to}: no successful point has {rel_key}={rel_value}")
        rel_value = matches[0]
        index = {}
        for r in ok:
            if r[rel_key] == rel_value:
                index[tuple(r[k] for k in keys if k != rel_key) + (r.get("job", ""),)] = r
        for r in ok:
            b = index.get(tuple(r[k] for k in keys if k != rel_key) + (r.get("job", ""),))
            if b is not None and fnum(b, "throughput_samples_per_s") > 0 and fnum(b, "iteration_time_s") > 0:
                base_of[id(r)] = b
        ok = [r for r in ok if id(r) in base_of]
    baseline_text = axes[rel_key].value_labels[rel_value] if rel_key else ""

    series = {}
    for r in ok:
        series.setdefault(point_label(r, others), []).append(r)

    if rel_key:
        panels = [("throughput_samples_per_s", "throughput (x the baseline's)"),
                  ("iteration_time_s", "iteration time (x the baseline's)")]
    else:
        panels = [("throughput_samples_per_s", "throughput (samples/s)"),
                  ("scaling_efficiency", "scaling efficiency (1 = linear scaling)")]

    def value(r, column):
        v = fnum(r, column)
        return v / fnum(base_of[id(r)], column) if rel_key else v

    # Past 10 series: the 9 with the highest throughput are named, the others drawn thin and grey.
    ranked = sorted(series, key=lambda k: -max(value(r, "throughput_samples_per_s") for r in series[k]))
    named = set(ranked[:9]) if len(series) > 10 else set(series)
    n_others = len(series) - len(named)
    fig, (ax_t, ax_e, ax_b) = plt.subplots(3, 1, figsize=(12, 14), layout="constrained")
    category = x_axis.scale == "category"
    other_drawn = False
    for label in series:  # the sweep's order (the legend's too)
        rs = sorted(series[label], key=lambda r: x_axis.pos[r[x_key]])
        xs = [x_axis.pos[r[x_key]] for r in rs]
        marker = "o" if len(rs) <= 50 or category else None
        style = {"linestyle": "none"} if category else {}
        if label in named:
            style["label"] = label or None
        else:
            style.update(color="grey", alpha=0.35, linewidth=0.8, markersize=3,
                         label=None if other_drawn else f"{n_others} others")
            other_drawn = True
        for ax, (column, _) in zip((ax_t, ax_e), panels):
            ax.plot(xs, [value(r, column) for r in rs], marker=marker, **style)
    legend = [label for label in series if label and label in named] + ([f"{n_others} others"] if n_others else [])
    show_legend = bool(legend)
    # The transport `auto` picks along the x axis (of the best series): a dotted line where it switches.
    # And the all-reduce algorithm `auto` picks (scenario.algorithm_picked), the same way.
    switches = []
    best = sorted(series[ranked[0]], key=lambda r: x_axis.pos[r[x_key]])
    for what, column in (("transport", "scenario.transport"), ("algorithm", "scenario.algorithm_picked")):
        kinds = [(r.get(column) or "").split(":")[0] for r in best]
        for a, b, ka, kb in zip(best, best[1:], kinds, kinds[1:]):
            if ka and kb and ka != kb and x_axis.scale != "category":
                xa, xb = x_axis.pos[a[x_key]], x_axis.pos[b[x_key]]
                switches.append({"what": what, "between": [xa, xb], "from": ka, "to": kb,
                                 "at": math.sqrt(xa * xb) if x_axis.scale == "log" else (xa + xb) / 2})
    for ax, (column, ylabel) in zip((ax_t, ax_e), panels):
        ax.set_xlabel(x_axis.label())
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if x_axis.scale == "log":
            ax.set_xscale("log", base=2)
            ax.set_xticks(list(x_axis.pos.values()), [f"{v:g}" for v in x_axis.pos.values()])
            ax.minorticks_off()
        elif x_axis.scale == "category":
            few = len(x_axis.texts) <= 6
            ax.set_xticks(list(x_axis.pos.values()),
                          [x_axis.value_labels[t].replace(", ", "\n") for t in x_axis.texts],
                          rotation=0 if few else 30, ha="center" if few else "right", fontsize="small")
        if rel_key:
            ax.axhline(1.0, color="grey", linestyle="--", linewidth=1)
        for i, sw in enumerate(switches):
            ax.axvline(sw["at"], color="black", linestyle=":", linewidth=1)
            ax.annotate(f"{sw['from']} -> {sw['to']}", (sw["at"], 1.0), xycoords=("data", "axes fraction"),
                        xytext=(3, -12 - 11 * i), textcoords="offset points", fontsize="small")
        if show_legend:
            ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if not rel_key:
        ax_e.set_ylim(bottom=0)

    parts = breakdown(ok)
    bar_rows = ok if len(ok) <= 40 else best  # past 40 points, the best series' points only
    idx = list(range(len(bar_rows)))
    stacks = [[value(r, c) if not rel_key else fnum(r, c) / fnum(base_of[id(r)], "iteration_time_s")
               for r in bar_rows] for c, _ in parts]
    names = [name for _, name in parts]
    bar_labels = []
    if len(bar_rows) <= 300:
        bottom = [0.0] * len(bar_rows)
        for ys, name in zip(stacks, names):
            ax_b.bar(idx, ys, bottom=bottom, label=name)
            bottom = [b + y for b, y in zip(bottom, ys)]
        if len(bar_rows) <= 40:
            bar_labels = [" / ".join(axes[k].short_labels[r[k]] for k in keys) + (f" ({r['job']})" if r.get("job")
                                                                                  else "") for r in bar_rows]
            ax_b.set_xticks(idx, bar_labels, rotation=60, ha="right", fontsize="small")
    else:
        ax_b.stackplot(idx, *stacks, labels=names)
    if bar_rows is ok:
        ax_b.set_xlabel("point (" + " / ".join(keys) + ")")
    else:
        ax_b.set_xlabel(f"the {len(bar_rows)} points of the best series ({ranked[0] or 'all'}) of {len(ok)}, "
                        f"along {x_key}")
    b_ylabel = ("time per iteration (x the baseline's iteration time)" if rel_key
                else "time per iteration (s)")
    ax_b.set_ylabel(b_ylabel)
    ax_b.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)

    title = args.title or os.path.splitext(os.path.basename(args.results))[0]
    title += ": " + ("throughput and iteration time" if rel_key else "throughput and scaling efficiency")
    title += f" vs {x_key}"
    if others:
        title += f", one line per {', '.join(others)}"
    if rel_key:
        title += f"\nbaseline (= 1): the point with {baseline_text} and the same other values"
    fig.suptitle(title, fontsize="medium")
    fig.savefig(args.out)

    if args.describe:
        description = {
            "title": title,
            "x": {"key": x_key, "label": x_axis.label(), "scale": x_axis.scale, "unit": x_axis.unit,
                  "lines": not category,  # categories are points: no line joins two of them
                  "values": [x_axis.pos[t] for t in x_axis.texts] if x_axis.scale != "category" else None,
                  "tick_labels": [x_axis.value_labels[t] for t in x_axis.texts] if x_axis.scale == "category"
                  else None},
            "panels": [{"y": column, "y_label": ylabel, "x_label": x_axis.label()} for column, ylabel in panels]
            + [{"y": "breakdown", "y_label": b_ylabel, "x_label": ax_b.get_xlabel(), "parts": names,
                "tick_labels": bar_labels}],
            "legend": legend if show_legend else [],
            "transport_switches": switches,
            "relative_to": {"key": rel_key, "value": rel_value, "label": baseline_text} if rel_key else None,
            "points": len(ok),
        }
        with open(args.describe, "w", encoding="utf-8") as f:
            json.dump(description, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
