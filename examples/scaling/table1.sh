#!/usr/bin/env bash
# The ZeRO paper's Table 1 (per-device model-state memory, GB = 1e9 bytes, mixed-precision Adam)
# from `zerotron estimate`, beside the paper's numbers (examples/scaling/paper/, copied from the
# paper) and the difference. Usage: examples/scaling/table1.sh [build/bin/zerotron]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
zt=${1:-$root/build/bin/zerotron}
csv=$root/examples/scaling/paper/table1_model_state_memory.csv
states() {  # model_params nd stage -> model_states_bytes / 1e9
  "$zt" estimate --num-parameters "$1" --data-parallel-size "$2" --zero-stage "$3" --fp16 --json \
    --seq-length 1024 --vocab-size 50257 |
    grep -o '"model_states_bytes":[0-9]*' | cut -d: -f2 | awk '{printf "%.2f", $1 / 1e9}'
}
printf "%-8s %5s | %10s %10s %7s | %10s %10s %7s | %10s %10s %7s\n" params Nd \
  "Pos" paper diff "Pos+g" paper diff "Pos+g+p" paper diff
grep -v '^#' "$csv" | tail -n +2 | while IFS=, read -r psi nd pos pos_g pos_g_p; do
  line=$(printf "%-8s %5s" "$psi" "$nd")
  for pair in "1 $pos" "2 $pos_g" "3 $pos_g_p"; do
    read -r stage paper <<<"$pair"
    ours=$(states "$psi" "$nd" "$stage")
    diff=$(awk -v a="$ours" -v b="$paper" 'BEGIN { printf "%+.1f%%", (a - b) / b * 100 }')
    line+=$(printf " | %10s %10s %7s" "$ours" "$paper" "$diff")
  done
  echo "$line"
done
