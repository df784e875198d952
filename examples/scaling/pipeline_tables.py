#!/usr/bin/env python3
"""`zerotron simulate` for the ZeRO paper's 100B model and a 1T model on the dgx-a100 preset, with
and without pipeline parallelism: the pipeline tables of docs/results/planner.md.

Every number is computed by `zerotron simulate --json` (the step model over the per-stage memory
plan, src/planner); nothing here is measured on a GPU. The layouts:
  100B: the ZeRO paper's model (125 layers, hidden 8192, 64 heads, sequence 1024, fp16,
        checkpointing) on its 400 GPUs at its global batch of 800: the paper's tp 16 x dp 25
        ZeRO-2 with Pa and micro batch 32; tp 8 (one node) x dp 50; and with a pipeline of 5
        stages (the divisor of 125 nearest Megatron-LM's 4-8 stages at this size) x tp 8 x dp 10,
        ZeRO-1, micro batch 4 (20 micro-batches per step), 1F1B and interleaved (5 layers per
        virtual stage).
  1T:   Megatron-LM's 1T configuration (Narayanan et al. 2021, Table 1: 128 layers, hidden 25600,
        160 heads, sequence 2048, tp 8 x pp 64 on 3072 GPUs, global batch 3072), bf16,
        checkpointing, micro batch 1 (512 micro-batches per step); without a pipeline the same
        3072 GPUs as tp 8 x dp 384 with ZeRO-3 (or ZeRO-1, which does not fit).

Usage: examples/scaling/pipeline_tables.py [--zerotron build/bin/zerotron]
"""
import argparse
import json
import subprocess

M100B = ["--num-layers", "125", "--hidden-size", "8192", "--num-attention-heads", "64",
         "--seq-length", "1024", "--vocab-size", "50257", "--fp16", "--checkpoint-activations",
         "--global-batch-size", "800", "--world-size", "400"]
M1T = ["--num-layers", "128", "--hidden-size", "25600", "--num-attention-heads", "160",
       "--seq-length", "2048", "--vocab-size", "51200", "--bf16", "--checkpoint-activations",
       "--global-batch-size", "3072", "--world-size", "3072", "--micro-batch-size", "1",
       "--tensor-model-parallel-size", "8"]
PP5 = ["--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "5",
       "--zero-stage", "1", "--micro-batch-size", "4"]
PP64 = ["--pipeline-model-parallel-size", "64", "--zero-stage", "1"]
ROWS = [
    ("100B", M100B + ["--tensor-model-parallel-size", "16", "--zero-stage", "2",
                      "--partition-activations", "--micro-batch-size", "32"]),
    ("100B", M100B + ["--tensor-model-parallel-size", "8", "--zero-stage", "2",
                      "--partition-activations", "--micro-batch-size", "16"]),
    ("100B", M100B + PP5),
    ("100B", M100B + PP5 + ["--sequence-parallel"]),
    ("100B", M100B + PP5 + ["--sequence-parallel", "--num-layers-per-virtual-pipeline-stage", "5"]),
    ("1T", M1T + ["--zero-stage", "3", "--partition-activations"]),
    ("1T", M1T + ["--zero-stage", "1", "--partition-activations"]),
    ("1T", M1T + PP64),
    ("1T", M1T + PP64 + ["--sequence-parallel"]),
    ("1T", M1T + PP64 + ["--sequence-parallel", "--num-layers-per-virtual-pipeline-stage", "1"]),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zerotron", default="build/bin/zerotron")
    args = ap.parse_args()
    print("| model | tp x dp x pp | ZeRO | schedule | sp | micro batch x micro-batches | "
          "step (s) | pipeline (s) | bubble | tp comm (s) | dp comm exposed (s) | "
          "TFLOP/s per GPU | tokens/s | largest stage memory (GB) | fits 80 GiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model, flags in ROWS:
        cmd = [args.zerotron, "simulate", "--cluster", "dgx-a100", "--json"] + flags
        r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        lay = r["layout"]
        pp = lay["pp"]
        schedule = "-" if pp == 1 else ("interleaved x%d" % lay["model_chunks"]
                                        if lay["model_chunks"] > 1 else "1F1B")
        stage = " (stage %d)" % r["largest_stage"] if pp > 1 else ""
        print("| %s | %d x %d x %d | %d | %s | %s | %d x %d | %.1f | %s | %s | %.1f | %.1f | %.1f "
              "| %.0f | %.2f%s | %s |" % (
                  model, lay["tp"], lay["dp"], pp, lay["zero_stage"], schedule,
                  "yes" if "--sequence-parallel" in flags else "no", r["micro_batch"],
                  r["gradient_accumulation"], r["step_ms"] / 1e3,
                  "%.1f" % (r["pipeline_ms"] / 1e3) if pp > 1 else "-",
                  "%.1f%%" % (100 * r["bubble_fraction"]) if pp > 1 else "-",
                  r["tp_comm_ms"] / 1e3, r["dp_exposed_ms"] / 1e3, r["tflops_per_device"],
                  r["tokens_per_s"], r["device_bytes"] / 1e9, stage,
                  "yes" if r["fits"] else "no"))


if __name__ == "__main__":
    main()
