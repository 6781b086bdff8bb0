#!/usr/bin/env bash
# Time to accuracy for the survey's findings (see README.md here): runs every scenario of this folder
# with `ddlsim run --out results/NAME.json --plot plots/NAME.png`, draws one comparison plot per finding
# and writes results.md. Needs the Fashion-MNIST files (Debian: dataset-fashion-mnist) and python3 with
# matplotlib (python3-matplotlib). About 3 minutes on 2 cores.
#
# usage: scenarios/survey/convergence/run.sh [NAME ...]    (default: every *.json here)
# DDLSIM=path/to/ddlsim overrides the binary (default: build/ddlsim of this checkout).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
ddlsim="${DDLSIM:-$root/build/ddlsim}"
[ -x "$ddlsim" ] || { echo "error: $ddlsim not built (cmake --build build --target ddlsim, or set DDLSIM)" >&2; exit 2; }
python=""
for py in "${DDLSIM_PYTHON:-}" python3 /usr/bin/python3; do
    if [ -n "$py" ] && "$py" -c 'import matplotlib' >/dev/null 2>&1; then python="$py"; break; fi
done
[ -n "$python" ] || { echo "error: needs python3 with matplotlib (Debian: python3-matplotlib)" >&2; exit 2; }
export DDLSIM_PYTHON="$python"

cd "$here"
mkdir -p results plots
if [ $# -gt 0 ]; then names=("$@"); else names=(); for f in *.json; do names+=("${f%.json}"); done; fi
start=$(date +%s)
for name in "${names[@]}"; do
    printf '%-22s ' "$name" >&2
    "$ddlsim" run "$name.json" --out "results/$name.json" --plot "plots/$name.png" >"results/$name.txt"
    grep -E "time to accuracy|not reached" "results/$name.txt" | sed 's/^ *//' >&2
done
elapsed=$(($(date +%s) - start))

# Comparison plots (one per finding) and results.md.
"$python" - "$elapsed" "$root/tools/plot_curve.py" <<'PY'
import json, os, subprocess, sys

elapsed, plot_curve = int(sys.argv[1]), sys.argv[2]
python = os.environ["DDLSIM_PYTHON"]

def load(name):
    path = f"results/{name}.json"
    return json.load(open(path)) if os.path.exists(path) else None

groups = [
    ("Every scheme reaches the target", "schemes", "time",
     ["bsp_ring", "asp_ps", "local_sgd_h8", "fedavg", "dpsgd_ring"]),
    ("ASP: staleness grows with the number of workers", "asp_workers", "iteration",
     ["asp_ps_w4", "asp_ps", "asp_ps_w16", "asp_ps_w32"]),
    ("Local SGD: the averaging period H", "local_sgd_period", "iteration",
     ["local_sgd_h1_w16", "local_sgd_h16_w16", "local_sgd_h64_w16", "local_sgd_h256_w16"]),
    ("Compression and error feedback (accuracy per iteration; 1 Gbps runs)", "compression", "iteration",
     ["dense_1gbps", "signsgd_1gbps", "ef_signsgd_1gbps", "topk_ef_1gbps", "topk_1gbps"]),
    ("Compressed vs dense at 1 Gbps", "bandwidth_1gbps", "time",
     ["dense_1gbps", "signsgd_1gbps", "ef_signsgd_1gbps", "topk_ef_1gbps"]),
    ("Compressed vs dense at 100 Gbps", "bandwidth_100gbps", "time",
     ["dense_100gbps", "signsgd_100gbps", "ef_signsgd_100gbps", "topk_ef_100gbps"]),
]

def fmt(v, spec):
    return "not reached" if v is None else format(v, spec)

lines = ["# Time to accuracy: results", "",
         f"Written by `run.sh` (do not edit by hand); {elapsed} s for the whole run. Proxy task: "
         "`fashion_mnist_mlp` (the MLP 784-256-128-10 on Fashion-MNIST, 2,000 held-out test images); the simulated "
         "model is ResNet-50 on V100s. Time is simulated seconds; iterations are the simulated job's (FedAvg: rounds).",
         ""]
gradients = wall = 0.0
for title, plot, x, names in groups:
    present = [n for n in names if load(n)]
    if not present:
        continue
    subprocess.run([python, plot_curve, *[f"results/{n}.json" for n in present], f"plots/{plot}.png",
                    "--title", title, "--labels", ",".join(present), "--x", x], check=True)
    lines += [f"## {title}", "", f"![{plot}](plots/{plot}.png)", "",
              "| scenario | iteration time (s) | time to accuracy (s) | iterations | final accuracy | staleness (mean) |"
              " gradients | replay (s) |",
              "|---|---|---|---|---|---|---|---|"]
    for n in present:
        r = load(n)
        st = r.get("staleness", {}).get("mean") if isinstance(r.get("staleness"), dict) else None
        lines.append(f"| [{n}]({n}.json) | {r['iteration_time_s']:.4f} | {fmt(r['time_to_accuracy_s'], '.2f')} | "
                     f"{fmt(r['iterations_to_accuracy'], 'd')} | {r['final_accuracy']:.3f} | "
                     f"{'' if st is None else format(st, '.1f')} | {r['gradients']} | {r['replay_wall_time_s']:.1f} |")
    lines.append("")
seen = set()
for title, plot, x, names in groups:
    for n in names:
        r = load(n)
        if r and n not in seen:
            seen.add(n)
            gradients += r["gradients"]
            wall += r["replay_wall_time_s"]
lines += [f"Replays: {int(gradients)} gradients in {wall:.1f} s of replay ({gradients / max(wall, 1e-9):.0f} gradients/s "
          "including the evaluations), on this machine.", ""]
open("results.md", "w").write("\n".join(lines))
PY
echo "wrote $here/results.md and plots/ ($elapsed s)" >&2
