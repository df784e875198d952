#!/usr/bin/env python3
"""Golden values for zerotron's GPT, written to tests/reference/reference.bin.

Model: GPT-2 pre-LN, tied head over a padded vocabulary (loss over the first V columns only),
GeLU tanh form, LayerNorm eps 1e-5, no dropout. AdamW (lr 1e-3 constant, betas 0.9/0.999,
eps 1e-8), weight decay 0.1 on `.weight` matrices and both embeddings, 0 on biases and LayerNorm
params; clip_grad_norm_(1.0) before every step; three steps on one batch.

Two sections:
* fp32 (`param/`, `grad/`, `out/`, `step3/`): computed in float64 from float32-representable
  initial weights, stored as float32. So the reference is the exact math on exactly the weights
  the C++ test loads, and all the error left is zerotron's own float32 rounding.
* bf16 (`bf16/...`): zerotron's mixed precision, step by step: working params = bf16(master)
  (round to nearest even); forward and backward in float32 arithmetic on bf16 values: every
  tensor zerotron stores in bf16 (embedding output, layernorm outputs, qkv, softmax
  probabilities, attention output, projections, residual sums, fc and GeLU outputs, the final
  layernorm output, the logits) passes through RoundBf16, which rounds it in forward and rounds
  the gradient flowing back into it (zerotron keeps activation gradients in bf16 too);
  layernorm statistics, softmax and the cross-entropy stay float32 inside each op; parameter
  gradients accumulate in float32 and are rounded to bf16 once; the grad norm, clipping
  and the AdamW update in float32 on the float32 master params (no loss scaling in bf16);
  working params re-rounded after each step. Master params start from `param/`.
  `bf16/step3/` holds the float32 master params after three steps.

Tolerance (criterion per tensor: max|diff| <= rtol * max|ref|). Figures "measured" are this
script's own study, printed on every run: the same procedure computed a second way (fp32 section:
float32 torch against the float64 golden; bf16 section: float64 compute against float32), which
rounds every reduction differently, as zerotron's kernels will.
* fp32: rtol 1e-4 for everything (the issue's figure). float32 has 2^-24 relative precision and
  the longest reductions here are 256 terms, so logits, loss and gradients agree to ~6e-7.
  `step3/` is the one ill-conditioned comparison: Adam divides each gradient element by its own
  RMS, so elements with |g| near eps (1e-8), or whose m cancels between steps, turn a 1e-9
  absolute gradient error into a sizeable fraction of lr (1e-3, itself ~2% of a 0.02-scale
  weight). That limits step3 agreement to ~3e-5..1e-3 depending on the data; the seed below was
  picked from 13 as the best conditioned (step3 2.8e-5..4.3e-5 over four roundings; the others
  reach 1e-4..1e-3). Keep 1e-4 for step3 -- it is what catches weight decay (3·lr·wd = 3e-4 of
  each decayed weight) -- and if C++ misses it while its gradients pass at ~1e-6, suspect this
  conditioning before the optimizer.
* bf16 loss, step losses, grad norm: rtol 1e-4. Both sides compute in float32 from the same bf16
  weights, so only float32 reduction order differs (measured ~1e-7 for losses, ~1e-5 norm).
* bf16 gradients: rtol 1e-2. Each side rounds its own float32 gradient to bf16, whose spacing is
  2^-8..2^-7 relative; two float32 values ~1e-6 apart land on different bf16 neighbours when they
  straddle a rounding boundary, moving that element by one bf16 ulp <= 2^-7·|g| <= 7.8e-3·max|g|.
  2^-8 alone would reject such legitimate flips; 1e-2 is one ulp plus float32 slack (measured
  worst 4e-4..8e-4: a flip on an element below max|g|).
* bf16 `step3/` (fp32 master): rtol 1e-3. Adam's first step is ~lr·sign(g), nearly blind to
  one-ulp gradient flips; what is left is the step-3 conditioning above plus working-weight
  re-rounding flips at steps 2-3 (measured 7.8e-5 for this seed, up to 5.6e-4 for others).
The bf16 figures above were measured when activations were float32; with bf16 activations
the script's tolerance study (printed on every run) gives the current ones, and the C++ test's
bf16 tolerances are set from it.
"""
import argparse
import json
import math
import struct
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = dict(
    n_layer=2, n_embd=64, n_head=4, seq_len=16, batch_size=2, vocab_size=100,
    padded_vocab_size=128,
    ln_eps=1e-5, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1,
    clip_grad=1.0, clip_eps=1e-6,  # torch: coef = clip / (norm + 1e-6), clamped to 1
    steps=3, seed=2,  # seed: best conditioned step3, see above
    init_std=0.02, gelu="tanh",
)
MAGIC = b"ZTREF01\0"
ALIGN = 64


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = nn.LayerNorm(c)
        self.attn = nn.Module()
        self.attn.qkv = nn.Linear(c, 3 * c)
        self.attn.proj = nn.Linear(c, c)
        self.ln2 = nn.LayerNorm(c)
        self.mlp = nn.Module()
        self.mlp.fc = nn.Linear(c, 4 * c)
        self.mlp.proj = nn.Linear(4 * c, c)


