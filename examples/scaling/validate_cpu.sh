#!/usr/bin/env bash
# Validates `zerotron simulate` against zerotron's own multi-rank training steps on this machine.
#   1. One calibration from microbenchmarks only (run halfway through the measurements), every
#      rank busy at once as in training
#      (bench_calibrate under mpirun: the backend's linear layers at the model's GEMM shapes,
#      attention, the layer's elementwise kernels, cross-entropy, AdamW, each collective by size
#      over the job and over pairs, point-to-point, memcpy). No training step is timed for it.
#   2. For each layout (tp 2; dp 4 with ZeRO 0/1/2/3; pp 2 1F1B and interleaved; sequence
#      parallel; Pa; Pa+cpu; bf16; a mixture of experts at ep 1, ep 4 and tp 2 x ep 2), the median
#      step of bench_train beside simulate's prediction on that calibration, and the error.
# Prints the table and, as its last line, one JSON object {"max_abs_error": ..., "layouts": N,
# ...} with the CPU model, ISA and the load average seen before each run (the machine may be
# shared: the load is part of the result). A benchmark, not a test: rerun on a quiet machine.
# Writes examples/scaling/results/cpu_validation.csv and cpu_cluster.json.
# Usage: examples/scaling/validate_cpu.sh [build/bin]   (about 5 minutes on 2 idle cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/build/bin}
out=$root/examples/scaling/results
mkdir -p "$out"
launch=$root/launch/mpirun.sh
np=4
load() { cut -d' ' -f1 /proc/loadavg; }
loads=()

# The model: 4 layers, hidden 256, 8 heads, sequence 256, vocab 4096, micro batch 2, global
# batch 16 (so dp 4 accumulates 2 micro-batches, dp 2 four).
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 256
  --vocab-size 4096 --make-vocab-size-divisible-by 128 --micro-batch-size 2
  --global-batch-size 16)

# The calibration, run once, in the middle of the measurements (so a load that drifts on a shared
# machine is seen by it about as much as by the steps on either side).
calibrate() {
  cal_load=$(load)
  "$launch" -np "$np" "$bin/bench_calibrate" --hidden 256 --heads 8 --seq 256 --vocab 4096 \
    --micro-batch 2 --tp 1,2 --dtypes fp32,bf16 >"$out/cpu_cluster.json"
}

# A mixture of experts of the same active size: 8 experts of half the dense MLP's width, top 2,
# capacity 1.0 (the routing near even, as simulate assumes).
moe="--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512 --moe-expert-capacity-factor 1.0"
# 2. Layouts: name | tp | pp | zero stage | extra flags (both bench_train and simulate).
layouts=(
  "tp2|2|1|0|"
  "dp4-z0|1|1|0|"
  "dp4-z1|1|1|1|"
  "dp4-z2|1|1|2|"
  "dp4-z3|1|1|3|"
  "pp2-1f1b|1|2|0|"
  "pp2-interleaved|1|2|0|--num-layers-per-virtual-pipeline-stage 1"
  "tp2-sp|2|1|0|--sequence-parallel"
  "tp2-pa|2|1|0|--checkpoint-activations --partition-activations"
  "tp2-pa-cpu|2|1|0|--checkpoint-activations --partition-activations --cpu-checkpointing"
  "tp2-bf16|2|1|0|--bf16"
  "dp4-z3-bf16|1|1|3|--bf16"
  "moe-dp4-z1|1|1|1|$moe"
  "moe-ep4-z1|1|1|1|$moe --expert-model-parallel-size 4"
  "moe-tp2-ep2|2|1|1|$moe --expert-model-parallel-size 2"
)
csv=$out/cpu_validation.csv
echo "layout,tp,dp,pp,zero_stage,flags,load,measured_ms,predicted_ms,error_pct" >"$csv"
flags_of() {  # spec -> the flags bench_train and simulate share
  IFS='|' read -r name tp pp stage extra <<<"$1"
  dp=$((np / tp / pp))
  read -r -a xs <<<"$extra"
  flags=("${model[@]}" --tensor-model-parallel-size "$tp" --pipeline-model-parallel-size "$pp"
    "${xs[@]}")
}
measured=()
for i in "${!layouts[@]}"; do
  [[ $i -eq $((${#layouts[@]} / 2)) ]] && calibrate
  flags_of "${layouts[$i]}"
  l=$(load)
  loads+=("$l")
  measured+=("$("$launch" -np "$np" "$bin/bench_train" --stages "$stage" --steps 5 --warmup 2 \
    "${flags[@]}" --overlap-comm |
    python3 -c 'import json,sys; print(json.loads([x for x in sys.stdin if x.startswith("{")][0])["median_step_ms"])') $l")
done
for i in "${!layouts[@]}"; do
  flags_of "${layouts[$i]}"
  read -r m l <<<"${measured[$i]}"
  predicted=$("$bin/zerotron" simulate "${flags[@]}" --data-parallel-size "$dp" \
    --zero-stage "$stage" --device cpu --cluster "$out/cpu_cluster.json" --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])')
  err=$(python3 -c "print(f'{($predicted - $m) / $m * 100:+.1f}')")
  echo "$name,$tp,$dp,$pp,$stage,$extra,$l,$m,$predicted,$err" >>"$csv"
done

python3 - "$csv" "$out/cpu_cluster.json" "${loads[*]}" "$cal_load" <<'PY'
import csv, json, platform, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cal = json.load(open(sys.argv[2]))
loads = [float(x) for x in sys.argv[3].split()]
cal_load = float(sys.argv[4])
flags = open("/proc/cpuinfo").read().split("flags")[1].split("\n")[0]
isa = [f for f in ("avx512f", "avx512_bf16", "amx_bf16", "avx2", "fma") if f" {f}" in flags]
print(f"{'layout':16} {'tp':>2} {'dp':>2} {'pp':>2} {'ZeRO':>4} {'load':>5} | "
      f"{'measured ms':>11} {'predicted ms':>12} {'error':>7}")
for r in rows:
    print(f"{r['layout']:16} {r['tp']:>2} {r['dp']:>2} {r['pp']:>2} {r['zero_stage']:>4} "
          f"{float(r['load']):5.1f} | {float(r['measured_ms']):11.1f} "
          f"{float(r['predicted_ms']):12.1f} {float(r['error_pct']):+6.1f}%")
errs = [abs(float(r["error_pct"])) / 100 for r in rows]
print(json.dumps({"max_abs_error": round(max(errs), 3),
                  "mean_abs_error": round(sum(errs) / len(errs), 3),
                  "layouts": len(rows), "ranks": cal.get("ranks"),
                  "within_15pct": sum(e <= 0.15 for e in errs),
                  "cpu_model": cal.get("cpu_model"), "isa": isa,
                  "cores": __import__("os").cpu_count(),
                  "calibration_load": cal_load, "load_min": min(loads),
                  "load_max": max(loads)}))
PY
