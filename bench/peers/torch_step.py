#!/usr/bin/env python3
"""PyTorch eager peer of zerotron's step benchmark: the same GPT (pre-LN, tied head, GeLU tanh)
and batch on the CPU, forward + backward + AdamW step, printing one JSON object.

--dtype fp32 (default) trains in float32; --dtype bf16 trains under
torch.autocast("cpu", dtype=torch.bfloat16): fp32 parameters and optimizer, matmuls (and the
attention) in bf16, the ops autocast keeps in fp32 (layernorm, softmax, cross-entropy) in fp32 --
the mixed precision a PyTorch user gets on a CPU, to compare with zerotron --bf16.

Attention uses F.scaled_dot_product_attention(is_causal=True): on this CPU it was faster than
the explicit softmax(q k^T / sqrt(hd)) v form (--attn explicit measures the latter), so the peer
is PyTorch at its best, not a strawman.
"""
import argparse
import json
import math
import os
import resource
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Layer(nn.Module):
    def __init__(self, c, nh, attn):
        super().__init__()
        self.nh, self.attn_impl = nh, attn
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.mlp_proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def attention(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.nh, c // self.nh).transpose(1, 2)
                   for z in self.qkv(x).split(c, dim=-1))
        if self.attn_impl == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.nh)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, c))

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, cfg, attn):
        super().__init__()
        L, c, self.vocab = cfg["num_layers"], cfg["hidden_size"], cfg["vocab_size"]
        vp = (cfg["vocab_size"] + 127) // 128 * 128  # padded vocab, as zerotron
        self.wte = nn.Parameter(torch.randn(vp, c) * 0.02)
        self.wpe = nn.Parameter(torch.randn(cfg["seq_length"], c) * 0.02)
        self.layers = nn.ModuleList(Layer(c, cfg["num_attention_heads"], attn) for _ in range(L))
        self.final_ln = nn.LayerNorm(c)
        for name, p in self.layers.named_parameters():  # GPT-2 init
            if name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * L))
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)
            elif "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, tokens, targets):
        x = self.wte[tokens] + self.wpe[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        logits = self.final_ln(x) @ self.wte.T  # tied head over the padded vocab
        logits = logits[..., : self.vocab]  # loss over the real vocab only
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


def add_common_args(ap):
    """The flags every PyTorch step peer takes: the bench config's shape, threads, steps, dtype."""
    ap.add_argument("--num-layers", type=int, default=8)
    ap.add_argument("--hidden-size", type=int, default=512)
    ap.add_argument("--num-attention-heads", type=int, default=8)
    ap.add_argument("--seq-length", type=int, default=512)
    ap.add_argument("--micro-batch-size", type=int, default=4)
    ap.add_argument("--vocab-size", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")


def model_config(args):
    cfg = {k: getattr(args, k) for k in ("num_layers", "hidden_size", "num_attention_heads",
                                         "seq_length", "micro_batch_size", "vocab_size")}
    cfg.update(dtype=args.dtype, warmup=args.warmup, steps=args.steps)
    return cfg


def time_steps(model, args, cfg, impl):
    """Trains `model` (forward(tokens, targets) -> loss) on one random batch for warmup + steps
    steps (AdamW, weight decay 0.1 on matrices, clip 1.0) and prints the JSON object."""
    opt = torch.optim.AdamW([dict(params=[p for p in model.parameters() if p.dim() == 2],
                                  weight_decay=0.1),
                             dict(params=[p for p in model.parameters() if p.dim() != 2],
                                  weight_decay=0.0)],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    b, t = args.micro_batch_size, args.seq_length
    data = torch.randint(0, args.vocab_size, (b, t + 1))
    tokens, targets = data[:, :-1], data[:, 1:]

    times = []
    for i in range(args.warmup + args.steps):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.dtype == "bf16"):
            loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)

    # FLOPs/step = 6·N·tokens + 12·L·C·T·tokens: N counts every parameter incl. the embeddings
    # (6 = 2 forward + 4 backward per weight per token); the second term is the attention
    # scores and weighted sum (q k^T and att v, 2·2·T·C per token per layer forward, x3 with
    # backward), counted as dense, as Megatron does.
    n_params = sum(p.numel() for p in model.parameters())
    tokens_per_step = b * t
    flops = (6 * n_params * tokens_per_step
             + 12 * args.num_layers * args.hidden_size * t * tokens_per_step)
    median = statistics.median(times)
    print(json.dumps({
        "impl": impl + ("-autocast-bf16" if args.dtype == "bf16" else ""),
        "config": cfg,
        "threads": args.threads,
        "num_parameters": n_params,
        "median_step_ms": round(median * 1e3, 2),
        "tokens_per_s": round(tokens_per_step / median, 1),
        "model_tflops": round(flops / median / 1e12, 4),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "torch_version": torch.__version__,
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--attn", choices=("sdpa", "explicit"), default="sdpa")
    args = ap.parse_args()
    cfg = model_config(args)
    cfg.update(attn=args.attn)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    time_steps(Gpt(cfg, args.attn), args, cfg, "pytorch-eager")


if __name__ == "__main__":
    main()
