#!/usr/bin/env bash
# tests/multinode/srun_train.sh <zerotron> [runs] [stop cases...]
# launch/srun.sh on a two-node SLURM cluster (slurm_cluster.sh, started here when not already
# inside one): ZeRO 3, tp 2 x dp 2, 2 tasks per node (TP inside a node, DP across nodes).
#   - first (when ZT_LATE_RANK_PROBE names the late_rank_probe binary): 3 starts in which rank 2
#     comes 1.5 s late; no rank may leave a PMIx fence or MPI_Init before it entered
#   - `runs` training runs (default 3), each bitwise the same metrics (all but the timings) as
#     the one-node run under launch/mpirun.sh
#   - stop cases (default: term usr1; none: no stop case): a running job stopped by
#       term   scancel --signal=TERM <job>
#       usr1   sbatch --time=2 --signal=USR1@80 (SLURM's warning before the time limit)
#     saves a checkpoint at a step every rank agrees on, exits 0, and resuming from it gives
#     bitwise the losses of an uninterrupted run.
# Exit status 77 (skip) when the cluster cannot be built here.
set -euo pipefail
# Each node has its own /tmp and /dev/shm (slurm_cluster.sh), so a build there is invisible to
# the nodes' slurmstepd: skip visibly rather than fail on the checkout's location.
case "$(realpath "$1")" in
  /tmp/* | /dev/shm/*)
    echo "SKIP: multinode.slurm: $1 is under /tmp or /dev/shm, which each SLURM node has its own of; build outside them"
    exit 77
    ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -z "${ZTS_STATE:-}" ]; then
  exec "$root/tests/multinode/slurm_cluster.sh" "$0" "$@"
fi
zt=$(realpath "$1")
runs=${2:-3}
shift $(($# >= 2 ? 2 : 1))
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(term usr1)
cd "$root"
# The nodes have their own /tmp: the work directory is where both see it.
work=$(mktemp -d "$ZTS_STATE/work.XXXXXX")
chmod 755 "$work"
fail() {
  echo "FAIL: $*"
  exit 1
}
# Both "nodes" share this machine's cores, each believing it has two: a rank busy-waiting in MPI
# holds a core another node's rank needs (on a loaded 2-core machine 2.4 s per step without
# this, 1.0-1.2 s with it; the one-node run takes a few ms).
export OMPI_MCA_mpi_yield_when_idle=1
args=(train --device cpu --mock-data --vocab-size 64 --num-layers 2 --hidden-size 32
  --num-attention-heads 4 --seq-length 16 --micro-batch-size 1 --global-batch-size 4 --lr 3e-3
  --lr-decay-iters 20000 --tensor-model-parallel-size 2 --zero-stage 3 --log-interval 5
  --reduce-bucket-size 2000 --comm-timeout 60)
alloc=(-N 2 --ntasks-per-node=2)
# A metrics file without its timings: what must be bitwise the same across runs.
stable() { jq -c 'select(has("lm_loss")) | del(.elapsed_ms, .tokens_per_s, .tflops_per_rank, .comm_exposed_ms, .comm_hidden_fraction,
  .elapsed_time_s, .eta_s)' "$1"; }
losses() { jq -c 'select(has("lm_loss")) | [.iteration, .lm_loss, .grad_norm]' "$1"; }

if [ -n "${ZT_LATE_RANK_PROBE:-}" ]; then
  probe=$(realpath "$ZT_LATE_RANK_PROBE")
  for i in 1 2 3; do
    timeout 120 salloc "${alloc[@]}" "$root/launch/srun.sh" "$probe" 2 1500 >"$work/probe$i.log" 2>&1 ||
      { grep -v "^salloc" "$work/probe$i.log" | head -n 20; fail "late rank probe, start $i"; }
  done
  echo "srun_train: 3 of 3 starts kept every rank in PMIx_Fence and MPI_Init until the late one came"
else
  echo "srun_train: no late rank probe (ZT_LATE_RANK_PROBE unset: built without PMIx headers?)"
fi

iters=10
"$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --train-iters $iters \
  --metrics-file "$work/ref.jsonl" >"$work/ref.log" 2>&1 || { cat "$work/ref.log"; fail "one-node run"; }
start=$(date +%s)
pass=0
for i in $(seq "$runs"); do
  rc=0
  timeout 300 salloc "${alloc[@]}" "$root/launch/srun.sh" "$zt" "${args[@]}" --train-iters $iters \
    --metrics-file "$work/run$i.jsonl" >"$work/run$i.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ] && [ "$(stable "$work/run$i.jsonl")" = "$(stable "$work/ref.jsonl")" ]; then
    pass=$((pass + 1))
  else
    echo "run $i: exit $rc, metrics $(diff <(stable "$work/ref.jsonl") <(stable "$work/run$i.jsonl" 2>/dev/null) | wc -l) lines off"
    grep -v "^ iteration" "$work/run$i.log" | tail -n 15
  fi
done
echo "srun_train: $pass of $runs runs bitwise equal to the one-node run ($(($(date +%s) - start)) s)"
[ "$pass" -eq "$runs" ] || fail "$((runs - pass)) runs differ or failed"

# A stop case: $1 = term | usr1.
stop_case() {
  local c=$1 d="$work/$1" job k
  mkdir -p "$d"
  local extra=()
  [ "$c" = usr1 ] && extra=(--time=2 --signal=USR1@80)
  job=$(sbatch --parsable "${alloc[@]}" "${extra[@]}" -o "$d/job.log" --wrap \
    "$root/launch/srun.sh $zt ${args[*]} --train-iters 1000000 --save $d/ck --exit-signal-handler \
       --metrics-file $d/stopped.jsonl; echo \$? >$d/rc")
  if [ "$c" = term ]; then
    # A few steps in, then TERM to every task of the job's steps.
    for _ in $(seq 600); do [ "$( (wc -l <"$d/stopped.jsonl") 2>/dev/null || echo 0)" -ge 3 ] && break; sleep 0.2; done
    scancel --signal=TERM "$job"
  fi
  # SLURM sends USR1 once the time left is within the warning plus its timer's period (30 s):
  # here 10 to 40 s after the start, 80 s or more before the end. The job trains all the while
  # (thousands of steps of this model), and the uninterrupted run below repeats them.
  for _ in $(seq 900); do [ -f "$d/rc" ] && break; sleep 0.2; done
  [ -f "$d/rc" ] || { scancel "$job"; cat "$d/job.log"; fail "$c: job $job did not stop"; }
  sleep 0.5
  [ "$(cat "$d/rc")" = 0 ] || { cat "$d/job.log"; fail "$c: the stopped job exited $(cat "$d/rc")"; }
  local sig=SIGTERM
  [ "$c" = usr1 ] && sig=SIGUSR1
  grep -q "zerotron: stopping at iteration [0-9]*: $sig received (--exit-signal-handler)" "$d/job.log" ||
    { grep -v "^ iteration" "$d/job.log"; fail "$c: no stop line"; }
  k=$(grep -c '"lm_loss"' "$d/stopped.jsonl")
  [ "$(cat "$d/ck/latest")" = "$(printf 'iter_%07d' "$k")" ] ||
    fail "$c: latest is $(cat "$d/ck/latest") after $k steps"
  # Resumed under srun for two more steps, against an uninterrupted one-node run of k + 2.
  "$root/launch/mpirun.sh" -np 4 "$zt" "${args[@]}" --train-iters $((k + 2)) \
    --metrics-file "$d/full.jsonl" >/dev/null
  timeout 300 salloc "${alloc[@]}" "$root/launch/srun.sh" "$zt" "${args[@]}" --train-iters $((k + 2)) \
    --load "$d/ck" --metrics-file "$d/resumed.jsonl" >"$d/resume.log" 2>&1 ||
    { cat "$d/resume.log"; fail "$c: resume"; }
  [ "$(losses "$d/stopped.jsonl")" = "$(losses "$d/full.jsonl" | head -n "$k")" ] ||
    fail "$c: the stopped run's losses differ from the uninterrupted run's"
  [ "$(losses "$d/resumed.jsonl")" = "$(losses "$d/full.jsonl" | tail -n 2)" ] ||
    fail "$c: resumed losses $(losses "$d/resumed.jsonl"), uninterrupted $(losses "$d/full.jsonl" | tail -n 2)"
  echo "srun_train: $c: stopped at iteration $k (exit 0, checkpoint complete), resumed bitwise"
}
for c in "${cases[@]}"; do [ "$c" = none ] || stop_case "$c"; done
echo "PASS"
