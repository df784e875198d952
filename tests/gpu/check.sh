#!/usr/bin/env bash
# The GPU check, in one call on a bare GPU image (CUDA 13 toolkit, compute-sanitizer, python3
# with PyTorch; no OpenBLAS, oneDNN, Open MPI, fmt, GoogleTest, network), from a bundle that
# scripts/gpu_bundle.sh prepared on a CPU machine:
#
#   tests/gpu/check.sh --plan              the phases and their time budgets (no GPU needed)
#   tests/gpu/check.sh OUTDIR [BUNDLE]     run them
#
# BUNDLE: gpu-bundle/zerotron-gpu.tar.xz (default; unpacked under OUTDIR) or an unpacked bundle
# directory (default when no tarball: gpu-bundle/tree). The phases run in order of value, each
# within its own budget (steps get what is left of it), so the first gives a verdict within 90 s
# and a phase that runs out of time leaves the ones after it theirs:
#   1. smoke: the bundle's needs (glibc, libraries), driver and runtime versions, the device
#      probe, two kernel test programs, 3 iterations of a small model with a finite loss;
#   2. sanitizers: compute-sanitizer memcheck, racecheck, initcheck and synccheck on small
#      attention (whole and ring blocks), reduction and cross-entropy cases (--gtest_filter);
#   3. tests: every other single-process GPU test program;
#   4. train: the 1.3B-parameter bf16 GPT (24 layers, hidden 2048, 16 heads, seq 1024, micro batch
#      4, dropout 0) at ZeRO stage 0: a finite, decreasing loss, tokens/s, MFU (causal and full
#      attention FLOP conventions), MemoryPool's peak beside the plan and the device's own used
#      memory (nvidia-smi, sampled during the run);
#   5. torch: PyTorch's step on the same model (bf16, SDPA) for the ratio, and its GEMM and SDPA
#      ceilings;
#   6. multi-GPU: NCCL and training on 2 ranks (tp 2, dp 2 ZeRO 3, pp 2) — not run on one GPU.
# Each phase writes OUTDIR/phases/N-NAME/verdict (pass, fail, not run, unsupported) and its logs;
# nothing is deleted. A test program that fails is run again once, its failed cases only, with
# CUDA_LAUNCH_BLOCKING=1 (a kernel fault then names its launch). OUTDIR/summary.json gathers
# everything (tests/gpu/check_summary.py). Exit status: 0 when no phase failed, 1 otherwise, 2 for
# bad usage.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
phase_names=(smoke sanitizers tests train torch multi_gpu)
phase_budgets=(90 120 120 90 60 60)
phase_what=(
  "bundle needs, versions, device probe, 2 kernel test programs, 3 iterations of a small model"
  "compute-sanitizer memcheck, racecheck, initcheck, synccheck on small kernel cases"
  "the other single-process GPU test programs"
  "1.3B bf16 GPT at ZeRO 0: finite decreasing loss, MFU, memory plan vs device"
  "PyTorch step on the same model (bf16, SDPA), GEMM and SDPA ceilings"
  "NCCL and training on 2 GPUs (not run on one)")

if [[ ${1:-} == --plan ]]; then
  total=0
  json=""
  for i in "${!phase_names[@]}"; do
    printf 'phase %d %-10s %3d s  %s\n' $((i + 1)) "${phase_names[i]}" "${phase_budgets[i]}" \
      "${phase_what[i]}"
    total=$((total + phase_budgets[i]))
    json+="${json:+,}{\"phase\":$((i + 1)),\"name\":\"${phase_names[i]}\",\"budget_s\":${phase_budgets[i]}}"
  done
  printf '{"phases":[%s],"budget_s":%d}\n' "${json}" "${total}"
  exit 0
