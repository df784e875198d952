#!/usr/bin/env bash
# Multi-node drill on namespace nodes (netns_lib.sh): zerotron under launch/mpirun.sh with a
# hostfile across ztm-n1..ztm-nN, each check printing what it measured.
#   drill.sh ZEROTRON [--full] [--nodes N] [--only CHECK]
# CI subset (a few minutes on 2 cores): identical metrics across two nodes vs one node for
# tp2 x dp2 at ZeRO 0-3 and pp2 x dp2 at ZeRO 1; save at 5 / resume to 10 across nodes; a
# node-local --save refused at start-up;
# --map-by node refused / warned with the layout; kill -9 of one node's processes; the link
# down for good. --full adds pp2 x dp2 at ZeRO 0 and the refusal of ZeRO 3 under a pipeline, a
# 10 s link outage, 1% loss + a rate limit (timing-dependent), and SIGTERM / SIGINT during a
# 10 s save of a 5 GB checkpoint, its bitwise resume and a second Ctrl-C (minutes, ~10 GB).
# Exit 0 with "PASS: ..." lines, 1 on a failed check, 77 (SKIP) without root / namespaces.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
zt=$1
shift
full=0 nodes=2 only=
while [ $# -gt 0 ]; do
  case $1 in
    --full) full=1 ;;
    --nodes) nodes=$2; shift ;;
    --only) only=$2; shift ;;
    *) echo "drill.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
# shellcheck source=netns_lib.sh
source "$here/netns_lib.sh"
ztm_require
ztm_up "$nodes" || { echo "FAIL: the namespace nodes did not come up"; exit 1; }
work=$ZTM_DIR
export ZTM_STATE
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "PASS: $*"; }
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

tiny=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 8 --lr 3e-3
  --lr-decay-iters 20000 --log-interval 1 --reduce-bucket-size 2000 --seed 7)
# The step metrics that must not depend on where the ranks run (a save's record has no loss).
fields() {
  python3 -c 'import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if "lm_loss" in d:
        print(json.dumps({k: d[k] for k in ("iteration", "lm_loss", "grad_norm", "loss_scale", "comm_bytes")}))' "$1"
}
# The steps a metrics file records.
steps_in() {
  local n
  n=$(grep -c '"lm_loss"' "$1" 2> /dev/null)
  echo "${n:-0}"
}
# Runs launch/mpirun.sh on node 1 with the nodes' hostfile; extra mpirun options in $margs.
margs=
across() {
  ztm_exec 1 env ZTM_STATE="$ZTM_STATE" \
    ZT_MPIRUN_ARGS="--mca plm_rsh_agent $ZTM_AGENT $margs" \
    "$root/launch/mpirun.sh" --hostfile "$work/hostfile" --net-if 10.77.0.0/24 "$@"
}
# The same job in the background, in its own process group (pid in $job).
across_bg() {
  local log=$1
  shift
  export -f across ztm_exec ztm_holder
  export root work ZTM_AGENT margs
  # The wrapper outlives a signal to the group (trapped, so its child still gets the default).
  # A background job of a non-interactive shell starts with SIGINT ignored, which no child could
  # undo (a Ctrl-C would never reach the launcher): env restores the default first.
  setsid env --default-signal=INT,QUIT bash -c 'trap : INT TERM; log=$1; shift; across "$@" > "$log" 2>&1; echo "rc=$?" >> "$log"' _ "$log" "$@" &
  job=$!
}
rc_of() { sed -n 's/^rc=//p' "$1" | tail -1; }
wait_steps() { # FILE N SECONDS
  local t=0
  while [ "$(steps_in "$1")" -lt "$2" ]; do
    sleep 0.2
    t=$((t + 1))
    ((t < $3 * 5)) || return 1
  done
}
# A hostfile with N slots per node, so --map-by slot keeps consecutive ranks together.
slots() { for ((k = 1; k <= nodes; k++)); do echo "ztm-n$k slots=$1"; done > "$work/hostfile"; }

