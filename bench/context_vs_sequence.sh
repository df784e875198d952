#!/usr/bin/env bash
# bench/context_vs_sequence.sh [RANKS] [SEQ] [ITERS]: the same Llama-shaped model (2 layers,
# hidden 256, 8 heads in 4 key/value groups, bf16, one sample per step) on RANKS ranks (default
# 4) split three ways: tensor parallel with sequence parallelism, context parallel, and half of
# each; one JSON line per layout with its per-rank activation bytes, step times (median of the
# steps after the first) and bytes per step by group (docs/results/context-parallel.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ranks=${1:-4}
seq=${2:-8192}
iters=${3:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
lscpu | grep -E "Model name" | head -1
half=$((ranks / 2))
for layout in "$ranks 1" "1 $ranks" "$half $half"; do
  read -r tp cp <<<"$layout"
  sp=()
  ((tp > 1)) && sp=(--sequence-parallel)
  rm -f "$work/m.jsonl"
  launch/mpirun.sh -np "$ranks" build/bin/zerotron train --mock-data --vocab-size 8192 \
    --num-layers 2 --hidden-size 256 --num-attention-heads 8 --group-query-attention \
    --num-query-groups 4 --position-embedding-type rope --normalization RMSNorm --swiglu \
    --disable-bias-linear --untie-embeddings-and-output-weights --seq-length "$seq" \
    --micro-batch-size 1 --global-batch-size 1 --bf16 --train-iters "$iters" --lr 3e-4 \
    --log-interval 1000 --tensor-model-parallel-size "$tp" "${sp[@]}" \
    --context-parallel-size "$cp" --metrics-file "$work/m.jsonl" >/dev/null
  python3 - "$work/m.jsonl" "$tp" "$cp" "$seq" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"lm_loss"' in l]
print(json.dumps({"tp": int(sys.argv[2]), "sequence_parallel": int(sys.argv[2]) > 1,
                  "cp": int(sys.argv[3]), "seq_length": int(sys.argv[4]),
                  "activation_bytes_per_rank": max(s["memory"]["activations"] for s in steps),
                  "step_ms_median": round(statistics.median(s["elapsed_ms"] for s in steps[1:]), 1),
                  "lm_loss": [round(s["lm_loss"], 6) for s in steps],
                  "comm_bytes_per_step": steps[-1]["comm_bytes"]}))
PY
done
