#!/usr/bin/env bash
# Build the SimGrid ring all-reduce harness and compare it with ddlsim.
#
#   tools/simgrid/run.sh                 # n = 64 256 1024
#   tools/simgrid/run.sh 64 256 1024 4096
#
# Environment:
#   BUILD_DIR   SimGrid harness build dir   (default: tools/simgrid/build, git-ignored)
#   DDLSIM      ddlsim binary               (default: build/ddlsim; skipped if missing)
#   S B_BPS L   bytes, bytes/s, seconds     (default: 1e8, 1.25e9 = 10 Gbps, 5e-6)
#   SG_TIMEOUT  per-case limit in seconds   (default: 600)
#
# On demand only; not run in CI.  Needs SimGrid 3.32 (Debian: libsimgrid-dev).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build_dir="${BUILD_DIR:-$here/build}"
ddlsim="${DDLSIM:-$root/build/ddlsim}"
S="${S:-1e8}"
B_BPS="${B_BPS:-1.25e9}"
L="${L:-5e-6}"
timeout_s="${SG_TIMEOUT:-600}"
if [ "$#" -gt 0 ]; then sizes=("$@"); else sizes=(64 256 1024); fi

cmake -S "$here" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" >/dev/null
sg="$build_dir/ring_allreduce"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# field NAME LINE: value of NAME=value in a RESULT line
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "== SimGrid $(pkg-config --modversion simgrid 2>/dev/null || echo '?') sanity (one transfer = 2L + S/B)"
"$sg" sanity "$S" "$B_BPS" "$L" 2>/dev/null | sed 's/^/   /'

have_ddlsim=0
if [ -x "$ddlsim" ]; then have_ddlsim=1; else echo "(ddlsim not found at $ddlsim: SimGrid columns only)"; fi

printf '\n%-6s %-19s %-19s %-9s %-9s %-9s %-10s %-9s %-10s | %-19s %-9s %-9s %-10s %-9s %-9s %-13s %-9s\n' \
  n sg_sim_s closed_s sg_relerr transfers sg_wall_s sg_xfer/s sg_rssMiB sg_unit \
  dd_sim_s dd_relerr dd_wall_s dd_xfer/s dd_rssMiB dd_vs_sg dd_cls_wall_s dd_cls_diff
for n in "${sizes[@]}"; do
  line="$(timeout "$timeout_s" "$sg" ring "$n" "$S" "$B_BPS" "$L" 2>/dev/null | grep '^RESULT' || true)"
  if [ -z "$line" ]; then
    printf '%-6s SimGrid run failed or exceeded %ss\n' "$n" "$timeout_s"
    continue
  fi
  sg_sim="$(field sim_s "$line")"
  closed="$(field closed_s "$line")"
  transfers="$(field transfers "$line")"
  row="$(printf '%-6s %-19s %-19s %-9s %-9s %-9s %-10s %-9s %-10s' "$n" "$sg_sim" "$closed" \
    "$(field relerr "$line")" "$transfers" "$(field wall_s "$line")" "$(field transfers_per_s "$line")" \
    "$(field peak_rss_mib "$line")" "$(field byte_unit "$line")")"

  if [ "$have_ddlsim" = 1 ]; then
    params=$(python3 -c "print(round($S / 4))") # fp32 gradients: 4 bytes per parameter
    cat >"$tmp/s$n.json" <<EOF
{"workers": $n, "model": {"layers": [{"name": "g", "params": $params, "fwd_time": 0, "bwd_time": 0, "update_time": 0}]},
 "batch_size": 1, "iterations": 1, "device": "V100",
 "network": {"topology": "star", "transport": "ideal", "bandwidth": "$(python3 -c "print(repr($B_BPS * 8))")bps", "latency": "$(python3 -c "print(repr($L * 1e6))")us"}}
EOF
    echo 0 >"$tmp/rss$n"
    timer=()
    if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f '%M' -o "$tmp/rss$n"); fi
    # Every transfer, as SimGrid simulates them (on a star every ring transfer is alike: with flow classes ddlsim
    # simulates one per step, dd_cls_wall_s).
    if timeout "$timeout_s" "${timer[@]}" "$ddlsim" run "$tmp/s$n.json" --no-flow-classes --out "$tmp/r$n.json" >/dev/null 2>&1; then
      dd="$(python3 - "$tmp/r$n.json" "$closed" "$sg_sim" "$transfers" "$tmp/rss$n" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
closed, sg, transfers = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
rss = float(open(sys.argv[5]).read().split()[-1]) / 1024.0
t, w = r["iteration_time_s"], r["wall_time_s"]
print(f"{t!r:<19} {abs(t - closed) / closed:<9.2e} {w:<9.3f} {transfers / w:<10.0f} {rss:<9.1f} {abs(t - sg) / sg:.2e}")
EOF
)"
      if "$ddlsim" run "$tmp/s$n.json" --out "$tmp/c$n.json" >/dev/null 2>&1; then
        dd="$dd $(python3 -c "import json, sys; r = json.load(open(sys.argv[1])); print(f\"{r['wall_time_s']:<9.3f} {abs(r['iteration_time_s'] - json.load(open(sys.argv[2]))['iteration_time_s']):.1e}\")" "$tmp/c$n.json" "$tmp/r$n.json")"
      fi
    else
      dd="ddlsim failed or exceeded ${timeout_s}s"
    fi
    row="$row | $dd"
  fi
  echo "$row"
done
cat <<'EOF'

sg_* : SimGrid (CM02, TCP-gamma 0, crosstraffic 0; wall = engine run only, RSS = getrusage peak)
dd_* : ddlsim with --no-flow-classes (iteration_time_s, wall_time_s from --out JSON; RSS = /usr/bin/time peak, 0 if
       unavailable); dd_cls_* : ddlsim with flow classes (wall, |difference| of the iteration time in seconds)
closed_s = 2(n-1)(2L + S/(nB)); transfers = 2(n-1)n; dd_vs_sg = |dd - sg| / sg
sg_unit : SimGrid byte unit (1/k byte, bandwidth scaled by k, so S/n needs no rounding)
EOF
