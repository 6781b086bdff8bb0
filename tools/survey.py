#!/usr/bin/python3
"""Replays the survey's research questions (scenarios/survey/studies.json) with `ddlsim sweep`, draws one
figure per study, derives each study's findings from the numbers, and writes scenarios/survey/README.md and
docs/SURVEY.md (between <!-- survey:begin --> and <!-- survey:end -->).

usage: tools/survey.py (Debian's /usr/bin/python3 with python3-matplotlib) [--ddlsim build/ddlsim] [--jobs N] [--only NAME[,NAME...]]
Needs python3-matplotlib. Every number in the generated text comes from the sweep CSVs in results/: `--only` reruns
the named studies and re-derives the others from their CSVs (and the sweep time recorded in results/seconds.json).
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SURVEY = os.path.join(ROOT, "scenarios", "survey")


def slug(s):
    return re.sub(r"[^a-z0-9]+", "_", s.lower()).strip("_")


def number(v):
    """'10Gbps' -> 10 (Gbps), '50us' -> 50 (us), '64' -> 64."""
    m = re.match(r"^([0-9.eE+-]+)", v)
    return float(m.group(1)) if m else float("nan")


def run_series(args, study, label, settings, rerun=True):
    out = os.path.join(SURVEY, "results", f"{study['name']}__{slug(label)}.csv")
    if not rerun and os.path.exists(out):
        rows = list(csv.DictReader(open(out, encoding="utf-8")))
        for row in rows:
            row["series"] = label
        return rows, None
    cmd = [args.ddlsim, "sweep", os.path.join(SURVEY, study["base"]), "--out", out, "--no-progress"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    for v in study["vary"] + study.get("set", []) + settings:
        cmd += ["--vary", v]
    t0 = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode not in (0, 3):
        sys.exit(f"survey: {study['name']} / {label}: ddlsim sweep failed ({r.returncode}): {r.stderr.strip()}")
    rows = list(csv.DictReader(open(out, encoding="utf-8")))
    for row in rows:
        row["series"] = label
    return rows, time.time() - t0


def key_name(vary):
    return vary.split("=", 1)[0]


def plot(study, rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x, panel, metric = study["x"], study["panel"], study["metric"]
    panels = sorted({r[panel] for r in rows}, key=number)
    series = list(study["series"].keys())
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    colours = plt.get_cmap("tab20").colors
    styles = ["-", "--", "-.", ":"]
    for ax, p in zip(axes[0], panels):
        for i, s in enumerate(series):
            pts = sorted(((number(r[x]), float(r[metric])) for r in rows
                          if r["series"] == s and r[panel] == p and r.get(metric) not in (None, "")),
                         key=lambda t: t[0])
            if pts:
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", ms=3, label=s,
                        color=colours[(2 * i) % 20 if i < 10 else (2 * i + 1) % 20], linestyle=styles[i % 4])
        ax.set_xscale("log")
        if metric in ("iteration_time_s", "time_to_train_s"):
            ax.set_yscale("log")
        ax.set_title(f"{panel} = {p}")
        unit = re.sub(r"^[0-9.eE+-]+", "", rows[0][x]) if rows else ""
        ax.set_xlabel(f"{x} ({unit})" if unit else x)
        ax.set_ylabel(metric)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.suptitle(study["name"].replace("_", " "))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def value(rows, series, **where):
    for r in rows:
        if r["series"] == series and all(r[k] == v for k, v in where.items()):
            return r
    return None


def runs(pairs, unit):
    """[(x, winner), ...] -> "A at 4-64 workers, B at 256-1024 workers" (consecutive equal winners merged)."""
    groups = []
    for xv, w in pairs:
        if groups and groups[-1][0] == w:
            groups[-1][2] = xv
        else:
            groups.append([w, xv, xv])
    if len(groups) == 1:
        return f"{groups[0][0]} at every {unit} tried ({pairs[0][0]}–{pairs[-1][0]})"
    return ", ".join(f"{w} at {a}" + (f"–{b}" if b != a else "") for w, a, b in groups)


def fits(row):
    """Whether the row's job fits in device memory (rows without the column count as fitting)."""
    return str(row.get("memory_fits", "true")).lower() not in ("false", "0")


def fmt_s(t):
    return f"{t * 1e3:.1f} ms" if t < 1 else f"{t:.2f} s"


def fmt_hm(t):
    """A time to train for people: "3 h 12 min", "12.5 min"."""
    return f"{t / 60:.1f} min" if t < 3600 else f"{int(t // 3600)} h {round(t % 3600 / 60):02d} min"


