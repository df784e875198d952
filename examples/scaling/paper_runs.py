#!/usr/bin/env python3
"""The ZeRO paper's runs under zerotron's memory plan: does each one fit a 32 GB V100?

Every ZeRO row of the paper's appendix Table 5 (1.5B-170B on 400 GPUs), Table 6 (60B on
64-400 GPUs) and Table 10 (1.5B-13B, no model parallelism, 128 GPUs), as the paper ran them:
sequence 1024, fp16, the paper's batch per GPU as the micro batch, ZeRO stage 2 with activation
checkpointing and Pa; Pa+cpu only where Pa alone does not fit (the least offload that fits).
Each row's plan comes from `zerotron estimate --json` (the code a run allocates with).

  paper_runs.py                 print the markdown table of docs/results/planner.md (zerotron's plan per
                                category beside the paper's closed forms)
  paper_runs.py --check RECORD  the CTest: fail unless every row's outcome and least offload
                                are the recorded ones. A row may be recorded as fitting (yes) or
                                as failing only because of the buffers (no-buffers: the known
                                open item of constant-size buffers), nothing else; so a run that
                                stops fitting fails, and so does an expected failure that starts
                                fitting (update the record then)

Usage: examples/scaling/paper_runs.py [--zerotron build/bin/zerotron] [--device-memory 32GiB]
                                      [--check examples/scaling/paper_runs_record.csv]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PAPER = os.path.join(HERE, "paper")
SEQ = 1024
OFFLOADS = {"Pa": ["--partition-activations"],
            "Pa+cpu": ["--partition-activations", "--cpu-checkpointing"]}
# The three configurations that did not fit before the typed compute path (half-precision
# working copies and activations).
FORMERLY_TIGHT = {("10", "13B", 128), ("5", "100B", 400), ("6", "60B", 128)}
GB = 1e9


def read_csv(name):
    with open(os.path.join(PAPER, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def paper_rows():
    """(table, size, gpus, mp, layers, hidden, heads, micro batch) of every ZeRO run."""
    rows = []
    for r in read_csv("table5_throughput_configs.csv"):
        if r["system"] == "zero":
            rows.append(("5", r["size"], int(r["gpus"]), int(r["mp"]), r["layers"], r["hidden"],
                         r["heads"], int(r["batch"])))
    # Table 6's header line states the model: 75 layers, hidden 8192, 32 heads, MP 16.
    for r in read_csv("table6_superlinear_60b.csv"):
        rows.append(("6", "60B", int(r["gpus"]), 16, "75", "8192", "32", int(r["batch"])))
    for r in read_csv("table10_dp_only.csv"):
        if r["system"] == "zero":
            rows.append(("10", r["size"], 128, 1, r["layers"], r["hidden"], r["heads"],
                         int(r["batch"])))
    return rows


def estimate(args, row, offload):
    _, _, gpus, mp, layers, hidden, heads, mb = row
    cmd = [args.zerotron, "estimate", "--json", "--device", "cuda", "--fp16",
           "--seq-length", str(SEQ), "--vocab-size", "50257", "--num-layers", layers,
           "--hidden-size", hidden,
           "--num-attention-heads", heads, "--tensor-model-parallel-size", str(mp),
           "--world-size", str(gpus), "--micro-batch-size", str(mb), "--zero-stage", "2",
           "--checkpoint-activations", "--device-memory", args.device_memory] + OFFLOADS[offload]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"paper_runs: {' '.join(cmd)} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def budget_bytes(text):
    for suffix, mult in (("GiB", 2**30), ("GB", 1e9)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * mult
    return float(text)


def outcome(args, row):
    """The least offload that fits and its plan, else the most offload's plan; and the status:
    'yes', 'no-buffers' (fits once the buffers are left out), or 'no'."""
    for offload in OFFLOADS:
        plan = estimate(args, row, offload)
        if plan["fits"]:
            return offload, plan, "yes"
    rest = plan["total_bytes"] - plan["buffers_bytes"]
    return offload, plan, "no-buffers" if rest <= budget_bytes(args.device_memory) else "no"


def paper_model_states(row, dp):
    """The paper's stage-2 closed form, (2 + 14/Nd) x Psi per model-parallel shard, with the
    paper's nominal Psi (the size it names the row by)."""
    psi = float(row[1].rstrip("B")) * 1e9 / row[3]
    return (2 + 14 / dp) * psi


