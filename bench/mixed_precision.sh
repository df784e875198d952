#!/usr/bin/env bash
# The issue-14 CPU comparison in one run: zerotron fp32, zerotron bf16, PyTorch eager fp32 and
# PyTorch eager bf16 autocast on the bench config (8 layers, hidden 512, 8 heads, seq 512, micro
# batch 4, vocab 8192), 2 threads, then one JSON object with the medians, peak RSS and the
# ratios the issue states (zerotron bf16 / fp32 step <= 0.6, / PyTorch autocast <= 0.8, peak RSS
# bf16 / fp32 <= 0.75). zerotron bf16 runs twice per round: with the default stored working
# parameters ("zt_bf16", the zerotron_bf16_* ratios) and with --working-params cast
# ("zt_bf16_cast", the zerotron_bf16_cast_* ratios, its step against stored, and what it cast).
# Runs are interleaved (fp32, bf16, bf16 cast, torch fp32, torch bf16) `rounds` times so drift
# on a shared machine hits all of them alike; the medians are over every measured step.
# OpenBLAS variables are left as the environment has them (say so when reporting). The JSON
# names the CPU (/proc/cpuinfo model, family, model number, bf16 flags), oneDNN's effective ISA
# and the load average before and after the runs.
# BASELINE_BENCH_STEP=<another bench_step> adds that binary's fp32 and bf16 runs to every round
# (before the others) and reports its medians and ratios too ("base_" keys): a before/after
# comparison under the same conditions.
# Usage: bench/mixed_precision.sh [rounds=2] [steps=3]   (PyTorch runs skip if torch is absent)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-2}
steps=${2:-3}
bin="$root/build/bin/bench_step"
export OMP_NUM_THREADS=2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=${BASELINE_BENCH_STEP:-}
have_torch=0
python3 -c "import torch" 2>/dev/null && have_torch=1
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_before"
for _ in $(seq "$rounds"); do
  if [ -n "$base" ]; then
    "$base" --steps "$steps" --warmup 1 >>"$tmp/base_zt_fp32.jsonl"
    "$base" --steps "$steps" --warmup 1 --bf16 >>"$tmp/base_zt_bf16.jsonl"
  fi
  "$bin" --steps "$steps" --warmup 1 >>"$tmp/zt_fp32.jsonl"
  "$bin" --steps "$steps" --warmup 1 --bf16 >>"$tmp/zt_bf16.jsonl"
  "$bin" --steps "$steps" --warmup 1 --bf16 --working-params cast >>"$tmp/zt_bf16_cast.jsonl"
  if [ "$have_torch" = 1 ]; then
    python3 "$root/bench/peers/torch_step.py" --threads 2 --steps "$steps" --warmup 1 \
      >>"$tmp/pt_fp32.jsonl"
    python3 "$root/bench/peers/torch_step.py" --threads 2 --steps "$steps" --warmup 1 \
      --dtype bf16 >>"$tmp/pt_bf16.jsonl"
  fi
done
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_after"
python3 - "$tmp" "$root/bench/peers" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[2])
from step_runs import summary
med, rss, out = summary(sys.argv[1], ("zt_fp32", "zt_bf16", "zt_bf16_cast", "pt_fp32", "pt_bf16",
                                      "base_zt_fp32", "base_zt_bf16"))
for p in ("", "base_") if "base_zt_bf16" in med else ("",):
    out[p + "zerotron_bf16_over_fp32_step"] = med[p + "zt_bf16"] / med[p + "zt_fp32"]
    out[p + "zerotron_bf16_over_fp32_rss"] = rss[p + "zt_bf16"] / rss[p + "zt_fp32"]
    if "pt_bf16" in med:
        out[p + "zerotron_bf16_over_pytorch_autocast_step"] = med[p + "zt_bf16"] / med["pt_bf16"]
        out[p + "zerotron_fp32_over_pytorch_fp32_step"] = med[p + "zt_fp32"] / med["pt_fp32"]
# bf16 with the default stored working parameters (above) and with --working-params cast.
out["zerotron_bf16_cast_over_fp32_step"] = med["zt_bf16_cast"] / med["zt_fp32"]
out["zerotron_bf16_cast_over_fp32_rss"] = rss["zt_bf16_cast"] / rss["zt_fp32"]
out["zerotron_bf16_cast_over_stored_step"] = med["zt_bf16_cast"] / med["zt_bf16"]
out["zerotron_bf16_cast"] = json.loads(open(sys.argv[1] + "/zt_bf16_cast.jsonl").readline())["cast"]
print(json.dumps(out, indent=1))
PY
