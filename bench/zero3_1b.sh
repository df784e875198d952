#!/usr/bin/env bash
# The ZeRO-3 1.0B benchmark on this machine: a GPT of 24 layers, hidden 1792, 14 heads,
# vocabulary 50257, sequence 256 (1.016e9 parameters, 16.3 GB of model states) trains 3 steps
# with ZeRO-3 in bf16 on 4 CPU ranks (mock data, micro batch 1, activation checkpointing,
# 5e6-element reduce/all-gather buckets). Then one JSON object: zerotron estimate's plan per
# category, the trainer's measured MemoryPool peak per category (metrics file), each rank's peak
# RSS (/usr/bin/time), the process's fixed overhead (peak RSS of a 2-layer run of the same binary
# on the same ranks minus its own plan), the step times, and the exit status and message of the
# same model at ZeRO stage 0, which `train` must refuse before allocating.
# Usage: bench/zero3_1b.sh [steps=3]   (about 5-10 minutes on 2 cores, ~18 GB of memory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps=${1:-3}
zt="$root/build/bin/zerotron"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
model=(--num-layers 24 --hidden-size 1792 --num-attention-heads 14 --vocab-size 50257
  --seq-length 256)
tiny=(--num-layers 2 --hidden-size 128 --num-attention-heads 4 --vocab-size 50257
  --seq-length 256)
layout=(--micro-batch-size 1 --bf16 --reduce-bucket-size 5e6 --allgather-bucket-size 5e6
  --checkpoint-activations)
plan() {  # plan MODEL...: the plan of this CPU run (MPI stages half reductions in fp32)
  "$zt" estimate "$@" "${layout[@]}" --device cpu --data-parallel-size 4 --zero-stage 3 --json
}
run() {  # run NAME MODEL...: 4 ranks, stage 3; each rank's peak RSS into NAME.rss.<rank>
  local name=$1
  shift
  "$root/launch/mpirun.sh" -np 4 bash -c \
    '/usr/bin/time -f "%M" -o "$0.rss.$OMPI_COMM_WORLD_RANK" "$@"' "$tmp/$name" \
    "$zt" train "$@" "${layout[@]}" --global-batch-size 4 --train-iters "$steps" --mock-data \
    --zero-stage 3 --log-interval 1 --metrics-file "$tmp/$name.jsonl"
}
plan "${model[@]}" >"$tmp/plan.json"
plan "${tiny[@]}" >"$tmp/tiny_plan.json"
run tiny "${tiny[@]}" >"$tmp/tiny.log"
run big "${model[@]}" | tee "$tmp/big.log" >&2
set +e
"$root/launch/mpirun.sh" -np 4 "$zt" train "${model[@]}" "${layout[@]}" --global-batch-size 4 \
  --train-iters 1 --mock-data --zero-stage 0 >"$tmp/stage0.out" 2>"$tmp/stage0.err"
stage0=$?
set -e
python3 - "$tmp" "$stage0" <<'PY'
import json, sys
from pathlib import Path
tmp, stage0 = Path(sys.argv[1]), int(sys.argv[2])
def rss(name):
    return [int(p.read_text().split()[-1]) * 1024 for p in sorted(tmp.glob(f"{name}.rss.*"))]
def steps(name):
    return [json.loads(l) for l in (tmp / f"{name}.jsonl").read_text().splitlines()]
plan, tiny_plan = json.loads((tmp / "plan.json").read_text()), json.loads((tmp / "tiny_plan.json").read_text())
big, tiny = steps("big"), steps("tiny")
out = {
    "plan": plan,
    "measured_memory_pool": big[-1]["memory"],
    "step_ms": [s["elapsed_ms"] for s in big],
    "lm_loss": [s["lm_loss"] for s in big],
    "peak_rss_bytes_per_rank": rss("big"),
    "tiny_peak_rss_bytes_per_rank": rss("tiny"),
    "tiny_plan_total_bytes": tiny_plan["total_bytes"],
    "fixed_overhead_bytes": max(rss("tiny")) - tiny_plan["total_bytes"],
    "stage0_exit_status": stage0,
    "stage0_stderr": (tmp / "stage0.err").read_text().strip(),
}
print(json.dumps(out, indent=1))
PY
