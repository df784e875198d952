#!/usr/bin/env python3
"""The JSON summary of tests/gpu/check.sh: reads what its steps left in the work directory
(gtest JSON per test program, the training metrics and estimates per ZeRO stage, PyTorch's
ceilings, bench_attention's output, the sanitizer log) and prints one JSON object.

Training figures are medians over the logged iterations after the first (allocation, cuBLASLt
heuristics); MFU = model TFLOP/s (zerotron's 6*params + attention convention) / the dense bf16
peak check.sh names. Memory: MemoryPool's peak bytes per category (the last metrics line)
beside `zerotron estimate --json`'s plan for the same flags, and their difference.
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


def train_stage(work, stage, peak):
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
        res.update({"tokens_per_s": tok, "model_tflops": tfl,
                    "mfu": tfl / peak if peak > 0 else None,
                    "iterations_in_median": [r["iteration"] for r in warm],
                    "loss_first_last": [rows[0].get("lm_loss"), rows[-1].get("lm_loss")],
                    "num_parameters": rows[-1].get("num_parameters")})
        mem = rows[-1].get("memory", {})
        res["memory"] = {}
        for cat, field in PLAN_FIELDS.items():
            m = mem.get(cat)
            p = plan.get(field) if plan else None
            res["memory"][cat] = {"measured": m, "plan": p,
                                  "measured_minus_plan": (m - p) if m is not None and p is not None
                                  else None}
        res["fragmentation"] = mem.get("fragmentation")
    if plan:
        res["plan_fits"] = plan.get("fits")
    return res


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
    for f in ("work", "steps", "gpu", "manifest", "notes"):
        ap.add_argument("--" + f, default="")
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--peak", type=float, default=0)
    ap.add_argument("--status", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=0)
    ap.add_argument("--sanitizer-log", default="")
    a = ap.parse_args()

    steps = []
    for line in open(a.steps, errors="replace"):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 3:
            rc = int(parts[1])
            steps.append({"name": parts[0], "rc": rc, "seconds": int(parts[2]),
                          "note": parts[3] if len(parts) > 3 else "",
                          "outcome": "not run" if rc == -1 else "ok" if rc == 0
                          else "timed out" if rc in (124, 137) else "failed"})
    tests = {}
    for p in sorted(glob.glob(os.path.join(a.work, "gtest", "*.json"))):
        tests[os.path.basename(p)[:-5]] = gtest_counts(p)
    stages = [train_stage(a.work, s, a.peak) for s in (0, 2, 3)]
    torch_ref = last_json(os.path.join(a.work, "torch.json"))
    attention = last_json(os.path.join(a.work, "attention.json"))
    manifest = open(a.manifest).read().splitlines()[:4] if os.path.exists(a.manifest) else []
    overlap = last_json(os.path.join(a.work, "overlap.json"))
    probe_path = os.path.join(a.work, "probe.txt")
    probe = open(probe_path, errors="replace").read().splitlines() if os.path.exists(
        probe_path) else []

    headline = {
        "gpu": a.gpu, "cuda": probe[0] if probe else "no probe", "dense_bf16_peak_tflops": a.peak,
        "status": a.status,
        "seconds": a.seconds,
        "steps_failed": [s["name"] for s in steps if s["outcome"] in ("failed", "timed out")],
        "tests": {k: (f'{v["passed"]} passed, {v["failed"]} failed, {v["skipped"]} skipped'
                      if v else "no result") for k, v in tests.items()},
        "train": {f'stage{s["stage"]}': (
            f'{s["tokens_per_s"]:.0f} tokens/s, {s["model_tflops"]:.1f} TFLOP/s, MFU '
            + (f'{100 * s["mfu"]:.1f}%' if s.get("mfu") is not None else "unknown")
            if "tokens_per_s" in s else "no result") for s in stages},
        "torch_gemm_step_ceiling_tflops": torch_ref.get("gemm_step_ceiling_tflops")
        if torch_ref else None,
    }
    print(json.dumps({
        "headline": headline, "bundle": manifest, "bundle_notes": a.notes.splitlines(),
        "gpus": a.gpus, "steps": steps, "tests": tests, "train": stages,
        "torch_reference": torch_ref, "bench_attention": attention,
        "sanitizer_errors": sanitizer_errors(a.sanitizer_log),
        "cuda_probe": probe, "overlap_trace": overlap,
    }, indent=1))


if __name__ == "__main__":
    main()
