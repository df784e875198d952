#!/usr/bin/env bash
# scripts/fuzz.sh [seconds] [fuzzer...]
# Builds the libFuzzer targets of tests/fuzz with clang (build-fuzz/) and runs each for a fixed
# time (default 60 s), one after another, from the committed seeds of tests/fuzz/regressions
# (made from the test fixtures by tests/fuzz/make_seeds.py). Prints one line per fuzzer:
# executions, executions/s, corpus size and findings. Exits non-zero if any fuzzer found a crash,
# a hang (a unit over 10 s), a leak or a sanitizer report; the reproducer is left in
# build-fuzz/findings/<fuzzer>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(idx_fuzz options_fuzz tokenizer_fuzz hf_tokenizer_fuzz document_reader_fuzz blend_fuzz
  safetensors_fuzz checkpoint_fuzz)
fuzzers=("$@")
((${#fuzzers[@]})) || fuzzers=("${all[@]}")
cxx=${CXX:-$(command -v clang++ || command -v clang++-14)}
if [[ ! -f build-fuzz/build.ninja ]]; then
  CXX=$cxx cmake -S . -B build-fuzz -G Ninja -DZT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DZT_CUDA=OFF -DZT_BUILD_TESTS=OFF -DZT_BUILD_BENCH=OFF >/dev/null
fi
ninja -C build-fuzz "${fuzzers[@]}" >/dev/null

seed() {  # seed NAME: fills build-fuzz/corpus/NAME (kept between runs: it grows)
  local d=build-fuzz/corpus/$1
  mkdir -p "$d"
  # The committed inputs (tests/fuzz/make_seeds.py writes them from the test fixtures), which
  # CTest also replays (fuzz.NAME); the .idx parser starts from the Megatron fixtures.
  cp tests/fuzz/regressions/"$1"/* "$d/" 2>/dev/null || true
  [[ $1 != idx_fuzz ]] || cp tests/fixtures/megatron/*.idx "$d/"
}

status=0
for f in "${fuzzers[@]}"; do
  seed "$f"
  art=build-fuzz/findings/$f/
  mkdir -p "$art"
  log=build-fuzz/findings/$f.log
  set +e
  # -close_fd_mask=1: the targets' stdout (export's success line) stays out of the log.
  build-fuzz/bin/$f -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=1 \
    -print_final_stats=1 -artifact_prefix="$art" build-fuzz/corpus/$f >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  units=$(find build-fuzz/corpus/$f -type f | wc -l)
  found=$(find "$art" -type f | wc -l)
  echo "$f: ${execs:-?} executions in ${seconds} s (${rate:-?}/s), corpus ${units}, findings ${found}, exit ${rc}"
  if ((rc != 0 || found > 0)); then
    status=1
    grep -m3 -E "ERROR|runtime error|deadly signal|uncaught|Abort" "$log" || true
  fi
done
exit $status
