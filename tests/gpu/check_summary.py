#!/usr/bin/env python3
"""The JSON summary of tests/gpu/check.sh: its phases' verdicts and what their steps left (gtest
JSON per test program, the 1.3B run's metrics and plan, the device's used memory, PyTorch's step
and ceilings) as one JSON object.

Training figures are medians over the logged iterations after the first (allocation, cuBLASLt
heuristics). MFU = tokens/s x FLOPs per token / the dense bf16 peak check.sh names, under two
conventions: 6 x parameters + 12 x layers x hidden x seq (attention over the whole T x T, as
Megatron-LM and the ZeRO paper count) and + 6 x layers x hidden x seq (the causal half that is
computed). Memory: MemoryPool's peak bytes per category (the last metrics line) beside
`zerotron estimate --json`'s plan, and the most the device reported used during the run
(nvidia-smi: the CUDA context, cuBLAS workspaces and NCCL included).
"""
import argparse
import glob
import json
import os
import re
import statistics


def last_json(path):
    """The last line of `path` that parses as a JSON object, or None."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def gtest_counts(path):
    try:
        j = json.load(open(path))
    except (OSError, ValueError):
        return None
    c = {"tests": 0, "passed": 0, "failed": 0, "skipped": 0, "failed_names": []}
    for suite in j.get("testsuites", []):
        for t in suite.get("testsuite", []):
            c["tests"] += 1
            if t.get("failures"):
                c["failed"] += 1
                c["failed_names"].append(f'{suite["name"]}.{t["name"]}')
            elif t.get("result") == "SKIPPED":
                c["skipped"] += 1
            else:
                c["passed"] += 1
    return c


# MemoryPool category (metrics) -> the plan's field (zerotron estimate --json)
PLAN_FIELDS = {"params": "params_bytes", "grads": "grads_bytes", "optimizer": "optimizer_bytes",
               "activations": "activation_bytes", "checkpoints": "checkpoint_bytes",
               "buffers": "buffers_bytes", "host_checkpoints": "host_checkpoint_bytes",
               "peak": "total_bytes"}


def train_stage(work, stage, peak, shape, device_mib):
    path = os.path.join(work, f"train{stage}.jsonl")
    rows = []
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "iteration" in r and "tokens_per_s" in r:
                rows.append(r)
    plan = last_json(os.path.join(work, f"estimate{stage}.json"))
    res = {"stage": stage, "iterations_logged": len(rows)}
    if rows:
        warm = rows[1:] or rows
        tok = statistics.median(r["tokens_per_s"] for r in warm)
        tfl = statistics.median(r["tflops_per_rank"] for r in warm)
        params = rows[-1].get("num_parameters") or 0
        layers, hidden, seq = shape
        full = 6 * params + 12 * layers * hidden * seq
        causal = 6 * params + 6 * layers * hidden * seq
        res.update({"tokens_per_s": tok, "model_tflops": tfl,
                    "mfu": tfl / peak if peak > 0 else None,
                    "mfu_full_attention": tok * full / 1e12 / peak if peak > 0 else None,
                    "mfu_causal_attention": tok * causal / 1e12 / peak if peak > 0 else None,
                    "iterations_in_median": [r["iteration"] for r in warm],
                    "losses": [r.get("lm_loss") for r in rows],
                    "num_parameters": params})
        mem = rows[-1].get("memory", {})
        res["memory"] = {}
        for cat, field in PLAN_FIELDS.items():
            m = mem.get(cat)
            p = plan.get(field) if plan else None
            res["memory"][cat] = {"measured": m, "plan": p,
                                  "measured_minus_plan": (m - p) if m is not None and p is not None
                                  else None}
        res["fragmentation"] = mem.get("fragmentation")
    res["device_used_bytes_max"] = device_mib * 2**20 if device_mib is not None else None
    if plan:
        res["plan_fits"] = plan.get("fits")
    return res


def device_mib(path):
    """The largest memory.used nvidia-smi sampled (MiB), or None."""
    try:
        vals = [int(v) for v in open(path).read().split() if v.isdigit()]
    except OSError:
        return None
    return max(vals) if vals else None


def sanitizer_errors(work_log):
    out = {}
    if not os.path.exists(work_log):
        return out
    name = None
    for line in open(work_log, errors="replace"):
        m = re.match(r"---- (\S+) \(limit", line)
        if m:
            name = m.group(1)
        m = re.search(r"ERROR SUMMARY: (\d+) error", line)
        if m and name:
            out[name] = int(m.group(1))
    return out


def main():
    ap = argparse.ArgumentParser()
    for f in ("work", "phases", "steps", "phase_dir", "gpu", "manifest", "notes"):
        ap.add_argument("--" + f.replace("_", "-"), dest=f, default="")
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--peak", type=float, default=0)
    ap.add_argument("--status", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--shape", default="24,2048,1024", help="layers,hidden,seq of the 1.3B run")
    a = ap.parse_args()

    phases = []
    if os.path.exists(a.phases):
        for line in open(a.phases, errors="replace"):
            p = line.rstrip("\n").split("\t")
            if len(p) == 5:
                phases.append({"phase": int(p[0]), "name": p[1], "verdict": p[2],
                               "seconds": int(p[3]), "budget_s": int(p[4])})
    steps = []
    if os.path.exists(a.steps):
        for line in open(a.steps, errors="replace"):
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4:
                rc = int(parts[2])
                steps.append({"phase": parts[0], "name": parts[1], "rc": rc,
                              "seconds": int(parts[3]),
                              "note": parts[4] if len(parts) > 4 else "",
                              "outcome": "not run" if rc == -1 else "ok" if rc == 0
                              else "timed out" if rc in (124, 137) else "failed"})
    tests = {}
    for p in sorted(glob.glob(os.path.join(a.phase_dir, "*", "*.json"))):
        tests[os.path.basename(p)[:-5]] = gtest_counts(p)
    shape = tuple(int(v) for v in a.shape.split(","))
    train = train_stage(a.work, 0, a.peak, shape,
                        device_mib(os.path.join(a.phase_dir, "4-train", "device_memory_mib.txt")))
    torch_step = last_json(os.path.join(a.work, "torch_step.json"))
    torch_ref = last_json(os.path.join(a.work, "torch.json"))
    manifest = open(a.manifest).read().splitlines()[:4] if os.path.exists(a.manifest) else []
    probe_path = os.path.join(a.work, "probe.txt")
    probe = open(probe_path, errors="replace").read().splitlines() if os.path.exists(
        probe_path) else []
    sanitizers = {}
    for p in sorted(glob.glob(os.path.join(a.phase_dir, "2-sanitizers", "*.log"))):
        sanitizers.update(sanitizer_errors(p))

    ratio = None
    if torch_step and train.get("tokens_per_s") and torch_step.get("tokens_per_s"):
        ratio = train["tokens_per_s"] / torch_step["tokens_per_s"]
    headline = {
        "gpu": a.gpu, "cuda": probe[0] if probe else "no probe", "dense_bf16_peak_tflops": a.peak,
        "status": a.status, "seconds": a.seconds,
        "phases": {f'{p["phase"]} {p["name"]}': p["verdict"] for p in phases},
        "steps_failed": [s["name"] for s in steps if s["outcome"] in ("failed", "timed out")],
        "tests": {k: (f'{v["passed"]} passed, {v["failed"]} failed, {v["skipped"]} skipped'
                      if v else "no result") for k, v in tests.items()},
        "train": (f'{train["tokens_per_s"]:.0f} tokens/s, MFU '
                  + (f'{100 * train["mfu_full_attention"]:.1f}% (full attention) / '
                     f'{100 * train["mfu_causal_attention"]:.1f}% (causal)'
                     if train.get("mfu_full_attention") is not None else "unknown")
                  if "tokens_per_s" in train else "no result"),
        "zerotron_over_torch_tokens_per_s": ratio,
    }
    print(json.dumps({
        "headline": headline, "bundle": manifest, "bundle_notes": a.notes.splitlines(),
        "gpus": a.gpus, "phases": phases, "steps": steps, "tests": tests, "train": train,
        "torch_step": torch_step, "torch_reference": torch_ref,
        "sanitizer_errors": sanitizers, "cuda_probe": probe,
    }, indent=1))


if __name__ == "__main__":
    main()
