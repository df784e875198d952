#!/usr/bin/env bash
# bench/context_parallel_32k.sh [CP] [ITERS] [COMM]: a Llama-shaped model (2 layers, hidden 256, 8
# heads in 4 key/value groups, bf16) at 32,768 tokens per sample on CP ranks (default 4), context
# parallel over all of them with --cp-comm-type COMM (p2p, the ring, by default; or a2a); prints
# the CPU, the run's log and a JSON line of its per-rank peak memory and step times
# (docs/results/context-parallel.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cp=${1:-4}
iters=${2:-3}
comm=${3:-p2p}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
lscpu | grep -E "Model name" | head -1
grep -o -w -E "avx512_bf16|amx_bf16|avx512f|avx2" /proc/cpuinfo | sort -u | tr '\n' ' '
echo
launch/mpirun.sh -np "$cp" build/bin/zerotron train --mock-data --vocab-size 8192 \
  --num-layers 2 --hidden-size 256 --num-attention-heads 8 --group-query-attention --num-query-groups 4 \
  --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear \
  --untie-embeddings-and-output-weights --seq-length 32768 --micro-batch-size 1 --global-batch-size 1 \
  --context-parallel-size "$cp" --cp-comm-type "$comm" --bf16 --train-iters "$iters" --lr 3e-4 --log-interval 1 \
  --metrics-file "$work/m.jsonl"
python3 - "$work/m.jsonl" "$cp" "$comm" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"lm_loss"' in l]
print(json.dumps({"context_parallel": int(sys.argv[2]), "cp_comm_type": sys.argv[3],
                  "seq_length": 32768,
                  "step_ms": [round(s["elapsed_ms"], 1) for s in steps],
                  "lm_loss": [s["lm_loss"] for s in steps],
                  "activation_bytes_per_rank": max(s["memory"]["activations"] for s in steps),
                  "peak_bytes_per_rank": max(s["memory"]["peak"] for s in steps),
                  "cp_bytes_per_step": steps[-1]["comm_bytes"]["cp"]}))
PY
