#!/usr/bin/env python3
"""Renders the HTML reports of `ddlsim run`, `compare` and `sweep --report` in headless Chromium (Debian's
`chromium`) and fails on any console message (the pages have no script), an empty page, or a page without its
summary. Exits 77 (skipped) when chromium is not installed.

Usage: check_report.py --ddlsim PATH [--screenshot OUT.png] [--self-test]   (the screenshot is of the run report, for the README)
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUN = "scenarios/examples/llama2_7b_fsdp_4x8xH100.json"
SMALL = "scenarios/examples/resnet50_ring_16xV100.json"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render(browser, page, screenshot=None):
    """(DOM text, console lines) of `page`."""
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
            "--v=0", "--window-size=1200,1500"]
    with tempfile.TemporaryDirectory() as profile:
        args.append(f"--user-data-dir={profile}")
        if screenshot:
            subprocess.run(args + [f"--screenshot={screenshot}", page.as_uri()], capture_output=True, timeout=120,
                           check=True)
        r = subprocess.run(args + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    # Chromium logs every page console message as "...:INFO:CONSOLE:line] "message", source: ..." whatever its
    # level (console.error included); the reports have no script, so any message is a problem (a failed resource,
    # a parse error).
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return r.stdout, console


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddlsim", required=True)
    ap.add_argument("--screenshot", help="also write a screenshot of the run report here")
    ap.add_argument("--self-test", action="store_true",
                    help="check that a page with a console error and an empty page are caught")
    args = ap.parse_args()
    browser = chromium()
    if browser is None:
        print("skipped: chromium is not installed (apt-get install chromium)")
        return 77
    if args.self_test:
        with tempfile.TemporaryDirectory() as d:
            bad = pathlib.Path(d) / "bad.html"
            bad.write_text('<!DOCTYPE html><html><body><script>console.error("broken")</script></body></html>')
            dom, console = render(browser, bad)
            caught_console = any("broken" in c for c in console)
            caught_empty = len(re.sub(r"<[^>]+>", "", dom).strip()) < 200
        print(f"self-test: console error {'caught' if caught_console else 'MISSED'}, empty page "
              f"{'caught' if caught_empty else 'MISSED'}")
        return 0 if caught_console and caught_empty else 1
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        commands = {
            "run": [args.ddlsim, "run", RUN, "--set", "iterations=1", "--report", str(d / "run.html")],
            "compare": [args.ddlsim, "compare", RUN, "--set", "iterations=1", "--variant", 'ddp={"sharding": null}',
                        "--variant", "fsdp={}", "--report", str(d / "compare.html")],
            "sweep": [args.ddlsim, "sweep", SMALL, "--vary", "workers=2..16:x2", "--out", str(d / "s.csv"),
                      "--no-progress", "--report", str(d / "sweep.html")],
        }
        for name, cmd in commands.items():
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, timeout=600)
            page = d / f"{name}.html"
            html = page.read_text()
            shot = args.screenshot if (name == "run" and args.screenshot) else None
            dom, console = render(browser, page, shot)
            problems = []
            if "http://" in html or "https://" in html.replace("https://ui.perfetto.dev", ""):
                problems.append("the page refers to the network")
            if len(re.sub(r"<[^>]+>", "", dom).strip()) < 200:
                problems.append("the rendered page is (nearly) empty")
            if 'id="summary"' not in dom:
                problems.append("no summary section")
            if name in ("run", "compare") and "<svg" not in dom:
                problems.append("no breakdown bar")
            if name == "sweep" and "<table" not in dom:
                problems.append("no rows")
            problems += [f"console: {c}" for c in console]
            for p in problems:
                print(f"{name} report: {p}")
            failures += len(problems)
            print(f"{name} report: {len(html)} bytes, rendered {'ok' if not problems else 'with problems'}")
    print(f"reports: {3 - min(3, failures)} passed, {failures} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
