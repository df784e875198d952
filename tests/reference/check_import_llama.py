#!/usr/bin/env python3
"""zerotron import and export of Hugging Face Llama, checked against transformers
(CTest: reference.llama_from_transformers).

For each case transformers makes a LlamaForCausalLM with random weights (hidden 64, 4 heads, 2
layers, SwiGLU width 172, vocabulary 300: shapes no tile size divides) with 2, 1 or 4 key/value
heads and an untied or tied head, non-trivial RMSNorm weights, and saves it (safetensors +
config.json). `zerotron import` of the directory turns it into a checkpoint (tp 2 for one case,
so the q|k|v and gate|up row groups are split); zerotron trains one step from it on mock data at
sequence length 37, and its step-1 lm_loss (computed before the update) must equal transformers'
loss on the same batch to 1e-5 relative (fp32). `zerotron export` of the imported checkpoint
must give back every tensor bitwise, and LlamaForCausalLM.from_pretrained of the exported
directory must compute the original model's logits exactly. Configurations zerotron cannot
represent must be refused with one line, exit 2.
Exits 77 (CTest: skipped) without torch and transformers.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from safetensors.torch import load_file
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"skipped: {e}")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_export import mock_sample  # noqa: E402  (the mock data stream, in Python)

SEQ, VOCAB, HIDDEN, HEADS, LAYERS, FFN, POSITIONS, GB, SEED = 37, 300, 64, 4, 2, 172, 64, 4, 7
EPS, THETA = 1e-6, 500000.0


def make_model(kv_heads, tied, seed):
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN,
                      num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                      num_key_value_heads=kv_heads, max_position_embeddings=POSITIONS,
                      rms_norm_eps=EPS, rope_theta=THETA, tie_word_embeddings=tied,
                      attention_dropout=0.0)
    model = LlamaForCausalLM(cfg).float().eval()
    with torch.no_grad():  # non-trivial norms, so a misplaced one shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def batch():
    samples = [mock_sample(SEED, j, SEQ, VOCAB) for j in range(GB)]
    return (torch.tensor([s[:-1] for s in samples]), torch.tensor([s[1:] for s in samples]))


def zt_train_loss(zt, mpirun, ckpt, work, kv_heads, tied, tp, ranks):
    metrics = os.path.join(work, "m.jsonl")
    args = [mpirun, "-np", str(ranks), zt, "train", "--device", "cpu", "--mock-data",
            "--vocab-size", str(VOCAB), "--num-layers", str(LAYERS), "--hidden-size",
            str(HIDDEN), "--num-attention-heads", str(HEADS), "--seq-length", str(SEQ),
            "--max-position-embeddings", str(POSITIONS), "--position-embedding-type", "rope",
            "--rotary-base", str(THETA), "--normalization", "RMSNorm", "--norm-epsilon",
            str(EPS), "--swiglu", "--ffn-hidden-size", str(FFN), "--group-query-attention",
            "--num-query-groups", str(kv_heads), "--disable-bias-linear",
            "--micro-batch-size", "1", "--global-batch-size", str(GB), "--lr", "1e-3",
            "--attention-dropout", "0", "--hidden-dropout", "0",
            "--tensor-model-parallel-size", str(tp), "--seed", str(SEED), "--train-iters", "1",
            "--load", ckpt, "--metrics-file", metrics]
    if not tied:
        args.append("--untie-embeddings-and-output-weights")
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return [json.loads(l) for l in open(metrics) if "lm_loss" in l][0]["lm_loss"]


def check_case(zt, mpirun, kv_heads, tied, tp, ranks, seed):
    name = f"kv_heads {kv_heads}, {'tied' if tied else 'untied'}, tp {tp}"
    work = tempfile.mkdtemp()
    model = make_model(kv_heads, tied, seed)
    hf_dir = os.path.join(work, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    ckpt = os.path.join(work, "ckpt")
    subprocess.run([zt, "import", "--input", hf_dir, "--save", ckpt,
                    "--tensor-model-parallel-size", str(tp)], check=True,
                   stdout=subprocess.DEVNULL)
    zt_loss = zt_train_loss(zt, mpirun, ckpt, work, kv_heads, tied, tp, ranks)
    x, y = batch()
    with torch.no_grad():
        logits = model(x).logits
    loss = torch.nn.functional.cross_entropy(logits.double().reshape(-1, VOCAB),
                                             y.reshape(-1)).item()
    rel = abs(loss - zt_loss) / zt_loss
    print(f"{name}: transformers loss {loss:.8f}, zerotron step-1 lm_loss {zt_loss:.8f}, "
          f"relative difference {rel:.2e}")
    if rel > 1e-5:
        print(f"FAIL ({name}): the imported model does not compute transformers' loss")
        return 1
    back_dir = os.path.join(work, "back")
    subprocess.run([zt, "export", "--load", ckpt, "--output",
                    os.path.join(back_dir, "model.safetensors")], check=True,
                   stdout=subprocess.DEVNULL)
    back, orig = load_file(os.path.join(back_dir, "model.safetensors")), model.state_dict()
    want = {k for k in orig if not (tied and k == "lm_head.weight")}
    if set(back) != want:
        print(f"FAIL ({name}): export wrote {sorted(set(back) ^ want)} differently")
        return 1
    for k, t in back.items():
        if not torch.equal(t, orig[k].contiguous()):
            print(f"FAIL ({name}): {k} does not round-trip through import and export")
            return 1
    again = LlamaForCausalLM.from_pretrained(back_dir).float().eval()
    if again.config.tie_word_embeddings != tied or again.config.num_key_value_heads != kv_heads:
        print(f"FAIL ({name}): the exported config.json reads back as {again.config}")
        return 1
    with torch.no_grad():
        logits_back = again(x).logits
    if not torch.equal(logits, logits_back):
        diff = (logits - logits_back).abs().max().item()
        print(f"FAIL ({name}): the exported model's logits differ by up to {diff}")
        return 1
    print(f"{name}: {len(back)} tensors round-trip bitwise; from_pretrained of the export "
          f"gives the same logits")
    return 0


def check_refusals(zt):
    """Configurations zerotron cannot represent: one line naming the key, exit 2."""
    work = tempfile.mkdtemp()
    hf_dir = os.path.join(work, "hf")
    make_model(2, False, 0).save_pretrained(hf_dir, safe_serialization=True)
    base = json.load(open(os.path.join(hf_dir, "config.json")))
    cases = [
        ("rope_scaling", {"rope_scaling": {"type": "linear", "factor": 2.0}}),
        ("rope_type", {"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5,
                                           "factor": 8.0}}),
        ("sliding_window", {"sliding_window": 4096}),
        ("attention_bias", {"attention_bias": True}),
        ("mlp_bias", {"mlp_bias": True}),
        ("hidden_act", {"hidden_act": "gelu"}),
        ("head_dim", {"head_dim": 32}),
        ("num_key_value_heads", {"num_key_value_heads": 3}),
        ("model_type", {"model_type": "mistral"}),
    ]
    for key, change in cases:
        with open(os.path.join(hf_dir, "config.json"), "w") as f:
            json.dump({**base, **change}, f)
        r = subprocess.run([zt, "import", "--input", hf_dir, "--save",
                            os.path.join(work, "ckpt_" + key)], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        if (r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("zerotron: error:")
                or key not in lines[0] or os.path.exists(os.path.join(work, "ckpt_" + key))):
            print(f"FAIL: config.json with {change} gave exit {r.returncode}, stderr {r.stderr!r}")
            return 1
        print(f"refused {key}: {lines[0]}")
    return 0


def main():
    zt, mpirun = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    failures = check_refusals(zt)
    for kv_heads, tied, tp, ranks, seed in ((2, False, 2, 2, 1), (1, True, 1, 1, 2),
                                            (4, False, 1, 1, 3), (4, True, 2, 2, 4)):
        failures += check_case(zt, mpirun, kv_heads, tied, tp, ranks, seed)
    if failures:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
