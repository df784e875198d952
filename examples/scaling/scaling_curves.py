#!/usr/bin/env python3
"""The ZeRO paper's headline curves from `zerotron simulate`, as CSV and PNG.

  figure2: throughput per GPU of ZeRO-100B vs the Megatron baseline, 1.5B-170B parameters on
           400 V100s (the paper's appendix Table 5 configurations)
  figure3: super-linear scaling of the 60B model from 64 to 400 GPUs (appendix Table 6), with
           the paper's batch sizes and with the largest micro batch the memory plan allows
  figure4: data parallelism only on 128 GPUs: ZeRO up to 13B vs PyTorch DDP (appendix Table 10)

Each row is simulated on the dgx2-v100 cluster (`--cluster`), optionally calibrated
(`--calibrate FILE`). The paper gives its per-model throughputs only in figures; the values its
text states (examples/scaling/paper/README.md) are the reference points, printed and plotted
beside the simulated ones with the error. ZeRO-100B = Pos+g (stage 2) with ZeRO-R (Pa,
checkpointing, constant buffers) and Megatron tensor parallelism inside a node; the baseline =
Megatron of September 2019 (stage 0, checkpointing, its gradient all-reduce after backward as
published_points.py explains; PyTorch DDP, overlapped, without model parallelism). fp16, so GEMMs run at the half-precision (tensor-core) peak
and activations, checkpoints and tp traffic are fp16, as in the trainer; sequence length 1024.

Usage: examples/scaling/scaling_curves.py [--zerotron build/bin/zerotron] [--calibrate F] [--summary]
  --summary: print only the markdown table of the stated points (CSVs and PNGs still written)
  --no-write: write no CSV or PNG
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from published_points import MEGATRON_2019  # noqa: E402  (one definition of the baseline)
PAPER = os.path.join(HERE, "paper")
OUT = os.path.join(HERE, "results")


def read_csv(name):
    with open(os.path.join(PAPER, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def simulate(args, zt_flags):
    cmd = [args.zerotron, "simulate", "--cluster", args.cluster, "--fp16", "--seq-length", "1024",
           "--vocab-size", "50257", "--checkpoint-activations", "--json"] + zt_flags
    if args.calibrate:
        cmd += ["--calibrate", args.calibrate]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"scaling_curves: {' '.join(cmd)} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def shape(row):
    return ["--num-layers", row["layers"], "--hidden-size", row["hidden"],
            "--num-attention-heads", row["heads"]]


def system_flags(system, mp):
    if system == "zero":
        flags = ["--zero-stage", "2"]
        if int(mp) > 1:
            flags.append("--partition-activations")
        return flags
    return MEGATRON_2019 if int(mp) > 1 else ["--zero-stage", "0"]


def write_csv(name, rows):
    path = os.path.join(OUT, name)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    return path


def figure2(args):
    rows = []
    for r in read_csv("table5_throughput_configs.csv"):
        dp = int(r["gpus"]) // int(r["mp"])
        s = simulate(args, shape(r) + ["--tensor-model-parallel-size", r["mp"],
                                       "--data-parallel-size", str(dp),
                                       "--micro-batch-size", r["batch"]] +
                     system_flags(r["system"], r["mp"]))
        rows.append({"size": r["size"], "system": r["system"], "gpus": r["gpus"], "mp": r["mp"],
                     "batch": r["batch"], "num_parameters": s["num_parameters"],
                     "tflops_per_gpu": round(s["tflops_per_device"], 2),
                     "total_pflops": round(s["total_pflops"], 2),
                     "device_gb": round(s["device_bytes"] / 1e9, 2), "fits": s["fits"]})
    return rows


def figure3(args):
    rows = []
    model = {"layers": "75", "hidden": "8192", "heads": "32"}
    for r in read_csv("table6_superlinear_60b.csv"):
        base = shape(model) + ["--tensor-model-parallel-size", "16", "--data-parallel-size",
                               r["dp"]] + system_flags("zero", 16)
        paper_batch = simulate(args, base + ["--micro-batch-size", r["batch"]])
        best = simulate(args, base + ["--max-micro-batch"])
        rows.append({"gpus": r["gpus"], "paper_batch": r["batch"],
                     "tflops_per_gpu_paper_batch": round(paper_batch["tflops_per_device"], 2),
                     "fits_paper_batch": paper_batch["fits"],
                     "max_micro_batch": best["micro_batch"],
                     "tflops_per_gpu_max_batch": round(best["tflops_per_device"], 2),
                     "total_pflops_max_batch": round(best["total_pflops"], 2)})
    return rows


def figure4(args):
    rows = []
    for r in read_csv("table10_dp_only.csv"):
        s = simulate(args, shape(r) + ["--data-parallel-size", "128", "--micro-batch-size",
                                       r["batch"]] + system_flags(r["system"], 1))
        rows.append({"size": r["size"], "system": r["system"], "batch": r["batch"],
                     "num_parameters": s["num_parameters"],
                     "tflops_per_gpu": round(s["tflops_per_device"], 2),
                     "device_gb": round(s["device_bytes"] / 1e9, 2), "fits": s["fits"]})
    return rows


def reference_points(f2, f3, f4):
    """The throughputs the paper's text states, beside the simulated values."""
    def pick(rows, size, system):
        return next(r for r in rows if r["size"] == size and r["system"] == system)
    zero = [r for r in f2 if r["system"] == "zero"]
    base = {r["size"]: r for r in f2 if r["system"] == "baseline"}
    avg_pflops = sum(r["total_pflops"] for r in zero if r["size"] in
                     ("8B", "40B", "60B", "80B", "100B")) / 5
    # Per GPU at 100B: "more than 10x ... for the same model size" (section 1); the appendix
    # compares "the performance per GPU, not the aggregate performance".
    ratio = pick(f2, "100B", "zero")["tflops_per_gpu"] / base["100B"]["tflops_per_gpu"]
    tp = [r["tflops_per_gpu_max_batch"] for r in f3]
    per_gpu_growth = tp[-1] / tp[0]
    return [
        ("ZeRO-100B on 400 GPUs, TFLOP/s per GPU", ">", 38.0,
         pick(f2, "100B", "zero")["tflops_per_gpu"]),
        ("ZeRO-100B on 400 GPUs, PFLOP/s in total", ">", 15.0,
         pick(f2, "100B", "zero")["total_pflops"]),
        ("ZeRO 8B-100B, mean PFLOP/s in total", "~", 15.0, round(avg_pflops, 2)),
        ("Megatron 40B (mp 32, two DGX-2 nodes), TFLOP/s per GPU", "~", 5.0,
         base["40B"]["tflops_per_gpu"]),
        ("ZeRO-100B over Megatron at 100B, per GPU", "~", 10.0, round(ratio, 2)),
        ("ZeRO 13B without MP on 128 GPUs, TFLOP/s per GPU", ">", 40.0,
         pick(f4, "13B", "zero")["tflops_per_gpu"]),
        ("PyTorch DDP 1.38B on 128 GPUs, TFLOP/s per GPU", "<", 20.0,
         pick(f4, "1.38B", "baseline")["tflops_per_gpu"]),
        ("60B: per-GPU TFLOP/s at 400 over 64 GPUs (super-linear: > 1)", ">", 1.0,
         round(per_gpu_growth, 3)),
    ]


