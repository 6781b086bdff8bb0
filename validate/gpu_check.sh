#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (CUDA toolkit with nvcc, driver): builds ddlsim with the CUDA
# backend, runs the CUDA-vs-CPU tests, calibrates, and runs the quick validation with
# --backend cuda (the calibration includes the transport terms and the compute slowdown beside the
# transport thread), then validate/ci_check.sh (the held-out check of the profile on the CPU backend).
# Writes calib.json, report.json, validate-calib.json, ci/ and gpu_check.log to OUTDIR.
# Fails with a message (exit 1) when there is no nvcc or no usable GPU. About 3-5 minutes.
# usage: validate/gpu_check.sh OUTDIR        (BUILD_DIR, default build-gpu; CUDA_ARCH, default 90)
# GPU_CHECK_PREBUILT=1 skips the configure and build and uses BUILD_DIR's ddlsim, libddlsim_cuda.so and
# validate/ddlsim_validate_tests as they are: for a GPU machine without the Debian packages, given a build made on
# a machine with them (its test binary names this checkout's absolute path; its libraries must be found there).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: validate/gpu_check.sh OUTDIR"; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
exec > >(tee "$out/gpu_check.log") 2>&1
fail() { echo "gpu_check: $*"; exit 1; }
start=$(date +%s)

command -v nvidia-smi > /dev/null && nvidia-smi -L || echo "gpu_check: nvidia-smi not found"
if [ "${GPU_CHECK_PREBUILT:-0}" = 1 ]; then
    echo "gpu_check: using the prebuilt $build (GPU_CHECK_PREBUILT=1)"
    "$build/ddlsim" --version || fail "the prebuilt $build/ddlsim does not run here"
else
    nvcc=$(command -v nvcc || true)
    [ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
    [ -n "$nvcc" ] || fail "no nvcc (CUDA toolkit) found; the CUDA backend cannot be built"
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DDDLSIM_WERROR=ON -DCMAKE_CUDA_COMPILER="$nvcc" \
        -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" | grep -E "ddlsim|CUDA" || true
    cmake --build "$build" -j"$(nproc)" --target ddlsim ddlsim_cuda ddlsim_validate_tests
fi
[ -f "$build/libddlsim_cuda.so" ] ||
    fail "CMake did not build the CUDA backend (see the configure output above)"

# No GPU: `ddlsim calibrate --backend cuda` says why and exits 2.
"$build/ddlsim" calibrate --backend cuda --quick --out "$out/calib.json" ||
    fail "calibration with --backend cuda failed (no usable GPU?)"
# The calibration includes the transport terms (efficiency, per-message and per-collective overheads, as root
# with namespaces) and the compute slowdown of the CUDA compute step beside the transport thread.
python3 - "$out/calib.json" <<'PY' || fail "the CUDA profile lacks the transport or the overlap slowdown"
import json, sys
p = json.load(open(sys.argv[1]))
print("gpu_check: overlap_slowdown", p["device"]["overlap_slowdown"], "transport", p["network"].get("transport"))
assert p["device"]["overlap_slowdown"] >= 0
PY
tests=$("$build/validate/ddlsim_validate_tests" -tc="CUDA*" -s 2>&1) || { echo "$tests"; fail "CUDA tests failed"; }
echo "$tests" | grep -q "CUDA backend skipped" && { echo "$tests"; fail "CUDA tests were skipped: no usable GPU"; }
echo "$tests" | tail -3
"$build/ddlsim" validate --backend cuda --quick --out "$out/report.json" --profile "$out/validate-calib.json" ||
    fail "ddlsim validate --backend cuda failed or a check failed (report: $out/report.json)"
# The held-out check of the profile's transport (as validate/ci_check.sh runs it on the CPU).
validate/ci_check.sh "$build/ddlsim" "$out/ci" || fail "validate/ci_check.sh (CPU backend) failed"
echo "gpu_check: passed in $(($(date +%s) - start)) s; report, profiles and log in $out"