def findings(study, rows):
    """Sentences derived from the numbers, and a markdown table."""
    x, panel, metric = study["x"], study["panel"], study["metric"]
    series = list(study["series"].keys())
    panels = sorted({r[panel] for r in rows}, key=number)
    xs = sorted({r[x] for r in rows}, key=number)
    higher_better = metric in ("scaling_efficiency", "throughput_samples_per_s", "tokens_per_s", "mfu")
    out, table = [], []
    table.append("| " + panel + " | " + x + " | best | " + " | ".join(series) + " |")
    table.append("|---" * (3 + len(series)) + "|")
    for p in panels:
        for xv in xs:
            vals, oom = {}, set()
            for s in series:
                r = value(rows, s, **{panel: p, x: xv})
                if r and r.get(metric) not in (None, ""):
                    vals[s] = float(r[metric])
                    if not fits(r):
                        oom.add(s)
            if not vals:
                continue
            best = (max if higher_better else min)(vals, key=vals.get)
            cell = {"scaling_efficiency": lambda v: f"{v:.3f}", "throughput_samples_per_s": lambda v: f"{v:.0f}",
                    "tokens_per_s": lambda v: f"{v:.3g}", "mfu": lambda v: f"{100 * v:.1f}%",
                    "time_to_train_s": fmt_hm}.get(metric, fmt_s)
            table.append(f"| {p} | {xv} | {best} | " +
                         " | ".join(cell(vals[s]) + (" (does not fit)" if s in oom else "") if s in vals else "—"
                                    for s in series) + " |")
    name = study["name"]
    if name == "architectures":
        for p in panels:
            ring = "ring all-reduce"
            for other in ("ps (1 server)", "gossip (exponential)"):
                worse = [xv for xv in xs if value(rows, other, **{panel: p, x: xv}) and value(rows, ring, **{panel: p, x: xv})
                         and float(value(rows, other, **{panel: p, x: xv})[metric]) <
                         float(value(rows, ring, **{panel: p, x: xv})[metric])]
                if worse:
                    out.append(f"At {p}, {other} is below the ring from {worse[0]} workers on "
                               f"({len(worse)} of {len(xs)} sizes).")
            bests = [(xv, max(series, key=lambda s: float(value(rows, s, **{panel: p, x: xv})[metric])
                              if value(rows, s, **{panel: p, x: xv}) else -1)) for xv in xs]
            out.append(f"At {p} the most efficient architecture is {runs(bests, 'size')} workers.")
    elif name == "latency_bound":
        for p in panels:
            bests = [(xv, min(series, key=lambda s: float(value(rows, s, **{panel: p, x: xv})[metric])
                              if value(rows, s, **{panel: p, x: xv}) else 1e99)) for xv in xs]
            out.append(f"With latency {p} per link the fastest collective is {runs(bests, 'size')} workers.")
    elif name == "sync_schemes":
        for p in panels:
            for xv in xs:
                b = value(rows, "bsp", **{panel: p, x: xv})
                if not b:
                    continue
                bt = float(b[metric])
                parts = []
                for s in series[1:]:
                    r = value(rows, s, **{panel: p, x: xv})
                    if r:
                        st = r.get("staleness.mean") or ""
                        parts.append(f"{s} {float(r[metric]) / bt:.2f}×" +
                                     (f" (staleness {float(st):.1f})" if st else ""))
                out.append(f"{p}, {xv} workers — throughput relative to BSP: " + "; ".join(parts) + ".")
    elif name == "compression":
        for p in panels:
            for s in series[1:]:
                pays = [xv for xv in xs if value(rows, s, **{panel: p, x: xv}) and value(rows, "dense", **{panel: p, x: xv})
                        and float(value(rows, s, **{panel: p, x: xv})[metric]) <
                        float(value(rows, "dense", **{panel: p, x: xv})[metric])]
                if not pays:
                    out.append(f"{p} workers: {s} never beats dense all-reduce.")
                elif len(pays) == len(xs):
                    out.append(f"{p} workers: {s} beats dense at every bandwidth up to {xs[-1]}.")
                else:
                    lost = [xv for xv in xs if xv not in pays]
                    out.append(f"{p} workers: {s} pays at {', '.join(pays)}, not at {', '.join(lost)}.")
    elif name == "sharding":
        for p in panels:
            fitting = lambda s, xv: value(rows, s, **{panel: p, x: xv}) and fits(value(rows, s, **{panel: p, x: xv}))
            bests = [(xv, max((s for s in series if fitting(s, xv)),
                              key=lambda s: float(value(rows, s, **{panel: p, x: xv})[metric]), default="none"))
                     for xv in xs]
            out.append(f"At {p} per GPU the most tokens/s among the schemes that fit come from {runs(bests, 'size')} "
                       f"GPUs.")
            big = xs[-1]
            parts = [f"{s} {100 * float(value(rows, s, **{panel: p, x: big})['mfu']):.0f}%" for s in series
                     if value(rows, s, **{panel: p, x: big})]
            out.append(f"At {p} and {big} GPUs, model FLOPs utilisation: " + "; ".join(parts) + ".")
        for s in series:
            lo, hi = value(rows, s, **{panel: panels[-1], x: xs[0]}), value(rows, s, **{panel: panels[-1], x: xs[-1]})
            if lo and hi:
                a, b = (float(r["memory_per_gpu_bytes.total"]) / 1e9 for r in (lo, hi))
                verdict = "fits" if fits(lo) and fits(hi) else ("does not fit" if not fits(hi) else "fits only at scale")
                out.append(f"{s} needs {a:.0f} GB per GPU at {xs[0]} GPUs and {b:.0f} GB at {xs[-1]}: {verdict} in "
                           f"the H100's 80 GB.")
    elif name == "time_to_train":
        # Per batch size and network: the fastest size, where doubling the GPUs stops cutting the time by a
        # tenth (the global batch past which growing it stops paying), and the cheapest point overall.
        for s in series:
            for p in panels:
                pts = [(xv, value(rows, s, **{panel: p, x: xv})) for xv in xs]
                pts = [(xv, r) for xv, r in pts if r and r.get(metric) not in (None, "")]
                if not pts:
                    continue
                fast_x, fast = min(pts, key=lambda t: float(t[1][metric]))
                stop = next(((a, ra, b, rb) for (a, ra), (b, rb) in zip(pts, pts[1:])
                             if float(rb[metric]) > 0.9 * float(ra[metric])), None)
                gb = lambda r: float(r["time_to_train.global_batch"])
                text = (f"{s}, {p} per GPU: fastest at {fast_x} GPUs ({fmt_hm(float(fast[metric]))}, global batch "
                        f"{gb(fast):.0f}, {float(fast['epochs_to_target']):.0f} epochs, "
                        f"{float(fast['gpu_hours']):.0f} GPU-hours)")
                if stop is not None:
                    a, ra, b, rb = stop
                    text += (f"; from {a} to {b} GPUs (global batch {gb(ra):.0f} to {gb(rb):.0f}) the time falls by "
                             f"less than a tenth")
                out.append(text + ".")
        priced = [r for r in rows if r.get("cost") not in (None, "")]
        if priced:
            c = min(priced, key=lambda r: float(r["cost"]))
            out.append(f"Cheapest: {c['series']}, {c[x]} GPUs x {c[panel]} per GPU: "
                       f"{float(c['cost']):.1f} at 2.5 per GPU-hour, in {fmt_hm(float(c[metric]))}.")
            fastest = min(priced, key=lambda r: float(r[metric]))
            out.append(f"Fastest: {fastest['series']}, {fastest[x]} GPUs x {fastest[panel]} per GPU: "
                       f"{fmt_hm(float(fastest[metric]))}, costing {float(fastest['cost']):.1f}.")
            crit = float(priced[0].get("time_to_train.noise_scale_fit.critical_batch") or 0)
            if crit > 0:
                out.append(f"MLPerf's reference points fit E(B) = E_min (1 + B / B_crit) with B_crit = {crit:.0f}: past "
                           f"a global batch of about that, each doubling of the batch nearly doubles the samples, so "
                           f"more GPUs buy little time and cost more.")
    elif name == "diloco":
        # Per cluster size and WAN: each series' step, and DiLoCo's time to the token budget against the fastest
        # scheme that synchronises every step (the ones that fit in memory).
        every_step = [s for s in series if "DiLoCo" not in s]
        for p in panels:
            for xv in xs:
                got = {s: value(rows, s, **{panel: p, x: xv}) for s in series}
                got = {s: r for s, r in got.items() if r and r.get(metric) not in (None, "")}
                if not got:
                    continue
                steps = "; ".join(f"{s} {fmt_s(float(r['iteration_time_s']))}" + ("" if fits(r) else " (does not fit)")
                                  for s, r in got.items())
                sync = [s for s in every_step if s in got and fits(got[s])]
                text = f"{p} GPUs, WAN {xv} — per step: {steps}"
                if sync:
                    best = min(sync, key=lambda s: float(got[s][metric]))
                    bt = float(got[best][metric])
                    for s in series:
                        if "DiLoCo" in s and s in got and fits(got[s]):
                            text += (f"; {s} trains in {fmt_hm(float(got[s][metric]))}, {bt / float(got[s][metric]):.2f}× "
                                     f"faster than {best} ({fmt_hm(bt)})")
                out.append(text + ".")
    elif name == "overlap":
        for p in panels:
            for xv in xs:
                base = value(rows, "no overlap", **{panel: p, x: xv})
                if not base:
                    continue
                exposed = float(base["exposed_communication_time_s"])
                parts = []
                for s in series[1:]:
                    r = value(rows, s, **{panel: p, x: xv})
                    if r and exposed > 0:
                        hidden = 1 - float(r["exposed_communication_time_s"]) / exposed
                        parts.append(f"{s} hides {100 * hidden:.0f}%")
                out.append(f"{p} workers at {xv} (exposed {fmt_s(exposed)} without overlap): " + "; ".join(parts) + ".")
    return out, table


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ddlsim", default=os.path.join(ROOT, "build", "ddlsim"))
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    studies = json.load(open(os.path.join(SURVEY, "studies.json"), encoding="utf-8"))["studies"]
    only = set(filter(None, args.only.split(",")))
    os.makedirs(os.path.join(SURVEY, "results"), exist_ok=True)
    os.makedirs(os.path.join(SURVEY, "plots"), exist_ok=True)
    doc = ["# The survey, replayed", "",
           "Generated by `tools/survey.py` from `scenarios/survey/studies.json` (do not edit by hand). Each study",
           "sweeps workers and bandwidth for every series; the tables and sentences below are computed from the",
           "CSVs in `results/`. Studies marked analytic use the contention-free α-β model (`network.model`",
           "`analytic`; incast at a server and per-worker serialisation are still counted); the overlap study uses",
           "the flow model.", ""]
    summary = []
    total = 0.0
    seconds_file = os.path.join(SURVEY, "results", "seconds.json")
    seconds = json.load(open(seconds_file, encoding="utf-8")) if os.path.exists(seconds_file) else {}
    for study in studies:
        rerun = not only or study["name"] in only
        rows, spent = [], 0.0
        for label, settings in study["series"].items():
            r, t = run_series(args, study, label, settings, rerun)
            rows += r
            spent = None if t is None or spent is None else spent + t
        spent = seconds.get(study["name"], 0.0) if spent is None else spent
        seconds[study["name"]] = round(spent, 1)
        total += spent
        img = os.path.join("plots", f"{study['name']}.png")
        plot(study, rows, os.path.join(SURVEY, img))
        sentences, table = findings(study, rows)
        points = len(rows)
        doc += [f"## {study['name'].replace('_', ' ')}", "", f"**Question.** {study['question']}", "",
                f"Base `{study['base']}`, varying {', '.join(key_name(v) for v in study['vary'])}; "
                f"{len(study['series'])} series, {points} points, {spent:.1f} s of sweeping. Metric: "
                f"`{study['metric']}`.", "", f"![{study['name']}]({img})", "", "**What it shows.**", ""]
        doc += [f"- {s}" for s in sentences] + [""] + table + [""]
        summary.append((study, img, sentences))
        print(f"survey: {study['name']}: {points} points in {spent:.1f} s", file=sys.stderr)
    conv = os.path.join(SURVEY, "convergence", "README.md")
    if os.path.exists(conv):
        doc += ["## Time to accuracy", "", "See [convergence/README.md](convergence/README.md): the schedules of",
                "these schemes replayed on a real Fashion-MNIST model.", ""]
    with open(os.path.join(SURVEY, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(doc))
    with open(seconds_file, "w", encoding="utf-8") as f:
        json.dump(seconds, f, indent=1, sort_keys=True)
        f.write("\n")
    # docs/SURVEY.md: the plots and the first findings of each study (paths relative to docs/).
    sec = ["<!-- survey:begin (generated by tools/survey.py; edit scenarios/survey/studies.json instead) -->", "",
           f"`tools/survey.py` regenerates this section, [scenarios/survey/README.md](../scenarios/survey/README.md) "
           f"(full tables) and the plots from `scenarios/survey/studies.json` ({total:.0f} s of sweeping on this "
           f"machine).", ""]
    for study, img, sentences in summary:
        sec += [f"**{study['name'].replace('_', ' ')}** — {study['question']}", "",
                f"![{study['name']}](../scenarios/survey/{img})", ""]
        sec += [f"- {s}" for s in sentences[:6]]
        if len(sentences) > 6:
            sec.append(f"- … {len(sentences) - 6} more in scenarios/survey/README.md")
        sec.append("")
    sec.append("<!-- survey:end -->")
    readme = os.path.join(ROOT, "docs", "SURVEY.md")
    text = open(readme, encoding="utf-8").read()
    begin, end = text.find("<!-- survey:begin"), text.find("<!-- survey:end -->")
    if begin < 0 or end < 0:
        sys.exit("survey: docs/SURVEY.md lacks the <!-- survey:begin --> / <!-- survey:end --> markers")
    text = text[:begin] + "\n".join(sec) + text[end + len("<!-- survey:end -->"):]
    with open(readme, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