class Gpt(nn.Module):
    """Parameter registration order = zerotron's parameter order (named_parameters)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        c = cfg["n_embd"]
        self.embedding = nn.Module()
        self.embedding.word = nn.Parameter(torch.empty(cfg["padded_vocab_size"], c))
        self.embedding.position = nn.Parameter(torch.empty(cfg["seq_len"], c))
        self.layers = nn.ModuleList(Layer(c) for _ in range(cfg["n_layer"]))
        self.final_ln = nn.LayerNorm(c)

    def forward(self, tokens, targets, r=lambda z: z):
        """r: applied to every tensor zerotron stores (identity: plain fp32 math)."""
        cfg = self.cfg
        b, t = tokens.shape
        c, nh, eps = cfg["n_embd"], cfg["n_head"], cfg["ln_eps"]
        hd = c // nh
        x = r(self.embedding.word[tokens] + self.embedding.position[:t])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        for layer in self.layers:
            h = r(F.layer_norm(x, (c,), layer.ln1.weight, layer.ln1.bias, eps))
            q, k, v = r(layer.attn.qkv(h)).split(c, dim=-1)
            q, k, v = (z.view(b, t, nh, hd).transpose(1, 2) for z in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
            att = r(att.masked_fill(~mask, float("-inf")).softmax(dim=-1))
            y = r((att @ v).transpose(1, 2).reshape(b, t, c))
            x = r(x + r(layer.attn.proj(y)))
            h = r(F.layer_norm(x, (c,), layer.ln2.weight, layer.ln2.bias, eps))
            f = r(F.gelu(r(layer.mlp.fc(h)), approximate="tanh"))
            x = r(x + r(layer.mlp.proj(f)))
        x = r(F.layer_norm(x, (c,), self.final_ln.weight, self.final_ln.bias, eps))
        logits = r(x @ self.embedding.word.T)  # [B, T, Vp]: tied head
        v_real = cfg["vocab_size"]
        loss = F.cross_entropy(logits[..., :v_real].reshape(-1, v_real), targets.reshape(-1))
        return logits, loss


def init_reference(model, cfg, gen):
    """GPT-2 init, except biases and LN params get small random values so their code paths
    are exercised (the C++ test loads these weights; it does not re-initialise)."""
    std = cfg["init_std"]
    resid_std = std / math.sqrt(2 * cfg["n_layer"])
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(("attn.proj.weight", "mlp.proj.weight")):
                p.copy_(torch.randn(p.shape, generator=gen) * resid_std)
            elif name.startswith("embedding.") or name.endswith(".weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) * std)
            elif "ln" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:  # biases, LN biases
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def make_optimizer(model, cfg):
    # Decay exactly the 2-D tensors: all `.weight` matrices and both embeddings.
    decay = [p for _, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for _, p in model.named_parameters() if p.dim() != 2]
    return torch.optim.AdamW(
        [dict(params=decay, weight_decay=cfg["weight_decay"]),
         dict(params=no_decay, weight_decay=0.0)],
        lr=cfg["lr"], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"])


def bf16(t):
    return t.to(torch.bfloat16).to(t.dtype)  # torch rounds to nearest even


class RoundBf16(torch.autograd.Function):
    """A tensor zerotron stores in bf16: rounded in forward, and its gradient (which zerotron
    also stores in bf16) rounded in backward."""

    @staticmethod
    def forward(ctx, x):
        return bf16(x)

    @staticmethod
    def backward(ctx, g):
        return bf16(g)


def train_plain(init, tokens, targets, cfg, dtype):
    """Reference training in `dtype`; returns (logits, grads, grad_norms, losses, final)."""
    model = Gpt(cfg).to(dtype)
    model.load_state_dict({k: v.to(dtype) for k, v in init.items()})
    opt = make_optimizer(model, cfg)
    losses, norms = [], []
    for step in range(cfg["steps"]):
        opt.zero_grad()
        logits, loss = model(tokens, targets)
        loss.backward()
        if step == 0:
            first_logits = logits.detach().clone()
            grads = {n: p.grad.clone() for n, p in model.named_parameters()}
        losses.append(loss.item())
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip_grad"]).item())
        opt.step()
    final = {n: p.detach().clone() for n, p in model.named_parameters()}
    return first_logits, grads, norms, losses, final


def train_bf16(init, tokens, targets, cfg, compute_dtype=torch.float32):
    """zerotron's bf16 mixed precision. compute_dtype=float64 only for the tolerance study."""
    master = Gpt(cfg)  # float32 master weights, owned by the optimizer
    master.load_state_dict({k: v.float() for k, v in init.items()})
    work = Gpt(cfg).to(compute_dtype)
    opt = make_optimizer(master, cfg)
    m_params, w_params = list(master.parameters()), list(work.parameters())
    losses, norms = [], []
    for step in range(cfg["steps"]):
        with torch.no_grad():
            for w, m in zip(w_params, m_params):
                w.copy_(bf16(m).to(compute_dtype))
        work.zero_grad()
        _, loss = work(tokens, targets, RoundBf16.apply)
        loss.backward()
        for w, m in zip(w_params, m_params):
            m.grad = bf16(w.grad.float())  # bf16 gradient buffer, read back as float32
        if step == 0:
            grads = {n: p.grad.clone() for n, p in master.named_parameters()}
        losses.append(loss.item())
        norms.append(torch.nn.utils.clip_grad_norm_(m_params, cfg["clip_grad"]).item())
        opt.step()
    final = {n: p.detach().clone() for n, p in master.named_parameters()}
    return grads, norms, losses, final


