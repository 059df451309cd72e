#!/usr/bin/env bash
# What each install set costs: the student's ('.', what `pip install pytorch-labs` and `make lab` install) and
# everything ('.[dev]', what `make test` installs), each in a fresh venv under build/install-bench/, installed
# as `make venv` does (pip for torch, then uv with the pinned constraints and bytecode). One line per set:
# the wall seconds of each step, the venv's size (du -sm), torch's share, the number of packages.
# Figures in docs/benchmarks.md ("Installing").
#
#   benchmarks/bench_install.sh        (from the repository root; TORCH_PIP_ARGS as for make)
set -uo pipefail
cd "$(dirname "$0")/.."
M=build/install-bench
mkdir -p "$M"
seconds() { echo "$2 - $1" | bc; }
for set in student all; do
  spec=$([ "$set" = student ] && echo . || echo '.[dev]')
  V=$M/venv-$set
  rm -rf "$V"
  t0=$(date +%s.%N)
  python3 -m venv "$V"
  "$V/bin/python" -m pip install -q --upgrade pip
  t1=$(date +%s.%N)
  "$V/bin/python" -m pip install -q torch==2.13.0 ${TORCH_PIP_ARGS:-}
  t2=$(date +%s.%N)
  "$V/bin/python" -m pip install -q -c requirements/constraints.txt uv
  t3=$(date +%s.%N)
  "$V/bin/uv" pip install --python "$V/bin/python" -q --compile-bytecode -c requirements/constraints.txt -e "$spec"
  rc=$?
  t4=$(date +%s.%N)
  size=$(du -sm "$V" | cut -f1)
  torch_size=$(du -sm "$V"/lib/python3*/site-packages/torch | cut -f1)
  count=$("$V/bin/uv" pip list --python "$V/bin/python" 2>/dev/null | tail -n +3 | wc -l)
  echo "$set rc=$rc venv+pip=$(seconds "$t0" "$t1")s torch=$(seconds "$t1" "$t2")s uv=$(seconds "$t2" "$t3")s" \
       "rest=$(seconds "$t3" "$t4")s total=$(seconds "$t0" "$t4")s size=${size}MB torch=${torch_size}MB packages=$count"
done
