#!/usr/bin/env bash
# Data-loss cases of checkpoint saving that need a killed or a concurrent process (CTest:
# dist.checkpoint_safety.<case>); checkpoint_safety_test.cpp has the others.
#   resave-<point>  a run resumed with --load ck --save ck at its last iteration re-saves that
#                   iteration and rank 0 is killed (SIGKILL) at <point> of publishing it
#                   (before-rename, after-exchange, before-latest, before-prune): `latest` still
#                   names a complete iteration 4, and resuming from it gives bitwise the losses of
#                   the uninterrupted run.
#   settings-warning  a resumed run that changes --lr and --adam-beta2 prints one warning line
#                   each (meta.json records the settings and the zerotron version).
#   two-jobs        a second job given the --save directory of a running one exits 2 with one
#                   line before its first step; the first one finishes unharmed.
#   ckpt-step       export --ckpt-step 3 from a directory whose `latest` is 6 equals, byte for
#                   byte, the export made when 3 was `latest`, also with iter_0000003 a symbolic
#                   link to a copy elsewhere; --keep-last then prunes the link, not the copy.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
args=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --lr 3e-3 --lr-decay-iters 6
  --tensor-model-parallel-size 2 --zero-stage 2 --log-interval 1 --reduce-bucket-size 2000)

case "$case" in
resave-*)
  point=${case#resave-}
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 6 \
    --metrics-file "$work/full.jsonl" >/dev/null
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 4 --save "$work/ck" >/dev/null
  [ "$(cat "$work/ck/latest")" = iter_0000004 ] || fail "first save: latest is $(cat "$work/ck/latest")"
  set +e
  ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=kill-$point:0:4" "$root/launch/mpirun.sh" -np 2 "$zt" \
    "${args[@]}" --train-iters 4 --load "$work/ck" --save "$work/ck" --keep-last 1 \
    >"$work/kill.log" 2>&1
  rc=$?
  set -e
  [ "$rc" -ne 0 ] || { cat "$work/kill.log"; fail "the killed re-save exited 0"; }
  grep -q "loaded checkpoint" "$work/kill.log" || { cat "$work/kill.log"; fail "nothing loaded"; }
  [ "$(cat "$work/ck/latest")" = iter_0000004 ] || fail "after the kill latest is $(cat "$work/ck/latest")"
  [ -f "$work/ck/iter_0000004/meta.json" ] || fail "latest's target iter_0000004 is incomplete"
  echo "killed at $point: exit $rc, directory: $(ls "$work/ck" | tr '\n' ' ')"
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 6 --load "$work/ck" \
    --save "$work/ck" --metrics-file "$work/resumed.jsonl" >"$work/resume.log" 2>&1 ||
    { cat "$work/resume.log"; fail "resuming failed"; }
  want=$(losses "$work/full.jsonl" | tail -n 2)
  got=$(losses "$work/resumed.jsonl")
  [ "$want" = "$got" ] || fail "resumed losses $got, uninterrupted $want"
  [ ! -e "$work/ck/iter_0000004.tmp" ] || fail "the stale iter_0000004.tmp was not removed"
  echo "PASS: killed $point a re-save; latest stayed complete and resumed bitwise"
  ;;
two-jobs)
  # It only holds the lock: stopped without a save.
  setsid "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 20000 --save "$work/ck" \
    --no-exit-signal-handler --metrics-file "$work/first.jsonl" >"$work/first.log" 2>&1 &
  job=$!
  for _ in $(seq 600); do [ -s "$work/first.jsonl" ] && break; sleep 0.1; done
  [ -s "$work/first.jsonl" ] || fail "the first job did not start"
  set +e
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 2 --save "$work/ck" \
    >"$work/second.log" 2>&1
  rc=$?
  set -e
  kill -TERM -- "-$job"
  wait "$job" || true
  job=
  cat "$work/second.log"
  [ "$rc" -eq 2 ] || fail "the second job exited $rc, expected 2"
  grep -q "zerotron: error: rank 0: --save '$work/ck' is in use by another job (pid" \
    "$work/second.log" || fail "no one-line refusal"
  ! grep -q "iteration" "$work/second.log" || fail "the second job trained"
  [ ! -e "$work/ck/latest" ] || fail "the second job wrote a checkpoint"
  echo "PASS: a second job on one --save directory was refused"
  ;;
ckpt-step)
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 3 --save "$work/ck" >/dev/null
  "$zt" export --load "$work/ck" --output "$work/at3/model.safetensors" >/dev/null
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 6 --load "$work/ck" \
    --save "$work/ck" >/dev/null
  [ "$(cat "$work/ck/latest")" = iter_0000006 ] || fail "latest is $(cat "$work/ck/latest")"
  "$zt" export --load "$work/ck" --ckpt-step 3 --output "$work/step3/model.safetensors" >/dev/null
  mkdir "$work/other"
  mv "$work/ck/iter_0000003" "$work/other/"
  ln -s "$work/other/iter_0000003" "$work/ck/iter_0000003"
  "$zt" export --load "$work/ck" --ckpt-step 3 --output "$work/linked/model.safetensors" >/dev/null
  for d in step3 linked; do
    for f in model.safetensors config.json; do
      cmp "$work/at3/$f" "$work/$d/$f" || fail "$d/$f differs from the export made at 3"
    done
  done
  echo "export --ckpt-step 3 (latest 6), also through a link: byte for byte the export made at 3"
  # Its import by a bare file name (config.json in the working directory).
  (cd "$work/at3" && "$zt" import --input model.safetensors --save "$work/imported" >/dev/null) ||
    fail "import --input model.safetensors (a bare file name) failed"
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 6 --load "$work/ck" \
    --save "$work/ck" --keep-last 1 >/dev/null
  if [ -e "$work/ck/iter_0000003" ] || [ -L "$work/ck/iter_0000003" ]; then
    fail "the link was kept"
  fi
  [ -f "$work/other/iter_0000003/meta.json" ] || fail "pruning deleted the link's target"
  echo "PASS: --ckpt-step exports, through a link too; pruning removed the link, not its target"
  ;;
settings-warning)
  # The reproducibility record: a resumed run that changes a setting is told, one line each.
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 2 --save "$work/ck" >/dev/null
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --train-iters 3 --load "$work/ck" \
    --lr 1e-3 --adam-beta2 0.95 >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "resume"; }
  grep "warning" "$work/resume.log" || true
  [ "$(grep -c "zerotron: warning:" "$work/resume.log")" -eq 2 ] || fail "not two warning lines"
  grep -qx "zerotron: warning: --lr was 0.003 in the checkpoint, this run uses 0.001" \
    "$work/resume.log" || fail "no --lr line"
  grep -qx "zerotron: warning: --adam-beta2 was 0.999 in the checkpoint, this run uses 0.95" \
    "$work/resume.log" || fail "no --adam-beta2 line"
  grep -q '"zerotron_version": "' "$work/ck/iter_0000002/meta.json" || fail "no version recorded"
  echo "PASS: one warning line per changed setting"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
