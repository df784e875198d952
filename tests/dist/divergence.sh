#!/usr/bin/env bash
# A diverging run is caught and never saved (CTest: dist.divergence.<case>). Each case trains a
# small model that diverges (a poisoned sample through ZT_INJECT_FAULT=poison, whose step starts
# its backward from NaN, or a learning rate far too high) and checks:
#   stop-<layout>  the run exits 1 with one line on stderr naming the iteration and the ranks,
#                  `latest` still names the last checkpoint before the divergence and no newer
#                  iteration directory exists; every rank ends (the job is bounded by `timeout`).
#                  Layouts: fp32 and bf16 on one rank, tp 2 x dp 2 ZeRO 3 (bf16) on four, pp 2.
#   lr-<precision> --lr 1e30: the first step makes the weights huge, the second's loss is not
#                  finite; latest stays iteration 1.
#   save-refuses   with --no-check-for-nan-in-loss-and-grad a run whose weights went to inf
#                  (--lr 1e308) is still refused its save: exit 1, one line, latest unchanged.
#   rewind-<layout> --on-divergence rewind: the run reloads its newest checkpoint, leaves out the
#                  samples up to the divergence (logged in the metrics), ends at its last
#                  iteration with a finite loss, and its final checkpoint equals, byte for byte,
#                  that of a run given the same samples to skip (--skip-train-samples) that never
#                  diverged. Layouts: fp32 with dropout on one rank, tp 2 x dp 2 ZeRO 3 bf16.
#   rewind-limit   --max-rewinds 0: the divergence stops the run as without rewinding.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
mpirun="$root/launch/mpirun.sh"
base=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4
  --log-interval 1 --eval-iters 0 --lr 1e-3 --save-interval 2)
# The global batch of iteration 6 is samples 20-23.
poisoned=21

# run NP LOG FAULT ARGS...: the job, bounded in time, its stdout and stderr in LOG.out/LOG.err;
# prints its exit status.
run() {
  local np=$1 log=$2 fault=$3
  shift 3
  set +e
  ZT_MPIRUN_ARGS=${fault:+-x ZT_INJECT_FAULT=$fault} timeout 300 "$mpirun" -np "$np" "$zt" \
    "$@" >"$work/$log.out" 2>"$work/$log.err"
  local rc=$?
  set -e
  [ "$rc" -ne 124 ] || fail "$log: the job did not end within 300 s"
  echo "$rc"
}
# stopped LOG RC CK ITER WORDS: exit 1, stderr one error line holding WORDS, CK's latest at ITER and
# no newer iteration directory.
stopped() {
  local log=$1 rc=$2 ck=$3 iter=$4 words=$5
  [ "$rc" = 1 ] || { cat "$work/$log.err"; fail "$log: exit $rc, not 1"; }
  [ "$(wc -l <"$work/$log.err")" = 1 ] || { cat "$work/$log.err"; fail "$log: not one line"; }
  grep -q "^zerotron: error: .*$words" "$work/$log.err" ||
    { cat "$work/$log.err"; fail "$log: the line does not say '$words'"; }
  local want
  want=$(printf 'iter_%07d' "$iter")
  [ "$(cat "$ck/latest")" = "$want" ] || fail "$log: latest is $(cat "$ck/latest"), not $want"
  local newest
  newest=$(find "$ck" -maxdepth 1 -name 'iter_*' | sort | tail -n 1)
  [ "$(basename "$newest")" = "$want" ] || fail "$log: $newest is newer than $want"
  echo "$log: $(cat "$work/$log.err")"
}
# layout NAME: the ranks, the rank poisoned and the flags. The poisoned rank is where a loss
# gradient starts the backward: the last pipeline stage, tensor-parallel rank 0 (ranks are
# tensor-parallel-adjacent, so rank 2 of tp 2 x dp 2 is data-parallel rank 1's).
layout() {
  case "$1" in
  fp32) echo "1 0" ;;
  bf16) echo "1 0 --bf16" ;;
  tp2-dp2-zero3) echo "4 2 --bf16 --tensor-model-parallel-size 2 --zero-stage 3" ;;
  pp2) echo "2 1 --pipeline-model-parallel-size 2" ;;
  fp32-dropout) echo "1 0 --hidden-dropout 0.1 --attention-dropout 0.1" ;;
  *) fail "unknown layout $1" ;;
  esac
}

