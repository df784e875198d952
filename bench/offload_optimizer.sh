#!/usr/bin/env bash
# What --offload-optimizer nvme costs a step with gradient accumulation: a GPT-2 small shape (12
# layers, hidden 768, 12 heads, sequence 512, vocabulary 50257: 124M parameters) in bf16 on one
# CPU rank (ZeRO 0, micro batch 1, global batch 8: 8 micro-batches per step, mock data; stage
# and micro-batches are arguments), trained `steps` steps in memory, with the optimizer states
# on NVMe (the streamed update behind the next forward, the default), and on NVMe with
# --no-overlap-optimizer-step, in turn, `rounds` times. Each run's figure is its median step time after its first step; ratio = nvme / memory
# and serial_ratio = no-overlap / memory over the medians of the rounds. The losses of all runs
# must be identical. Then the host AdamW against PyTorch's fused CPU AdamW on the same parameter
# count (bench/cpu_adamw.sh: adamw_ratio = zerotron / torch fused, fp32 gradients). Last line:
# one JSON object.
# Usage: bench/offload_optimizer.sh [DIR] [rounds] [steps] [stage] [micro_batches]
#   DIR: where the swap file goes (default /work/zt_nvme); about 5 minutes a round on 2 cores.
#   stage (default 0) and micro_batches (default 8): another ZeRO stage (0-2: where the update
#   runs behind the next forward) or fewer micro-batches per step, where it hides more.
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for this benchmark's commands.
set -euo pipefail
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
root=$(cd "$(dirname "$0")/.." && pwd)
zt="$root/build/bin/zerotron"
nvme=${1:-/work/zt_nvme}
rounds=${2:-1}
steps=${3:-4}
stage=${4:-0}
micro=${5:-8}
mkdir -p "$nvme"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(train --device cpu --mock-data --vocab-size 50257 --num-layers 12 --hidden-size 768
  --num-attention-heads 12 --seq-length 512 --micro-batch-size 1 --global-batch-size "$micro" --lr 1e-4
  --zero-stage "$stage" --bf16 --train-iters "$steps" --log-interval 1 --eval-iters 0)
offload=(--offload-optimizer nvme --nvme-path "$nvme")
. "$root/bench/metrics_file.sh"
memory=() nvme_ms=() serial=()
for r in $(seq "$rounds"); do
  for run in memory nvme serial; do
    extra=()
    [ "$run" = nvme ] && extra=("${offload[@]}")
    [ "$run" = serial ] && extra=("${offload[@]}" --no-overlap-optimizer-step)
    "$zt" "${args[@]}" "${extra[@]}" --metrics-file "$tmp/$run$r.jsonl" >"$tmp/$run$r.log" 2>&1 ||
      { cat "$tmp/$run$r.log" >&2; exit 1; }
    [ "$(losses "$tmp/memory1.jsonl")" = "$(losses "$tmp/$run$r.jsonl")" ] ||
      { echo "offload_optimizer: round $r, $run: other losses" >&2; exit 1; }
    ms=$(median_ms "$tmp/$run$r.jsonl" 1)
    echo "round $r: $run ${ms} ms per step" >&2
    case $run in memory) memory+=("$ms") ;; nvme) nvme_ms+=("$ms") ;; serial) serial+=("$ms") ;; esac
  done
done
plan=$("$zt" estimate "${args[@]:1}" "${offload[@]}" --world-size 1 --json)
params=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["num_parameters"])' "$plan")
"$root/bench/cpu_adamw.sh" "$params" 2 5 >"$tmp/adamw.log"
adamw=$(tail -n 1 "$tmp/adamw.log")
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
isa=$(grep -m1 "^flags" /proc/cpuinfo | grep -o 'avx512_bf16\|amx_bf16\|avx512f\|avx2' | sort -u | tr '\n' ' ')
python3 - "$cpu" "$isa" "$plan" "${memory[*]}" "${nvme_ms[*]}" "${serial[*]}" "$adamw" "$stage" \
  "$micro" <<'PY'
import json, statistics, sys
cpu, isa, plan, memory, nvme, serial, adamw, stage, micro = sys.argv[1:10]
memory, nvme, serial = ([float(x) for x in v.split()] for v in (memory, nvme, serial))
p, a = json.loads(plan), json.loads(adamw)
m = statistics.median(memory)
print(json.dumps({
    "cpu": cpu, "isa": isa.split(), "ranks": 1, "zero_stage": int(stage),
    "micro_batches": int(micro), "params": p["num_parameters"],
    "nvme_file_bytes": p["nvme_bytes"], "nvme_buffers_bytes": p["nvme_buffers_bytes"],
    "step_ms_memory": memory, "step_ms_nvme": nvme, "step_ms_nvme_serial": serial,
    "ratio": statistics.median(nvme) / m, "serial_ratio": statistics.median(serial) / m,
    "adamw_zerotron_s": a.get("zerotron_s"), "adamw_torch_fused_s": a.get("torch_fused_s"),
    "adamw_ratio": a.get("ratio")}))
PY
