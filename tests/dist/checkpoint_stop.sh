#!/usr/bin/env bash
# Clean stops (CTest: dist.checkpoint_stop.<case>): the job saves a checkpoint at a step boundary
# every rank agrees on, exits 0, and resuming from it gives bitwise the losses of an
# uninterrupted run.
#   sigterm        SIGTERM reaches one rank (rank 1 of 2) in the middle of training (the clean
#                  stop is on by default with --save): both stop after the same step, save it
#                  and exit 0
#   launcher-sigint, launcher-sigterm
#                  the signal goes to launch/mpirun.sh's process group (as a terminal's Ctrl-C
#                  or a scheduler's SIGTERM does) after step 2, no flag but --save, and rank 0's
#                  every save takes 9 s (ZT_INJECT_FAULT slow-save, far past Open MPI's 1 s
#                  between its SIGTERM and SIGKILL): the job saves and exits 0
#   no-handler     the same SIGTERM with --no-exit-signal-handler: the launcher says it stops
#                  the job without a save, and the job ends non-zero with no checkpoint
#   exit-interval  --exit-interval 3: stops after step 3
#   exit-duration  --exit-duration-in-mins 1e-9: stops after the first step
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
args=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --lr 3e-3
  --lr-decay-iters 20000 --tensor-model-parallel-size 2 --zero-stage 3 --log-interval 1
  --reduce-bucket-size 2000)
# The descendants of a process, and the one of them that is MPI rank $2.
rank_pid() {
  local p kids
  for p in $(pgrep -P "$1"); do
    # grep -z reads the NUL-separated environment itself: a `tr | grep -q` pipe fails under
    # pipefail whenever grep exits on its match before tr has written the rest (SIGPIPE).
    if grep -qxz "OMPI_COMM_WORLD_RANK=$2" "/proc/$p/environ" 2>/dev/null; then
      echo "$p"
      return
    fi
    kids=$(rank_pid "$p" "$2")
    [ -n "$kids" ] && { echo "$kids"; return; }
  done
}

# The launcher's job in its own process group, with SIGINT at its default: a background job of a
# non-interactive shell starts with it ignored, which the launcher could not undo.
launch_bg() {
  setsid env --default-signal=INT "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" \
    --train-iters 20000 --save "$work/ck" --metrics-file "$work/stopped.jsonl" "$@" \
    >"$work/stop.log" 2>&1 &
  job=$!
}
# Waits (up to 5 minutes on a loaded machine) until the job logged $1 steps.
wait_steps() {
  for _ in $(seq 3000); do [ "$(losses "$work/stopped.jsonl" 2>/dev/null | wc -l)" -ge "$1" ] && break; sleep 0.1; done
  [ "$(losses "$work/stopped.jsonl" 2>/dev/null | wc -l)" -ge "$1" ] || fail "no $1 steps"
}

case "$case" in
launcher-sigint | launcher-sigterm)
  sig=${case#launcher-}
  export ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=slow-save:0:0"
  launch_bg
  wait_steps 2
  kill -"${sig^^}" -- "-$job"
  rc=0
  wait "$job" || rc=$?
  job=
  grep -v "^ iteration" "$work/stop.log" || true
  [ "$rc" -eq 0 ] || fail "the stopped job exited $rc"
  grep -q "launch/mpirun.sh: stopping: every rank finishes its step, saves and exits" \
    "$work/stop.log" || fail "no launcher line"
  grep -q "zerotron: stopping at iteration [0-9]*: SIGUSR2 (the launcher's stop) received" \
    "$work/stop.log" || fail "no stop line"
  k=$(losses "$work/stopped.jsonl" | wc -l)
  ;;
no-handler)
  launch_bg --no-exit-signal-handler
  wait_steps 2
  kill -TERM -- "-$job"
  rc=0
  wait "$job" || rc=$?
  job=
  [ "$rc" -ne 0 ] || fail "the job exited 0"
  grep -q "launch/mpirun.sh: stopping the job (no clean stop" "$work/stop.log" ||
    { cat "$work/stop.log"; fail "no launcher line"; }
  ! grep -q "every rank finishes its step" "$work/stop.log" || fail "the launcher promised a save"
  [ ! -e "$work/ck/latest" ] || fail "a checkpoint was saved: $(cat "$work/ck/latest")"
  echo "PASS: --no-exit-signal-handler: the job stopped (exit $rc) without a checkpoint"
  exit 0
  ;;
