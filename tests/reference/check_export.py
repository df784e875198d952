#!/usr/bin/env python3
"""zerotron export, checked from Python (CTest: export_loads_in_transformers).

Trains a tiny GPT on mock data for 3 steps as tp=2 x dp=2 with ZeRO stage 3 (so the export has
to consolidate tensor-parallel and ZeRO shards), saves, exports to safetensors, then
  1. loads the file with the `safetensors` package and checks names and shapes;
  2. with `transformers`, builds GPT2LMHeadModel from the exported directory and computes the
     loss of the 4th training batch, which zerotron reports as its step-4 lm_loss when resuming
     from the checkpoint: the two must agree to 1e-4 relative (fp32, different kernels);
  3. exports a model of the KJV fixture tokenizer's vocabulary with that tokenizer: the
     directory loads in AutoTokenizer, which encodes a text to the ids `prepare-data` writes,
     and in pipeline("text-generation").
Exits 77 (skipped; failed under CI=true) when torch or safetensors is missing, since the C++
tests cover the file format without them.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from missing_package import skip_or_fail

try:
    import torch
    from safetensors.torch import load_file
except ImportError as e:  # pragma: no cover - depends on the machine
    skip_or_fail(e)

M64 = (1 << 64) - 1


def mix64(seed, counter):
    z = (seed * 0x9E3779B97F4A7C15 + counter + 0x632BE59BD9B4E019) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def mock_sample(seed, index, seq, vocab):
    """src/data/mock_data.cpp, sample `index`: seq+1 tokens."""
    s = mix64(seed ^ 0x6D6F636B, index)
    counting = vocab - 1
    boundary = mix64(s, 0) % (seq + 1)
    a, b = mix64(s, 1) % counting, mix64(s, 2) % counting
    def tok(p):
        if p < boundary:
            return (a + p) % counting
        if p == boundary:
            return vocab - 1
        return (b + p - boundary - 1) % counting
    return [tok(p) for p in range(seq + 1)]


def main():
    zt, mpirun = sys.argv[1], sys.argv[2]
    seed, seq, vocab, gb = 1234, 32, 100, 4
    work = tempfile.mkdtemp()
    common = ["train", "--mock-data", "--vocab-size", str(vocab), "--num-layers", "2",
              "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", str(seq),
              "--micro-batch-size", "1", "--global-batch-size", str(gb), "--lr", "3e-3",
              "--lr-decay-iters", "4", "--attention-dropout", "0", "--hidden-dropout", "0",
              "--tensor-model-parallel-size", "2", "--zero-stage", "3", "--seed", str(seed),
              "--log-interval", "100"]
    ckpt = os.path.join(work, "ckpt")
    run = lambda args: subprocess.run([mpirun, "-np", "4", zt] + common + args, check=True,
                                      stdout=subprocess.DEVNULL)
    first = os.path.join(work, "first.jsonl")
    run(["--train-iters", "3", "--save", ckpt, "--save-interval", "2", "--metrics-file", first])
    metrics = os.path.join(work, "m.jsonl")
    run(["--train-iters", "4", "--load", ckpt, "--metrics-file", metrics])
    zt_loss = [json.loads(l) for l in open(metrics)][-1]["lm_loss"]
    out = os.path.join(work, "export", "model.safetensors")
    os.makedirs(os.path.dirname(out))
    subprocess.run([zt, "export", "--load", ckpt, "--output", out], check=True)

    sd = load_file(out)
    assert sd["transformer.wte.weight"].shape == (vocab, 64), sd["transformer.wte.weight"].shape
    assert sd["transformer.h.1.attn.c_attn.weight"].shape == (64, 192)
    assert sd["transformer.h.0.mlp.c_proj.weight"].shape == (256, 64)
    assert len(sd) == 2 + 12 * 2 + 2, len(sd)
    print(f"safetensors: {len(sd)} tensors with GPT-2 names and shapes")

    try:
        from transformers import GPT2LMHeadModel
    except ImportError:
        print("transformers absent: the GPT2LMHeadModel check is skipped")
        return 0
    def hf_loss(directory, batch):
        model = GPT2LMHeadModel.from_pretrained(directory).float().eval()
        samples = [mock_sample(seed, batch * gb + j, seq, vocab) for j in range(gb)]
        x = torch.tensor([s[:-1] for s in samples])
        y = torch.tensor([s[1:] for s in samples])
        with torch.no_grad():
            logits = model(x).logits.double()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), y.reshape(-1)).item()

    loss = hf_loss(os.path.dirname(out), 3)
    rel = abs(loss - zt_loss) / zt_loss
    print(f"transformers GPT2LMHeadModel loss {loss:.7f}, zerotron step-4 lm_loss {zt_loss:.7f}, "
          f"relative difference {rel:.2e}")
    if rel > 1e-4:
        print("FAIL: the exported model does not compute zerotron's loss")
        return 1
    # Any saved iteration, not only latest's: iteration 2 computes zerotron's step-3 loss. The
    # output directory does not exist yet: export creates it.
    older = os.path.join(work, "export2", "sub", "model.safetensors")
    subprocess.run([zt, "export", "--load", ckpt, "--iteration", "2", "--output", older],
                   check=True)
    zt_loss3 = [json.loads(l) for l in open(first) if "lm_loss" in l][2]["lm_loss"]
    loss3 = hf_loss(os.path.dirname(older), 2)
    rel = abs(loss3 - zt_loss3) / zt_loss3
    print(f"--iteration 2: transformers loss {loss3:.7f}, zerotron step-3 lm_loss {zt_loss3:.7f}, "
          f"relative difference {rel:.2e}")
    if rel > 1e-4:
        print("FAIL: the export of iteration 2 does not compute zerotron's loss")
        return 1
    # Half-precision exports hold the fp32 export's values rounded once.
    full = load_file(out)
    for flag, dtype in (("--bf16", torch.bfloat16), ("--fp16", torch.float16)):
        half = os.path.join(work, "half" + flag, "model.safetensors")
        subprocess.run([zt, "export", "--load", ckpt, "--output", half, flag], check=True,
                       stdout=subprocess.DEVNULL)
        for name, t in load_file(half).items():
            if t.dtype != dtype or not torch.equal(t, full[name].to(dtype)):
                print(f"FAIL: {flag} export of {name} is not the fp32 export rounded")
                return 1
    print("bf16 and fp16 exports are the fp32 export rounded to nearest even")
    if check_tokenizer(zt, work) != 0:
        return 1
    print("PASS")
    return 0


def check_tokenizer(zt, work):
    """The export's tokenizer files: AutoTokenizer encodes as zerotron does, pipeline() runs."""
    from transformers import AutoTokenizer, pipeline
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "bpe_kjv")
    vocab_json, merges = os.path.join(fixture, "vocab.json"), os.path.join(fixture, "merges.txt")
    vocab = len(json.load(open(vocab_json)))
    quiet = dict(check=True, stdout=subprocess.DEVNULL)
    ckpt = os.path.join(work, "tok_ckpt")
    subprocess.run([zt, "train", "--mock-data", "--vocab-size", str(vocab), "--num-layers", "1",
                    "--hidden-size", "32", "--num-attention-heads", "2", "--seq-length", "32",
                    "--train-iters", "1", "--save", ckpt, "--device", "cpu"], **quiet)
    out = os.path.join(work, "tok_export")
    subprocess.run([zt, "export", "--load", ckpt, "--output", os.path.join(out, "model.safetensors"),
                    "--vocab-file", vocab_json, "--merge-file", merges], **quiet)
    tok = AutoTokenizer.from_pretrained(out)
    if tok.eos_token != "<|endoftext|>" or tok.eos_token_id != vocab - 1:
        print(f"FAIL: the exported tokenizer's end of text is {tok.eos_token!r} ({tok.eos_token_id})")
        return 1
    text = "In the beginning God created the heaven and the earth. And the earth was without form"
    doc = os.path.join(work, "doc.jsonl")
    with open(doc, "w") as f:
        f.write(json.dumps({"text": text}) + "\n")
    prefix = os.path.join(work, "doc")
    subprocess.run([zt, "prepare-data", "--input", doc, "--output-prefix", prefix,
                    "--tokenizer-type", "GPT2BPETokenizer", "--vocab-file", vocab_json,
                    "--merge-file", merges], **quiet)
    raw = open(prefix + "_text_document.bin", "rb").read()
    ours = list(struct.unpack(f"<{len(raw) // 2}H", raw))
    theirs = tok(text)["input_ids"]
    if ours != theirs or tok.decode(theirs) != text:
        print(f"FAIL: AutoTokenizer encodes {theirs}, zerotron {ours}")
        return 1
    generated = pipeline("text-generation", model=out, device="cpu")(
        "In the beginning", max_new_tokens=4, do_sample=False)[0]["generated_text"]
    if not generated.startswith("In the beginning"):
        print(f"FAIL: pipeline('text-generation') wrote {generated!r}")
        return 1
    print(f"AutoTokenizer encodes the text to zerotron's {len(ours)} ids; pipeline wrote "
          f"{generated!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
