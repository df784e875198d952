#!/usr/bin/env python3
"""zerotron import, checked against transformers (CTest: dist.import_from_transformers).

transformers makes a GPT-2 with random weights and a shape zerotron's tests do not otherwise use
(3 layers, hidden 48, 6 heads, vocabulary 90, 24 positions) and saves it (safetensors +
config.json); `zerotron import` turns it into a checkpoint for tp 2 x dp 2 ZeRO stage 3; zerotron
trains one step from it on 4 ranks, and its step-1 lm_loss (computed before the update) must equal
transformers' loss on the same batch to 1e-4 relative (fp32, different kernels). The weights are
also checked to round-trip: `zerotron export` of the imported checkpoint gives back the tensors.
Exits 77 (skipped; failed under CI=true) without torch and transformers.
"""
import json
import os
import subprocess
import sys
import tempfile

from missing_package import skip_or_fail

try:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from safetensors.torch import load_file
except ImportError as e:  # pragma: no cover - depends on the machine
    skip_or_fail(e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_export import mock_sample  # noqa: E402  (the mock data stream, in Python)


def main():
    zt, mpirun = sys.argv[1], sys.argv[2]
    seed, seq, vocab, hidden, layers, heads, gb = 99, 24, 90, 48, 3, 6, 4
    work = tempfile.mkdtemp()
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=hidden, n_layer=layers,
                     n_head=heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     activation_function="gelu_new", layer_norm_epsilon=1e-5)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # non-trivial layernorms and biases, so a misplaced one shows
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln_" in name:
                p.add_(0.05 * torch.randn_like(p))
    hf_dir = os.path.join(work, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    ckpt = os.path.join(work, "ckpt")
    subprocess.run([zt, "import", "--input", os.path.join(hf_dir, "model.safetensors"),
                    "--save", ckpt, "--tensor-model-parallel-size", "2",
                    "--data-parallel-size", "2", "--zero-stage", "3",
                    "--reduce-bucket-size", "1000"], check=True)
    metrics = os.path.join(work, "m.jsonl")
    subprocess.run([mpirun, "-np", "4", zt, "train", "--device", "cpu", "--mock-data",
                    "--vocab-size", str(vocab), "--num-layers", str(layers), "--hidden-size",
                    str(hidden), "--num-attention-heads", str(heads), "--seq-length", str(seq),
                    "--micro-batch-size", "1", "--global-batch-size", str(gb), "--lr", "1e-3",
                    "--attention-dropout", "0", "--hidden-dropout", "0",
                    "--tensor-model-parallel-size", "2", "--zero-stage", "3",
                    "--reduce-bucket-size", "1000", "--seed", str(seed), "--train-iters", "1",
                    "--load", ckpt, "--metrics-file", metrics], check=True,
                   stdout=subprocess.DEVNULL)
    zt_loss = [json.loads(l) for l in open(metrics) if "lm_loss" in l][0]["lm_loss"]
    samples = [mock_sample(seed, j, seq, vocab) for j in range(gb)]
    x = torch.tensor([s[:-1] for s in samples])
    y = torch.tensor([s[1:] for s in samples])
    with torch.no_grad():
        logits = model(x).logits.double()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).item()
    rel = abs(loss - zt_loss) / zt_loss
    print(f"transformers loss {loss:.7f}, zerotron step-1 lm_loss {zt_loss:.7f}, "
          f"relative difference {rel:.2e}")
    if rel > 1e-4:
        print("FAIL: the imported model does not compute transformers' loss")
        return 1
    out = os.path.join(work, "back", "model.safetensors")
    subprocess.run([zt, "export", "--load", ckpt, "--output", out], check=True)
    back, orig = load_file(out), {k: v for k, v in model.state_dict().items()}
    for name, t in back.items():
        if not torch.equal(t, orig[name].contiguous()):
            print(f"FAIL: {name} does not round-trip through import and export")
            return 1
    print(f"{len(back)} tensors round-trip bitwise through import and export")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
