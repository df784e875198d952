#!/usr/bin/env bash
# Validates `zerotron simulate` on this machine: calibrates a "cpu-local" cluster from
# microbenchmarks only (bench_calibrate: the sgemm rate over GEMM shapes and the memory
# bandwidth; bench_collectives: the all-reduce bus bandwidth and latency between 2 ranks), then
# measures full training steps for several layouts with bench_train and prints, for each, the
# simulator's prediction beside the measurement and the error. No step time feeds the
# calibration. Writes examples/scaling/results/cpu_validation.csv and cpu_cluster.json.
# Usage: examples/scaling/validate_cpu.sh [build/bin]   (about 5 minutes on 2 cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}
out=$root/examples/scaling/results
mkdir -p "$out"
launch=$root/launch/mpirun.sh

# 1. Calibration from microbenchmarks.
coll=$("$launch" -np 2 "$bin/bench_collectives" --ops all_reduce --min-bytes 8 --max-bytes 4194304)
read -r busbw lat < <(echo "$coll" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.startswith("{")]
big = max(rows, key=lambda r: r["size_bytes"])
small = min(rows, key=lambda r: r["size_bytes"])
# a ring all-reduce over p ranks takes 2(p-1) latency steps
print(big["busbw_gbps"], small["time_us"] / (2 * (small["ranks"] - 1)))')
OMP_NUM_THREADS=$(nproc) "$bin/bench_calibrate" --intra-node-gbps "$busbw" \
  --intra-node-latency-us "$lat" >"$out/cpu_cluster.json"

# 2. Measured steps against predictions. Model: 4 layers, hidden 256, 8 heads, seq 256, vocab
# 4096, global batch 16 (micro batch 4 / dp ... set per layout), fp32 or bf16.
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 256
  --vocab-size 4096 --make-vocab-size-divisible-by 128)
echo "ranks,tp,dp,stage,precision,checkpointing,micro_batch,global_batch,measured_ms,predicted_ms,error_pct" \
  >"$out/cpu_validation.csv"
printf "%-5s %-3s %-3s %-5s %-5s %-5s | %10s %10s %7s\n" ranks tp dp stage prec ckpt measured predicted error
for layout in "1 1 0 fp32 0" "1 1 0 bf16 1" "2 1 0 fp32 0" "2 1 2 bf16 0" "2 2 0 fp32 0" \
  "4 1 1 bf16 0" "4 1 3 bf16 0" "4 2 3 bf16 1"; do
  read -r np tp stage prec ckpt <<<"$layout"
  dp=$((np / tp))
  mb=4
  gb=16
  flags=("${model[@]}" --tensor-model-parallel-size "$tp" --micro-batch-size "$mb"
    --global-batch-size "$gb")
  sim=("${model[@]}" --tensor-model-parallel-size "$tp" --data-parallel-size "$dp"
    --zero-stage "$stage" --micro-batch-size "$mb" --global-batch-size "$gb")
  [[ $prec == bf16 ]] && flags+=(--bf16) && sim+=(--bf16)
  [[ $ckpt == 1 ]] && flags+=(--checkpoint-activations) && sim+=(--checkpoint-activations)
  measured=$("$launch" -np "$np" "$bin/bench_train" --stages "$stage" --steps 5 --warmup 2 \
    "${flags[@]}" --reduce-bucket-size 2000000 --overlap-comm |
    python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["median_step_ms"])')
  predicted=$("$bin/zerotron" simulate "${sim[@]}" --reduce-bucket-size 2e6 --device cpu \
    --cluster "$out/cpu_cluster.json" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])')
  err=$(python3 -c "print(f'{($predicted - $measured) / $measured * 100:+.1f}')")
  printf "%-5s %-3s %-3s %-5s %-5s %-5s | %10.1f %10.1f %6s%%\n" "$np" "$tp" "$dp" "$stage" \
    "$prec" "$ckpt" "$measured" "$predicted" "$err"
  echo "$np,$tp,$dp,$stage,$prec,$ckpt,$mb,$gb,$measured,$predicted,$err" >>"$out/cpu_validation.csv"
done
python3 - "$out/cpu_validation.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
errs = [abs(float(r["error_pct"])) for r in rows]
print(f"mean |error| {sum(errs) / len(errs):.1f}%, max {max(errs):.1f}% over {len(errs)} layouts")
PY
