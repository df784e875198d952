#!/usr/bin/env bash
# Fresh machine to a test report: installs what is missing (Debian packages, then the reference
# checks' pinned Python packages while the release build compiles), builds, runs the whole CTest
# suite, then builds the
# single-process suites again under AddressSanitizer + UndefinedBehaviorSanitizer (preset
# asan-all, target single_process_tests) and runs them under it: the unit tests (kernels
# included), the hostile-input suite, the fuzz regressions and the C++ reference comparison. The
# checks that drive zerotron from a Python reference package (label python-reference) run in the
# release suite only: under the sanitizers zerotron's readers of what they feed it (safetensors,
# config.json, tokenizer.json) run in the unit tests and fuzz regressions. The multi-rank (dist)
# and end-to-end training (train) labels run under the sanitizers by hand only: see
# docs/results/test-suite.md for why and for their last result; the docs checks (label docs)
# and the paper's tables (label planner) run in the release suite only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
# The Python packages download while the release build compiles (the one waits on the network,
# the other on the cores); configuring again afterwards gives the tests the environment's Python.
"$root/scripts/install-python-deps.sh" &
python_deps=$!
"$root/scripts/build.sh" release
wait "$python_deps"
"$root/scripts/build.sh" release
cd "$root"
ctest --preset release -j "$(nproc)" --timeout 600
"$root/scripts/build.sh" asan-all --target single_process_tests
ctest --preset asan-all -j "$(nproc)" --timeout 1200 -L 'unit|hostile|fuzz|reference' \
  -LE python-reference
