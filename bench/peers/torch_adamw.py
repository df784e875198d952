#!/usr/bin/env python3
"""PyTorch peer of bench_adamw: torch.optim.AdamW steps on CPU tensors, printing one JSON object.

The same problem as bench_adamw: --params fp32 parameters cut into --tensors tensors of (nearly)
equal length, fp32 gradients, lr 1e-3, weight decay 0.1; --warmup untimed steps (they create the
moments and fault the pages in), then --steps timed steps, each timed alone.

--impl fused is torch.optim.AdamW(fused=True): one kernel per tensor that reads and writes each
element once, PyTorch's fastest CPU AdamW. --impl foreach is the multi-tensor (_foreach_*) form,
several passes over the data. Where the installed torch has no fused CPU AdamW the object says so
("available": false, with the error) instead of failing.
"""
import argparse
import json
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--params", type=int, default=100_000_000)
    ap.add_argument("--tensors", type=int, default=1)
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--impl", choices=("fused", "foreach"), default="fused")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    bounds = [a.params * k // a.tensors for k in range(a.tensors + 1)]
    params = []
    for lo, hi in zip(bounds, bounds[1:]):
        p = torch.nn.Parameter(torch.empty(hi - lo).uniform_(-0.1, 0.1))
        p.grad = torch.empty(hi - lo).uniform_(-0.01, 0.01)
        params.append(p)
    out = {"impl": a.impl, "params": a.params, "tensors": a.tensors,
           "threads": torch.get_num_threads(), "torch": torch.__version__,
           "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    kind = {"fused": True} if a.impl == "fused" else {"foreach": True}
    times = []
    try:
        opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.1, **kind)
        for s in range(a.warmup + a.steps):
            t0 = time.perf_counter()
            opt.step()
            if s >= a.warmup:
                times.append(time.perf_counter() - t0)
    except (RuntimeError, ValueError) as e:  # no fused CPU kernel in this torch
        out.update(available=False, error=str(e).splitlines()[0])
        print(json.dumps(out))
        return
    out.update(available=True, median_s=statistics.median(times), times_s=times)
    print(json.dumps(out))


if __name__ == "__main__":
    with torch.no_grad():
        main()
