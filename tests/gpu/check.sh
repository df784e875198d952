#!/usr/bin/env bash
# The GPU check, in one call on a bare GPU image (CUDA 13 toolkit, compute-sanitizer, python3
# with PyTorch; no OpenBLAS, oneDNN, Open MPI, fmt, GoogleTest, network), from a bundle that
# scripts/gpu_bundle.sh prepared on a CPU machine:
#
#   tests/gpu/check.sh OUTDIR [BUNDLE]
#
# BUNDLE: gpu-bundle/zerotron-gpu.tar.xz (default; unpacked to a temporary directory) or an
# unpacked bundle directory (default when no tarball: gpu-bundle/tree). Steps, each bounded by
# `timeout`, the whole under 7 minutes (a deadline shortens later steps; a step without time
# left is reported as not run):
#   1. the GPU tests: each tests/gpu program once (one process per program, not per case);
#      the multi-rank ones under the bundle's mpirun with 2 ranks (they skip on one GPU);
#   2. the 1.3B-parameter bf16 GPT (24 layers, hidden 2048, 16 heads, seq 1024, micro batch 4)
#      at ZeRO stages 0, 2 and 3 on one GPU: tokens/s, TFLOP/s, MFU against the chip's dense
#      bf16 peak, and MemoryPool's peak bytes by category against `zerotron estimate --json`;
#   3. references: PyTorch's bf16 GEMM times for the same shapes and causal SDPA forward and
#      backward (tests/gpu/torch_ceilings.py), and bench_attention when the bundle has it;
#   4. compute-sanitizer memcheck and racecheck on the kernel test programs (they link neither
#      NCCL nor MPI);
#   5. an overlap trace when Nsight Systems (nsys) is present: a short bf16 run under nsys —
#      two ranks with ZeRO-2 and --overlap-comm on two or more GPUs (NCCL kernels under compute),
#      else one GPU with --cpu-checkpointing (offload copies under compute) — summarised from the
#      GPU's own timestamps by tests/gpu/overlap_trace.py.
# Before the tests it prints the driver's and the CUDA runtime's versions (gpu_cuda_probe_test);
# when nvidia-smi lists GPUs it exports ZT_EXPECT_GPU=1, so a GPU that CUDA cannot use (a driver
# older than the runtime) fails every GPU test with the versions instead of skipping them.
# Writes into OUTDIR: check.log (this console), tests.log, train.log, reference.log,
# sanitizer.log, overlap.log and summary.json (everything above as numbers;
# tests/gpu/check_summary.py).
# Exit status: 0 when every step that ran passed, 1 otherwise, 2 for bad usage.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if [[ $# -lt 1 || $# -gt 2 || $1 == -* ]]; then
  echo "usage: tests/gpu/check.sh OUTDIR [BUNDLE]" >&2
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
work=$(mktemp -d "${TMPDIR:-/tmp}/zt-gpu-check.XXXXXX")
trap 'rm -rf "${work}"' EXIT
exec > >(tee "${out}/check.log") 2>&1
tee_pid=$!

start=$(date +%s)
deadline=$((start + 405)) # 7 minutes less time for the summary and slack
status=0
steps="${work}/steps.tsv" # name, rc, seconds, note: one line per step, for the summary
: >"${steps}"

phase() { printf '\n==== %s (%ss elapsed)\n' "$1" "$(($(date +%s) - start))"; }
# Seconds a step may take: its cap, or what is left before the deadline if that is less.
budget() {
  local left=$((deadline - $(date +%s)))
  if ((left < $1)); then echo "${left}"; else echo "$1"; fi
}
# step NAME CAP LOG CMD...: runs CMD under `timeout`, appending to LOG; records the outcome.
# rc 124 = timed out. A step with under 5 s left is not run (rc -1).
step() {
  local name=$1 cap=$2 log=$3 limit t0 rc
  shift 3
  limit=$(budget "${cap}")
  if ((limit < 5)); then
    echo "${name}: not run, no time left before the 7-minute deadline"
    printf '%s\t-1\t0\tnot run: deadline\n' "${name}" >>"${steps}"
    status=1
    return 1
  fi
  t0=$(date +%s)
  printf '\n---- %s (limit %ss): %s\n' "${name}" "${limit}" "$*" >>"${log}"
  timeout -k 5 "${limit}" "$@" >>"${log}" 2>&1
  rc=$?
  printf '%s\t%s\t%s\t%s\n' "${name}" "${rc}" "$(($(date +%s) - t0))" \
    "$( ((rc == 124 || rc == 137)) && echo "timed out after ${limit} s")" >>"${steps}"
  echo "${name}: rc ${rc} in $(($(date +%s) - t0)) s$( ((rc == 124 || rc == 137)) && echo ' (timed out)')"
  return "${rc}"
}

