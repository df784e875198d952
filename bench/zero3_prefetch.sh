#!/usr/bin/env bash
# Stage 3's prefetch on this machine: the same GPT (4 layers, hidden 256, sequence 128, fp32,
# reduce bucket 1e5 so ~8 units per layer) trains on 2 CPU ranks at several
# --prefetch-bucket-size / --max-live-parameters settings, interleaved round by round so the
# machine's load falls on every setting alike. One JSON object: per setting the median step
# time, the median comm_hidden_fraction and comm_exposed_ms (each gather's and reduction's
# completion as MPI saw it, src/comm/timeline.h), the Buffers peak and the losses (equal across
# settings), and the ratio of each median step time to the no-prefetch setting's.
# Usage: bench/zero3_prefetch.sh [rounds=3] [steps=6]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-3}
steps=${2:-6}
zt="$root/build/bin/zerotron"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --vocab-size 512
  --seq-length 128 --micro-batch-size 2 --global-batch-size 8 --reduce-bucket-size 1e5
  --zero-stage 3 --mock-data --log-interval 1 --train-iters "$steps")
settings=("1 2e5" "1 1e9" "2e5 1e9" "8e5 1e9")  # bucket live: none ahead, 1, 2, 8 units
for r in $(seq "$rounds"); do
  for s in "${settings[@]}"; do
    read -r b l <<<"$s"
    "$root/launch/mpirun.sh" -np 2 "$zt" train "${model[@]}" --prefetch-bucket-size "$b" \
      --max-live-parameters "$l" --metrics-file "$tmp/$b-$l-$r.jsonl" >/dev/null
  done
done
python3 - "$tmp" "$rounds" "${settings[@]}" <<'PY'
import json, statistics, sys, platform, subprocess
from pathlib import Path
tmp, rounds, settings = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
flags = next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), [])
out = {"cpu": cpu, "isa": [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags],
       "load_avg": open("/proc/loadavg").read().split()[:3], "settings": []}
for s in settings:
    b, l = s.split()
    recs = [json.loads(x) for r in range(1, rounds + 1)
            for x in (tmp / f"{b}-{l}-{r}.jsonl").read_text().splitlines()]
    later = [x for x in recs if x["iteration"] > 1]  # the first step records the order
    out["settings"].append({
        "prefetch_bucket_size": float(b), "max_live_parameters": float(l),
        "median_step_ms": statistics.median(x["elapsed_ms"] for x in later),
        "median_comm_hidden_fraction": statistics.median(x["comm_hidden_fraction"] for x in later),
        "median_comm_exposed_ms": statistics.median(x["comm_exposed_ms"] for x in later),
        "buffers_peak": recs[-1]["memory"]["buffers"] if isinstance(recs[-1].get("memory"), dict) else None,
        "lm_loss": [x["lm_loss"] for x in recs[:int(len(recs) / rounds)]],
    })
base = out["settings"][0]["median_step_ms"]
for x in out["settings"]:
    x["step_time_ratio_to_no_prefetch"] = x["median_step_ms"] / base
print(json.dumps(out))
PY