sigterm)
  setsid "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 20000 --save "$work/ck" \
    --metrics-file "$work/stopped.jsonl" >"$work/stop.log" 2>&1 &
  job=$!
  # Up to 5 minutes for five steps: a loaded 2-core CI machine can take more than one.
  for _ in $(seq 3000); do [ "$(losses "$work/stopped.jsonl" 2>/dev/null | wc -l)" -ge 5 ] && break; sleep 0.1; done
  target=$(rank_pid "$job" 1) || true
  [ -n "$target" ] || fail "rank 1 not found"
  kill -TERM "$target" || fail "rank 1 (pid $target) could not be signalled"
  rc=0
  wait "$job" || rc=$?
  job=
  cat "$work/stop.log" | grep -v "^ iteration" || true
  [ "$rc" -eq 0 ] || fail "the stopped job exited $rc"
  grep -q "zerotron: stopping at iteration [0-9]*: SIGTERM received (--exit-signal-handler)" \
    "$work/stop.log" || fail "no stop line"
  k=$(losses "$work/stopped.jsonl" | wc -l)
  [ "$(cat "$work/ck/latest")" = "$(printf 'iter_%07d' "$k")" ] ||
    fail "latest is $(cat "$work/ck/latest") after $k steps"
  ;;
exit-interval)
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 100 --save "$work/ck" \
    --exit-interval 3 --metrics-file "$work/stopped.jsonl" >"$work/stop.log" 2>&1 ||
    { cat "$work/stop.log"; fail "exit status $?"; }
  grep -q "zerotron: stopping at iteration 3: --exit-interval 3" "$work/stop.log" ||
    fail "no stop line"
  k=3
  ;;
exit-duration)
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 100 --save "$work/ck" \
    --exit-duration-in-mins 1e-9 --metrics-file "$work/stopped.jsonl" >"$work/stop.log" 2>&1 ||
    { cat "$work/stop.log"; fail "exit status $?"; }
  grep -q "zerotron: stopping at iteration 1: .* minutes elapsed (--exit-duration-in-mins" \
    "$work/stop.log" || { cat "$work/stop.log"; fail "no stop line"; }
  k=1
  ;;
*)
  fail "unknown case $case"
  ;;
esac
[ "$(losses "$work/stopped.jsonl" | wc -l)" -eq "$k" ] || fail "$(losses "$work/stopped.jsonl" | wc -l) steps ran, not $k"
[ "$(cat "$work/ck/latest")" = "$(printf 'iter_%07d' "$k")" ] || fail "latest is $(cat "$work/ck/latest")"
# Resumed for two more steps, against an uninterrupted run of k + 2 steps.
"$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters $((k + 2)) \
  --metrics-file "$work/full.jsonl" >/dev/null
"$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters $((k + 2)) --load "$work/ck" \
  --metrics-file "$work/resumed.jsonl" >/dev/null
want=$(losses "$work/full.jsonl" | tail -n 2)
got=$(losses "$work/resumed.jsonl")
[ "$want" = "$got" ] || fail "resumed losses $got, uninterrupted $want"
[ "$(losses "$work/stopped.jsonl")" = "$(losses "$work/full.jsonl" | head -n "$k")" ] ||
  fail "the stopped run's losses differ from the uninterrupted run's"
echo "PASS: stopped cleanly after step $k ($case), exit 0, resumed bitwise"
