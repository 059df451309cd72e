#!/usr/bin/env bash
# CI's run, N times in a row: each a fresh clone of COMMIT (venv and build/ made anew) and `.ci/run`.
# One line per run in OUT/runs.tsv (start, end, exit code, seconds, make test's `real`, the lanes'
# summary); each run's output in OUT/ciN.log, its stage logs in OUT/logsN/. The clone is removed after
# its run. Figures in docs/benchmarks.md ("make test in a row"). Nothing else should run beside it.
#
#   benchmarks/make_test_in_a_row.sh [COMMIT] [N] [OUT]     (defaults: HEAD, 10, /tmp/make-test-in-a-row)
set -uo pipefail
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
commit=$(git -C "$repo" rev-parse "${1:-HEAD}")
runs=${2:-10}
out=${3:-/tmp/make-test-in-a-row}
mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  clone="$out/clone$i"
  rm -rf "$clone"
  git clone -q "$repo" "$clone" && git -C "$clone" checkout -q "$commit" || exit 2
  start=$(date -u +%H:%M:%S); t0=$(date +%s)
  (cd "$clone" && bash .ci/run) > "$out/ci$i.log" 2>&1
  rc=$?
  t1=$(date +%s); end=$(date -u +%H:%M:%S)
  mkdir -p "$out/logs$i" && cp -r "$clone"/build/logs/. "$out/logs$i/" 2>/dev/null
  real=$(grep -m1 '^real' "$out/ci$i.log" | tr -s '\t ' ' ')
  lanes=$(grep 'lanes: all\|lanes: .* failed' "$out/ci$i.log" | tr '\n' ' ')
  printf '%s\t%s\t%s\t%s\t%ss\t%s\t%s\n' "$i" "$start" "$end" "$rc" "$((t1 - t0))" "$real" "$lanes" >> "$out/runs.tsv"
  rm -rf "$clone"
done
echo "$runs runs of ${commit:0:7}: $out/runs.tsv"
