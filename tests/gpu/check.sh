#!/usr/bin/env bash
# The GPU check, one script for a machine with a CUDA GPU (budget: under 8 minutes):
#   1. configure and build for this GPU's architecture (zerotron and the tests/gpu programs only),
#   2. run the GPU tests (ctest -L gpu),
#   3. a throughput run on one GPU: a ~1.3B-parameter GPT (24 layers, hidden 2048, 16 heads,
#      seq 1024), bf16, ZeRO stage 2 and 3, 20 steps each, printing tokens/s, TFLOP/s, MFU against
#      the GPU's dense bf16 peak, and MemoryPool's peak bytes per category.
# Usage: tests/gpu/check.sh [build-dir]   (default: build-gpu next to the sources)
# Exits non-zero when the build, a test or a benchmark run fails; later phases still run after a
# test failure so one run reports everything.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-${root}/build-gpu}"
jobs="$(nproc)"
status=0
start=$(date +%s)
deadline=$((start + 465)) # the whole script stays under 8 minutes

phase() { printf '\n==== %s (%ss elapsed)\n' "$1" "$(($(date +%s) - start))"; }
# Seconds a phase may take: its own cap, or what is left before the deadline if that is less.
budget() {
  local left=$((deadline - $(date +%s)))
  if ((left < 1)); then left=1; fi # timeout 0 would mean no limit
  if ((left < $1)); then echo "${left}"; else echo "$1"; fi
}

phase "GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

mkdir -p "${build}"
phase "configure"
# native: the architecture of the GPU in this machine only (CMake 3.24+), which also keeps the
# kernel build short.
if ! cmake -S "${root}" -B "${build}" -G Ninja -DCMAKE_BUILD_TYPE=Release -DZT_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=native -DZT_BUILD_BENCH=OFF >"${build}/check-configure.log" 2>&1; then
  tail -n 40 "${build}/check-configure.log"
  echo "check.sh: configure failed" >&2
  exit 1
fi
grep -E "CUDA backend" "${build}/check-configure.log" || true

phase "build"
mapfile -t gpu_targets < <(ninja -C "${build}" -t targets all 2>/dev/null |
  grep -oE '^bin/gpu_[A-Za-z0-9_]+' | sort -u)
if ! timeout "$(budget 270)" ninja -C "${build}" -j "${jobs}" bin/zerotron "${gpu_targets[@]}" \
  >"${build}/check-build.log" 2>&1; then
  grep -E "error|FAILED" -A 3 "${build}/check-build.log" | head -n 60
  echo "check.sh: build failed" >&2
  exit 1
fi
echo "built zerotron and ${#gpu_targets[@]} GPU test programs"

phase "tests (ctest -L gpu)"
if ! timeout "$(budget 150)" ctest --test-dir "${build}" -L gpu --timeout 120 --output-on-failure; then
  status=1
fi

phase "throughput: ~1.3B GPT, bf16, one GPU"
name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
# Dense bf16 tensor-core peak (no sparsity), TFLOP/s.
case "${name}" in
  *H100*SXM* | *H100\ 80GB\ HBM3* | *H200*) peak=989 ;;
  *A100*) peak=312 ;;
  *) peak=unknown ;;
esac
echo "device: ${name:-unknown}, dense bf16 peak: ${peak} TFLOP/s"

for stage in 2 3; do
  metrics="${build}/bench_stage${stage}.jsonl"
  rm -f "${metrics}"
  limit="$(budget 100)"
  if ((limit < 30)); then
    echo "check.sh: no time left for the stage ${stage} run (the deadline keeps the script short)"
    status=1
    continue
  fi
  if ! timeout "${limit}" "${build}/bin/zerotron" train --device cuda --mock-data --vocab-size 50257 \
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 1024 \
    --micro-batch-size 4 --global-batch-size 4 --train-iters 20 --lr 1e-4 --bf16 \
    --zero-stage "${stage}" --log-interval 5 --metrics-file "${metrics}"; then
    echo "check.sh: the stage ${stage} run failed" >&2
    status=1
    continue
  fi
  if command -v python3 >/dev/null; then
    python3 - "${metrics}" "${peak}" "${stage}" <<'PY'
import json, statistics, sys
path, peak, stage = sys.argv[1], sys.argv[2], sys.argv[3]
steps = [json.loads(l) for l in open(path) if '"iteration"' in l and "lm_loss" in l]
warm = steps[3:] or steps  # the first steps pay for allocation and cuBLAS heuristics
tok = statistics.median(s["tokens_per_s"] for s in warm)
tfl = statistics.median(s["tflops_per_rank"] for s in warm)
mfu = f"{100 * tfl / float(peak):.1f}%" if peak != "unknown" else "unknown"
last = steps[-1]
print(f"stage {stage}: {last['num_parameters'] / 1e9:.2f}B parameters, "
      f"median over steps {len(steps) - len(warm) + 1}-{len(steps)}: "
      f"{tok:.0f} tokens/s, {tfl:.1f} TFLOP/s, MFU {mfu}, "
      f"loss {steps[0]['lm_loss']:.3f} -> {last['lm_loss']:.3f}")
mem = last["memory"]
print("  peak memory (GiB): " + ", ".join(
    f"{k} {v / 2**30:.2f}" for k, v in mem.items() if isinstance(v, (int, float)) and
    k != "fragmentation"))
PY
  else
    tail -n 1 "${metrics}"
  fi
done

phase "done"
exit "${status}"
