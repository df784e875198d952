#!/usr/bin/env bash
# Crash tests for checkpoints (CTest: dist.checkpoint_crash_resume):
#  1. a rank is killed (SIGKILL) in the middle of saving step 4: the job fails, `latest` still
#     names step 2, the partial step-4 directory is never chosen;
#  2. resuming from it continues from step 2 and reproduces, bitwise, the losses of an
#     uninterrupted run for steps 3..6 (at most the steps since the last save are lost);
#  3. the same after a rank crashes in the middle of a training step;
#  4. --ckpt-step 2 from that directory (`latest` 4) resumes bitwise as the run of 2., loaded
#     when `latest` was 2.
set -euo pipefail
zt=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --train-iters 6 --lr 3e-3
  --tensor-model-parallel-size 2 --zero-stage 3 --bf16 --log-interval 1 --reduce-bucket-size 2000)
losses() { grep -o '"lm_loss":[^,]*' "$1" | cut -d: -f2; }

"$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --metrics-file "$work/full.jsonl" >/dev/null

set +e
ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=kill-in-save:1:4" "$root/launch/mpirun.sh" -np 4 "$zt" \
  "${args[@]}" --save "$work/ckpt" --save-interval 2 >"$work/crash.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "FAIL: the killed job exited 0"; exit 1; }
[ "$(cat "$work/ckpt/latest")" = "iter_0000002" ] || { echo "FAIL: latest is $(cat "$work/ckpt/latest")"; exit 1; }
[ ! -d "$work/ckpt/iter_0000004" ] || { echo "FAIL: a partial iter_0000004 was renamed into place"; exit 1; }
echo "killed job: exit $rc, latest = $(cat "$work/ckpt/latest"), partial: $(ls "$work/ckpt" | tr '\n' ' ')"

"$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --load "$work/ckpt" \
  --metrics-file "$work/resumed.jsonl" >"$work/resume.log" 2>&1
grep -q "loaded checkpoint" "$work/resume.log" || { echo "FAIL: no checkpoint loaded"; cat "$work/resume.log"; exit 1; }
want=$(losses "$work/full.jsonl" | tail -n 4)
got=$(losses "$work/resumed.jsonl")
if [ "$want" != "$got" ]; then
  echo "FAIL: resumed losses differ"; echo "uninterrupted: $want"; echo "resumed: $got"; exit 1
fi
echo "resumed steps 3-6 bitwise equal to the uninterrupted run"

# 3. a rank dies in the middle of training step 5 (after step 4 was saved): resuming loses only
#    step 5's work and again reproduces steps 5-6 bitwise.
rm -rf "$work/ckpt"
set +e
ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=throw:3:5" "$root/launch/mpirun.sh" -np 4 "$zt" \
  "${args[@]}" --save "$work/ckpt" --save-interval 2 >"$work/crash2.log" 2>&1
rc=$?
set -e
[ "$rc" -ne 0 ] || { echo "FAIL: the crashed job exited 0"; exit 1; }
[ "$(cat "$work/ckpt/latest")" = "iter_0000004" ] || { echo "FAIL: latest is $(cat "$work/ckpt/latest")"; exit 1; }
"$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --load "$work/ckpt" \
  --metrics-file "$work/resumed2.jsonl" >/dev/null 2>&1
want=$(losses "$work/full.jsonl" | tail -n 2)
got=$(losses "$work/resumed2.jsonl")
[ "$want" = "$got" ] || { echo "FAIL: after a crash in step 5: $got, want $want"; exit 1; }

# 4. the older iteration, named: the run of 2. again, from a directory whose `latest` is 4.
"$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --load "$work/ckpt" --ckpt-step 2 \
  --metrics-file "$work/step2.jsonl" >/dev/null 2>&1
want=$(losses "$work/resumed.jsonl")
got=$(losses "$work/step2.jsonl")
[ "$want" = "$got" ] || { echo "FAIL: --ckpt-step 2 with latest 4: $got, want $want"; exit 1; }
echo "PASS: resumed after a kill mid-save and after a crash mid-step, bitwise, and from --ckpt-step 2"