def paper_checkpoints(row):
    """One fp16 checkpoint of [batch, seq, hidden] per layer, split over the MP ranks by Pa."""
    _, _, _, mp, layers, hidden, _, mb = row
    return 2 * mb * SEQ * int(hidden) * int(layers) / mp


def markdown(args):
    budget = budget_bytes(args.device_memory)
    print(f"| table | model | GPUs | MP x DP | micro batch | offload | model states | activations "
          f"| checkpoints | buffers | total | fits {args.device_memory} ({budget / GB:.2f} GB) "
          f"| paper: model states (2+14/Nd)Psi/MP | paper: checkpoints 2bshL/MP |")
    print("|" + "---|" * 14)
    for row in paper_rows():
        table, size, gpus, mp = row[:4]
        dp = gpus // mp
        offload, p, status = outcome(args, row)
        mark = " (†)" if (table, size, gpus) in FORMERLY_TIGHT else ""
        fits = {"yes": f"yes, {(budget - p['total_bytes']) / GB:.2f} GB free",
                "no-buffers": "**no** (only because of buffers)", "no": "**no**"}[status]
        print(f"| {table} | {size}{mark} | {gpus} | {mp} x {dp} | {row[7]} | {offload} "
              f"| {p['model_states_bytes'] / GB:.2f} | {p['activation_bytes'] / GB:.2f} "
              f"| {p['checkpoint_bytes'] / GB:.2f} | {p['buffers_bytes'] / GB:.2f} "
              f"| {p['total_bytes'] / GB:.2f} | {fits} | {paper_model_states(row, dp) / GB:.2f} "
              f"| {paper_checkpoints(row) / GB:.2f} |")


def check(args):
    with open(args.check) as f:
        record = {(r["table"], r["size"], int(r["gpus"])): r
                  for r in csv.DictReader(line for line in f if not line.startswith("#"))}
    budget = budget_bytes(args.device_memory)
    bad = []
    rows = paper_rows()
    for row in rows:
        key = row[:3]
        offload, p, status = outcome(args, row)
        print(f"table {key[0]:>2} {key[1]:>5} on {key[2]:>3} GPUs, mb {row[7]:>2}, {offload:6}: "
              f"states {p['model_states_bytes'] / GB:6.2f} act {p['activation_bytes'] / GB:6.2f} "
              f"ckpt {p['checkpoint_bytes'] / GB:6.2f} buffers {p['buffers_bytes'] / GB:5.2f} "
              f"total {p['total_bytes'] / GB:6.2f} of {budget / GB:.2f} GB: {status}")
        want = record.get(key)
        if want is None:
            bad.append(f"{key}: not in the record")
        elif want["fits"] not in ("yes", "no-buffers"):
            # Only the buffers are a known open item; any other failure to fit is a bug.
            bad.append(f"{key}: the record may say fits=yes or no-buffers, not {want['fits']}")
        elif status != want["fits"]:
            hint = {"yes": " -- it fits now: record it as fits (yes) and update docs/results/planner.md",
                    "no-buffers": " -- it fits without its buffers: if the buffers are the "
                                  "known open item, record no-buffers and tell the lead",
                    "no": ""}[status]
            bad.append(f"{key}: recorded fits={want['fits']}, planned {status}{hint}")
        elif status == "yes" and offload != want["offload"]:
            bad.append(f"{key}: the least offload that fits is {offload}, recorded "
                       f"{want['offload']}")
    extra = set(record) - {row[:3] for row in rows}
    bad += [f"{key}: recorded but not a row of the paper's tables" for key in sorted(extra)]
    for line in bad:
        print("paper_runs: " + line, file=sys.stderr)
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--zerotron", default=os.path.join(HERE, "..", "..", "build", "bin", "zerotron"))
    p.add_argument("--device-memory", default="32GiB")
    p.add_argument("--check", metavar="RECORD")
    args = p.parse_args()
    if args.check:
        return check(args)
    markdown(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