fi
if [[ $# -lt 1 || $# -gt 2 || $1 == -* ]]; then
  echo "usage: tests/gpu/check.sh --plan | OUTDIR [BUNDLE]" >&2
  exit 2
fi
out=$1
bundle=${2:-}
if [[ -z ${bundle} ]]; then
  bundle=${root}/gpu-bundle/zerotron-gpu.tar.xz
  [[ -f ${bundle} ]] || bundle=${root}/gpu-bundle/tree
fi
mkdir -p "${out}" || exit 2
out=$(cd "${out}" && pwd)
work=${out}/work # kept: the evidence stays with the verdicts
mkdir -p "${work}" "${out}/phases"
exec > >(tee "${out}/check.log") 2>&1
tee_pid=$!

start=$(date +%s)
status=0
steps=${work}/steps.tsv   # phase, step, rc, seconds, note: one line per step
phases=${work}/phases.tsv # phase, name, verdict, seconds, budget
: >"${steps}"
: >"${phases}"

# Phase state: its directory, deadline and outcome (failed / not run steps, or a set verdict).
p_num=0 p_name="" p_dir="" p_deadline=0 p_t0=0 p_failed=0 p_skipped=0 p_ran=0 p_verdict=""
begin_phase() {
  p_num=$(($1 + 1)) p_name=${phase_names[$1]} p_dir=${out}/phases/$(($1 + 1))-${phase_names[$1]}
  p_t0=$(date +%s) p_deadline=$(($(date +%s) + phase_budgets[$1]))
  p_failed=0 p_skipped=0 p_ran=0 p_verdict=""
  mkdir -p "${p_dir}"
  printf '\n==== phase %d %s (budget %ss; %ss elapsed)\n' "${p_num}" "${p_name}" \
    "${phase_budgets[$1]}" "$((p_t0 - start))"
}
end_phase() {
  local v=${p_verdict}
  if [[ -z ${v} ]]; then
    if ((p_failed > 0)); then
      v=fail
    elif ((p_skipped > 0 || p_ran == 0)); then
      v="not run"
    else
      v=pass
    fi
  fi
  [[ ${v} == fail ]] && status=1
  echo "${v}" >"${p_dir}/verdict"
  printf '%s\t%s\t%s\t%s\t%s\n' "${p_num}" "${p_name}" "${v}" "$(($(date +%s) - p_t0))" \
    "${phase_budgets[p_num - 1]}" >>"${phases}"
  echo "phase ${p_num} ${p_name}: ${v} in $(($(date +%s) - p_t0)) s"
}
# step NAME CAP LOG CMD...: runs CMD under `timeout` (its cap or what is left of the phase),
# appending to LOG; rc 124/137 = timed out. A step with under 3 s left is not run.
step() {
  local name=$1 cap=$2 log=$3 limit t0 rc left
  shift 3
  left=$((p_deadline - $(date +%s)))
  limit=$((left < cap ? left : cap))
  if ((limit < 3)); then
    echo "${name}: not run, the phase's budget is spent"
    printf '%s\t%s\t-1\t0\tnot run: budget\n' "${p_name}" "${name}" >>"${steps}"
    p_skipped=$((p_skipped + 1))
    return 1
  fi
  t0=$(date +%s)
  printf '\n---- %s (limit %ss): %s\n' "${name}" "${limit}" "$*" >>"${log}"
  timeout -k 5 "${limit}" "$@" >>"${log}" 2>&1
  rc=$?
  p_ran=$((p_ran + 1))
  ((rc != 0)) && p_failed=$((p_failed + 1))
  printf '%s\t%s\t%s\t%s\t%s\n' "${p_name}" "${name}" "${rc}" "$(($(date +%s) - t0))" \
    "$( ((rc == 124 || rc == 137)) && echo "timed out after ${limit} s")" >>"${steps}"
  echo "${name}: rc ${rc} in $(($(date +%s) - t0)) s$( ((rc == 124 || rc == 137)) && echo ' (timed out)')"
  return "${rc}"
}
# gtest_step NAME CAP PROGRAM [ARGS...]: a test program with its JSON report in the phase's
# directory; when it fails (not timed out), its failed cases once more under
# CUDA_LAUNCH_BLOCKING=1.
gtest_step() {
  local name=$1 cap=$2 prog=$3 rc failed
  shift 3
  step "${name}" "${cap}" "${p_dir}/${name}.log" "${prog}" "$@" \
    "--gtest_output=json:${p_dir}/${name}.json"
  rc=$?
  ((rc == 0 || rc == 124 || rc == 137)) && return "${rc}"
  failed=$(python3 - "${p_dir}/${name}.json" <<'PY' 2>/dev/null
import json, sys
j = json.load(open(sys.argv[1]))
print(":".join(f'{s["name"]}.{t["name"]}' for s in j.get("testsuites", [])
               for t in s.get("testsuite", []) if t.get("failures")))
PY
  )
  [[ -z ${failed} ]] && failed='*'
  CUDA_LAUNCH_BLOCKING=1 step "${name}_blocking_rerun" 30 "${p_dir}/${name}.rerun.log" "${prog}" \
    "--gtest_filter=${failed}" >/dev/null
  p_failed=$((p_failed - ($? != 0 ? 1 : 0))) # the rerun is evidence, not a second failure
  return "${rc}"
}
skip_phase() { # NAME-INDEX VERDICT REASON
  begin_phase "$1"
  echo "$3" | tee "${p_dir}/reason"
  p_verdict=$2
  end_phase
}

# ---- phase 1: smoke --------------------------------------------------------------------------
begin_phase 0
bundle_ok=1
if [[ -f ${bundle} ]]; then
  rm -rf "${work}/bundle" && mkdir -p "${work}/bundle"
  tar -C "${work}/bundle" -xJf "${bundle}" || bundle_ok=0
  bdir=${work}/bundle
elif [[ -d ${bundle} ]]; then
  bdir=$(cd "${bundle}" && pwd)
else
  echo "check.sh: no bundle at ${bundle}: run scripts/gpu_bundle.sh on the build machine and" \
    "carry gpu-bundle/zerotron-gpu.tar.xz" >&2
  exit 2
fi
if ((bundle_ok)); then
  # shellcheck source=tests/gpu/bundle_env.sh
  . "${bdir}/env.sh" "${bdir}"
  printf '%s' "${ZT_BUNDLE_NOTES}" | tee "${p_dir}/bundle.txt"
  head -n 4 "${bdir}/MANIFEST" | tee -a "${p_dir}/bundle.txt"
  echo "this image: $(getconf GNU_LIBC_VERSION 2>/dev/null), $(uname -m)" | tee -a "${p_dir}/bundle.txt"
  [[ ${ZT_BUNDLE_NOTES} == *WARNING* ]] && bundle_ok=0
  for f in "${bdir}"/bin/*; do
    if missing=$(ldd "${f}" 2>&1 | grep "not found"); then
      echo "bundle: $(basename "${f}") cannot start: ${missing//$'\n'/; }" | tee -a "${p_dir}/bundle.txt"
      bundle_ok=0
    fi
  done
fi
((bundle_ok)) || {
  echo "bundle: it cannot run on this image (above); the later phases are not run"
  p_failed=$((p_failed + 1))
}
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader |
  tee "${work}/gpu.csv" || true
gpu_name=$(head -n 1 "${work}/gpu.csv" 2>/dev/null | cut -d, -f1)
gpus=$(grep -c . "${work}/gpu.csv" 2>/dev/null)
gpus=${gpus:-0}
# Dense (no sparsity) bf16 tensor-core peak, TFLOP/s: NVIDIA's H100 and H200 datasheets give
# 1,979 TFLOP/s bf16 "with sparsity" for the SXM parts (half of it dense: 989), 1,513 for
# H100 PCIe (756 dense) and 1,671 for H200 NVL (835 dense); A100's datasheet 312 dense.
case "${gpu_name}" in
  *H200*NVL*) peak=835 ;;
  *H200*) peak=989 ;;
  *H100*PCIe*) peak=756 ;;
  *H100*) peak=989 ;;
  *A100*) peak=312 ;;
  *) peak=0 ;;
esac
echo "device: ${gpu_name:-none}, ${gpus} GPU(s); dense bf16 peak used for MFU: ${peak} TFLOP/s"
if (($(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') > 0)); then
  export ZT_EXPECT_GPU=1 # a GPU test that finds no CUDA device fails instead of skipping
fi
nvidia-smi 2>/dev/null | grep -m 1 -oE 'Driver Version: [0-9.]+ +CUDA Version: [0-9.]+' || true
command -v nvcc >/dev/null && nvcc --version | tail -n 1
if ((bundle_ok)); then
  gtest_step gpu_cuda_probe_test 15 "${bdir}/bin/gpu_cuda_probe_test"
  grep -hE '^CUDA runtime|^GPUs expected' "${p_dir}/gpu_cuda_probe_test.log" | tee "${work}/probe.txt"
  gtest_step gpu_kernels_cuda_test 25 "${bdir}/bin/gpu_kernels_cuda_test"
  gtest_step gpu_kernels_cuda_attention_test 25 "${bdir}/bin/gpu_kernels_cuda_attention_test"
  step small_model 20 "${p_dir}/small_model.log" zerotron train --device cuda --mock-data \
    --vocab-size 512 --num-layers 2 --hidden-size 128 --num-attention-heads 4 --seq-length 128 \
    --micro-batch-size 4 --global-batch-size 4 --train-iters 3 --lr 1e-3 --log-interval 1 \
    --metrics-file "${p_dir}/small_model.jsonl"
  step small_model_finite_loss 5 "${p_dir}/small_model.log" python3 - \
    "${p_dir}/small_model.jsonl" <<'PY'
import json, math, sys
losses = [json.loads(l)["lm_loss"] for l in open(sys.argv[1]) if '"lm_loss"' in l]
print("small model losses:", losses)
sys.exit(0 if len(losses) == 3 and all(math.isfinite(x) for x in losses) else 1)
PY
fi
end_phase

if ((!bundle_ok)); then
  for i in 1 2 3 4 5; do skip_phase "${i}" "not run" "the bundle cannot run on this image"; done
else
  # ---- phase 2: sanitizers -------------------------------------------------------------------
  begin_phase 1
  if ! command -v compute-sanitizer >/dev/null; then
    p_verdict=unsupported
    echo "compute-sanitizer: not on this image" | tee "${p_dir}/reason"
  else
    attention='Shapes/CudaAttention.Bf16MatchesCpu/1:Shapes/CudaAttention.Fp32MatchesCpu/3:'
    attention+='Shapes/CudaAttentionBlock.Bf16MatchesCpu/1'
    kernels='CudaReduce.*:CudaCrossEntropy.*:CudaVocabParallelCrossEntropy.*'
    for tool in memcheck racecheck initcheck synccheck; do
      for t in "gpu_kernels_cuda_attention_test:${attention}" "gpu_kernels_cuda_test:${kernels}"; do
        step "${tool}_${t%%:*}" 30 "${p_dir}/${tool}.log" compute-sanitizer --tool "${tool}" \
          --error-exitcode 99 --print-limit 20 "${bdir}/bin/${t%%:*}" "--gtest_filter=${t#*:}"
      done
    done
    # A sanitizer that cannot attach to this driver says so instead of running the tests.
    cannot='not supported|unsupported|Unable to (launch|attach)'
    cannot+='|Target application terminated before first instrumented'
    if ((p_failed > 0)) && grep -qiE "${cannot}" "${p_dir}"/*.log &&
      ! grep -q 'ERROR SUMMARY: [1-9]' "${p_dir}"/*.log; then
      p_verdict=unsupported
    fi
  fi
  end_phase

  # ---- phase 3: tests ------------------------------------------------------------------------
  begin_phase 2
  for f in "${bdir}"/bin/gpu_*; do
    name=$(basename "${f}")
    case "${name}" in
      gpu_cuda_probe_test | gpu_kernels_cuda_test | gpu_kernels_cuda_attention_test) ;; # phase 1
      gpu_nccl_multirank | gpu_train_multirank) ;;                                        # phase 6
      gpu_nccl_timeout_probe) # must end at the watchdog's line, well inside its 30 s hang
        # shellcheck disable=SC2016 # $1, $2: the inner shell's arguments
        step "${name}" 40 "${p_dir}/${name}.log" bash -c \
          '"$1" >"$2" 2>&1; cat "$2"; grep -q "all_reduce on group world timed out on rank 0" "$2"' \
          _ "${f}" "${p_dir}/${name}.out"
        ;;
      *) gtest_step "${name}" 60 "${f}" ;;
    esac
  done
  end_phase

  # ---- phase 4: train ------------------------------------------------------------------------
  begin_phase 3
  model=(--vocab-size 50257 --num-layers 24 --hidden-size 2048 --num-attention-heads 16
    --seq-length 1024 --micro-batch-size 4 --global-batch-size 4 --bf16 --device cuda
    --attention-dropout 0 --hidden-dropout 0)
  step estimate 10 "${work}/estimate0.json" zerotron estimate --json "${model[@]}" --zero-stage 0
  (nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 \
    >"${p_dir}/device_memory_mib.txt" 2>/dev/null &
    echo $! >"${work}/smi.pid")
  step train_stage0 70 "${p_dir}/train.log" zerotron train "${model[@]}" --zero-stage 0 \
    --mock-data --train-iters 20 --lr 1e-4 --log-interval 1 --metrics-file "${work}/train0.jsonl"
  kill "$(cat "${work}/smi.pid")" 2>/dev/null
  step loss_finite_and_decreasing 5 "${p_dir}/train.log" python3 - "${work}/train0.jsonl" <<'PY'
import json, math, sys
losses = [json.loads(l)["lm_loss"] for l in open(sys.argv[1]) if '"lm_loss"' in l]
print("1.3B losses:", [round(x, 4) for x in losses])
ok = len(losses) >= 10 and all(math.isfinite(x) for x in losses)
ok = ok and sum(losses[-5:]) / 5 < sum(losses[:5]) / 5
sys.exit(0 if ok else 1)
PY
  end_phase

  # ---- phase 5: torch ------------------------------------------------------------------------
  begin_phase 4
  if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    p_verdict=unsupported
    echo "PyTorch with CUDA: not on this image" | tee "${p_dir}/reason"
  else
    step torch_step 35 "${work}/torch_step.json" python3 "${root}/tests/gpu/torch_step.py" \
      --layers 24 --hidden 2048 --heads 16 --seq 1024 --micro-batch 4 --vocab 50304
    step torch_ceilings 25 "${work}/torch.json" python3 "${root}/tests/gpu/torch_ceilings.py" \
      --layers 24 --hidden 2048 --heads 16 --seq 1024 --micro-batch 4 --vocab 50304
  fi
  end_phase

  # ---- phase 6: multi-GPU --------------------------------------------------------------------
  if ((gpus < 2)); then
    skip_phase 5 "not run" "${gpus} GPU(s): the 2-rank phase needs 2"
  else
    begin_phase 5
    for name in gpu_nccl_multirank gpu_train_multirank; do
      # Each rank its own report.
      # shellcheck disable=SC2016
      ZT_MPIRUN_VERBOSE=1 step "${name}" 30 "${p_dir}/${name}.log" "${root}/launch/mpirun.sh" \
        -np 2 bash -c 'exec "$1" --gtest_output=json:"$2".rank${OMPI_COMM_WORLD_RANK:-0}.json' \
        _ "${bdir}/bin/${name}" "${p_dir}/${name}"
    done
    end_phase
  fi
fi

printf '\n==== summary (%ss elapsed)\n' "$(($(date +%s) - start))"
python3 "${root}/tests/gpu/check_summary.py" --work "${work}" --phases "${phases}" \
  --steps "${steps}" --phase-dir "${out}/phases" --gpu "${gpu_name:-none}" --gpus "${gpus}" \
  --peak "${peak}" --manifest "${bdir}/MANIFEST" --notes "${ZT_BUNDLE_NOTES:-}" \
  --status "${status}" --seconds "$(($(date +%s) - start))" >"${out}/summary.json" || status=1
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(s["headline"], indent=1))' \
  "${out}/summary.json" || true
printf '\n==== done (status %s)\n' "${status}"
exec >/dev/null 2>&1
wait "${tee_pid}" # check.log complete before the caller collects OUTDIR
exit "${status}"
