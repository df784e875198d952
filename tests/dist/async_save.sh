#!/usr/bin/env bash
# --async-save (CTest: dist.async_save.<case>):
#   identical      for tp 2 x ZeRO 3 and dp 2 x ZeRO 0 in bf16 (where only one rank writes),
#                  saves at steps 2, 4 and 6 give byte-identical checkpoint directories and
#                  identical losses with and without --async-save; every save has a metrics
#                  record with save_stall_s and save_write_s; the synchronous save of step 2 is
#                  recorded before step 3, the asynchronous one after it (its write went on
#                  while step 3 trained)
#   kill-in-write  rank 1 is killed (SIGKILL) in the middle of the background write of step 4:
#                  `latest` stays at step 2, no step-4 directory is published, and resuming
#                  from it gives bitwise the losses of an uninterrupted run
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=background_job.sh
source "$(dirname "$0")/background_job.sh" "$@"
args=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --lr 3e-3
  --lr-decay-iters 20000 --log-interval 1 --reduce-bucket-size 2000 --train-iters 6)
# The save records of a metrics file: "iteration async stall write", one per line.
saves() {
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if "save_stall_s" in d:
        print(d["iteration"], d["async_save"], d["save_stall_s"] >= 0, d["save_write_s"] >= 0)' "$1"
}
# The line number of a metrics file's first record matching $2.
line_of() { grep -n -m1 "$2" "$1" | cut -d: -f1; }

case "$case" in
identical)
  for layout in "--tensor-model-parallel-size 2 --zero-stage 3" "--zero-stage 0 --bf16"; do
    # shellcheck disable=SC2086
    for mode in sync async; do
      extra=()
      [ "$mode" = async ] && extra=(--async-save)
      rm -rf "${work:?}/$mode"
      "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" $layout --save "$work/$mode" \
        --save-interval 2 --metrics-file "$work/$mode.jsonl" "${extra[@]}" >"$work/$mode.log" 2>&1 ||
        { cat "$work/$mode.log"; fail "$layout $mode: exit status $?"; }
    done
    diff -r -x zerotron.lock "$work/sync" "$work/async" || fail "$layout: the checkpoints differ"
    [ "$(losses "$work/sync.jsonl")" = "$(losses "$work/async.jsonl")" ] ||
      fail "$layout: the losses differ"
    [ "$(losses "$work/sync.jsonl" | wc -l)" -eq 6 ] || fail "$layout: not 6 steps"
    [ "$(saves "$work/sync.jsonl")" = "$(printf '%s False True True\n' 2 4 6)" ] ||
      fail "$layout: sync save records: $(saves "$work/sync.jsonl")"
    [ "$(saves "$work/async.jsonl")" = "$(printf '%s True True True\n' 2 4 6)" ] ||
      fail "$layout: async save records: $(saves "$work/async.jsonl")"
    s2=$(line_of "$work/sync.jsonl" '"iteration":2,"save_stall_s"')
    a2=$(line_of "$work/async.jsonl" '"iteration":2,"save_stall_s"')
    [ "$s2" -lt "$(line_of "$work/sync.jsonl" '"iteration":3,')" ] ||
      fail "$layout: the synchronous save of step 2 is recorded after step 3"
    [ "$a2" -gt "$(line_of "$work/async.jsonl" '"iteration":3,')" ] ||
      fail "$layout: the asynchronous save of step 2 was published before step 3 trained"
    grep -q "writing checkpoint at iteration 2 to .* in the background" "$work/async.log" ||
      fail "$layout: no background line"
    echo "$layout: $(find "$work/async" -type f ! -name zerotron.lock | wc -l) files byte-identical, losses identical"
  done
  echo "PASS: --async-save wrote byte-identical checkpoints, losses identical"
  ;;
kill-in-write)
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --tensor-model-parallel-size 2 \
    --zero-stage 3 --metrics-file "$work/full.jsonl" >/dev/null
  rc=0
  ZT_MPIRUN_ARGS="-x ZT_INJECT_FAULT=kill-in-write:1:4" "$root/launch/mpirun.sh" -np 2 "$zt" \
    "${args[@]}" --tensor-model-parallel-size 2 --zero-stage 3 --save "$work/ck" \
    --save-interval 2 --async-save >"$work/crash.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "the killed job exited 0"
  [ "$(cat "$work/ck/latest")" = "iter_0000002" ] || fail "latest is $(cat "$work/ck/latest")"
  [ ! -d "$work/ck/iter_0000004" ] || fail "a partial iter_0000004 was published"
  echo "killed job: exit $rc, latest = $(cat "$work/ck/latest"), left: $(ls "$work/ck" | tr '\n' ' ')"
  "$root/launch/mpirun.sh" -np 2 "$zt" "${args[@]}" --tensor-model-parallel-size 2 \
    --zero-stage 3 --load "$work/ck" --metrics-file "$work/resumed.jsonl" >"$work/resume.log" 2>&1 ||
    { cat "$work/resume.log"; fail "resuming failed"; }
  want=$(losses "$work/full.jsonl" | tail -n 4)
  got=$(losses "$work/resumed.jsonl")
  [ "$want" = "$got" ] || fail "resumed losses $got, uninterrupted $want"
  echo "PASS: killed during the background write; latest stayed at step 2 and resumed bitwise"
  ;;
*)
  fail "unknown case $case"
  ;;
esac
