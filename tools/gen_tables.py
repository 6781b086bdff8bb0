#!/usr/bin/env python3
"""Generates the tables of simulated figures in README.md and docs/*.md, and checks them for drift.

Each table sits between `<!-- BEGIN generated:NAME -->` and `<!-- END generated:NAME -->` in whichever of
README.md and docs/*.md holds it (the script finds the markers, so a table may move between files). Every
figure in it comes from running build/ddlsim on the scenarios the table describes; the descriptions of the rows
are written here, next to the scenario each one quotes. Tables:

  sync        the synchronisation-scheme examples (scenarios/examples/sync_*, bsp_heterogeneous_*)
  compression the compression and overlap examples (scenarios/examples/compression_*, overlap_*) against the
              dense, no-overlap baseline resnet50_ring_16xV100
  torchtitan  the torchtitan FSDP rows of validate/published/torchtitan/ in tokens/s per GPU

usage: gen_tables.py [--ddlsim build/ddlsim] [--check] [--only NAME]... [--jobs N] | --self-test
Without --check the blocks are rewritten in place; with --check nothing is written and the exit status is 1
when a block differs from a fresh run (the diff is printed), 2 when ddlsim is missing or a marker pair is
missing, duplicated or names no table. Python 3 standard library only.
"""
import argparse
import concurrent.futures
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "scenarios", "examples")
PUBLISHED = os.path.join(ROOT, "validate", "published")
MARKER = re.compile(r"<!-- (BEGIN|END) generated:([a-z_]+) -->")
MINUS = "\u2212"


