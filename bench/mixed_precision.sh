#!/usr/bin/env bash
# The issue-14 CPU comparison in one run: zerotron fp32, zerotron bf16, PyTorch eager fp32 and
# PyTorch eager bf16 autocast on the bench config (8 layers, hidden 512, 8 heads, seq 512, micro
# batch 4, vocab 8192), 2 threads, then one JSON object with the four medians, peak RSS and the
# ratios the issue states (zerotron bf16 / fp32 step <= 0.6, / PyTorch autocast <= 0.8, peak RSS
# bf16 / fp32 <= 0.75). Runs are interleaved (fp32, bf16, torch fp32, torch bf16) `rounds` times
# so drift on a shared machine hits all four alike; the medians are over every measured step.
# OpenBLAS variables are left as the environment has them (say so when reporting).
# Usage: bench/mixed_precision.sh [rounds=2] [steps=3]   (PyTorch runs skip if torch is absent)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
steps=${2:-3}
bin="$root/build/bin/bench_step"
export OMP_NUM_THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
for r in $(seq "$rounds"); do
  "$bin" --steps "$steps" --warmup 1 >>"$tmp/zt_fp32.jsonl"
  "$bin" --steps "$steps" --warmup 1 --bf16 >>"$tmp/zt_bf16.jsonl"
  if [ "$have_torch" = 1 ]; then
    python3 "$root/bench/peers/torch_step.py" --threads 2 --steps "$steps" --warmup 1 \
      >>"$tmp/pt_fp32.jsonl"
    python3 "$root/bench/peers/torch_step.py" --threads 2 --steps "$steps" --warmup 1 \
      --dtype bf16 >>"$tmp/pt_bf16.jsonl"
  fi
done
python3 - "$tmp" <<'PY'
import json, statistics, sys
from pathlib import Path
tmp = Path(sys.argv[1])
def load(name):
    p = tmp / f"{name}.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []
runs = {k: load(k) for k in ("zt_fp32", "zt_bf16", "pt_fp32", "pt_bf16")}
med = {k: statistics.median(r["median_step_ms"] for r in v) for k, v in runs.items() if v}
rss = {k: max(r["peak_rss_bytes"] for r in v) for k, v in runs.items() if v}
out = {"median_step_ms": med, "peak_rss_bytes": rss,
       "zerotron_bf16_over_fp32_step": med["zt_bf16"] / med["zt_fp32"],
       "zerotron_bf16_over_fp32_rss": rss["zt_bf16"] / rss["zt_fp32"]}
if "pt_bf16" in med:
    out["zerotron_bf16_over_pytorch_autocast_step"] = med["zt_bf16"] / med["pt_bf16"]
    out["zerotron_fp32_over_pytorch_fp32_step"] = med["zt_fp32"] / med["pt_fp32"]
print(json.dumps(out, indent=1))
PY
