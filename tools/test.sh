#!/usr/bin/env bash
# Builds and runs every test (the README's second command; .ci/run runs exactly this):
#  1. the Release build with warnings as errors, and the whole CTest suite;
#  2. the same suite built with clang, AddressSanitizer and UndefinedBehaviorSanitizer;
#  3. the libFuzzer targets (scenario loader, topology-file loader) for a bounded time each,
#     seeded from scenarios/; any crash, leak or timeout fails (FUZZ_SECONDS, default 30 each);
#  4. Debug and fuzz-only builds of the executables (configurations the steps above do not run);
#  5. the real-training validation: `ddlsim validate --quick` on the CPU, its report checked
#     (validate/ci_check.sh; about a minute on two cores).
# `tools/test.sh --quick` stops after step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDDLSIM_WERROR=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

# A sweep split over 2 MPI ranks gives the same CSV as the threads-only run, and plots.
S=scenarios/examples/resnet50_ring_16xV100.json
sweep_dir=$(mktemp -d)
build/ddlsim sweep $S --vary workers=2..32:x2 --vary network.bandwidth=10Gbps,100Gbps --out "$sweep_dir/a.csv" \
    --jobs 2 --no-progress --plot "$sweep_dir/a.png"
mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np 2 build/ddlsim sweep $S \
    --vary workers=2..32:x2 --vary network.bandwidth=10Gbps,100Gbps --out "$sweep_dir/b.csv" --jobs 1 --no-progress
# The CSV without its wall_time_s column (a real CSV parser: quoted fields may hold commas).
strip_wall() {
    python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
w = rows[0].index("wall_time_s")
csv.writer(sys.stdout).writerows([r[:w] + r[w + 1:] for r in rows])' "$1"
}
if cmp -s <(strip_wall "$sweep_dir/a.csv") <(strip_wall "$sweep_dir/b.csv") && [ -s "$sweep_dir/a.png" ]; then
    echo "sweep (threads vs 2 MPI ranks, plot): 1 passed, 0 failed"
else
    echo "sweep (threads vs 2 MPI ranks, plot): 0 passed, 1 failed"; exit 1
fi
rm -rf "$sweep_dir"
[ "${1:-}" = "--quick" ] && exit 0

CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDLSIM_SANITIZE=ON \
    -DDDLSIM_FUZZ=ON
cmake --build build-sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-sanitize --output-on-failure -j"$jobs"

seconds=${FUZZ_SECONDS:-30}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/scenario" "$corpus/topology_file" "$corpus/sweep_resume"
cp scenarios/examples/*.json "$corpus/scenario/"
cp tests/fuzz/corpus_topology/*.json scenarios/topologies/*.json "$corpus/topology_file/"
cp tests/fuzz/corpus_resume/* "$corpus/sweep_resume/"
for target in scenario topology_file sweep_resume; do
    bin=build-sanitize/fuzz_${target}
    echo "fuzzing $bin for ${seconds}s"
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=16384 \
        -print_final_stats=1 "$corpus/$target" 2>&1 | tail -n 12
done
echo "sanitizer suite and fuzzers: 1 passed, 0 failed"

# The documented configurations the steps above do not run must still build (docs/ROBUSTNESS.md):
# Debug (invariant checks on) and fuzzers without sanitizers (CC=clang CXX=clang++ -DDDLSIM_FUZZ=ON). Only the
# executables are built, not the test suites, to keep CI time down (about 5 min each on two cores).
cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DDDLSIM_WERROR=ON >/dev/null
cmake --build build-debug -j"$jobs" --target ddlsim ddlsim_bench
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDLSIM_FUZZ=ON >/dev/null
cmake --build build-fuzz -j"$jobs" --target ddlsim ddlsim_bench fuzz_scenario fuzz_topology_file fuzz_sweep_resume
echo "build configurations (Debug, fuzz-only): 1 passed, 0 failed"

# Real-training validation (docs/CONTRACT.md §5) with the Release build: ddlsim validate --quick, report checked.
validate/ci_check.sh build/ddlsim
