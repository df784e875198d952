#!/usr/bin/env bash
# The CPU bench config in Llama shape (the mixed-precision bench's 8 layers, hidden 512, 8 heads,
# seq 512, micro batch 4, vocab 8192, now with rotary embeddings, RMSNorm, SwiGLU at the default
# width 1344, 4 key/value groups, an untied head and no biases), 2 threads: zerotron fp32 and
# bf16 (bench_step) against PyTorch eager transformers.LlamaForCausalLM fp32 and bf16 autocast
# (bench/peers/torch_llama_step.py) on the same model (the same parameter count), interleaved
# `rounds` times so load drift on a shared machine hits all four alike. Prints one JSON object:
# the CPU and oneDNN ISA, load average before and after, median step ms and peak RSS of each
# kind (medians over every measured step), and the ratios the targets are stated in:
# zerotron / PyTorch step time (<= 0.8) and peak RSS (<= 1.0), in fp32 and in bf16.
# Usage: bench/llama_peers.sh [rounds=2] [steps=3] [warmup=2]   (PyTorch runs need torch and
#        transformers; without them only zerotron runs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
steps=${2:-3}
warmup=${3:-2}
bin="$root/build/bin/bench_step"
export OMP_NUM_THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
llama=(--position-embedding-type rope --normalization RMSNorm --swiglu --group-query-attention
  --num-query-groups 4 --untie-embeddings-and-output-weights --disable-bias-linear)
have_torch=0
python3 -c "import torch, transformers" 2>/dev/null && have_torch=1
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_before"
for r in $(seq "$rounds"); do
  "$bin" --steps "$steps" --warmup "$warmup" "${llama[@]}" >>"$tmp/zt_fp32.jsonl"
  "$bin" --steps "$steps" --warmup "$warmup" --bf16 "${llama[@]}" >>"$tmp/zt_bf16.jsonl"
  if [ "$have_torch" = 1 ]; then
    for dt in fp32 bf16; do
      python3 "$root/bench/peers/torch_llama_step.py" --threads 2 --steps "$steps" \
        --warmup "$warmup" --num-query-groups 4 --dtype "$dt" >>"$tmp/pt_$dt.jsonl"
    done
  fi
done
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_after"
python3 - "$tmp" "$root/bench/peers" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from step_runs import summary
med, rss, out = summary(sys.argv[1], ("zt_fp32", "zt_bf16", "pt_fp32", "pt_bf16"))
for dt in ("fp32", "bf16"):
    if "pt_" + dt in med:
        out[f"zerotron_over_pytorch_{dt}_step"] = med["zt_" + dt] / med["pt_" + dt]
        out[f"zerotron_over_pytorch_{dt}_rss"] = rss["zt_" + dt] / rss["pt_" + dt]
out["zerotron_bf16_over_fp32_step"] = med["zt_bf16"] / med["zt_fp32"]
print(json.dumps(out, indent=1))
PY
