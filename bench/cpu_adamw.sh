#!/usr/bin/env bash
# The host AdamW step of optimizer offload against PyTorch's on the same CPU in one run:
# zerotron's Kernels::adamw_multi (bench_adamw: fp32, bf16 and fp16 gradients) and
# torch.optim.AdamW(fused=True) and (foreach=True) (bench/peers/torch_adamw.py: fp32 gradients),
# the same parameter count, tensor count, threads, lr and weight decay. Runs are interleaved
# (zerotron and torch fused, in alternating order, then torch foreach) `rounds` times so load
# drift on a shared machine hits all of them alike; each figure is the median over every timed
# step of every round. The last line is one JSON object: the CPU (/proc/cpuinfo model name,
# family and model number; avx512f, avx512_bf16 and amx flags), threads, params, zerotron_s
# (fp32 gradients), torch_fused_s, ratio = zerotron_s / torch_fused_s (<= 1: zerotron at least as
# fast), the bf16/fp16-gradient medians, torch_foreach_s, and GB/s for each: the bytes an AdamW
# step must move (parameters, moments and gradients read, parameters and moments written: 28
# bytes per parameter with fp32 gradients, 26 with half ones) over its median. The fastest step
# of each (_min_s) is there for context: on a shared machine it is the one least slowed by other
# processes.
# Where the installed torch has no fused CPU AdamW, torch_fused_available is false with its error
# and ratio is against foreach.
# Python: the reference checks' virtual environment (scripts/install-python-deps.sh) where it is
# installed, else python3; ZT_PYTHON overrides. Without torch only zerotron runs.
# THREADS (default: every core) sets OMP_NUM_THREADS and torch.set_num_threads alike; TENSORS
# (default 1) cuts the parameters into that many tensors (segments) on both sides. OpenBLAS
# variables are left as the environment has them (AdamW calls no BLAS).
# BASELINE_BENCH_ADAMW=<another bench_adamw> adds that binary's runs to every round ("base_" keys).
# Usage: bench/cpu_adamw.sh [params=100000000] [rounds=4] [steps=5]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
params=${1:-100000000}
rounds=${2:-4}
steps=${3:-5}
threads=${THREADS:-$(nproc)}
tensors=${TENSORS:-1}
bin="$root/build/bin/bench_adamw"
base=${BASELINE_BENCH_ADAMW:-}
export OMP_NUM_THREADS=$threads
py=${ZT_PYTHON:-}
if [ -z "$py" ]; then
  venv=$("$root/scripts/install-python-deps.sh" --print-path)
  py=python3
  [ -f "$venv/installed" ] && py=$venv/bin/python
fi
have_torch=0
"$py" -c "import torch" 2>/dev/null && have_torch=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--params "$params" --tensors "$tensors" --steps "$steps" --warmup 2)
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_before"
run_zerotron() {
  if [ -n "$base" ]; then
    "$base" "${common[@]}" >>"$tmp/base_zt.jsonl"
  fi
  "$bin" "${common[@]}" >>"$tmp/zt.jsonl"
}
run_torch() {
  if [ "$have_torch" = 1 ]; then
    "$py" "$root/bench/peers/torch_adamw.py" "${common[@]}" --threads "$threads" --impl "$1" \
      >>"$tmp/pt_$1.jsonl"
  fi
}
# zerotron and torch fused swap places every round, so each follows the long foreach run (whose
# exit hands gigabytes back to the kernel) as often as the other.
for round in $(seq "$rounds"); do
  if ((round % 2)); then
    run_zerotron
    run_torch fused
  else
    run_torch fused
    run_zerotron
  fi
  run_torch foreach
done
cut -d' ' -f1-3 /proc/loadavg >"$tmp/load_after"
"$py" - "$tmp" "$params" "$threads" "$tensors" "$rounds" "$steps" <<'PY'
import json, os, statistics, sys
tmp, params, threads, tensors, rounds, steps = sys.argv[1], *map(int, sys.argv[2:])


def runs(name):
    path = os.path.join(tmp, name + ".jsonl")
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []


def bytes_per_param(grad):
    return 6 * 4 + (4 if grad == "fp32" else 2)


cpu = {}
for line in open("/proc/cpuinfo"):
    key, _, val = line.partition(":")
    cpu.setdefault(key.strip(), val.strip())
flags = set(cpu.get("flags", "").split())
out = {
    "cpu_model": cpu.get("model name"),
    "cpu_family": cpu.get("cpu family"), "cpu_model_number": cpu.get("model"),
    "isa": {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")},
    "threads": threads, "params": params, "tensors": tensors, "rounds": rounds,
    "steps_per_round": steps, "weight_decay": 0.1,
}
for prefix in ("", "base_"):
    zt = runs(prefix + "zt")
    for grad in ("fp32", "bf16", "fp16"):
        times = [t for r in zt if grad in r for t in r[grad]["times_s"]]
        if times:
            key = prefix + ("zerotron" if grad == "fp32" else "zerotron_" + grad)
            out[key + "_s"] = statistics.median(times)
            out[key + "_min_s"] = min(times)
            out[key + "_gb_per_s"] = params * bytes_per_param(grad) / out[key + "_s"] / 1e9
for impl in ("fused", "foreach"):
    pt = runs("pt_" + impl)
    if not pt:
        continue
    out["torch"], out["torch_cpu_capability"] = pt[0]["torch"], pt[0]["cpu_capability"]
    out["torch_threads"] = pt[0]["threads"]
    if impl == "fused":
        out["torch_fused_available"] = all(r["available"] for r in pt)
    if not all(r["available"] for r in pt):
        out["torch_" + impl + "_error"] = pt[0].get("error")
        continue
    times = [t for r in pt for t in r["times_s"]]
    out["torch_" + impl + "_s"] = statistics.median(times)
    out["torch_" + impl + "_min_s"] = min(times)
    out["torch_" + impl + "_gb_per_s"] = params * 28 / out["torch_" + impl + "_s"] / 1e9
peer = "torch_fused_s" if "torch_fused_s" in out else "torch_foreach_s"
if peer in out:
    out["ratio_against"] = peer[:-2]
    out["ratio"] = out["zerotron_s"] / out[peer]
    for grad in ("bf16", "fp16"):
        if "zerotron_" + grad + "_s" in out:
            out["ratio_" + grad] = out["zerotron_" + grad + "_s"] / out[peer]
    if "base_zerotron_s" in out:
        out["base_ratio"] = out["base_zerotron_s"] / out[peer]
out["openblas_coretype"] = os.environ.get("OPENBLAS_CORETYPE", "(unset)")
out["load_before"] = open(os.path.join(tmp, "load_before")).read().strip()
out["load_after"] = open(os.path.join(tmp, "load_after")).read().strip()
print(json.dumps(out))
PY
