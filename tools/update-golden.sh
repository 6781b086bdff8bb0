#!/usr/bin/env bash
# Regenerates tests/golden/<example>.json from scenarios/examples/*.json: the headline figures, without wall
# times (the one field that differs from run to run) and without the per-worker arrays (a change of a common
# mechanism moves them in every file at once; the per-worker figures are checked by invariants instead,
# tests/scenarios/test_scenarios.cpp), so that a regeneration changes only the files whose headline results
# changed; then shows the diff it made. Run only after reviewing why a golden result changed; commit the diff with the
# reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DDLSIM:-build/ddlsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in scenarios/examples/*.json; do
    name=$(basename "$f" .json)
    "$bin" run "$f" --out "$tmp/$name.json" >/dev/null
    python3 - "$tmp/$name.json" "tests/golden/$name.json" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ("wall_time_s", "per_worker")}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
text = json.dumps(strip(json.load(open(src))), indent=2, ensure_ascii=False) + "\n"
try:
    old = open(dst).read()
except FileNotFoundError:
    old = None
if old != text:
    open(dst, "w").write(text)
    print(f"changed {dst}")
PY
done
if git rev-parse --git-dir >/dev/null 2>&1; then
    git --no-pager diff --stat -- tests/golden
    git --no-pager diff --unified=0 --no-color -- tests/golden | grep -E '^[-+] ' | head -200 || true
fi
