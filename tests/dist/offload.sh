#!/usr/bin/env bash
# --offload-optimizer nvme and --offload-param nvme (CTest: dist.offload.<case>):
#   same-<layout>    six steps with the optimizer states swapped to NVMe in chunks of 1024
#                    elements (many chunks: the read-ahead/write-behind pipeline runs) give the
#                    losses, gradient norms and checkpoint files of the same run without offload,
#                    byte for byte; at ZeRO 3 so do the parameter partitions on NVMe, alone and
#                    with the optimizer's states. Layouts: ZeRO 0 fp32 on one rank; ZeRO 1 bf16,
#                    ZeRO 2 fp32 and ZeRO 3 bf16 on two; tp 2 x dp 2 ZeRO 3 bf16 on four; a
#                    Llama-shaped model (RoPE, RMSNorm, SwiGLU, GQA, untied head, no biases) at
#                    ZeRO 1 and at ZeRO 3 in fp32 on two.
#   resume           a run saved at step 3 with offload resumes bitwise with offload and without
#                    (the checkpoint does not depend on where the states lived).
#   resume-params    the same at ZeRO 3 with both tiers on NVMe, resumed with the parameters
#                    alone on NVMe and with nothing offloaded.
#   kill-in-offload  rank 1 is killed (SIGKILL) as step 4's optimizer writes back its first
#                    chunk: the job ends, `latest` is step 2, and resuming from it gives bitwise
#                    the losses of an uninterrupted run.
#   corrupt          the swap file of a running job is truncated behind its back: the job stops
#                    with one line naming the swap file and exits non-zero; nothing is left in
#                    --nvme-path.
#   refusals         one line and exit 2 each: cpu on the CPU backend (either tier), nvme without
#                    --nvme-path, parameter offload below ZeRO 3, an --nvme-path that does not
#                    exist, one without room for the swap files (a small tmpfs, where the test
#                    runs as root; the free space is checked for both tiers' files at once).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
mpirun="$root/launch/mpirun.sh"
base=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --lr 3e-3
  --lr-decay-iters 20000 --log-interval 1 --reduce-bucket-size 2000 --eval-iters 0)
nvme=(--offload-optimizer nvme --nvme-path "$work/nvme" --sub-group-size 1024)
params=(--offload-param nvme --nvme-path "$work/nvme")
mkdir -p "$work/nvme"
grad_norms() { grep -o '"grad_norm":[^,]*' "$1" | cut -d: -f2; }

