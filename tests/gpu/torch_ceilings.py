#!/usr/bin/env python3
"""PyTorch's ceilings for one GPT training step, as the reference beside zerotron's GPU numbers.

For the model's shapes (one rank, tensor parallel 1) it times, in bf16 on the current GPU:
  - every GEMM of a step: per layer QKV, attention projection, MLP up and down; the tied LM
    head; each in forward (x @ W^T), input gradient (dy @ W) and weight gradient (dy^T @ x),
    with torch.matmul, the way cuBLAS sees them;
  - causal attention: torch.nn.functional.scaled_dot_product_attention(is_causal=True),
    forward and forward+backward, for one layer's [B, heads, T, head size].
It prints one JSON object: per shape the time and TFLOP/s, the FLOP-weighted GEMM ceiling of a
whole step (sum of GEMM FLOPs / sum of their times: what a trainer whose GEMMs ran at PyTorch's
speed and did nothing else would reach) and the attention times.

Usage: torch_ceilings.py --layers 24 --hidden 2048 --heads 16 --seq 1024 --micro-batch 4
                         --vocab 50304 [--iters 20]
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True, help="padded vocabulary")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F

    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda.is_available() is False"}))
        return 1
    dev = torch.device("cuda")
    dt = torch.bfloat16
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True

    def timed(fn) -> float:
        """Median seconds of fn() over a.iters runs after 3 warm-ups, with CUDA events."""
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        times.sort()
        return times[len(times) // 2]

    n = a.micro_batch * a.seq  # tokens: the GEMMs' row count
    h = a.hidden
    # (name, in features, out features, how many per step)
    linears = [
        ("qkv", h, 3 * h, a.layers),
        ("attn_proj", h, h, a.layers),
        ("mlp_up", h, 4 * h, a.layers),
        ("mlp_down", 4 * h, h, a.layers),
        ("lm_head", h, a.vocab, 1),
    ]
    gemms = []
    total_flops = total_time = 0.0
    for name, k_in, k_out, count in linears:
        x = torch.randn(n, k_in, device=dev, dtype=dt)
        w = torch.randn(k_out, k_in, device=dev, dtype=dt)
        dy = torch.randn(n, k_out, device=dev, dtype=dt)
        for pas, fn in (
            ("fwd", lambda: torch.matmul(x, w.t())),
            ("dgrad", lambda: torch.matmul(dy, w)),
            ("wgrad", lambda: torch.matmul(dy.t(), x)),
        ):
            t = timed(fn)
            flops = 2.0 * n * k_in * k_out
            gemms.append({"name": name, "pass": pas, "m_n_k": [n, k_out, k_in] if pas == "fwd" else
                          ([n, k_in, k_out] if pas == "dgrad" else [k_out, k_in, n]),
                          "ms": t * 1e3, "tflops": flops / t / 1e12, "per_step": count})
            total_flops += flops * count
            total_time += t * count
        del x, w, dy

    b, nh, d = a.micro_batch, a.heads, h // a.heads
    q, k, v = (torch.randn(b, nh, a.seq, d, device=dev, dtype=dt, requires_grad=True)
               for _ in range(3))
    do = torch.randn(b, nh, a.seq, d, device=dev, dtype=dt)

    def fwd():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    def fwd_bwd():
        o = fwd()
        torch.autograd.grad(o, (q, k, v), do)

    t_f, t_fb = timed(fwd), timed(fwd_bwd)
    # Causal attention FLOPs, FlashAttention's convention: forward 4*B*H*T^2*d / 2 (two GEMMs,
    # half the square), backward 2.5 x forward.
    f_fwd = 4.0 * b * nh * a.seq * a.seq * d / 2
    attention = {"shape_b_h_t_d": [b, nh, a.seq, d], "fwd_ms": t_f * 1e3,
                 "fwd_bwd_ms": t_fb * 1e3, "fwd_tflops": f_fwd / t_f / 1e12,
                 "fwd_bwd_tflops": 3.5 * f_fwd / t_fb / 1e12,
                 "backend_note": "torch picks the SDPA backend (flash / cuDNN / efficient)"}

    print(json.dumps({
        "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(),
        "gemm_step_ceiling_tflops": total_flops / total_time,
        "gemm_step_ms": total_time * 1e3,
        "gemms": gemms, "sdpa_causal": attention}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
