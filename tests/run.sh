#!/usr/bin/env bash
# Fresh machine to a test report: installs what is missing (Debian packages, then the reference
# checks' pinned Python packages while the release build compiles), builds, runs the whole CTest
# suite while it builds the single-process suites again under AddressSanitizer +
# UndefinedBehaviorSanitizer (preset asan-all, target single_process_tests, niced), and runs
# them under it: the unit tests (kernels
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
# The sanitizer build compiles at the lowest priority while the release suite runs: a third of
# the cores sit idle during that suite (tests waiting on launches, timeouts and each other),
# and a niced compiler takes only what the tests leave. Its output goes to a log, shown if it
# fails.
asan_log="$root/build/asan-all-build.log"
# Two tests run at once on every pair of cores, each with an OpenMP team of its own (and the
# niced build beside them): OpenMP threads that spin at a barrier then hold a core the other
# test's threads wait for. Waiting threads sleep instead (measured: the unit label under two
# niced busy loops in 11.6 s instead of 32.2 s). It changes no result, only how threads wait.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
nice -n 19 "$root/scripts/build.sh" asan-all --target single_process_tests >"$asan_log" 2>&1 &
asan_build=$!
release_rc=0
ctest --preset release -j "$(nproc)" --timeout 600 || release_rc=$?
asan_rc=0
wait "$asan_build" || asan_rc=$?
if [ "$asan_rc" -ne 0 ]; then
  tail -n 50 "$asan_log"
  echo "tests/run.sh: the sanitizer build failed (exit $asan_rc; $asan_log)" >&2
  exit "$asan_rc"
fi
[ "$release_rc" -eq 0 ] || exit "$release_rc"
ctest --preset asan-all -j "$(nproc)" --timeout 1200 -L 'unit|hostile|fuzz|reference' \
  -LE python-reference