# (1) identical metrics across nodes
if want identical; then
  slots 2
  # Under a pipeline, ZeRO 2 and 3 are refused (they reduce every micro-batch): pp2 x dp2 runs
  # stage 1 (--full: also 0, and the refusal of 3 is checked below).
  layouts=("1 1 0" "1 1 1" "1 1 2" "1 1 3" "2 1 1")
  ((full)) && layouts+=("2 1 0")
  for l in "${layouts[@]}"; do
    read -r pp _ stage <<< "$l"
    tp=2
    ((pp > 1)) && tp=1
    name="tp${tp}_pp${pp}_z${stage}"
    args=("${tiny[@]}" --tensor-model-parallel-size "$tp" --pipeline-model-parallel-size "$pp"
      --zero-stage "$stage" --train-iters 4)
    t0=$(now)
    "$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --metrics-file "$work/one_$name.jsonl" \
      > "$work/one_$name.log" 2>&1 || { fail "identical $name: one node exited $?"; tail "$work/one_$name.log"; continue; }
    t1=$(since "$t0")
    t0=$(now)
    across -np 4 "$zt" "${args[@]}" --metrics-file "$work/n1/two_$name.jsonl" \
      > "$work/two_$name.log" 2>&1 || { fail "identical $name: two nodes exited $?"; tail "$work/two_$name.log"; continue; }
    t2=$(since "$t0")
    if cmp -s <(fields "$work/one_$name.jsonl") <(fields "$work/n1/two_$name.jsonl") &&
      [ -s "$work/one_$name.jsonl" ]; then
      pass "identical $name: $(wc -l < "$work/one_$name.jsonl") steps of loss, grad norm, comm bytes bit-identical (one node ${t1} s, two nodes ${t2} s)"
    else
      fail "identical $name: metrics differ"
      diff <(fields "$work/one_$name.jsonl") <(fields "$work/n1/two_$name.jsonl") | head -6
    fi
    grep -A3 "^layout:" "$work/two_$name.log" | head -4
  done
  if ((full)); then
    across -np 4 "$zt" "${tiny[@]}" --pipeline-model-parallel-size 2 --zero-stage 3 --train-iters 2 \
      > "$work/two_pp_z3.log" 2>&1
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "zerotron: error: .*--zero-stage 3 with --pipeline-model-parallel-size" "$work/two_pp_z3.log"; then
      pass "pp2 x dp2 with ZeRO 3 across nodes refused: exit 2, $(grep -c 'zerotron: error' "$work/two_pp_z3.log") error line(s)"
    else
      fail "pp2 x dp2 with ZeRO 3: exit $rc, expected 2 and the refusal"
      tail -3 "$work/two_pp_z3.log"
    fi
  fi
fi

# (2) --map-by node spreads each tp group over the nodes
if want mapbynode; then
  slots 2
  args=("${tiny[@]}" --tensor-model-parallel-size 2 --zero-stage 1 --train-iters 2)
  margs="--map-by node"
  across -np 4 "$zt" "${args[@]}" > "$work/mapnode.log" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ] && grep -q "zerotron: error: .*tensor-parallel group .* spans hosts.*--map-by slot" "$work/mapnode.log"; then
    pass "map-by node refused: exit $rc, $(grep -c 'spans hosts' "$work/mapnode.log") line: $(grep -m1 'spans hosts' "$work/mapnode.log" | cut -c1-110)..."
  else
    fail "map-by node: exit $rc, expected 2 and one line"
    tail -5 "$work/mapnode.log"
  fi
  across -np 4 "$zt" "${args[@]}" --tp-within-node=false > "$work/mapnode_warn.log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q "zerotron: warning: tensor-parallel group" "$work/mapnode_warn.log" &&
    grep -A1 "^layout:" "$work/mapnode_warn.log" | grep -q "@ztm-n2"; then
    pass "map-by node with --tp-within-node=false: exit 0, warning, layout with hosts:"
    grep -A3 "^layout:" "$work/mapnode_warn.log"
  else
    fail "map-by node --tp-within-node=false: exit $rc, no warning or no hosts in the layout"
    tail -5 "$work/mapnode_warn.log"
  fi
  margs=
fi

