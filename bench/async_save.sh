#!/usr/bin/env bash
# What --async-save takes off the step loop: the same GPT trains 2 x SAVE_INTERVAL steps with a
# save every SAVE_INTERVAL steps, once with synchronous saves and once with --async-save, on
# one rank (the CPU backend: the snapshot is a host-to-host copy). One JSON object: each save's
# save_stall_s (time the loop waited) and save_write_s (the shard write, fsync included) from
# the metrics file, the ratio of the async mid-run save's stall to the sync one's write, the
# lm losses and the checkpoint files of both runs compared byte for byte. The mid-run save is
# the one to read: the last save of a run is waited for at the end, so its stall is its write.
# Usage: bench/async_save.sh [layers=24] [hidden=1024] [heads=16] [save_interval=3] [dir]
#   (the default is GPT-2 medium's shape, 355 M parameters, whose checkpoint is 4.3 GB; dir:
#   where the checkpoints go, default a temporary directory under /tmp, removed after)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
layers=${1:-24}
hidden=${2:-1024}
heads=${3:-16}
interval=${4:-3}
zt="$root/build/bin/zerotron"
tmp=$(mktemp -d "${5:-/tmp}/zt_async_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
model=(--num-layers "$layers" --hidden-size "$hidden" --num-attention-heads "$heads"
  --vocab-size 50257 --seq-length 32 --micro-batch-size 1 --global-batch-size 1 --mock-data
  --lr 1e-4 --lr-decay-iters 100000 --log-interval 1 --train-iters $((2 * interval))
  --save-interval "$interval")
for mode in sync async; do
  extra=()
  [ "$mode" = async ] && extra=(--async-save)
  "$root/launch/mpirun.sh" -np 1 "$zt" train "${model[@]}" --save "$tmp/$mode" \
    --metrics-file "$tmp/$mode.jsonl" "${extra[@]}" >"$tmp/$mode.log" 2>&1 ||
    { tail -n 20 "$tmp/$mode.log"; exit 1; }
done
identical=true
diff -rq -x zerotron.lock "$tmp/sync" "$tmp/async" >/dev/null || identical=false
python3 - "$tmp" "$identical" "$interval" "${model[*]}" <<'PY'
import json, platform, subprocess, sys
from pathlib import Path
tmp, identical, interval, model = Path(sys.argv[1]), sys.argv[2] == "true", int(sys.argv[3]), sys.argv[4]
def records(mode):
    return [json.loads(l) for l in (tmp / f"{mode}.jsonl").read_text().splitlines()]
out = {"bench": "async_save", "command": "zerotron train " + model, "ranks": 1,
       "machine": f"{platform.machine()}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores",
       "checkpoints_byte_identical": identical}
losses = {}
for mode in ("sync", "async"):
    recs = records(mode)
    steps = [r for r in recs if "lm_loss" in r]
    saves = [r for r in recs if "save_stall_s" in r]
    losses[mode] = [r["lm_loss"] for r in steps]
    out["num_parameters"] = steps[0]["num_parameters"]
    out["step_s_median"] = out.get("step_s_median", {})
    out["step_s_median"][mode] = sorted(r["elapsed_ms"] for r in steps)[len(steps) // 2] / 1e3
    out[mode] = [{"iteration": s["iteration"], "save_stall_s": s["save_stall_s"],
                  "save_write_s": s["save_write_s"]} for s in saves]
out["checkpoint_bytes"] = sum(f.stat().st_size for f in (tmp / "sync" / f"iter_{interval:07d}").iterdir())
out["losses_identical"] = losses["sync"] == losses["async"]
mid = lambda mode: next(s for s in out[mode] if s["iteration"] == interval)
out["mid_run_stall_over_sync_write"] = mid("async")["save_stall_s"] / mid("sync")["save_write_s"]
print(json.dumps(out, indent=1))
PY