# train NAME NP ARGS...: a job whose metrics go to NAME.jsonl and output to NAME.log.
train() {
  local name=$1 np=$2
  shift 2
  timeout 300 "$mpirun" -np "$np" "$zt" "${base[@]}" --metrics-file "$work/$name.jsonl" "$@" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name: exit status $?"; }
}
# same_files A B: every shard file of both checkpoints' iterations is byte-identical.
same_files() {
  local n=0
  for f in "$1"/iter_*/*.bin; do
    cmp -s "$f" "$2/${f#"$1"/}" || fail "${f#"$1"/} differs"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || fail "no shard files in $1"
  echo "$n"
}
swap_left() { [ -z "$(ls -A "$work/nvme")" ] || fail "swap files left in --nvme-path: $(ls "$work/nvme")"; }

case "$case" in
same-*)
  case "$case" in
  same-zero0-fp32) np=1 layout=(--zero-stage 0) ;;
  same-zero1-bf16) np=2 layout=(--zero-stage 1 --bf16) ;;
  same-zero2-fp32) np=2 layout=(--zero-stage 2) ;;
  same-zero3-bf16) np=2 layout=(--zero-stage 3 --bf16) ;;
  same-tp2-dp2-zero3-bf16) np=4 layout=(--tensor-model-parallel-size 2 --zero-stage 3 --bf16) ;;
  same-llama-zero[13]-fp32)
    np=2
    layout=(--zero-stage "${case:15:1}" --position-embedding-type rope --normalization RMSNorm
      --swiglu --group-query-attention --num-query-groups 2 --untie-embeddings-and-output-weights
      --disable-bias-linear)
    ;;
  *) fail "unknown case $case" ;;
  esac
  run=(--train-iters 6 --save-interval 3 "${layout[@]}")
  train none "$np" "${run[@]}" --save "$work/none"
  # tier NAME what ARGS...: the run with ARGS is the one without offload, byte for byte.
  tier() {
    local name=$1 what=$2
    shift 2
    train "$name" "$np" "${run[@]}" --save "$work/$name-ck" "$@"
    [ "$(losses "$work/none.jsonl")" = "$(losses "$work/$name.jsonl")" ] ||
      fail "$what: the losses differ"
    [ "$(grad_norms "$work/none.jsonl")" = "$(grad_norms "$work/$name.jsonl")" ] ||
      fail "$what: the gradient norms differ"
    files=$(same_files "$work/none" "$work/$name-ck")
    swap_left
    echo "PASS: $case: losses, gradient norms and $files shard files identical with $what on NVMe"
  }
  [ "$(losses "$work/none.jsonl" | wc -l)" -eq 6 ] || fail "not 6 steps"
  tier nvme "the optimizer states" "${nvme[@]}"
  if [[ " ${layout[*]} " == *" --zero-stage 3 "* ]]; then
    tier params "the parameter partitions" "${params[@]}"
    tier both "the parameter partitions and the optimizer states" "${params[@]}" "${nvme[@]}"
  fi
  ;;
resume | resume-params)
  if [ "$case" = resume ]; then
    run=(--zero-stage 2 --bf16) saved=("${nvme[@]}") resumed=("${nvme[@]}")
  else
    run=(--zero-stage 3 --bf16) saved=("${params[@]}" "${nvme[@]}") resumed=("${params[@]}")
  fi
  train full 2 "${run[@]}" --train-iters 6
  train first 2 "${run[@]}" --train-iters 3 --save "$work/ck" "${saved[@]}"
  train offloaded 2 "${run[@]}" --train-iters 6 --load "$work/ck" "${resumed[@]}"
  train resident 2 "${run[@]}" --train-iters 6 --load "$work/ck"
  want=$(losses "$work/full.jsonl" | tail -n 3)
  [ "$(losses "$work/offloaded.jsonl")" = "$want" ] || fail "resumed with offload: other losses"
  [ "$(losses "$work/resident.jsonl")" = "$want" ] || fail "resumed without offload: other losses"
  swap_left
  echo "PASS: $case: resumed bitwise from an offloaded run's checkpoint (${saved[*]}), with and without offload"
  ;;
kill-in-offload)
  run=(--zero-stage 1 --bf16 --train-iters 6)
  train full 2 "${run[@]}"
  rc=0
  ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=kill-in-offload:1:4" timeout 300 "$mpirun" -np 2 "$zt" \
    "${base[@]}" "${run[@]}" --save "$work/ck" --save-interval 2 "${nvme[@]}" \
    >"$work/crash.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the killed job exited $rc"
  [ "$(cat "$work/ck/latest")" = "iter_0000002" ] || fail "latest is $(cat "$work/ck/latest")"
  train resumed 2 "${run[@]}" --load "$work/ck" "${nvme[@]}"
  [ "$(losses "$work/resumed.jsonl")" = "$(losses "$work/full.jsonl" | tail -n 4)" ] ||
    fail "resumed losses differ from the uninterrupted run's"
  swap_left
  echo "PASS: killed in the optimizer's write-back (exit $rc); latest stayed at step 2 and resumed bitwise"
  ;;
corrupt)
  setsid timeout 300 "$mpirun" -np 1 "$zt" "${base[@]}" --train-iters 100000 "${nvme[@]}" \
    --metrics-file "$work/run.jsonl" >"$work/run.log" 2>"$work/run.err" &
  job=$!
  for _ in $(seq 600); do
    grep -q '"iteration":2,' "$work/run.jsonl" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '"iteration":2,' "$work/run.jsonl" || { cat "$work/run.log" "$work/run.err"; fail "no step 2"; }
  # The rank's descriptor of its (already unlinked) swap file.
  fd=
  for pid in $(pgrep -f -- "--nvme-path $work/nvme"); do
    for f in /proc/"$pid"/fd/*; do
      [[ "$(readlink "$f" 2>/dev/null)" == *zerotron-swap-* ]] && fd=$f && break 2
    done
  done
  [ -n "$fd" ] || fail "no process holds a swap file"
  truncate -s 4096 "$fd"
  rc=0
  wait "$job" || rc=$?
  job=
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "the job exited $rc after its swap file was truncated"
  grep -q "^zerotron: error: .*swap file .*zerotron-swap-" "$work/run.err" ||
    { cat "$work/run.err"; fail "no error line naming the swap file"; }
  [ "$(grep -c '^zerotron: error' "$work/run.err")" = 1 ] || { cat "$work/run.err"; fail "not one line"; }
  swap_left
  echo "PASS: a truncated swap file stopped the job (exit $rc): $(cat "$work/run.err")"
  ;;
refusals)
  # refused MESSAGE ARGS...: exit 2 with one line holding MESSAGE.
  refused() {
    local words=$1 rc=0
    shift
    timeout 120 "$mpirun" -np 1 "$zt" "${base[@]}" --train-iters 2 "$@" >"$work/r.out" \
      2>"$work/r.err" || rc=$?
    [ "$rc" = 2 ] || { cat "$work/r.out" "$work/r.err"; fail "$*: exit $rc, not 2"; }
    [ "$(wc -l <"$work/r.err")" = 1 ] && grep -q "^zerotron: error: .*$words" "$work/r.err" ||
      { cat "$work/r.err"; fail "$*: not one line saying '$words'"; }
    echo "$* -> $(cat "$work/r.err")"
  }
  refused "the tier below RAM is nvme" --offload-optimizer cpu
  refused "the tier below RAM is nvme" --zero-stage 3 --offload-param cpu
  refused "needs --nvme-path" --offload-optimizer nvme
  refused "needs --zero-stage 3" --zero-stage 2 --offload-param nvme --nvme-path "$work/nvme"
  refused "$work/none" --offload-optimizer nvme --nvme-path "$work/none"
  if [ "$(id -u)" = 0 ] && mkdir -p "$work/small" && mount -t tmpfs -o size=64k tmpfs "$work/small" 2>/dev/null; then
    rc=0
    refused "$work/small" --zero-stage 3 --offload-param nvme --nvme-path "$work/small" || rc=$?
    umount "$work/small"
    [ "$rc" = 0 ] || exit "$rc"
  else
    echo "not root: the full-disk refusal is not checked here"
  fi
  echo "PASS: each bad offload setting refused with one line, exit 2"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