# (4) kill -9 of one node's processes
if want kill9; then
  slots 2
  rm -rf "$work/n1/ck"
  across_bg "$work/kill9.log" -np 4 "$zt" "${tiny[@]}" --tensor-model-parallel-size 2 --zero-stage 2 \
    --train-iters 100000 --save "$work/n1/ck" --save-interval 2 --metrics-file "$work/n1/kill9.jsonl"
  if ! wait_steps "$work/n1/kill9.jsonl" 5 180; then
    fail "kill9: the job did not reach step 5"
  else
    t0=$(now)
    for p in $(ip netns pids ztm-n2); do [ "$p" != "$(ztm_holder 2)" ] && kill -9 "$p"; done
    if s=$(ztm_wait_gone 10); then
      wait "$job"
      rc=$(rc_of "$work/kill9.log")
      latest=$(cat "$work/n1/ck/latest" 2> /dev/null)
      if [ "${rc:-0}" != 0 ] && [ -n "$latest" ] && [ -d "$work/n1/ck/$latest" ]; then
        pass "kill9: every process gone ${s} s after kill -9 of node 2, exit $rc, last checkpoint $latest present"
      else
        fail "kill9: exit '${rc}', latest '$latest'"
      fi
    else
      fail "kill9: processes left after 10 s: $(ztm_job_pids | xargs ps -o comm= -p | sort | uniq -c | xargs)"
    fi
  fi
  ztm_up "$nodes" "$work" > /dev/null || fail "the nodes did not come up again"
fi

# (5) the link down for good
if want partition; then
  slots 2
  across_bg "$work/part.log" -np 4 "$zt" "${tiny[@]}" --tensor-model-parallel-size 2 --zero-stage 1 \
    --train-iters 100000 --comm-timeout 20 --metrics-file "$work/n1/part.jsonl"
  if ! wait_steps "$work/n1/part.jsonl" 3 180; then
    fail "partition: the job did not reach step 3"
  else
    t0=$(now)
    ztm_link 2 down
    if s=$(ztm_wait_gone 30); then
      wait "$job"
      cause=$(grep -m1 -E "lost communication with a remote daemon|timed out" "$work/part.log")
      pass "partition: every process (mpirun, orted, ranks) gone ${s} s after the link went down, exit $(rc_of "$work/part.log"); cause: ${cause:-none printed}"
      [ -n "$cause" ] || fail "partition: no line naming the cause"
    else
      fail "partition: processes left after 30 s: $(ztm_job_pids | xargs ps -o comm= -p | sort | uniq -c | xargs)"
    fi
  fi
  ztm_up "$nodes" "$work" > /dev/null || fail "the nodes did not come up again"
fi

if want resume; then
  slots 2
  args=("${tiny[@]}" --tensor-model-parallel-size 2 --zero-stage 3)
  rm -rf "$work/n1/rck" "$work/n1/r_full.jsonl" "$work/n1/r_b.jsonl"
  t0=$(now)
  across -np 4 "$zt" "${args[@]}" --train-iters 10 --metrics-file "$work/n1/r_full.jsonl" > "$work/r_full.log" 2>&1
  rc_full=$?
  across -np 4 "$zt" "${args[@]}" --train-iters 5 --save "$work/n1/rck" > "$work/r_a.log" 2>&1
  rc_a=$?
  across -np 4 "$zt" "${args[@]}" --train-iters 10 --load "$work/n1/rck" --metrics-file "$work/n1/r_b.jsonl" > "$work/r_b.log" 2>&1
  rc_b=$?
  s=$(since "$t0")
  # Empty metrics would compare equal: the runs must have exited 0 and logged their steps.
  if [ "$rc_full$rc_a$rc_b" = 000 ] && [ "$(fields "$work/n1/r_b.jsonl" | tail -5 | wc -l)" -eq 5 ] &&
    [ "$(fields "$work/n1/r_b.jsonl" | tail -1 | sed 's/.*"iteration": \([0-9]*\).*/\1/')" = 10 ] &&
    cmp -s <(fields "$work/n1/r_full.jsonl" | tail -5) <(fields "$work/n1/r_b.jsonl" | tail -5); then
    pass "resume: save at 5, resume to 10 across nodes: steps 6-10 bit-identical (3 runs, ${s} s)"
  else
    fail "resume: exits $rc_full/$rc_a/$rc_b or steps 6-10 differ"
    diff <(fields "$work/n1/r_full.jsonl" | tail -5) <(fields "$work/n1/r_b.jsonl" | tail -5) | head -6
  fi
