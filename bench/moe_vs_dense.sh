#!/usr/bin/env bash
# bench/moe_vs_dense.sh [HIDDEN] [SEQ] [ITERS]: a Llama-shaped model (4 layers, 8 heads in 4
# key/value groups, SwiGLU width 4 x HIDDEN, bf16, one rank) dense, against the same model whose
# MLPs are 8 experts of top 2: (a) experts of half the dense width, so a token meets the dense
# model's parameters (same active size), and (b) experts of the dense width (twice the MLP FLOPs
# of a token). One JSON line per model: parameters, active parameters, FLOPs per token (6 x active
# + attention), the step time (median of the steps after the first), and against the dense model
# the FLOP ratio and the step-time ratio (docs/results/moe.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hidden=${1:-512}
seq=${2:-1024}
iters=${3:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
lscpu | grep -E "Model name" | head -1
ffn=$((4 * hidden))
run() { # name, extra flags...
  local name=$1
  shift
  rm -f "$work/m.jsonl"
  build/bin/zerotron train --mock-data --vocab-size 8192 --num-layers 4 --hidden-size "$hidden" \
    --num-attention-heads 8 --group-query-attention --num-query-groups 4 \
    --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear \
    --untie-embeddings-and-output-weights --ffn-hidden-size "$ffn" --seq-length "$seq" \
    --micro-batch-size 4 --global-batch-size 4 --bf16 --train-iters "$iters" --lr 3e-4 \
    --log-interval 1000 --metrics-file "$work/m.jsonl" "$@" >/dev/null
  python3 - "$work/m.jsonl" "$name" "$work/dense.json" <<'PY'
import json, os, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"lm_loss"' in l]
ms = statistics.median(s["elapsed_ms"] for s in steps[1:])
tokens = steps[-1]["tokens_per_s"] * steps[-1]["elapsed_ms"] / 1e3
flops = steps[-1]["tflops_per_rank"] * 1e12 * steps[-1]["elapsed_ms"] / 1e3 / tokens
out = {"model": sys.argv[2], "num_parameters": steps[-1]["num_parameters"],
       "flops_per_token": round(flops), "step_ms_median": round(ms, 1),
       "tokens_per_s": round(tokens / (ms / 1e3))}
if "load_balancing_loss" in steps[-1]:
    out["expert_load_max_over_mean"] = max(l["max_load"] for l in steps[-1]["moe_layers"])
if sys.argv[2] == "dense":
    json.dump(out, open(sys.argv[3], "w"))
else:
    dense = json.load(open(sys.argv[3]))
    out["flop_ratio"] = round(flops / dense["flops_per_token"], 3)
    out["step_time_ratio"] = round(ms / dense["step_ms_median"], 3)
print(json.dumps(out))
PY
}
run dense
run moe-8x-half-width --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size $((ffn / 2)) \
  --moe-aux-loss-coeff 0.01
run moe-8x-full-width --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size "$ffn" \
  --moe-aux-loss-coeff 0.01
