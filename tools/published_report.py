#!/usr/bin/env python3
"""Runs every published measurement in validate/published/ through ddlsim and reports predicted vs measured.

Each row is one JSON file, validate/published/<source>/<row>.json, holding `source` (citation), `setup`
(prose), `kind` (single_gpu | scaling_given_single_gpu | end_to_end | collective | time_to_train | speedup),
`measured` {metric, value, unit} and `scenario` (a ddlsim scenario written as a new user would). A speedup row also
holds `baseline`, a second scenario: its predicted value is the baseline's iteration time over the scenario's
(metric `speedup`, the measured ratio of the two setups' throughputs). A dotted metric names a
nested result key. A time_to_train row states the samples its source
needed (`training.samples_to_target` as a number); the report also reruns it with `"builtin"` samples (MLPerf's
reference convergence points) and lists, per row, how far that would be, apart from the main table. The report runs `ddlsim run` on each
scenario (outputs in a temporary directory), reads `measured.metric` from the result JSON, and prints the
signed error predicted / measured - 1 per row, then the median |error| and the worst row per source and per
kind. A row whose scenario does not load is listed with the first line of ddlsim's message and counted apart;
it never stops the report. Published measurements are for checking, never for fitting.

`--drop network.transport` (repeatable) removes a key from every scenario before running it: the before/after
of one realism term on every row, without editing the rows.

The summary and every row, as Markdown (--markdown), are the table of docs/ACCURACY.md between the markers
<!-- published:begin --> and <!-- published:end -->: --update-table rewrites it there, --check-table fails when it
differs from a fresh run (--update-readme and --check-readme are the old names of the two).

usage: tools/published_report.py [--ddlsim build/ddlsim] [--markdown] [--update-table] [--check-table]
                                 [--only SUBSTRING] [--drop KEY.PATH]... [--jobs N] [--strict]
                                 [--self-test]
Python 3 standard library only. Exit 0, except: 1 when --check-table finds the docs table stale or, with
--strict, when a row does not load; 2 on a malformed row file or a missing ddlsim binary.
"""
import argparse
import re
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "validate", "published")
TABLE_DOC = os.path.join(ROOT, "docs", "ACCURACY.md")  # holds the generated table
BEGIN, END = "<!-- published:begin -->", "<!-- published:end -->"
README = os.path.join(ROOT, "README.md")  # states the model-parallel rows' median in prose, kept by the table's run
README_FIGURE = re.compile(r"The (\d+) published model-parallel rows(\s+)\(Megatron-LM, NeMo, Megatron-Bridge\)"
                           r"(\s+)come within ([\d.]+) % median")
KINDS = ("single_gpu", "scaling_given_single_gpu", "end_to_end", "collective", "time_to_train", "speedup")
METRICS = {  # result-JSON key -> how to print it
    "throughput_samples_per_s": ("samples/s", 1.0),
    "iteration_time_s": ("ms", 1e3),
    "scaling_efficiency": ("%", 100.0),
    "time_to_train_s": ("min", 1.0 / 60.0),
    "speedup": ("×", 1.0),
}
REQUIRED = ("source", "setup", "kind", "measured", "scenario")


# ---------------------------------------------------------------------------------------------- arithmetic
def signed_error(predicted, measured):
    """predicted / measured - 1: +0.10 means ddlsim predicts 10 % more of the metric than was measured."""
    if measured == 0:
        raise ValueError("measured value is zero")
    return predicted / measured - 1.0


def median(values):
    v = sorted(values)
    if not v:
        return float("nan")
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else 0.5 * (v[mid - 1] + v[mid])


def summarise(rows, key):
    """Per group (row[key]): rows run, rows that did not load, median |error| and the row with the largest
    |error| (signed; None when no row of the group ran)."""
    groups = {}
    for r in rows:
        groups.setdefault(r[key], []).append(r)
    out = []
    for name in sorted(groups):
        ok = [r for r in groups[name] if r.get("error") is not None]
        worst = max(ok, key=lambda r: (abs(r["error"]), r["id"])) if ok else None
        out.append({"group": name, "n": len(ok), "failed": len(groups[name]) - len(ok),
                    "median_abs": median([abs(r["error"]) for r in ok]),
                    "worst": worst["error"] if worst else None, "worst_id": worst["id"] if worst else None})
    return out