def plot(f2, f3, f4, points, label):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("scaling_curves: matplotlib not installed; CSVs written, no PNGs", file=sys.stderr)
        return
    fitted = " (calibration point)" if "calibrated" in label else ""
    fig, ax = plt.subplots(figsize=(7, 4))
    sizes = [r["size"] for r in f2 if r["system"] == "zero"]
    ax.plot(sizes, [r["tflops_per_gpu"] for r in f2 if r["system"] == "zero"], "o-",
            label="ZeRO-100B (simulated)")
    ax.plot(sizes, [r["tflops_per_gpu"] for r in f2 if r["system"] == "baseline"], "s-",
            label="Megatron baseline (simulated)")
    ax.plot(["100B"], [38], "r^", ms=10, label="paper: ZeRO-100B > 38 TFLOP/s" + fitted)
    ax.plot(["40B"], [5], "kv", ms=10, label="paper: Megatron 40B ~ 5 TFLOP/s" + fitted)
    ax.set_xlabel("model size (400 V100 GPUs; Megatron 384 or 256)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_title(f"Figure 2: ZeRO-100B vs Megatron ({label})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "figure2_throughput.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    g = [int(r["gpus"]) for r in f3]
    ax.plot(g, [r["tflops_per_gpu_paper_batch"] for r in f3], "o-",
            label="simulated, the paper's batch (16/48/48/64)")
    ax.plot(g, [r["tflops_per_gpu_max_batch"] for r in f3], "s--",
            label="simulated, --max-micro-batch")
    ax.set_xlabel("GPUs (60B model, MP 16)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_title(f"Figure 3: super-linear scaling of 60B ({label})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "figure3_superlinear.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    zero = [r for r in f4 if r["system"] == "zero"]
    basel = [r for r in f4 if r["system"] == "baseline"]
    ax.plot([r["size"] for r in zero], [r["tflops_per_gpu"] for r in zero], "o-",
            label="ZeRO, no MP (simulated)")
    ax.plot([r["size"] for r in basel], [r["tflops_per_gpu"] for r in basel], "s",
            label="PyTorch DDP (simulated)")
    ax.plot(["13B"], [40], "r^", ms=10, label="paper: 13B > 40 TFLOP/s")
    ax.plot(["1.38B"], [20], "kv", ms=10, label="paper: DDP 1.4B < 20 TFLOP/s")
    ax.set_xlabel("model size (128 V100 GPUs, data parallel only)")
    ax.set_ylabel("TFLOP/s per GPU")
    ax.set_title(f"Figure 4: data parallelism only ({label})", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "figure4_dp_only.png"), dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zerotron", default=os.path.join(HERE, "..", "..", "build", "bin", "zerotron"))
    p.add_argument("--cluster", default="dgx2-v100")
    p.add_argument("--calibrate", default=None)
    p.add_argument("--summary", action="store_true")
    p.add_argument("--no-write", action="store_true", help="write no CSV or PNG")
    args = p.parse_args()
    os.makedirs(OUT, exist_ok=True)
    f2, f3, f4 = figure2(args), figure3(args), figure4(args)
    for name, rows in (("figure2_throughput.csv", f2), ("figure3_superlinear.csv", f3),
                       ("figure4_dp_only.csv", f4)):
        path = write_csv(name, rows) if not args.no_write else name
        if not args.summary:
            print(path)
            for r in rows:
                print("  " + ", ".join(f"{k} {v}" for k, v in r.items()))
    points = reference_points(f2, f3, f4)
    if args.summary:
        print("| stated in the paper | paper | simulated | error |")
        print("|---|---|---|---|")
    else:
        print(f"\n{'stated in the paper':62} {'paper':>10} {'simulated':>10} {'error':>8}")
    rows = []
    for what, rel, paper, ours in points:
        err = (ours - paper) / paper * 100
        if args.summary:
            print(f"| {what} | {rel} {paper:g} | {ours:g} | {err:+.1f}% |")
        else:
            print(f"{what:62} {rel:>5} {paper:<5g} {ours:>9g} {err:>+7.1f}%")
        rows.append({"point": what, "relation": rel, "paper": paper, "simulated": ours,
                     "error_pct": round(err, 1)})
    if args.no_write:
        return
    write_csv("paper_points.csv", rows)
    label = f"simulated, {args.cluster}" + (", calibrated" if args.calibrate else "")
    plot(f2, f3, f4, points, label)


if __name__ == "__main__":
    main()
