#!/usr/bin/env bash
# What --offload-param nvme costs a ZeRO-3 step: a GPT-2 small shape (12 layers, hidden 768, 12
# heads, sequence 512, vocabulary 50257: 124M parameters) in bf16 on 2 CPU ranks (ZeRO 3, micro
# batch 2, global batch 4, mock data), trained `steps` steps without parameter offload and then
# with the parameter partitions on NVMe, alternately, `rounds` times. The figure is each run's
# median step time after its first 2 steps; the ratio is nvme / none over the medians of the
# rounds. The losses of both must be identical. Last line: one JSON object.
# Usage: bench/offload_params.sh [DIR] [rounds] [steps]
#   DIR: where the swap files go (default /work/zt_nvme); about 3 minutes on 2 cores.
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for this benchmark's commands.
set -euo pipefail
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
root=$(cd "$(dirname "$0")/.." && pwd)
zt="$root/build/bin/zerotron"
nvme=${1:-/work/zt_nvme}
rounds=${2:-2}
steps=${3:-6}
mkdir -p "$nvme"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(train --device cpu --mock-data --vocab-size 50257 --num-layers 12 --hidden-size 768
  --num-attention-heads 12 --seq-length 512 --micro-batch-size 2 --global-batch-size 4 --lr 1e-4
  --zero-stage 3 --bf16 --train-iters "$steps" --log-interval 1 --eval-iters 0)
. "$root/bench/metrics_file.sh"
none=() params=()
for r in $(seq "$rounds"); do
  for tier in none nvme; do
    extra=()
    [ "$tier" = nvme ] && extra=(--offload-param nvme --nvme-path "$nvme")
    "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" "${extra[@]}" \
      --metrics-file "$tmp/$tier$r.jsonl" >"$tmp/$tier$r.log" 2>&1 ||
      { cat "$tmp/$tier$r.log" >&2; exit 1; }
    [ "$(losses "$tmp/none1.jsonl")" = "$(losses "$tmp/$tier$r.jsonl")" ] ||
      { echo "offload_params: round $r, $tier: other losses" >&2; exit 1; }
    ms=$(median_ms "$tmp/$tier$r.jsonl" 2)
    echo "round $r: $tier ${ms} ms per step" >&2
    if [ "$tier" = none ]; then none+=("$ms"); else params+=("$ms"); fi
  done
done
plan=$("$zt" estimate "${args[@]:1}" --offload-param nvme --nvme-path "$nvme" --world-size 2 --json)
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
isa=$(grep -m1 "^flags" /proc/cpuinfo | grep -o 'avx512_bf16\|amx_bf16\|avx512f\|avx2' | sort -u | tr '\n' ' ')
python3 - "$cpu" "$isa" "$plan" "${none[*]}" "${params[*]}" <<'EOF'
import json, statistics, sys
cpu, isa, plan, none, params = sys.argv[1:6]
none = [float(x) for x in none.split()]
params = [float(x) for x in params.split()]
p = json.loads(plan)
print(json.dumps({
    "cpu": cpu, "isa": isa.split(), "ranks": 2, "params": p["num_parameters"],
    "nvme_file_bytes_per_rank": p["nvme_bytes"], "nvme_buffers_bytes": p["nvme_buffers_bytes"],
    "step_ms_none": none, "step_ms_nvme": params,
    "ratio": statistics.median(params) / statistics.median(none)}))
EOF
