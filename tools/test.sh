#!/usr/bin/env bash
# Builds and runs every test (the README's second command; .ci/run runs exactly this):
#  1. the Release build with warnings as errors, and the whole CTest suite;
#  2. the same suite built with clang, AddressSanitizer and UndefinedBehaviorSanitizer;
#  3. the libFuzzer targets (scenario loader, topology-file loader) for a bounded time each,
#     seeded from scenarios/; any crash, leak or timeout fails (FUZZ_SECONDS, default 30 each).
# `tools/test.sh --quick` stops after step 1.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDDLSIM_WERROR=ON
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
[ "${1:-}" = "--quick" ] && exit 0

CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDDLSIM_SANITIZE=ON \
    -DDDLSIM_FUZZ=ON
cmake --build build-sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-sanitize --output-on-failure -j"$jobs"

seconds=${FUZZ_SECONDS:-30}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/scenario" "$corpus/topology"
cp scenarios/examples/*.json "$corpus/scenario/"
cp tests/fuzz/corpus_topology/*.json scenarios/topologies/*.json "$corpus/topology/"
for target in scenario topology; do
    bin=build-sanitize/fuzz_${target}
    [ "$target" = topology ] && bin=build-sanitize/fuzz_topology_file
    echo "fuzzing $bin for ${seconds}s"
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=8192 \
        -print_final_stats=1 "$corpus/$target" 2>&1 | tail -n 12
done
echo "sanitizer suite and fuzzers: 1 passed, 0 failed"