case "$case" in
stop-*)
  read -r np at flags <<<"$(layout "${case#stop-}")"
  # shellcheck disable=SC2086
  rc=$(run "$np" stop "poison:$at:$poisoned" "${base[@]}" $flags --train-iters 8 \
    --save "$work/ck")
  stopped stop "$rc" "$work/ck" 4 "iteration 6: the gradient norm is NaN (non-finite gradients on rank"
  echo "PASS: $case stopped at the divergence, latest unchanged"
  ;;
lr-*)
  flags=""
  [ "${case#lr-}" = bf16 ] && flags=--bf16
  # shellcheck disable=SC2086
  rc=$(run 1 lr "" "${base[@]}" $flags --lr 1e30 --save-interval 1 --train-iters 4 \
    --save "$work/ck")
  stopped lr "$rc" "$work/ck" 1 "iteration 2: the loss is NaN"
  echo "PASS: $case stopped at the divergence, latest unchanged"
  ;;
save-refuses)
  rc=$(run 1 first "" "${base[@]}" --train-iters 2 --save "$work/ck")
  [ "$rc" = 0 ] || fail "the first run exited $rc"
  rc=$(run 1 refused "" "${base[@]}" --train-iters 4 --load "$work/ck" --save "$work/ck" \
    --save-interval 1 --lr 1e308 --no-check-for-nan-in-loss-and-grad)
  stopped refused "$rc" "$work/ck" 2 "not saving iteration 3 to .*: the fp32 master parameters are not finite on rank 0"
  echo "PASS: $case: a non-finite model is never saved"
  ;;
rewind-limit)
  rc=$(run 1 limit "poison:0:$poisoned" "${base[@]}" --train-iters 8 --save "$work/ck" \
    --on-divergence rewind --max-rewinds 0)
  stopped limit "$rc" "$work/ck" 4 "stopped after 0 rewind(s) (--max-rewinds 0)"
  echo "PASS: $case"
  ;;
rewind-*)
  read -r np at flags <<<"$(layout "${case#rewind-}")"
  # shellcheck disable=SC2086
  rc=$(run "$np" rewound "poison:$at:$poisoned" "${base[@]}" $flags --train-iters 10 \
    --save "$work/a" --on-divergence rewind --rewind-skip-samples 6 --metrics-file "$work/a.jsonl")
  [ "$rc" = 0 ] || { cat "$work/rewound.err"; fail "the rewinding run exited $rc"; }
  grep -q "zerotron: warning: .*iteration 6: .*rewound to iteration 4 (rewind 1 of at most 3), leaving out training samples 16-24" \
    "$work/rewound.out" || { cat "$work/rewound.out"; fail "no rewind line"; }
  event=$(grep '"event":"rewind"' "$work/a.jsonl") || fail "no rewind record in the metrics"
  skipped=$(python3 -c 'import json,sys; print(",".join(f"{b}-{e}" for b, e in json.loads(sys.argv[1])["skipped_samples"]))' "$event")
  [ "$skipped" = 16-24 ] || fail "the metrics record skipped $skipped"
  last=$(losses "$work/a.jsonl" | tail -n 1)
  python3 -c 'import math,sys; sys.exit(0 if math.isfinite(float(sys.argv[1])) else 1)' "$last" ||
    fail "the last loss is $last"
  # shellcheck disable=SC2086
  rc=$(run "$np" reference "" "${base[@]}" $flags --train-iters 10 --save "$work/b" \
    --skip-train-samples "$skipped" --metrics-file "$work/b.jsonl")
  [ "$rc" = 0 ] || { cat "$work/reference.err"; fail "the reference run exited $rc"; }
  [ "$(losses "$work/a.jsonl" | tail -n 4)" = "$(losses "$work/b.jsonl" | tail -n 4)" ] ||
    fail "the last losses differ: $(losses "$work/a.jsonl" | tail -n 4 | tr '\n' ' ') vs $(losses "$work/b.jsonl" | tail -n 4 | tr '\n' ' ')"
  n=0
  for f in "$work"/b/iter_0000010/*.bin; do
    cmp "$f" "$work/a/iter_0000010/$(basename "$f")" || fail "$(basename "$f") differs"
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || fail "no shard files compared"
  echo "PASS: $case: rewound past samples $skipped, final loss $last; $n shard file(s) equal the reference's"
  ;;
*) fail "unknown case $case" ;;
esac
