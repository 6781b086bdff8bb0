#!/usr/bin/env bash
# Regenerates tests/golden/<example>.json from scenarios/examples/*.json.
# Run only after reviewing why a golden result changed; commit the diff with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DDLSIM:-build/ddlsim}
for f in scenarios/examples/*.json; do
    name=$(basename "$f" .json)
    "$bin" run "$f" --out "tests/golden/$name.json" >/dev/null
    echo "updated tests/golden/$name.json"
done