def self_test():
    """Checks of the arithmetic, derived by hand."""
    # The README's model-parallel sentence: the rows with a parallelism block (3 of 4), median of 0.1, 0.3, 0.2.
    fake = [{"error": e, "doc": {"scenario": {"parallelism": {}} if p else {}}}
            for e, p in ((0.1, True), (-0.3, True), (0.5, False), (0.2, True))]
    assert model_parallel(fake) == (3, 20.0)
    assert readme_figure("x The 9 published model-parallel rows\n  (Megatron-LM, NeMo, Megatron-Bridge) come within "
                         "1.0 % median y", fake) == ("x The 3 published model-parallel rows\n  (Megatron-LM, NeMo, "
                                                    "Megatron-Bridge) come within 20.0 % median y")
    assert readme_figure("no such sentence", fake) is None
    assert abs(signed_error(110.0, 100.0) - 0.10) < 1e-12      # 110 / 100 - 1 = +10 %
    assert abs(signed_error(0.09, 0.1) + 0.10) < 1e-12         # 0.09 / 0.1 - 1 = -10 %
    assert signed_error(5.0, 5.0) == 0.0
    try:
        signed_error(1.0, 0.0)
        raise AssertionError("zero measured value accepted")
    except ValueError:
        pass
    assert median([3.0, 1.0, 2.0]) == 2.0                      # odd count: the middle one
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5                 # even count: mean of 2 and 3
    rows = [{"id": "a/1", "src": "a", "error": 0.10}, {"id": "a/2", "src": "a", "error": -0.30},
            {"id": "a/3", "src": "a", "error": 0.20}, {"id": "b/1", "src": "b", "error": -0.05},
            {"id": "b/2", "src": "b", "error": None}]
    s = summarise(rows, "src")
    assert [x["group"] for x in s] == ["a", "b"]
    assert s[0]["n"] == 3 and abs(s[0]["median_abs"] - 0.20) < 1e-12     # |0.1|, |0.3|, |0.2| -> 0.2
    assert s[0]["worst"] == -0.30 and s[0]["worst_id"] == "a/2"          # the sign is kept
    assert s[0]["failed"] == 0 and s[1]["failed"] == 1                   # b/2 did not load
    assert s[1]["n"] == 1 and s[1]["worst"] == -0.05                     # and is not in the median
    s = summarise([{"id": "c/1", "src": "c", "error": None}], "src")
    assert s[0]["n"] == 0 and s[0]["failed"] == 1 and s[0]["worst"] is None
    assert fmt_value(0.104, "iteration_time_s") == "104 ms"
    assert fmt_value(0.7725, "scaling_efficiency") == "77.2 %"
    assert fmt_value(16621.0, "throughput_samples_per_s") == "16621 samples/s"
    assert fmt_err(0.0349) == "+3.5%" and fmt_err(-0.581) == "−58.1%"
    assert fmt_value(1721.1, "time_to_train_s") == "28.7 min"   # 1721.1 s / 60
    assert lookup({"a": {"b": 3}}, "a.b") == 3
    v = builtin_variant({"id": "s/r", "doc": {"scenario": {"training": {"samples_to_target": 5}}}})
    assert v["id"] == "s/r (builtin)" and v["doc"]["scenario"]["training"]["samples_to_target"] == "builtin"
    sc = {"network": {"transport": "tcp", "bandwidth": "10Gbps"}, "jobs": [{"network": {"transport": "x"}}]}
    drop_key(sc, "network.transport")
    drop_key(sc, "architecture.local_aggregation")                    # absent: no error
    assert sc == {"network": {"bandwidth": "10Gbps"}, "jobs": [{"network": {}}]}
    assert fmt_value(1.3, "speedup") == "1.30×"
    # A speedup row runs both scenarios: a stand-in ddlsim whose iteration time is the scenario's worker count.
    tmp = tempfile.mkdtemp(prefix="ddlsim_published_selftest_")
    try:
        fake = os.path.join(tmp, "ddlsim")
        with open(fake, "w", encoding="utf-8") as fh:
            fh.write(f"#!{sys.executable}\nimport json, sys\nsc = json.load(open(sys.argv[2]))\n"
                     "json.dump({'iteration_time_s': sc['workers']}, open(sys.argv[4], 'w'))\n")
        os.chmod(fake, 0o755)
        row = {"id": "z/r", "path": os.path.join(tmp, "r.json"), "kind": "speedup", "metric": "speedup",
               "doc": {"baseline": {"workers": 6}, "scenario": {"workers": 2}}}
        assert run_row(fake, tmp, row)["predicted"] == 3.0                # baseline 6 s over scenario 2 s
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("published_report self-test: ok")


