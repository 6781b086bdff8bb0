#!/usr/bin/env bash
# CI check of the real-training validation (SPEC §5): runs `ddlsim validate --quick` on the CPU and
# checks its report with python3 (json module only): the loss decreases, ring all-reduce and the
# parameter server gave the same averaged gradient, error feedback kept the residual bounded,
# every configuration has a finite predicted, measured and relative error, and the profile has the
# "ddlsim-profile-1" shape. `ddlsim validate` itself exits 1 naming any failed check.
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
check("profile shape", profile.get("format") == "ddlsim-profile-1" and finite(device.get("peak_flops")) and
      finite(device.get("memory_bandwidth")) and profile["network"]["bandwidth"] > 0 and
      profile["network"]["latency"] >= 0 and len(profile["layers"]) > 0 and len(profile["codecs"]) > 0)
passed = sum(results)
print(f"validate ci check: {passed} passed, {len(results) - passed} failed")
sys.exit(0 if passed == len(results) else 1)
PY