def run(ddlsim, scenario):
    """The result JSON of `ddlsim run SCENARIO --out`; SCENARIO is a path or a scenario object."""
    with tempfile.TemporaryDirectory() as tmp:
        if isinstance(scenario, dict):
            path = os.path.join(tmp, "scenario.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(scenario, f)
            scenario = path
        out = os.path.join(tmp, "result.json")
        p = subprocess.run([ddlsim, "run", scenario, "--out", out], cwd=ROOT, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"ddlsim run {scenario}: exit {p.returncode}: {p.stderr.strip()}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def run_all(ddlsim, scenarios, jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(lambda s: run(ddlsim, s), scenarios))


def example(name):
    return os.path.join(EXAMPLES, name + ".json")


def ms(seconds, digits=1):
    return f"{seconds * 1e3:.{digits}f} ms"


def signed_pct(x, digits=1, space=" "):
    s = f"{abs(x) * 100:.{digits}f}{space}%"
    return ("+" if x >= 0 else MINUS) + s


# ------------------------------------------------------------------------------------------------- sync
SYNC_ROWS = [  # (example, what the first column says beside the name, the sync column)
    ("sync_bsp_ps_stragglers_16xV100", "4 servers, lognormal σ 0.3", "bsp"),
    ("sync_ssp_ps_16xV100", "same stragglers", "ssp (staleness 2)"),
    ("sync_asp_ps_16xV100", "same stragglers", "asp"),
    ("sync_local_sgd_16xV100_1Gbps", None, "local_sgd (period 8)"),
    ("sync_adpsgd_gossip_16xV100", "worker 0 2× slower", "asp (AD-PSGD)"),
    ("sync_fedavg_32_clients", "1 Gbps, 4 clients on 100 Mbps", "fedavg (8/round, 5 steps, availability 0.6)"),
    ("bsp_heterogeneous_stragglers_8", "6 V100 + 2 P100", "bsp"),
]


def sync_table(ddlsim, jobs):
    results = run_all(ddlsim, [example(r[0]) for r in SYNC_ROWS], jobs)
    out = ["| example | sync | iteration | samples/s | staleness mean / max | mean idle | model versions |",
           "|---|---|---|---|---|---|---|"]
    for (name, note, sync), r in zip(SYNC_ROWS, results):
        it = r["iteration_time_s"]
        iteration = f"{it:.2f} s per round" if "clients_per_round_mean" in r else ms(it)
        st = r.get("staleness")
        staleness = f"{st['mean']:.2f} / {st['max']}" if st else "—"
        idle = r["workers"]["idle_s_mean"]
        versions = str(r["model_versions"]) if r["model_versions"] > 0 else "—"
        label = f"`{name}`" + (f" ({note})" if note else "")
        idle_text = f"{idle:.2f} s" if idle < 100 else f"{idle:.1f} s"
        out.append(f"| {label} | {sync} | {iteration} | {r['throughput_samples_per_s']:.0f} | {staleness} | "
                   f"{idle_text} | {versions} |")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ compression
COMPRESSION_ROWS = [  # (example, the parameter it sets, or None)
    ("compression_fp16_resnet50_16xV100", None),
    ("compression_qsgd_resnet50_16xV100", "8 bits"),
    ("compression_terngrad_resnet50_16xV100", None),
    ("compression_signsgd_resnet50_16xV100", None),
    ("compression_ef_signsgd_resnet50_16xV100", None),
    ("compression_onebit_resnet50_16xV100", None),
    ("compression_topk_resnet50_16xV100", "1%, EF"),
    ("compression_randomk_resnet50_16xV100", "1%"),
    ("compression_dgc_resnet50_16xV100", "0.1%"),
    ("compression_gtopk_resnet50_16xV100", "1%"),
    ("compression_powersgd_resnet50_16xV100", "rank 4"),
    ("overlap_wfbp_resnet50_16xV100", None),
    ("overlap_ddp_buckets_resnet50_16xV100", "25 MB"),
    ("overlap_horovod_fusion_resnet50_16xV100", "64 MB, 5 ms"),
    ("overlap_mgwfbp_resnet50_16xV100", None),
    ("overlap_priority_resnet50_16xV100", "4 MB"),
]
BASELINE = "resnet50_ring_16xV100"


def compression_table(ddlsim, jobs):
    names = [BASELINE] + [r[0] for r in COMPRESSION_ROWS]
    results = run_all(ddlsim, [example(n) for n in names], jobs)
    base, rows = results[0], results[1:]
    out = [f"The worked examples, ResNet-50 on 16 V100s (batch 64, compute {ms(base['compute_time_s'])}) on a "
           f"10 Gbit/s star with ring all-reduce; the dense, no-overlap baseline `{BASELINE}` takes "
           f"{ms(base['iteration_time_s'])} ({base['scaling_efficiency'] * 100:.1f}%). Exposed comm is "
           f"`exposed_communication_time_s` (encode and decode included), encode+decode `codec_time_s`:", "",
           "| example | iteration | exposed comm | encode+decode | bytes on wire | collectives | efficiency |",
           "|---|---|---|---|---|---|---|"]
    for (name, param), r in zip(COMPRESSION_ROWS, rows):
        short = name.replace("_resnet50_16xV100", "_…")
        label = f"`{short}`" + (f" ({param})" if param else "")
        codec = ms(r["codec_time_s"], 2) if r["codec_time_s"] > 0 else "—"
        out.append(f"| {label} | {ms(r['iteration_time_s'])} | {ms(r['exposed_communication_time_s'])} | {codec} | "
                   f"{r['bytes_on_wire_per_iteration'] / 1e6:.1f} MB | {r['collectives_per_iteration']:g} | "
                   f"{r['scaling_efficiency'] * 100:.0f}% |")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- torchtitan
TORCHTITAN_ROWS = [  # (row file in validate/published/torchtitan/, the run as the first column says it)
    ("llama2_13b_64xA100_no_ac", "Llama 2 13B, batch 2 × 4096, no checkpointing"),
    ("llama2_70b_64xA100_full_ac", "Llama 2 70B, batch 2 × 4096, full checkpointing"),
    ("llama3_70b_64xA100_full_ac", "Llama 3 70B, batch 1 × 8192, full checkpointing"),
    ("llama3_8b_64xA100_selective_op_ac",
     "Llama 3 8B, batch 1 × 8192, selective op checkpointing (not modelled: predicted without recompute)"),
    ("llama2_13b_64xA100_selective_op_ac", "Llama 2 13B, batch 2 × 4096, selective op checkpointing (idem)"),
    ("llama3_1_8b_8xH100_selective_ac",
     "Llama 3.1 8B on 8 H100 at a 500 W limit with 2.4 TB/s HBM2e, selective checkpointing"),
]


def torchtitan_table(ddlsim, jobs):
    docs = []
    for name, _ in TORCHTITAN_ROWS:
        with open(os.path.join(PUBLISHED, "torchtitan", name + ".json"), encoding="utf-8") as f:
            docs.append(json.load(f))
    results = run_all(ddlsim, [d["scenario"] for d in docs], jobs)
    out = ["| run (tokens/s per GPU) | measured | ddlsim | error |", "|---|---|---|---|"]
    for (name, label), d, r in zip(TORCHTITAN_ROWS, docs, results):
        if d["measured"]["metric"] != "throughput_samples_per_s":
            raise RuntimeError(f"torchtitan/{name}: expected a throughput_samples_per_s row")
        tokens_per_sample = r["tokens_per_s"] / r["throughput_samples_per_s"]
        workers = r["scenario"]["workers"]
        measured = d["measured"]["value"] * tokens_per_sample / workers
        predicted = r["tokens_per_s"] / workers
        out.append(f"| {label} | {measured:.0f} | {predicted:.0f} | {signed_pct(predicted / measured - 1)} |")
    return "\n".join(out)


TABLES = {"sync": sync_table, "compression": compression_table, "torchtitan": torchtitan_table}


# ---------------------------------------------------------------------------------------------- blocks
def doc_files(root):
    files = [os.path.join(root, "README.md")]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return [f for f in files if os.path.isfile(f)]


def find_blocks(root):
    """{name: (file, text, start, end)}: the block's content is text[start:end]. Raises ValueError on bad markers."""
    blocks = {}
    for path in doc_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        open_name, open_at = None, 0
        for m in MARKER.finditer(text):
            kind, name = m.group(1), m.group(2)
            rel = os.path.relpath(path, root)
            if kind == "BEGIN":
                if open_name:
                    raise ValueError(f"{rel}: generated:{name} begins inside generated:{open_name}")
                if name in blocks:
                    raise ValueError(f"{rel}: generated:{name} appears twice")
                open_name, open_at = name, m.end()
            else:
                if name != open_name:
                    raise ValueError(f"{rel}: END generated:{name} without its BEGIN")
                blocks[name] = (path, text, open_at, m.start())
                open_name = None
        if open_name:
            raise ValueError(f"{os.path.relpath(path, root)}: generated:{open_name} has no END marker")
    return blocks


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("a\n<!-- BEGIN generated:sync -->\nold\n<!-- END generated:sync -->\nb\n")
        with open(os.path.join(tmp, "docs", "X.md"), "w") as f:
            f.write("<!-- BEGIN generated:torchtitan -->\n<!-- END generated:torchtitan -->\n")
        b = find_blocks(tmp)
        assert set(b) == {"sync", "torchtitan"}, b
        path, text, i, j = b["sync"]
        assert text[i:j] == "\nold\n", repr(text[i:j])
        for bad in ("<!-- BEGIN generated:sync -->\n", "<!-- END generated:sync -->\n",
                    "<!-- BEGIN generated:a -->\n<!-- BEGIN generated:b -->\n"):
            with open(os.path.join(tmp, "README.md"), "w") as f:
                f.write(bad)
            try:
                find_blocks(tmp)
                raise AssertionError(f"accepted {bad!r}")
            except ValueError:
                pass
    assert signed_pct(-0.001) == MINUS + "0.1 %" and signed_pct(0.067) == "+6.7 %"
    print("gen_tables self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ddlsim", default=os.path.join(ROOT, "build", "ddlsim"))
    ap.add_argument("--check", action="store_true", help="exit 1 when a table differs from a fresh run")
    ap.add_argument("--only", action="append", choices=sorted(TABLES), help="this table only (repeatable)")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--self-test", action="store_true", help="check the marker handling and exit")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    ddlsim = os.path.abspath(args.ddlsim)
    if not (os.path.isfile(ddlsim) and os.access(ddlsim, os.X_OK)):
        print(f"gen_tables: no ddlsim binary at {args.ddlsim} (use --ddlsim PATH)", file=sys.stderr)
        return 2
    try:
        blocks = find_blocks(ROOT)
    except ValueError as e:
        print(f"gen_tables: {e}", file=sys.stderr)
        return 2
    unknown = sorted(set(blocks) - set(TABLES))
    missing = sorted(set(TABLES) - set(blocks))
    if unknown or missing:
        print(f"gen_tables: markers for unknown tables {unknown} / no markers for {missing} in README.md, "
              "docs/*.md", file=sys.stderr)
        return 2
    stale = []
    for name in args.only or sorted(TABLES):
        path, _, _, _ = blocks[name]
        fresh = "\n" + TABLES[name](ddlsim, max(1, args.jobs)) + "\n"
        with open(path, encoding="utf-8") as f:  # re-read: an earlier table may have rewritten this file
            text = f.read()
        begin = f"<!-- BEGIN generated:{name} -->"
        i = text.index(begin) + len(begin)
        j = text.index(f"<!-- END generated:{name} -->")
        rel = os.path.relpath(path, ROOT)
        if text[i:j] == fresh:
            print(f"gen_tables: {name} ({rel}) matches ddlsim")
            continue
        stale.append(name)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(text[i:j].splitlines(True), fresh.splitlines(True),
                                                       f"{rel} (generated:{name})", "ddlsim"))
        else:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(text[:i] + fresh + text[j:])
            os.replace(path + ".tmp", path)
            print(f"gen_tables: {name} ({rel}) rewritten")
    if args.check and stale:
        print(f"gen_tables: stale tables: {', '.join(stale)}; run tools/gen_tables.py to regenerate them",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