# ---------------------------------------------------------------------------------------------- rows
def load_rows(only=None):
    rows = []
    for dirpath, dirnames, filenames in os.walk(DATA):
        dirnames.sort()
        for f in sorted(filenames):
            if not f.endswith(".json"):
                continue
            path = os.path.join(dirpath, f)
            rid = os.path.relpath(path, DATA)[:-len(".json")].replace(os.sep, "/")
            if only and only not in rid:
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    doc = json.load(fh)
            except (OSError, ValueError) as e:
                sys.exit(f"published_report: {path}: {e}")
            missing = [k for k in REQUIRED if k not in doc]
            if missing:
                sys.exit(f"published_report: {path}: missing {', '.join(missing)}")
            if doc["kind"] not in KINDS:
                sys.exit(f"published_report: {path}: kind {doc['kind']!r}; expected one of {', '.join(KINDS)}")
            if (doc["kind"] == "speedup") != ("baseline" in doc) or (doc["kind"] == "speedup") != (
                    doc["measured"].get("metric") == "speedup"):
                sys.exit(f"published_report: {path}: a speedup row, and only it, holds a baseline scenario and "
                         "metric speedup")
            m = doc["measured"]
            if m.get("metric") not in METRICS or not isinstance(m.get("value"), (int, float)) or m["value"] <= 0:
                sys.exit(f"published_report: {path}: measured needs metric in {sorted(METRICS)} and a value > 0")
            rows.append({"id": rid, "path": path, "src": rid.split("/")[0], "kind": doc["kind"], "doc": doc,
                         "metric": m["metric"], "measured": float(m["value"])})
    return rows


def drop_key(scenario, dotted):
    """Removes scenario[a][b]... for dotted = 'a.b...' (also inside every element of `jobs`); absent keys are fine."""
    parts = dotted.split(".")
    targets = [scenario] + [j for j in scenario.get("jobs", []) if isinstance(j, dict)]
    for t in targets:
        for p in parts[:-1]:
            t = t.get(p) if isinstance(t, dict) else None
        if isinstance(t, dict):
            t.pop(parts[-1], None)


def lookup(result, dotted):
    """result["a"]["b"] for dotted = "a.b"."""
    for part in dotted.split("."):
        result = result[part]
    return result


def builtin_variant(row):
    """A time_to_train row with its samples from the built-in convergence data instead of its source's own."""
    doc = json.loads(json.dumps(row["doc"]))
    doc["scenario"]["training"]["samples_to_target"] = "builtin"
    return dict(row, id=row["id"] + " (builtin)", doc=doc)


ROW_TIMEOUT_S = 600


def run_row(ddlsim, tmp, row):
    if row["kind"] == "speedup":  # the baseline's iteration time over the scenario's
        t0 = time.time()
        parts = [run_scenario(ddlsim, tmp, row, row["doc"][key], "iteration_time_s", key)
                 for key in ("baseline", "scenario")]
        failed = next((p for p in parts if "failure" in p), None)
        if failed:
            return {"failure": failed["failure"], "seconds": time.time() - t0}
        return {"predicted": parts[0]["predicted"] / parts[1]["predicted"], "seconds": time.time() - t0}
    return run_scenario(ddlsim, tmp, row, row["doc"]["scenario"], row["metric"], "scenario")


