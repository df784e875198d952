#!/usr/bin/env python3
"""PyTorch's training step on the model tests/gpu/check.sh trains, for the ratio beside zerotron's.

A GPT-2-shaped model (pre-LN blocks, learned positions, GeLU MLP of 4x, tied LM head, no dropout)
in bf16 parameters with torch.nn.functional.scaled_dot_product_attention(is_causal=True), one
micro-batch per step of random tokens, AdamW (foreach), on the current GPU. It times `--iters`
steps after `--warmup` and prints one JSON object: the median step, tokens/s, the parameter count
and the peak memory PyTorch allocated. (The same model as zerotron's up to its fp32 master
weights and optimizer states, which zerotron keeps and this loop does not: a lower bound on
PyTorch's step time for the comparison, not a replica.)

Usage: torch_step.py --layers 24 --hidden 2048 --heads 16 --seq 1024 --micro-batch 4
                     --vocab 50304 [--iters 8] [--warmup 3]
"""
import argparse
import json
import statistics
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    for name in ("layers", "hidden", "heads", "seq", "micro-batch", "vocab"):
        ap.add_argument("--" + name, type=int, required=True)
    ap.add_argument("--iters", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda", help="cpu: a quick run of the script itself")
    a = ap.parse_args()

    import torch
    import torch.nn.functional as F
    from torch import nn

    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda.is_available() is False"}))
        return 1
    dev, dt = torch.device(a.device), torch.bfloat16
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    h, nh = a.hidden, a.heads

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.fc, self.out = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, nh, h // nh).permute(2, 0, 3, 1, 4)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, h))
            return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(a.vocab, h), nn.Embedding(a.seq, h)
            self.blocks = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln = nn.LayerNorm(h)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.ln(x) @ self.wte.weight.t()

    torch.manual_seed(0)
    model = Gpt().to(dev, dt)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    x = torch.randint(0, a.vocab, (a.micro_batch, a.seq + 1), device=dev)
    times, losses = [], []
    for i in range(a.warmup + a.iters):
        sync()
        t0 = time.perf_counter()
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.float().view(-1, a.vocab), x[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
            losses.append(loss.item())
    step = statistics.median(times)
    print(json.dumps({"torch": torch.__version__,
                      "device": torch.cuda.get_device_name() if cuda else "cpu",
                      "parameters": params, "step_ms_median": step * 1e3,
                      "tokens_per_s": a.micro_batch * a.seq / step, "losses": losses,
                      "peak_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
