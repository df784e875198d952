#!/usr/bin/env bash
# bench/context_vs_sequence.sh [RANKS] [SEQ] [ITERS]: the same Llama-shaped model (2 layers,
# hidden 256, 8 heads in 4 key/value groups, bf16, one sample per step) on RANKS ranks (default
# 4) split five ways: tensor parallel with sequence parallelism, context parallel by the ring and
# by the all-to-all, and half of each (both comm types); one JSON line per layout with its
# per-rank activation bytes, step times (median of the steps after the first) and bytes per step
# by group (docs/results/context-parallel.md).
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
for layout in "$ranks 1 p2p" "1 $ranks p2p" "1 $ranks a2a" "$half $half p2p" "$half $half a2a"; do
  read -r tp cp comm <<<"$layout"
  sp=()
  ((tp > 1)) && sp=(--sequence-parallel)
  rm -f "$work/m.jsonl"
  launch/mpirun.sh -np "$ranks" build/bin/zerotron train --mock-data --vocab-size 8192 \
    --num-layers 2 --hidden-size 256 --num-attention-heads 8 --group-query-attention \
    --num-query-groups 4 --position-embedding-type rope --normalization RMSNorm --swiglu \
    --disable-bias-linear --untie-embeddings-and-output-weights --seq-length "$seq" \
    --micro-batch-size 1 --global-batch-size 1 --bf16 --train-iters "$iters" --lr 3e-4 \
    --log-interval 1000 --tensor-model-parallel-size "$tp" "${sp[@]}" \
    --context-parallel-size "$cp" --cp-comm-type "$comm" --metrics-file "$work/m.jsonl" >/dev/null
  python3 - "$work/m.jsonl" "$tp" "$cp" "$seq" "$comm" <<'PY'
import json, statistics, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"lm_loss"' in l]
cp = int(sys.argv[3])
print(json.dumps({"tp": int(sys.argv[2]), "sequence_parallel": int(sys.argv[2]) > 1,
                  "cp": cp, "cp_comm_type": sys.argv[5] if cp > 1 else None,
                  "seq_length": int(sys.argv[4]),
                  "activation_bytes_per_rank": max(s["memory"]["activations"] for s in steps),
                  "step_ms_median": round(statistics.median(s["elapsed_ms"] for s in steps[1:]), 1),
                  "lm_loss": [round(s["lm_loss"], 6) for s in steps],
                  "comm_bytes_per_step": steps[-1]["comm_bytes"]}))
PY
done