def run_scenario(ddlsim, tmp, row, scenario, metric, name):
    base = os.path.join(tmp, row["id"].replace("/", "__").replace(" ", "_") + "." + name)
    scen, out = base + ".scenario.json", base + ".result.json"
    with open(scen, "w", encoding="utf-8") as fh:
        json.dump(scenario, fh)
    t0 = time.time()
    try:
        # A guard against a hang, not a speed check (tools/bench measures speed): its largest rows take tens of seconds
        # alone and several times that beside other tests on two cores (a 120 s limit failed there once).
        r = subprocess.run([ddlsim, "run", scen, "--out", out], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, timeout=ROW_TIMEOUT_S,
                           cwd=os.path.dirname(row["path"]))
    except subprocess.TimeoutExpired:
        return {"failure": f"timed out after {ROW_TIMEOUT_S} s", "seconds": time.time() - t0}
    if r.returncode != 0:
        first = next((ln for ln in r.stderr.splitlines() if ln.strip()), f"exit code {r.returncode}")
        first = first.replace(scen, "scenario")
        first = first[len("error: "):] if first.startswith("error: ") else first
        return {"failure": first, "seconds": time.time() - t0}
    try:
        with open(out, encoding="utf-8") as fh:
            value = lookup(json.load(fh), metric)
        return {"predicted": float(value), "seconds": time.time() - t0}
    except (OSError, ValueError, KeyError, TypeError) as e:
        return {"failure": f"result has no {metric}: {e}", "seconds": time.time() - t0}


def run_all(ddlsim, rows, jobs):
    tmp = tempfile.mkdtemp(prefix="ddlsim_published_")
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(lambda r: run_row(ddlsim, tmp, r), rows))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for row, res in zip(rows, results):
        row.update(res)
        row["error"] = signed_error(row["predicted"], row["measured"]) if "predicted" in row else None
    return rows


# ---------------------------------------------------------------------------------------------- output
def fmt_value(v, metric):
    unit, scale = METRICS[metric]
    x = v * scale
    if unit == "%":
        return f"{x:.1f} %"
    if unit == "×":
        return f"{x:.2f}×"
    if abs(x) >= 100:
        return f"{x:.0f} {unit}"
    if abs(x) >= 10:
        return f"{x:.1f} {unit}"
    return f"{x:.3g} {unit}"


def fmt_err(e):
    s = f"{abs(e) * 100:.1f}%"
    return ("+" if e >= 0 else "−") + s


def text_report(rows):
    lines = []
    w = max([len(r["id"]) for r in rows] + [3])
    lines.append(f"{'row':<{w}}  {'kind':<24}  {'measured':>18}  {'predicted':>18}  {'error':>8}")
    for r in rows:
        if r["error"] is None:
            lines.append(f"{r['id']:<{w}}  {r['kind']:<24}  {fmt_value(r['measured'], r['metric']):>18}  "
                         f"error: {r['failure']}")
        else:
            lines.append(f"{r['id']:<{w}}  {r['kind']:<24}  {fmt_value(r['measured'], r['metric']):>18}  "
                         f"{fmt_value(r['predicted'], r['metric']):>18}  {fmt_err(r['error']):>8}")
    for title, key in (("per source", "src"), ("per kind", "kind")):
        lines.append("")
        lines.append(f"{title:<26} {'rows':>5} {'no load':>8} {'median |error|':>15} {'worst':>9}  worst row")
        for s in summarise(rows, key):
            if s["n"] == 0:
                lines.append(f"{s['group']:<26} {0:>5} {s['failed']:>8} {'—':>15} {'—':>9}")
                continue
            lines.append(f"{s['group']:<26} {s['n']:>5} {s['failed']:>8} {s['median_abs'] * 100:>14.1f}% "
                         f"{fmt_err(s['worst']):>9}  {s['worst_id']}")
    ok = [r for r in rows if r["error"] is not None]
    failed = [r for r in rows if r["error"] is None]
    lines.append("")
    lines.append(f"all rows: {len(ok)} run, median |error| "
                 f"{median([abs(r['error']) for r in ok]) * 100:.1f}%; {len(failed)} did not load")
    return "\n".join(lines)


