#!/usr/bin/env python3
"""An interrupted `ddlsim validate` leaves nothing behind: no network namespace, no child process, no
report, no temporary file, and the previous calib.json untouched.

For each catchable signal that ends a run (SIGHUP, SIGTERM, SIGINT, SIGPIPE sent with kill, and a real
SIGPIPE from `validate 2>&1 | head -3` closing the pipe) the test starts a validation, waits until its
namespaces (`/run/netns/ddv<pid>-*`) exist, interrupts it, and checks the invariants above.

A case whose run ends before it can be interrupted (no namespaces could be made, so validate took its fast loopback
path; or it finished between the check and the signal) interrupted nothing: it is reported as not interrupted
and its leftovers are still checked, but it is not a failure — the test never fails on timing. When no case
could interrupt a run, the test reports itself skipped.

Needs root and iproute2 (namespaces); exits 77 (CTest: skipped) without them.
Usage: signal_cleanup.py --ddlsim PATH
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

NETNS = "/run/netns"
SENTINEL = '{"sentinel": "an earlier profile that an interrupted run must not replace"}\n'


def namespaces(pid):
    try:
        return sorted(n for n in os.listdir(NETNS) if n.startswith(f"ddv{pid}-"))
    except FileNotFoundError:
        return []


def wait_for(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def children_of(pid):
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    return [int(x) for x in out.split()]


def one_case(ddlsim, name, interrupt):
    """interrupt(proc) ends the run; returns (interrupted, failures): whether a running validation was interrupted,
    and the invariants that failed (empty when every one holds)."""
    work = tempfile.mkdtemp(prefix="ddlsim_signal_")
    failures = []
    interrupted = True
    try:
        calib = os.path.join(work, "calib.json")
        with open(calib, "w") as f:
            f.write(SENTINEL)
        report = os.path.join(work, "report.json")
        proc, reader = interrupt("start", [ddlsim, "validate", "--quick", "--out", report])
        if not wait_for(lambda: namespaces(proc.pid) or proc.poll() is not None, 120):
            failures.append("no namespace appeared within 120 s")
        kids = children_of(proc.pid)
        if proc.poll() is not None:
            interrupted = False  # it ran to its end: nothing was interrupted (checked below all the same)
        else:
            interrupt("stop", proc)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            failures.append("validate did not end within 60 s of the interruption")
        if reader is not None:
            reader.wait(timeout=10)
        left = namespaces(proc.pid)
        if left:
            failures.append(f"namespaces left behind: {left}")
        alive = [k for k in kids if os.path.exists(f"/proc/{k}") and
                 open(f"/proc/{k}/stat").read().split()[2] != "Z"]
        if alive:
            failures.append(f"child processes left running: {alive}")
        if interrupted:
            with open(calib) as f:
                if f.read() != SENTINEL:
                    failures.append("calib.json was replaced by an interrupted run")
            extra = sorted(set(os.listdir(work)) - {"calib.json"})
            if extra:
                failures.append(f"files left in the output folder: {extra}")
            if proc.returncode == 0:
                failures.append("an interrupted run exited 0")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return interrupted, [f"{name}: {f}" for f in failures]


def by_kill(sig):
    def interrupt(phase, arg):
        if phase == "start":
            return subprocess.Popen(arg, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), None
        arg.send_signal(sig)
    return interrupt


def by_closed_pipe():
    """`ddlsim validate 2>&1 | head -3`: head exits after three lines, the next write raises SIGPIPE."""
    def interrupt(phase, arg):
        if phase == "start":
            proc = subprocess.Popen(arg, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            head = subprocess.Popen(["head", "-3"], stdin=proc.stdout, stdout=subprocess.DEVNULL)
            proc.stdout.close()  # only head reads the pipe now
            return proc, head
        # nothing to do: head closes the pipe by itself
    return interrupt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddlsim", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("skipped: needs root and iproute2 for network namespaces")
        return 77
    cases = [("SIGHUP", by_kill(signal.SIGHUP)), ("SIGTERM", by_kill(signal.SIGTERM)),
             ("SIGINT", by_kill(signal.SIGINT)), ("SIGPIPE", by_kill(signal.SIGPIPE)),
             ("validate 2>&1 | head -3", by_closed_pipe())]
    failures, interrupted = [], 0
    for name, interrupt in cases:
        ran, got = one_case(args.ddlsim, name, interrupt)
        interrupted += ran
        print(f"{name}: {'FAILED' if got else 'ok' if ran else 'not interrupted (the run ended first)'}")
        failures += got
    for f in failures:
        print(f, file=sys.stderr)
    if failures:
        return 1
    if interrupted == 0:
        print("skipped: no run could be interrupted (validate never made its namespaces here)")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
