#!/usr/bin/env bash
# The ZeRO paper's Table 2 (largest trainable model on 32 GB V100s, Nd = 64, model states only:
# the paper's "theoretical" columns) from `zerotron estimate --max-parameters model-states`,
# beside the paper's numbers (examples/scaling/paper/table2_max_model_size.csv) and the
# difference. Usage: examples/scaling/table2.sh [build/bin/zerotron]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
zt=${1:-$root/build/bin/zerotron}
csv=$root/examples/scaling/paper/table2_max_model_size.csv
largest() {  # mp stage -> max parameters / 1e9
  "$zt" estimate --max-parameters model-states --device-memory 32GB --fp16 \
    --seq-length 1024 --vocab-size 50257 \
    --tensor-model-parallel-size "$1" --data-parallel-size 64 --zero-stage "$2" --json |
    grep -o '"max_parameters":[0-9]*' | cut -d: -f2 | awk '{printf "%.1f", $1 / 1e9}'
}
printf "%-3s %5s | %-22s | %-22s | %-22s | %-22s\n" MP GPUs "baseline (B) paper diff" \
  "Pos (B) paper diff" "Pos+g (B) paper diff" "Pos+g+p (B) paper diff"
grep -v '^#' "$csv" | tail -n +2 | while IFS=, read -r mp gpus base pos pos_g pos_g_p _ _; do
  line=$(printf "%-3s %5s" "$mp" "$gpus")
  stage=0
  for paper in "$base" "$pos" "$pos_g" "$pos_g_p"; do
    ours=$(largest "$mp" "$stage")
    p=$(awk -v b="$paper" 'BEGIN { printf "%.1f", b / 1e9 }')
    diff=$(awk -v a="$ours" -v b="$p" 'BEGIN { printf "%+.1f%%", (a - b) / b * 100 }')
    line+=$(printf " | %7s %7s %6s" "$ours" "$p" "$diff")
    stage=$((stage + 1))
  done
  echo "$line"
done