fi

# (3b) a node-local --save: the same path on every node, a different disk on each
if want nodelocal; then
  slots 2
  rm -rf "$work"/n*/lck
  across -np 4 "$zt" "${tiny[@]}" --tensor-model-parallel-size 2 --train-iters 2 \
    --save "$ZTM_LOCAL/lck" > "$work/nodelocal.log" 2>&1
  rc=$?
  if [ "$rc" -eq 2 ] && [ "$(grep -c 'zerotron: error' "$work/nodelocal.log")" -eq 1 ] &&
    grep -q "not the directory rank 0 writes on host ztm-n1" "$work/nodelocal.log" &&
    [ ! -e "$work/n1/lck/latest" ]; then
    pass "node-local --save refused at start-up: exit 2, one line: $(grep -m1 'zerotron: error' "$work/nodelocal.log" | cut -c1-120)..."
  else
    fail "node-local --save: exit $rc, expected 2 and one line naming ztm-n1"
    tail -5 "$work/nodelocal.log"
  fi
fi

if ((full)) && want flap; then
  slots 2
  args=("${tiny[@]}" --tensor-model-parallel-size 2 --zero-stage 1 --train-iters 30)
  across -np 4 "$zt" "${args[@]}" --metrics-file "$work/n1/f_ref.jsonl" > "$work/f_ref.log" 2>&1 ||
    fail "flap: the reference run exited $?"
  [ "$(wc -l < "$work/n1/f_ref.jsonl")" -eq 30 ] || fail "flap: the reference run logged no 30 steps"
  t0=$(now)
  across_bg "$work/flap.log" -np 4 "$zt" "${args[@]}" --metrics-file "$work/n1/flap.jsonl"
  wait_steps "$work/n1/flap.jsonl" 3 180
  k=$(wc -l < "$work/n1/flap.jsonl")
  ztm_link 2 down
  sleep 10
  ztm_link 2 up
  wait "$job"
  if [ "$k" -ge 30 ]; then
    fail "flap: the job had finished before the link went down"
  elif [ "$(rc_of "$work/flap.log")" = 0 ] && cmp -s <(fields "$work/n1/f_ref.jsonl") <(fields "$work/n1/flap.jsonl"); then
    pass "flap: a 10 s link outage after step $k survived, 30 steps identical ($(since "$t0") s in all)"
  else
    fail "flap: exit $(rc_of "$work/flap.log") or losses differ"
    tail -3 "$work/flap.log"
  fi
  if command -v iptables > /dev/null && command -v tc > /dev/null; then
    ztm_exec 2 iptables -A INPUT -m statistic --mode random --probability 0.01 -j DROP
    ztm_exec 2 tc qdisc add dev eth0 root tbf rate 20mbit burst 32kbit latency 400ms
    t0=$(now)
    across -np 4 "$zt" "${args[@]}" --metrics-file "$work/n1/lossy.jsonl" > "$work/lossy.log" 2>&1
    rc=$?
    s=$(since "$t0")
    drops=$(ztm_exec 2 iptables -L INPUT -v -n -x | awk '/statistic/ {print $1}')
    ztm_exec 2 iptables -D INPUT -m statistic --mode random --probability 0.01 -j DROP
    ztm_exec 2 tc qdisc del dev eth0 root
    if [ "$rc" = 0 ] && cmp -s <(fields "$work/n1/f_ref.jsonl") <(fields "$work/n1/lossy.jsonl"); then
      pass "lossy: 1% drops ($drops packets dropped) + 20 Mbit/s: 30 steps identical (${s} s)"
    else
      fail "lossy: exit $rc or losses differ"
      tail -3 "$work/lossy.log"
    fi
  else
    echo "SKIP: lossy link: iptables or tc missing"
  fi
fi