def write_reference(path, cfg, tensors):
    entries, blobs, offset = [], [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        dtype = {np.dtype(np.float32): "f32", np.dtype(np.int32): "i32"}[arr.dtype]
        pad = -offset % ALIGN
        blobs.append(b"\0" * pad)
        offset += pad
        entries.append(dict(name=name, dtype=dtype, shape=list(arr.shape), offset=offset))
        raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()
        blobs.append(raw)
        offset += len(raw)
    header = json.dumps(dict(config=cfg, tensors=entries), indent=None).encode()
    # Pad the JSON with spaces (valid JSON whitespace) so the data section starts 64-aligned
    # in the file too, and a loader may mmap it.
    header += b" " * (-(len(MAGIC) + 8 + len(header)) % ALIGN)
    with open(path, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header + b"".join(blobs))


def max_rel(a, b):
    """max|a-b| / max|b|, the C++ test's criterion."""
    scale = b.abs().max().item()
    return (a - b).abs().max().item() / scale if scale > 0 else (a - b).abs().max().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).with_name("reference.bin")))
    args = ap.parse_args()
    cfg = CONFIG
    torch.set_num_threads(1)  # determinism of the float32 paths across machines
    gen = torch.Generator().manual_seed(cfg["seed"])

    model = Gpt(cfg)  # float32: the dumped initial weights are float32 values
    init_reference(model, cfg, gen)
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    b, t, v = cfg["batch_size"], cfg["seq_len"], cfg["vocab_size"]
    seq = torch.randint(0, v, (b, t + 1), generator=gen)
    tokens, targets = seq[:, :-1].contiguous(), seq[:, 1:].contiguous()

    logits, grads, norms, losses, final = train_plain(init, tokens, targets, cfg, torch.float64)
    bgrads, bnorms, blosses, bfinal = train_bf16(init, tokens, targets, cfg)

    f32 = lambda x: x.detach().to(torch.float32).numpy()
    vec = lambda xs: np.asarray(xs, dtype=np.float32)
    out = {"input/tokens": tokens.to(torch.int32).numpy(),
           "input/targets": targets.to(torch.int32).numpy()}
    out.update({f"param/{n}": f32(p) for n, p in init.items()})
    out["out/logits"] = f32(logits)
    out["out/loss"] = vec(losses[:1])
    out["out/grad_norm"] = vec(norms[:1])
    out["out/grad_norms"] = vec(norms)
    out["out/losses"] = vec(losses)
    out.update({f"grad/{n}": f32(g) for n, g in grads.items()})
    out.update({f"step3/{n}": f32(p) for n, p in final.items()})
    out["bf16/out/loss"] = vec(blosses[:1])
    out["bf16/out/grad_norm"] = vec(bnorms[:1])
    out["bf16/out/grad_norms"] = vec(bnorms)
    out["bf16/out/losses"] = vec(blosses)
    out.update({f"bf16/grad/{n}": f32(g) for n, g in bgrads.items()})
    out.update({f"bf16/step3/{n}": f32(p) for n, p in bfinal.items()})
    write_reference(args.out, cfg, out)
    print(f"wrote {args.out}: {Path(args.out).stat().st_size} bytes, {len(out)} tensors")
    print(f"fp32 losses {losses}, grad norms {norms}")
    print(f"bf16 losses {blosses}, grad norms {bnorms}")

    # Tolerance study: each a second implementation of the same procedure with different
    # rounding, measured with the C++ test's criterion (worst tensor per group).
    _, g32, n32, l32, p32 = train_plain(init, tokens, targets, cfg, torch.float32)
    g64b, n64b, l64b, p64b = train_bf16(init, tokens, targets, cfg, torch.float64)
    worst = lambda a, ref: max(max_rel(a[k].double(), ref[k].double()) for k in ref)
    rel = lambda a, ref: max(abs(x - y) / abs(y) for x, y in zip(a, ref))
    print("fp32 section, float32 torch vs float64 golden (want <= 1e-4):")
    print(f"  grads {worst(g32, grads):.2e}  step3 {worst(p32, final):.2e}  "
          f"losses {rel(l32, losses):.2e}  grad norms {rel(n32, norms):.2e}")
    print("bf16 section, float64 compute vs float32 compute:")
    print(f"  grads {worst(g64b, bgrads):.2e}  step3 {worst(p64b, bfinal):.2e}  "
          f"losses {rel(l64b, blosses):.2e}  grad norms {rel(n64b, bnorms):.2e}")


if __name__ == "__main__":
    main()