def markdown(rows):
    ok = [r for r in rows if r["error"] is not None]
    failed = [r for r in rows if r["error"] is None]
    out = [f"{len(ok)} rows from {len({r['src'] for r in rows})} sources; median |error| "
           f"{median([abs(r['error']) for r in ok]) * 100:.1f}%"
           + (f"; {len(failed)} rows do not load yet (listed last)." if failed else "."), ""]
    for title, key in (("source", "src"), ("kind", "kind")):
        out.append(f"| {title} | rows | do not load | median \\|error\\| | worst (row) |")
        out.append("|---|---|---|---|---|")
        for s in summarise(rows, key):
            if s["n"] == 0:
                out.append(f"| {s['group']} | 0 | {s['failed']} | — | — |")
                continue
            out.append(f"| {s['group']} | {s['n']} | {s['failed']} | {s['median_abs'] * 100:.1f}% | "
                       f"{fmt_err(s['worst'])} (`{s['worst_id'].split('/', 1)[-1]}`) |")
        out.append("")
    out.append("<details><summary>Every row</summary>")
    out.append("")
    out.append("| row | kind | measured | predicted | error |")
    out.append("|---|---|---|---|---|")
    for r in ok + failed:
        if r["error"] is None:
            msg = r["failure"].replace("|", "\\|")
            msg = msg if len(msg) <= 110 else msg[:107] + "..."
            out.append(f"| `{r['id']}` | {r['kind']} | {fmt_value(r['measured'], r['metric'])} | — | "
                       f"does not load: {msg} |")
        else:
            out.append(f"| `{r['id']}` | {r['kind']} | {fmt_value(r['measured'], r['metric'])} | "
                       f"{fmt_value(r['predicted'], r['metric'])} | {fmt_err(r['error'])} |")
    out.append("")
    out.append("</details>")
    builtin = [r for r in rows if r.get("builtin") is not None]
    if builtin:
        out += ["", "Time to train with the samples from `\"builtin\"` (MLPerf's reference convergence points at the "
                "row's global batch) instead of the source's own epochs: how far the built-in data alone would be.", "",
                "| row | measured | predicted, source's samples | predicted, builtin | builtin error |", "|---|---|---|---|---|"]
        for r in builtin:
            b = r["builtin"]
            own = fmt_value(r["predicted"], r["metric"]) if r.get("error") is not None else "—"
            if b.get("error") is None:
                out.append(f"| `{r['id']}` | {fmt_value(r['measured'], r['metric'])} | {own} | — | "
                           f"does not load: {b['failure']} |")
            else:
                out.append(f"| `{r['id']}` | {fmt_value(r['measured'], r['metric'])} | {own} | "
                           f"{fmt_value(b['predicted'], r['metric'])} | {fmt_err(b['error'])} |")
    return "\n".join(out)


def model_parallel(rows):
    """The rows whose scenario has a `parallelism` block, and their median |error| in %."""
    ok = [r for r in rows if r["error"] is not None and "parallelism" in r["doc"].get("scenario", {})]
    return len(ok), (median([abs(r["error"]) for r in ok]) * 100 if ok else 0.0)


def readme_figure(text, rows):
    """README.md with its model-parallel sentence stating these rows' count and median (None: no such sentence)."""
    n, med = model_parallel(rows)
    m = README_FIGURE.search(text)
    if m is None:
        return None
    return (text[:m.start()] + f"The {n} published model-parallel rows{m.group(2)}(Megatron-LM, NeMo, "
            f"Megatron-Bridge){m.group(3)}come within {med:.1f} % median" + text[m.end():])