phase "bundle"
if [[ -f ${bundle} ]]; then
  mkdir -p "${work}/bundle"
  if ! tar -C "${work}/bundle" -xJf "${bundle}"; then
    echo "check.sh: cannot unpack ${bundle}" >&2
    exit 1
  fi
  bdir=${work}/bundle
elif [[ -d ${bundle} ]]; then
  bdir=$(cd "${bundle}" && pwd)
else
  echo "check.sh: no bundle at ${bundle}: run scripts/gpu_bundle.sh on the build machine and" \
    "carry gpu-bundle/zerotron-gpu.tar.xz" >&2
  exit 2
fi
# shellcheck source=tests/gpu/bundle_env.sh
. "${bdir}/env.sh" "${bdir}"
printf '%s' "${ZT_BUNDLE_NOTES}"
head -n 4 "${bdir}/MANIFEST"
for f in "${bdir}"/bin/*; do
  if missing=$(ldd "${f}" 2>&1 | grep "not found"); then
    echo "$(basename "${f}") cannot start: ${missing//$'\n'/; }"
  fi
done

phase "GPU"
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
listed=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
listed=${listed:-0}
if ((listed > 0)); then
  export ZT_EXPECT_GPU=1 # a GPU test that finds no CUDA device fails instead of skipping
  echo "nvidia-smi lists ${listed} GPU(s): GPU tests fail, not skip, if CUDA sees none"
fi
nvidia-smi 2>/dev/null | grep -m 1 -oE 'Driver Version: [0-9.]+ +CUDA Version: [0-9.]+' || true
command -v nvcc >/dev/null && nvcc --version | tail -n 1
if [[ -x ${bdir}/bin/gpu_cuda_probe_test ]]; then
  "${bdir}/bin/gpu_cuda_probe_test" 2>&1 | grep -E '^CUDA runtime|^GPUs expected|FAILED|SKIPPED' |
    tee "${work}/probe.txt"
fi

phase "GPU tests (one process per program)"
tests_log=${out}/tests.log
: >"${tests_log}"
mkdir -p "${work}/gtest"
for f in "${bdir}"/bin/gpu_*; do
  name=$(basename "${f}")
  json=${work}/gtest/${name}.json
  case "${name}" in
    gpu_nccl_multirank | gpu_train_multirank) # several ranks; skip visibly with fewer GPUs
      ZT_MPIRUN_VERBOSE=1 step "${name}" 90 "${tests_log}" "${root}/launch/mpirun.sh" -np 2 \
        "${f}" "--gtest_output=json:${json}" || status=1
      ;;
    gpu_nccl_timeout_probe) # must end at the watchdog's line, well inside its 30 s hang
      # shellcheck disable=SC2016 # $1, $2: the inner shell's arguments
      step "${name}" 40 "${tests_log}" bash -c \
        '"$1" >"$2" 2>&1; cat "$2"; grep -q "all_reduce on group world timed out on rank 0" "$2"' \
        _ "${f}" "${work}/probe.out" || status=1
      ;;
    *) step "${name}" 90 "${tests_log}" "${f}" "--gtest_output=json:${json}" || status=1 ;;
  esac
done
grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|^\[==========\] .* ran' "${tests_log}" | sort | uniq -c |
  sort -rn | head -n 20

phase "1.3B bf16 GPT on one GPU: ZeRO stages 0, 2, 3"
train_log=${out}/train.log
: >"${train_log}"
model=(--vocab-size 50257 --num-layers 24 --hidden-size 2048 --num-attention-heads 16
  --seq-length 1024 --micro-batch-size 4 --global-batch-size 4 --bf16 --device cuda)
for stage in 0 2 3; do
  step "estimate_stage${stage}" 20 "${work}/estimate${stage}.json" \
    zerotron estimate --json "${model[@]}" --zero-stage "${stage}" || status=1
  step "train_stage${stage}" 75 "${train_log}" \
    zerotron train "${model[@]}" --zero-stage "${stage}" --mock-data --train-iters 30 \
    --lr 1e-4 --log-interval 5 --metrics-file "${work}/train${stage}.jsonl" || status=1
  cat "${work}/estimate${stage}.json" >>"${train_log}"
done

phase "references: PyTorch GEMMs and causal SDPA, bench_attention"
ref_log=${out}/reference.log
: >"${ref_log}"
step torch_ceilings 60 "${work}/torch.json" python3 "${root}/tests/gpu/torch_ceilings.py" \
  --layers 24 --hidden 2048 --heads 16 --seq 1024 --micro-batch 4 --vocab 50304 || status=1
cat "${work}/torch.json" >>"${ref_log}"
if [[ -x ${bdir}/bin/bench_attention ]]; then
  # One layer of the 1.3B model (B 4, 16 heads, T 1024, head size 128) in bf16, as the SDPA
  # reference above; ZT_BENCH_ATTENTION_ARGS replaces these flags (word-split on purpose).
  attention_args=${ZT_BENCH_ATTENTION_ARGS:---device cuda --dtype bf16 --batch 4 --seq 1024 --heads 16 --head-dim 128 --repeats 20}
  # shellcheck disable=SC2086
  step bench_attention 45 "${work}/attention.json" bench_attention ${attention_args} || status=1
  cat "${work}/attention.json" >>"${ref_log}"
else
  echo "bench_attention: not in this bundle (skipped)" | tee -a "${ref_log}"
  printf 'bench_attention\t-1\t0\tnot in the bundle\n' >>"${steps}"
fi

phase "compute-sanitizer: memcheck and racecheck on the kernel tests"
san_log=${out}/sanitizer.log
: >"${san_log}"
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    for f in "${bdir}"/bin/gpu_kernels_cuda*_test; do
      step "${tool}_$(basename "${f}")" 60 "${san_log}" compute-sanitizer --tool "${tool}" \
        --error-exitcode 99 --print-limit 20 "${f}" || status=1
    done
  done
else
  echo "compute-sanitizer: not found (skipped)" | tee -a "${san_log}"
  printf 'sanitizers\t-1\t0\tcompute-sanitizer not found\n' >>"${steps}"
fi

phase "overlap trace (Nsight Systems)"
overlap_log=${out}/overlap.log
: >"${overlap_log}"
nsys_bin=$(command -v nsys)
for f in /usr/local/cuda/bin/nsys /usr/local/cuda/nsight-systems-*/bin/nsys \
  /opt/nvidia/nsight-systems/*/bin/nsys; do
  [[ -z ${nsys_bin} && -x ${f} ]] && nsys_bin=${f}
done
if [[ -n ${nsys_bin} ]]; then
  trace_model=(--vocab-size 50257 --num-layers 12 --hidden-size 1024 --num-attention-heads 16
    --seq-length 1024 --micro-batch-size 4 --bf16 --device cuda --mock-data --train-iters 6
    --lr 1e-4 --log-interval 1)
  # The SQLite export, not `nsys stats` reports: overlap_trace.py reads the export's documented
  # columns (CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY: start, end in ns, deviceId, and the kernel's
  # shortName or demangledName as a StringIds id; NVIDIA's "SQLite Export Schema Reference").
  # shellcheck disable=SC2054 # --trace takes a comma-separated list
  nsys_args=(profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --export=sqlite
    --force-overwrite=true -o "${work}/overlap")
  if ((gpus >= 2)); then
    step overlap_trace 90 "${overlap_log}" "${nsys_bin}" "${nsys_args[@]}" \
      "${root}/launch/mpirun.sh" -np 2 zerotron train "${trace_model[@]}" --global-batch-size 16 \
      --zero-stage 2 --overlap-comm || status=1
  else
    step overlap_trace 90 "${overlap_log}" "${nsys_bin}" "${nsys_args[@]}" \
      zerotron train "${trace_model[@]}" --global-batch-size 8 --zero-stage 2 \
      --checkpoint-activations --cpu-checkpointing || status=1
  fi
  if [[ -f ${work}/overlap.sqlite ]]; then
    python3 "${root}/tests/gpu/overlap_trace.py" "${work}/overlap.sqlite" >"${work}/overlap.json" &&
      tee -a "${overlap_log}" <"${work}/overlap.json"
  fi
else
  echo "nsys: not found (skipped)" | tee -a "${overlap_log}"
  printf 'overlap_trace\t-1\t0\tnsys not found\n' >>"${steps}"
fi

phase "summary"
python3 "${root}/tests/gpu/check_summary.py" --work "${work}" --steps "${steps}" \
  --gpu "${gpu_name:-none}" --gpus "${gpus}" --peak "${peak}" --manifest "${bdir}/MANIFEST" \
  --sanitizer-log "${san_log}" \
  --notes "${ZT_BUNDLE_NOTES}" --status "${status}" --seconds "$(($(date +%s) - start))" \
  >"${out}/summary.json" || status=1
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps(s["headline"], indent=1))' \
  "${out}/summary.json" || true
phase "done (status ${status})"
exec >/dev/null 2>&1
wait "${tee_pid}" # check.log complete before the caller collects OUTDIR
exit "${status}"
