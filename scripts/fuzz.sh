#!/usr/bin/env bash
# scripts/fuzz.sh [seconds] [fuzzer...]
# Builds the libFuzzer targets of tests/fuzz with clang (build-fuzz/) and runs each for a fixed
# time (default 60 s), one after another, from seed corpora made of the test fixtures. Prints one
# line per fuzzer: executions, executions/s, corpus size and findings. Exits non-zero if any
# fuzzer found a crash, a hang (a unit over 10 s), a leak or a sanitizer report; the reproducer
# is left in build-fuzz/findings/<fuzzer>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(idx_fuzz options_fuzz tokenizer_fuzz document_reader_fuzz blend_fuzz)
fuzzers=("$@")
((${#fuzzers[@]})) || fuzzers=("${all[@]}")
cxx=${CXX:-$(command -v clang++ || command -v clang++-14)}
if [[ ! -f build-fuzz/build.ninja ]]; then
  CXX=$cxx cmake -S . -B build-fuzz -G Ninja -DZT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DZT_CUDA=OFF -DZT_BUILD_TESTS=OFF -DZT_BUILD_BENCH=OFF >/dev/null
fi
ninja -C build-fuzz "${fuzzers[@]}" >/dev/null

fx=tests/fixtures
seed() {  # seed NAME: fills build-fuzz/corpus/NAME (kept between runs: it grows)
  local d=build-fuzz/corpus/$1
  mkdir -p "$d"
  case $1 in
    idx_fuzz) cp $fx/megatron/*.idx "$d/" ;;
    options_fuzz)
      printf '{"num_layers": 2, "train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true, "loss_scale": 0}, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8}, "data_path": ["0.7", "a", "0.3", "b"], "device_memory": "32GiB"}\0--mock-data\n--vocab-size\n64\n--hidden-size=64\n--split\n969,30,1' >"$d/seed1"
      printf '\0--num-layers\n4\n--global-batch-size\n8\n--lr-decay-style\ncosine' >"$d/seed2" ;;
    tokenizer_fuzz)
      { cat $fx/bpe_kjv/vocab.json; printf '\0'; cat $fx/bpe_kjv/merges.txt; printf '\0'; head -c 300 $fx/bpe_train_corpus.txt; } >"$d/kjv"
      printf '{"a": 0}\0a a\0text' >"$d/small" ;;
    document_reader_fuzz)
      { printf '\0'; head -c 2000 $fx/bpe_train_corpus.txt; } >"$d/text"
      printf '\003{"text": "a b", "title": "t"}\n\n{"text": "\\u00e9\\n", "title": ""}\n' >"$d/jsonl" ;;
    blend_fuzz)
      printf '\x10\x00\x00\x00969,30,1\x000.7 data/a 0.3 data/b' >"$d/seed1"
      printf '\x03\x00\x00\x001/2\x00prefix' >"$d/seed2" ;;
  esac
}

status=0
for f in "${fuzzers[@]}"; do
  seed "$f"
  art=build-fuzz/findings/$f/
  mkdir -p "$art"
  log=build-fuzz/findings/$f.log
  set +e
  build-fuzz/bin/$f -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
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
