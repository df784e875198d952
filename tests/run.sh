#!/usr/bin/env bash
# Fresh machine to a test report: installs what is missing, builds, runs the whole CTest suite,
# then the kernel tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
cd "$root"
ctest --preset release -j "$(nproc)" --timeout 600
"$root/scripts/build.sh" asan --target kernel_tests
ctest --test-dir build-asan -j "$(nproc)" --output-on-failure --timeout 600
