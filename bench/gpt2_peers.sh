#!/usr/bin/env bash
# GPT-2 124M at llm.c's own training shape (micro batch 4, sequence 64; 12 layers, hidden 768,
# 12 heads, vocabulary 50257 padded to 50304), one process, 2 threads: zerotron fp32 and bf16
# (bench_step), llm.c's CPU trainer (bench/peers/llmc_step.sh, fp32) and PyTorch eager fp32 and
# bf16 autocast (bench/peers/torch_step.py), interleaved `rounds` times so load drift on a shared
# machine hits all alike; then one JSON object with the medians, peak RSS and llm.c / zerotron
# step ratios (the target: zerotron at least 2.5x faster than llm.c).
# BASELINE_BENCH_STEP=<another bench_step> adds that binary's runs to every round ("base_" keys).
# Usage: bench/gpt2_peers.sh <llm.c checkout> [rounds=2] [steps=3]
#        (llm.c is skipped without a checkout, PyTorch when torch is absent)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
llmc=${1:-}
rounds=${2:-2}
steps=${3:-3}
bin="$root/build/bin/bench_step"
base=${BASELINE_BENCH_STEP:-}
export OMP_NUM_THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 12 --hidden-size 768 --num-attention-heads 12 --seq-length 64
  --micro-batch-size 4 --vocab-size 50257)
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_before"
for _ in $(seq "$rounds"); do
  if [ -n "$base" ]; then
    "$base" --steps "$steps" --warmup 1 "${model[@]}" >>"$tmp/base_zt_fp32.jsonl"
    "$base" --steps "$steps" --warmup 1 --bf16 "${model[@]}" >>"$tmp/base_zt_bf16.jsonl"
  fi
  "$bin" --steps "$steps" --warmup 1 "${model[@]}" >>"$tmp/zt_fp32.jsonl"
  "$bin" --steps "$steps" --warmup 1 --bf16 "${model[@]}" >>"$tmp/zt_bf16.jsonl"
  if [ -n "$llmc" ]; then
    "$root/bench/peers/llmc_step.sh" "$llmc" "$steps" 2 >>"$tmp/llmc.jsonl"
  fi
  if [ "$have_torch" = 1 ]; then
    for dt in fp32 bf16; do
      python3 "$root/bench/peers/torch_step.py" --threads 2 --steps "$steps" --warmup 1 \
        --dtype "$dt" "${model[@]}" >>"$tmp/pt_$dt.jsonl"
    done
  fi
done
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_after"
python3 - "$tmp" "$root/bench/peers" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from step_runs import summary
kinds = ("zt_fp32", "zt_bf16", "llmc", "pt_fp32", "pt_bf16", "base_zt_fp32", "base_zt_bf16")
med, _, out = summary(sys.argv[1], kinds)
for k in med:
    if k.endswith(("zt_fp32", "zt_bf16")):
        if "llmc" in med:
            out[f"llmc_over_{k}_step"] = med["llmc"] / med[k]
        for pt in ("pt_fp32", "pt_bf16"):
            if pt in med:
                out[f"{pt}_over_{k}_step"] = med[pt] / med[k]
print(json.dumps(out, indent=1))
PY
