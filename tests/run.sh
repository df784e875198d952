#!/usr/bin/env bash
# Fresh machine to a test report: installs what is missing, builds, runs the whole CTest suite,
# then builds everything again under AddressSanitizer + UndefinedBehaviorSanitizer (preset
# asan-all) and runs the single-process suites under it: the unit tests (kernels included), the
# hostile-input suite, the fuzz regressions and the PyTorch reference checks. The multi-rank
# (dist) and end-to-end training (train) labels run under the sanitizers by hand only: see
# docs/results/test-suite.md for why and for their last result.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/install-python-deps.sh" # torch, transformers, ... for the reference checks
"$root/scripts/build.sh" release
cd "$root"
ctest --preset release -j "$(nproc)" --timeout 600
"$root/scripts/build.sh" asan-all
ctest --preset asan-all -j "$(nproc)" --timeout 1200 -L 'unit|hostile|fuzz|reference'
