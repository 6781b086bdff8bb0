#!/usr/bin/env bash
# CI check of the real-training validation (docs/CONTRACT.md §5): runs `ddlsim validate --quick` on the CPU and
# checks its report with python3 (json module only): the loss decreases, ring all-reduce and the
# parameter server gave the same averaged gradient, error feedback kept the residual bounded,
# every configuration has a finite predicted, measured and relative error, and the profile has the
# "ddlsim-profile-1" shape with the measured transport and overlap slowdown; and that the profile,
# loaded by `network.profile` / `device.profile`, predicts the held-out network-bound runs better than
# the default transport does. `ddlsim validate` itself exits 1 naming any failed check.
# usage: validate/ci_check.sh [DDLSIM [OUTDIR]]   (default build/ddlsim, a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/ddlsim}
if [ -n "${2:-}" ]; then
    dir=$2
    mkdir -p "$dir"
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
[ -x "$bin" ] || { echo "validate ci check: $bin is not an executable (build it first)"; exit 1; }
"$bin" validate --backend cpu --quick --out "$dir/report.json" --profile "$dir/calib.json"
python3 - "$dir/report.json" "$dir/calib.json" <<'PY'
import json, math, sys

report = json.load(open(sys.argv[1]))
profile = json.load(open(sys.argv[2]))
results = []

def check(name, ok, detail=""):
    results.append(ok)
    print(f"  {'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")

def finite(x):
    return isinstance(x, (int, float)) and math.isfinite(x)

loss = report["loss"]
check("loss decreases", finite(loss["first"]) and finite(loss["last"]) and loss["last"] < loss["first"],
      f"{loss['first']:.3f} -> {loss['last']:.3f}")
checks = {c["name"]: c for c in report["checks"]}
for name in ("loss_decreases", "ring_ps_same_average", "error_feedback_bounded", "finite_errors"):
    c = checks.get(name)
    check(f"report check {name}", c is not None and c["passed"], c["detail"] if c else "missing")
configs = report["configurations"]
check("configurations held out and fitted", any(c["held_out"] for c in configs) and
      any(not c["held_out"] for c in configs), f"{len(configs)} configurations")
for c in configs:
    ok = all(finite(c[k]) for k in ("measured_iteration_time_s", "predicted_iteration_time_s", "relative_error",
                                    "cpu_load"))
    ok = ok and c["measured_iteration_time_s"] > 0 and c["predicted_iteration_time_s"] > 0
    check(f"finite error {c['name']}", ok, f"{100 * c['relative_error']:+.1f}%" if ok else "not finite")
for ef in report["error_feedback"]:
    check(f"residual bounded {ef['compressor']}", ef["passed"] and finite(ef["max_residual_norm"]),
          f"max {ef['max_residual_norm']:.3g} <= {ef['bound']}")
device = profile.get("device", {})
def bandwidth(x):  # a unit string such as "38.1GBps" / "95.6Mbps" (older profiles: bytes/s)
    return isinstance(x, str) and x.endswith("bps") or isinstance(x, str) and x.endswith("Bps") or finite(x) and x > 0

check("profile shape", profile.get("format") == "ddlsim-profile-1" and finite(device.get("peak_flops")) and
      bandwidth(device.get("memory_bandwidth")) and bandwidth(profile["network"]["bandwidth"]) and
      profile["network"]["latency"] >= 0 and len(profile["layers"]) > 0 and len(profile["codecs"]) > 0)
transport = profile["network"].get("transport", {})
if report["network"]["mode"] == "netns":
    check("profile transport", transport.get("kind") == "tcp" and 0 < transport.get("efficiency", 0) <= 1 and
          "message_overhead" in transport and "collective_overhead" in transport, json.dumps(transport))
    check("profile overlap_slowdown", finite(device.get("overlap_slowdown")) and device["overlap_slowdown"] >= 0,
          str(device.get("overlap_slowdown")))
passed = sum(results)
print(f"validate ci check: {passed} passed, {len(results) - passed} failed")
sys.exit(0 if passed == len(results) else 1)
PY

# Held out (calibration of the realism terms): the network-bound held-out runs (MLP, BSP, no compression: other worker
# counts, the PS, gossip, another link rate; the calibration ran on 2 hosts at one rate) predicted from
# scenarios as a user writes them (nominal link rate, the configured latency, the measured compute) with
# the default transport (auto: the cited tcp preset) and with `network.profile` + `device.profile` =
# the calibration profile. The profile must predict them better (median |error|).
python3 - "$bin" "$dir" "$dir/report.json" "$(cd "$dir" && pwd)/calib.json" <<'PY'
import copy, json, os, statistics, subprocess, sys

binary, folder, report_file, calib = sys.argv[1:5]
report = json.load(open(report_file))
if report["network"]["mode"] != "netns":
    print("held-out transport check: skipped (loopback: no shaped link, no transport calibrated)")
    sys.exit(0)

def predict(name, scenario):
    path = os.path.join(folder, name + ".json")
    out = os.path.join(folder, name + ".result.json")
    json.dump(scenario, open(path, "w"), indent=1)
    subprocess.run([binary, "run", path, "--out", out], check=True, stdout=subprocess.DEVNULL)
    return json.load(open(out))

rows = []
for c in report["configurations"]:
    if not c["held_out"] or c["model"] != "mlp" or c["compression"]["kind"] != "none" or c["sync"]["kind"] != "bsp":
        continue
    if "prediction_note" in c:
        continue
    base = copy.deepcopy(c["scenario"])
    base["network"].pop("transport", None)  # as a user writes it: line rate and configured latency only
    with_profile = copy.deepcopy(base)
    with_profile["network"]["profile"] = calib
    with_profile["device"] = {"profile": calib}
    d = predict(c["name"] + ".default", base)
    p = predict(c["name"] + ".profile", with_profile)
    if not p["scenario"]["transport_source"].startswith("calibration profile"):
        print(f"  FAIL {c['name']}: transport_source {p['scenario']['transport_source']!r}")
        sys.exit(1)
    measured = c["measured_iteration_time_s"]
    rows.append((c["name"], measured, d["iteration_time_s"], p["iteration_time_s"], c["cpu_load"],
                 c["cpu_load_workers"]))
print("held-out runs, default transport vs network.profile (ms per iteration; CPU load all / ours):")
print(f"  {'configuration':<20} {'measured':>9} {'default':>9} {'error':>7} {'profile':>9} {'error':>7}  load")
errs_d, errs_p = [], []
for name, m, d, p, load, ours in rows:
    ed, ep = (d - m) / m, (p - m) / m
    errs_d.append(abs(ed))
    errs_p.append(abs(ep))
    print(f"  {name:<20} {1e3 * m:9.1f} {1e3 * d:9.1f} {100 * ed:+6.1f}% {1e3 * p:9.1f} {100 * ep:+6.1f}%  "
          f"{load:.2f} / {ours:.2f}")
if not rows:
    print("  FAIL no held-out network-bound configuration in the report")
    sys.exit(1)
md, mp = statistics.median(errs_d), statistics.median(errs_p)
ok = mp < md
print(f"  {'ok  ' if ok else 'FAIL'} median |error| default {100 * md:.1f}%, with the profile {100 * mp:.1f}% "
      f"(mean {100 * statistics.mean(errs_d):.1f}% -> {100 * statistics.mean(errs_p):.1f}%)")
sys.exit(0 if ok else 1)
PY
