#!/usr/bin/env bash
# Training beyond RAM with the optimizer states on NVMe: inside a cgroup (v1) memory limit of
# 4 GiB, a GPT of 21 layers, hidden 1792, 14 heads, sequence 512 on the KJV corpus with its
# 4096-token BPE (launch/prepare_kjv.sh; 8.17e8 parameters, 13.1 GB of model states: 3.04x the
# limit) trains 3 steps in bf16 on one CPU rank with --offload-optimizer nvme (micro batch 1,
# activation checkpointing), and the loss must go down. Without offload the same run must be refused before it allocates. The
# compute time is the same model's step in memory, outside the cgroup (it fits this machine's
# RAM); the disk's direct-I/O bandwidth is measured here (bench_disk_bandwidth on the same
# directory), so io_bound_s = the swap file's bytes read / read bandwidth + written / write
# bandwidth, per step. The offloaded run is made twice: with the streamed update behind the next
# forward (the default) and with --no-overlap-optimizer-step (serial_step_s). Last line: one JSON
# object.
# Usage (root, cgroup v1 memory at /sys/fs/cgroup/memory): bench/offload_beyond_ram.sh [DIR]
#   DIR: where the swap file goes (default /work/zt_nvme); about 7 minutes on 2 cores, ~15 GB
#   of memory (the in-memory run) and ~11 GB of disk.
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset for this benchmark's commands.
set -euo pipefail
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
root=$(cd "$(dirname "$0")/.." && pwd)
zt="$root/build/bin/zerotron"
nvme=${1:-/work/zt_nvme}
limit=$((4 << 30))
tmp=$(mktemp -d)
cg=/sys/fs/cgroup/memory/zt_offload_bench_$$
cleanup() {
  [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$nvme"
mkdir "$cg"
echo "$limit" >"$cg/memory.limit_in_bytes"
data="$root/build/quickstart"
"$root/launch/prepare_kjv.sh" "$data" "$zt" >&2
model=(--num-layers 21 --hidden-size 1792 --num-attention-heads 14 --seq-length 512
  --data-path "$data/kjv_text_document" --split 969,30,1 --tokenizer-type GPT2BPETokenizer
  --vocab-file "$data/tokenizer/vocab.json" --merge-file "$data/tokenizer/merges.txt"
  --micro-batch-size 1 --global-batch-size 1 --bf16 --checkpoint-activations
  --reduce-bucket-size 1e7 --lr 2e-6 --lr-decay-style constant --log-interval 1
  --eval-iters 0
  --train-iters 3)
offload=(--offload-optimizer nvme --nvme-path "$nvme")
# in_cgroup CMD...: CMD as a member of the cgroup (its children too).
in_cgroup() { bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"; }

"$root/build/bin/bench_disk_bandwidth" "$nvme" 2G >"$tmp/disk.log"
disk=$(tail -n 1 "$tmp/disk.log")

set +e
in_cgroup "$root/launch/mpirun.sh" -np 1 "$zt" train "${model[@]}" >"$tmp/refused.out" \
  2>"$tmp/refused.err"
refused_rc=$?
set -e

echo 0 >"$cg/memory.max_usage_in_bytes"
in_cgroup /usr/bin/time -f "%M" -o "$tmp/offload.rss" "$zt" train "${model[@]}" "${offload[@]}" \
  --metrics-file "$tmp/offload.jsonl" | tee "$tmp/offload.log" >&2
cgroup_peak=$(cat "$cg/memory.max_usage_in_bytes")
in_cgroup "$zt" train "${model[@]}" "${offload[@]}" --no-overlap-optimizer-step \
  --metrics-file "$tmp/serial.jsonl" | tee "$tmp/serial.log" >&2
"$zt" train "${model[@]}" --metrics-file "$tmp/memory.jsonl" | tee "$tmp/memory.log" >&2
vocab=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$data/tokenizer/vocab.json")
"$zt" estimate "${model[@]}" "${offload[@]}" --vocab-size "$vocab" --device cpu --world-size 1 \
  --json >"$tmp/plan.json"

python3 - "$tmp" "$limit" "$refused_rc" "$cgroup_peak" "$disk" <<'EOF'
import json, platform, statistics, subprocess, sys
tmp, limit, refused_rc, cgroup_peak, disk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
def steps(name):
    return [json.loads(l) for l in open(f"{tmp}/{name}.jsonl") if '"lm_loss"' in l]
off, mem, serial = steps("offload"), steps("memory"), steps("serial")
plan = json.loads(open(f"{tmp}/plan.json").read())
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
flags = next(l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags"))
nvme = plan["nvme_bytes"]
read_bw, write_bw = disk["read_bytes_per_s"], disk["write_bytes_per_s"]
io_bound = nvme / read_bw + nvme / write_bw
step_s = statistics.median(s["elapsed_ms"] for s in off[1:]) / 1e3
compute_s = statistics.median(s["elapsed_ms"] for s in mem[1:]) / 1e3
serial_s = statistics.median(s["elapsed_ms"] for s in serial[1:]) / 1e3
losses = [s["lm_loss"] for s in off]
assert losses == [s["lm_loss"] for s in serial] == [s["lm_loss"] for s in mem], "losses differ"

out = {
    "cpu": cpu, "isa": [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags],
    "params": plan["num_parameters"],
    "model_states_bytes": 16 * plan["num_parameters"],
    "memory_limit_bytes": limit,
    "peak_rss_bytes": int(open(f"{tmp}/offload.rss").read().split()[0]) * 1024,
    "cgroup_peak_bytes": cgroup_peak,
    "nvme_bytes": nvme, "nvme_buffers_bytes": plan["nvme_buffers_bytes"],
    "plan_total_bytes": plan["total_bytes"] + plan["nvme_buffers_bytes"],
    "step_s": step_s, "compute_s": compute_s, "serial_step_s": serial_s,
    "io_bytes_per_step": 2 * nvme,
    "disk_read_bytes_per_s": read_bw, "disk_write_bytes_per_s": write_bw, "disk_direct": disk.get("direct"),
    "disk_bw_bytes_per_s": 2 / (1 / read_bw + 1 / write_bw),
    "io_bound_s": io_bound,
    "step_over_bound": step_s / max(compute_s, io_bound),
    "losses": losses, "loss_goes_down": losses[-1] < losses[0],
    "without_offload_exit": refused_rc,
}
print(json.dumps(out))
EOF