def table_block(text):
    try:
        i, j = text.index(BEGIN), text.index(END)
    except ValueError:
        return None
    return text[i + len(BEGIN):j].strip("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ddlsim", default=os.path.join(ROOT, "build", "ddlsim"))
    ap.add_argument("--markdown", action="store_true", help="print the docs table instead of the text report")
    ap.add_argument("--update-table", "--update-readme", dest="update_table", action="store_true",
                    help="rewrite the table between the markers of docs/ACCURACY.md and README.md's "
                    "model-parallel median")
    ap.add_argument("--check-table", "--check-readme", dest="check_table", action="store_true",
                    help="exit 1 when the table of docs/ACCURACY.md or README.md's model-parallel median is "
                    "stale")
    ap.add_argument("--only", help="run only rows whose id contains this string")
    ap.add_argument("--drop", action="append", default=[], metavar="KEY.PATH",
                    help="remove this key from every scenario first (before/after of one term)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--strict", action="store_true", help="exit 1 when any row does not load (CI)")
    ap.add_argument("--self-test", action="store_true", help="check the error arithmetic and exit")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    if not (os.path.isfile(args.ddlsim) and os.access(args.ddlsim, os.X_OK)):
        print(f"published_report: no ddlsim binary at {args.ddlsim} (use --ddlsim PATH)", file=sys.stderr)
        return 2
    if args.drop and (args.update_table or args.check_table):
        print("published_report: --drop changes the rows; it does not go with --update-table/--check-table",
              file=sys.stderr)
        return 2
    t0 = time.time()
    rows = load_rows(args.only)
    for r in rows:
        for k in args.drop:
            for key in ("scenario", "baseline"):
                if key in r["doc"]:
                    drop_key(r["doc"][key], k)
    variants = [builtin_variant(r) for r in rows if r["kind"] == "time_to_train"]
    done = run_all(os.path.abspath(args.ddlsim), rows + variants, max(1, args.jobs))
    rows, variants = done[:len(rows)], done[len(rows):]
    by_id = {v["id"]: v for v in variants}
    for r in rows:
        if r["kind"] == "time_to_train":
            r["builtin"] = by_id[r["id"] + " (builtin)"]
    md = markdown(rows)
    if args.markdown:
        print(md)
    else:
        print(text_report(rows))
        print(f"({time.time() - t0:.1f} s)")
    failed = [r["id"] for r in rows if r["error"] is None]
    if args.strict and failed:
        print(f"published_report: {len(failed)} rows do not load: {', '.join(failed[:5])}"
              + (" ..." if len(failed) > 5 else ""), file=sys.stderr)
        return 1
    if args.update_table or args.check_table:
        with open(TABLE_DOC, encoding="utf-8") as fh:
            text = fh.read()
        current = table_block(text)
        if current is None:
            print(f"published_report: docs/ACCURACY.md has no {BEGIN} ... {END} markers", file=sys.stderr)
            return 1
        if args.update_table:
            i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
            with open(TABLE_DOC + ".tmp", "w", encoding="utf-8") as fh:
                fh.write(text[:i] + "\n" + md + "\n" + text[j:])
            os.replace(TABLE_DOC + ".tmp", TABLE_DOC)
            print("published_report: docs/ACCURACY.md table updated", file=sys.stderr)
        with open(README, encoding="utf-8") as fh:
            readme = fh.read()
        fixed = readme_figure(readme, rows)
        if fixed is None:
            print("published_report: README.md states no model-parallel rows' median", file=sys.stderr)
            return 1
        if args.update_table and fixed != readme:
            with open(README + ".tmp", "w", encoding="utf-8") as fh:
                fh.write(fixed)
            os.replace(README + ".tmp", README)
            print("published_report: README.md's model-parallel median updated", file=sys.stderr)
        if args.check_table and current != md.strip("\n"):
            print("published_report: the table of docs/ACCURACY.md differs from a fresh run; "
                  "rerun tools/published_report.py --update-table", file=sys.stderr)
            return 1
        if args.check_table and fixed != readme:
            print("published_report: README.md's model-parallel median differs from a fresh run; "
                  "rerun tools/published_report.py --update-table", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
