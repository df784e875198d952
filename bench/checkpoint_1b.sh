#!/usr/bin/env bash
# The checkpoint benchmark at 1.0B parameters: a GPT of 24 layers, hidden 1792, 16 heads
# (head size 112: bench/zero3_1b.sh's 14 heads do not split over tp 4; the head count changes no
# parameter), vocabulary 50257, sequence 256 (1.016e9 parameters; 12.2 GB of fp32 master + Adam
# m and v),
# bf16, mock data, trained 1 step and saved on 4 ranks as dp 4 stage 3, then loaded as
# tp 2 x dp 2 stage 3, as tp 4 stage 0, on 2 ranks as dp 2 stage 3 and in the saved layout, each
# training 1 step after the load (bench_checkpoint --bench-steps 1), then exported
# (zerotron export, fp32). Prints one JSON object: per run the load average as it began, the
# planner's per-rank plan (zerotron estimate --device cpu), every rank's bench_checkpoint line
# (seconds, state bytes, MemoryPool bytes, resident memory before, peak during the save or load,
# the loader's own accounting, the losses) and its whole-process peak RSS (/usr/bin/time), and
# whether the load met its target: peak RSS added during the load within 10% of the new
# states plus the constant buffer (the loader's 8 MiB block cache). A layout whose plan (plus
# a per-rank process allowance) exceeds MemAvailable is not run and reported as such.
#
# Usage: bench/checkpoint_1b.sh [DIR]   (DIR: where the checkpoint and export go, ~17 GB; default
#        a temporary directory, removed at the end). About 15-25 minutes on 2 cores, ~18 GB of
#        memory at a time. ZT_BENCH_LOCK=FILE runs each multi-GB step under `flock FILE` (a
#        machine shared with other large jobs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zt="$root/build/bin/zerotron"
bench="$root/build/bin/bench_checkpoint"
if [[ $# -ge 1 ]]; then
  dir=$1
  mkdir -p "$dir"
  rm -rf "$dir/ck" "$dir/export"
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
log=$dir/log
mkdir -p "$log"
export OMP_NUM_THREADS=1
model=(--num-layers 24 --hidden-size 1792 --num-attention-heads 16 --vocab-size 50257
  --seq-length 256 --micro-batch-size 1 --bf16 --reduce-bucket-size 5e6
  --allgather-bucket-size 5e6 --checkpoint-activations --global-batch-size 4 --train-iters 2)
lock() {  # holds flock on $ZT_BENCH_LOCK, when set, until unlock
  if [[ -n "${ZT_BENCH_LOCK:-}" ]]; then
    exec {lockfd}>>"$ZT_BENCH_LOCK"
    flock "$lockfd"
  fi
}
unlock() {
  if [[ -n "${ZT_BENCH_LOCK:-}" ]]; then
    flock -u "$lockfd"
    exec {lockfd}>&-
  fi
}
# Per-rank allowance for what the plan does not count (MPI, the binary, the heap), bytes.
overhead=400000000
runs=()
# bench NAME NP LAYOUT...: plan the layout; if it fits MemAvailable, run bench_checkpoint on NP
# ranks with each rank's peak RSS into NAME.rss.<rank>.
bench() {
  local name=$1 np=$2
  shift 2
  local layout=() i
  for ((i = 1; i <= $#; i++)); do  # the layout without the bench's own flags, for the planner
    case ${!i} in
      --bench-steps | --save | --load) i=$((i + 1)) ;;
      *) layout+=("${!i}") ;;
    esac
  done
  "$zt" estimate "${model[@]}" --device cpu --world-size "$np" "${layout[@]}" --json \
    >"$log/$name.plan.json"
  local need avail
  lock  # memory is checked, and the run made, while no other large job runs
  need=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total_bytes"] * int(sys.argv[2]) + int(sys.argv[3]) * int(sys.argv[2]))' \
    "$log/$name.plan.json" "$np" "$overhead")
  avail=$(($(awk '/MemAvailable/ {print $2}' /proc/meminfo) * 1024))
  echo "$need $avail" >"$log/$name.memory"
  runs+=("$name")
  if ((need > avail)); then
    echo "checkpoint_1b: $name needs $need bytes (plan + allowance), $avail available: not run" >&2
    unlock
    return 0
  fi
  echo "checkpoint_1b: $name" >&2
  # shellcheck disable=SC2016 # expanded by the inner bash, per rank
  "$root/launch/mpirun.sh" -np "$np" bash -c \
    '/usr/bin/time -f "%M" -o "$0.rss.$OMPI_COMM_WORLD_RANK" "$@"' "$log/$name" \
    "$bench" "${model[@]}" "$@" >"$log/$name.out"
  unlock
  cat "$log/$name.out" >&2
}
bench save 4 --zero-stage 3 --bench-steps 1 --save "$dir/ck"
du -sb "$dir/ck" | cut -f1 >"$log/save.bytes"
bench load_tp2_dp2_s3 4 --tensor-model-parallel-size 2 --zero-stage 3 --bench-steps 1 \
  --load "$dir/ck"
bench load_tp4_s0 4 --tensor-model-parallel-size 4 --zero-stage 0 --bench-steps 1 \
  --load "$dir/ck"
bench load_dp2_s3 2 --zero-stage 3 --bench-steps 1 --load "$dir/ck"
bench load_dp4_s3_same 4 --zero-stage 3 --bench-steps 1 --load "$dir/ck"
echo "checkpoint_1b: export" >&2
lock
cut -d' ' -f1-3 /proc/loadavg >"$log/export.loadavg"
/usr/bin/time -f "%e %M" -o "$log/export.time" \
  "$zt" export --load "$dir/ck" --output "$dir/export/model.safetensors" >"$log/export.out"
unlock
cat "$log/export.out" >&2
du -sb "$dir/export/model.safetensors" | cut -f1 >"$log/export.bytes"
python3 - "$log" "${runs[@]}" <<'PY'
import json, sys
from pathlib import Path
log, names = Path(sys.argv[1]), sys.argv[2:]
CACHE = 8 * 1024 * 1024  # the loader's block cache: the constant buffer
out = {"runs": {}}
for name in names:
    plan = json.loads((log / f"{name}.plan.json").read_text())
    need, avail = map(int, (log / f"{name}.memory").read_text().split())
    run = {"plan": plan,
           "planned_bytes_all_ranks": need, "mem_available_bytes": avail}
    out["runs"][name] = run
    if need > avail:
        run["not_run"] = "plan plus per-rank allowance exceeds MemAvailable"
        continue
    ranks = sorted((json.loads(l) for l in (log / f"{name}.out").read_text().splitlines()
                    if l.startswith("{")), key=lambda r: r["rank"])
    for r in ranks:
        r["process_peak_rss"] = int((log / f"{name}.rss.{r['rank']}").read_text().split()[-1]) * 1024
        added = r["peak_rss_during"] - r["rss_before"]
        r["peak_rss_added_during"] = added
        r["peak_rss_during_over_states"] = r["peak_rss_during"] / r["state_bytes"]
        if r["bench"] == "checkpoint_load":
            r["target_bytes"] = int(0.1 * r["state_bytes"]) + CACHE
            r["target_met"] = added <= r["target_bytes"]
    run["ranks"] = ranks
    run["load_average"] = ranks[0]["load_average"]
    run["seconds"] = max(r["seconds"] for r in ranks)
    run["state_bytes_all_ranks"] = sum(r["state_bytes"] for r in ranks)
    run["mb_per_s_all_ranks"] = run["state_bytes_all_ranks"] / 1e6 / run["seconds"]
    if name == "save":
        run["checkpoint_bytes_on_disk"] = int((log / "save.bytes").read_text())
    else:
        run["target_met_all_ranks"] = all(r["target_met"] for r in ranks)
seconds, peak = (log / "export.time").read_text().split()[-2:]
out["export"] = {"load_average": (log / "export.loadavg").read_text().split(),
                 "seconds": float(seconds), "peak_rss": int(peak) * 1024,
                 "bytes_written": int((log / "export.bytes").read_text()),
                 "message": (log / "export.out").read_text().strip()}
print(json.dumps(out, indent=1))
PY