if ((full)) && want stop; then
  slots 2
  # About 450 M parameters (a 5 GB checkpoint): the save takes over 10 s on a 2-core machine.
  # The LR schedule is fixed (--lr-decay-iters) so that runs of different lengths agree.
  big=(train --device cpu --mock-data --vocab-size 50304 --num-layers 32 --hidden-size 1024
    --num-attention-heads 16 --seq-length 32 --micro-batch-size 1 --global-batch-size 2 --lr 1e-4
    --lr-decay-iters 100000 --tensor-model-parallel-size 2 --zero-stage 1 --log-interval 1
    --exit-signal-handler)
  saved_s() { sed -n 's/.*saved checkpoint at iteration .* (\([0-9.]*\) s).*/\1/p' "$1" | tail -1; }
  for sig in ${ZTM_STOP_SIGS:-TERM INT}; do
    rm -rf "$work/n1/sck"
    across_bg "$work/stop_$sig.log" -np 4 "$zt" "${big[@]}" --train-iters 100000 --save "$work/n1/sck" --metrics-file "$work/n1/stop_$sig.jsonl"
    wait_steps "$work/n1/stop_$sig.jsonl" 2 600
    t0=$(now)
    kill -"$sig" -- "-$job"
    wait "$job"
    s=$(since "$t0")
    rc=$(rc_of "$work/stop_$sig.log")
    k=$(steps_in "$work/n1/stop_$sig.jsonl")
    if [ "$rc" = 0 ] && [ "$(cat "$work/n1/sck/latest" 2> /dev/null)" = "$(printf 'iter_%07d' "$k")" ]; then
      pass "stop SIG$sig: exit 0 ${s} s after the signal, checkpoint at step $k complete ($(du -sh "$work/n1/sck" | cut -f1), save $(saved_s "$work/stop_$sig.log") s)"
    else
      fail "stop SIG$sig: exit $rc, latest $(cat "$work/n1/sck/latest" 2> /dev/null) after $k steps"
      tail -5 "$work/stop_$sig.log"
      continue
    fi
    [ "$sig" = TERM ] || continue
    # Resume bitwise: step k+1 from the checkpoint against an uninterrupted run of k+1 steps.
    across -np 4 "$zt" "${big[@]}" --train-iters $((k + 1)) --load "$work/n1/sck" --metrics-file "$work/n1/stop_res.jsonl" \
      > "$work/stop_res.log" 2>&1
    rm -rf "$work/n1/sck"
    across -np 4 "$zt" "${big[@]}" --train-iters $((k + 1)) --metrics-file "$work/n1/stop_ref.jsonl" > "$work/stop_ref.log" 2>&1
    if [ "$(fields "$work/n1/stop_res.jsonl" | wc -l)" -ge 1 ] &&
      cmp -s <(fields "$work/n1/stop_ref.jsonl" | tail -1) <(fields "$work/n1/stop_res.jsonl" | tail -1); then
      pass "stop SIG$sig resume: step $((k + 1)) from the checkpoint bit-identical to an uninterrupted run"
    else
      fail "stop SIG$sig resume: step $((k + 1)) differs or a run failed"
      tail -n3 "$work/stop_res.log" "$work/stop_ref.log"
    fi
  done
  # A second Ctrl-C aborts at once, while the first one's save is under way.
  rm -rf "$work/n1/sck"
  across_bg "$work/stop_twice.log" -np 4 "$zt" "${big[@]}" --train-iters 100000 --save "$work/n1/sck" --metrics-file "$work/n1/stop_twice.jsonl"
  wait_steps "$work/n1/stop_twice.jsonl" 2 600
  kill -INT -- "-$job"
  sleep 2
  t0=$(now)
  kill -INT -- "-$job"
  if s=$(ztm_wait_gone 30); then
    wait "$job"
    pass "stop twice: every process gone ${s} s after the second SIGINT, exit $(rc_of "$work/stop_twice.log"), latest '$(cat "$work/n1/sck/latest" 2> /dev/null)'"
  else
    fail "stop twice: processes left 30 s after the second SIGINT"
  fi
  rm -rf "$work/n1/sck"
fi

((failures == 0)) && echo "PASS: multinode drill ($nodes nodes$( ((full)) && echo ', full'))" && exit 0
echo "FAIL: $failures check(s)"
exit 1
