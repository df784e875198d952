#!/usr/bin/env bash
# bench/moe_expert_parallel.sh [HIDDEN] [SEQ] [ITERS]: a Llama-shaped mixture of experts (4 layers,
# 8 heads in 4 key/value groups, 8 experts of top 2 with SwiGLU width 2 x HIDDEN, bf16, ZeRO 1)
# on 2 ranks, every expert on both (ep 1) against the experts split over them (ep 2), dropless and
# with a capacity factor of 1.0. One JSON line per run: the step time (median of the steps after
# the first), rank 0's peak bytes by memory category (the experts' parameters, gradients and
# states halve at ep 2; dropless the dispatch buffers are sized for the worst routing) and the
# bytes per step over dp (with the experts' edp) and ep (docs/results/moe.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hidden=${1:-256}
seq=${2:-512}
iters=${3:-8}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
lscpu | grep -E "Model name" | head -1
grep -o -E 'avx512_bf16|amx_bf16|avx512f ' /proc/cpuinfo | sort -u | tr '\n' ' '
echo
run() { # name, extra flags...
  local name=$1
  shift
  rm -f "$work/m.jsonl"
  launch/mpirun.sh -np 2 build/bin/zerotron train --mock-data --vocab-size 8192 --num-layers 4 \
    --hidden-size "$hidden" --num-attention-heads 8 --group-query-attention --num-query-groups 4 \
    --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear \
    --untie-embeddings-and-output-weights --seq-length "$seq" --micro-batch-size 4 \
    --global-batch-size 8 --bf16 --zero-stage 1 --num-experts 8 --moe-router-topk 2 \
    --moe-ffn-hidden-size $((2 * hidden)) --moe-aux-loss-coeff 0.01 --train-iters "$iters" \
    --lr 3e-4 --log-interval 1000 --metrics-file "$work/m.jsonl" "$@" >/dev/null
  python3 - "$work/m.jsonl" "$name" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"lm_loss"' in l]
last = steps[-1]
mem = last["memory"]
print(json.dumps({"run": sys.argv[2],
                  "step_ms_median": round(statistics.median(s["elapsed_ms"] for s in steps[1:]), 1),
                  "lm_loss": round(last["lm_loss"], 4),
                  "peak_bytes": {k: mem[k] for k in ("params", "grads", "optimizer", "activations",
                                                     "buffers") if k in mem},
                  "comm_bytes_per_step": last["comm_bytes"]}))
PY
}
run ep1-dropless
run ep2-dropless --expert-model-parallel-size 2
run ep1-capacity1 --moe-expert-capacity-factor 1.0
run ep2-capacity1 --moe-expert-capacity-factor 1.0 --expert-model-parallel-size 2
