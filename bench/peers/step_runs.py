"""The common summary of bench_step-style runs (one JSONL file per run kind in a directory):
median step time and peak RSS per kind, and the machine the first zerotron bf16 run saw. Used by
bench/mixed_precision.sh and bench/gpt2_peers.sh, which add their own ratios."""
import json
import statistics
from pathlib import Path


def summary(tmp, kinds):
    tmp = Path(tmp)

    def load(name):
        p = tmp / f"{name}.jsonl"
        return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []

    runs = {k: load(k) for k in kinds}
    med = {k: statistics.median(r["median_step_ms"] for r in v) for k, v in runs.items() if v}
    rss = {k: max(r["peak_rss_bytes"] for r in v) for k, v in runs.items() if v}
    first = runs["zt_bf16"][0]
    out = {"cpu": first.get("cpu"), "onednn_isa": first.get("onednn_isa"),
           "threads": first.get("threads"),
           "load_average_before": (tmp / "load_before").read_text().split(),
           "load_average_after": (tmp / "load_after").read_text().split(),
           "torch_version": runs["pt_bf16"][0]["torch_version"] if runs["pt_bf16"] else None,
           "median_step_ms": med, "peak_rss_bytes": rss}
    return med, rss, out
