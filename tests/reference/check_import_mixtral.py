#!/usr/bin/env python3
"""zerotron import, export and generate of Hugging Face Mixtral, checked against transformers
(CTest: reference.mixtral_from_transformers).

Transformers makes a MixtralForCausalLM with random weights (hidden 64, 4 heads, 2 key/value
heads, 2 layers, 4 experts of width 48 with 2 per token, vocabulary 300, fp32, non-trivial
RMSNorm weights) and saves it (per-expert w1/w3/w2 names). `zerotron import` turns it into a
checkpoint at tp 1 and at tp 2 (each expert's gate and up rows split over the ranks, run under
mpirun -np 2); zerotron trains one step from it on mock data at sequence length 37 and
  (a) its step-1 lm_loss equals transformers' loss on the same batch to 1e-5 relative;
  (b) each layer's load_balancing_loss in the metrics equals transformers'
      load_balancing_loss_func of that layer's router logits alone (zerotron's loss is per layer,
      as Megatron-core's; transformers' router_aux_loss pools the layers), averaged over the
      micro-batches as zerotron's step value is, to 1e-5 relative;
  (c) export of the import gives every tensor back bitwise, from_pretrained of it the original
      logits exactly, and a second import and export the same file bitwise;
  (d) greedy `zerotron generate` (tp 1 and 2) equals transformers' greedy generate token for
      token (a wider initialisation, std 0.2, so no greedy choice is a near tie);
  (e) router_jitter_noise 0.1 is refused with one line naming it, exit 2.
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
    from transformers import MixtralConfig, MixtralForCausalLM
    from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func
except ImportError as e:  # pragma: no cover - depends on the machine
    skip_or_fail(e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_generate import zerotron_greedy  # noqa: E402  (the same zerotron invocation)
from check_import_llama import EPS, POSITIONS, SEED, SEQ, VOCAB, batch  # noqa: E402

EXPERTS, TOPK, FFN, GB = 4, 2, 48, 4


def make_model(seed, std=0.02):
    torch.manual_seed(seed)
    cfg = MixtralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=FFN,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        num_local_experts=EXPERTS, num_experts_per_tok=TOPK,
                        max_position_embeddings=POSITIONS, rms_norm_eps=EPS,
                        router_aux_loss_coef=0.02, initializer_range=std, attention_dropout=0.0)
    model = MixtralForCausalLM(cfg).float().eval()
    with torch.no_grad():  # non-trivial norms, so a misplaced one shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


def run(*args):
    subprocess.run(list(args), check=True, stdout=subprocess.DEVNULL)


def save(model, work):
    hf_dir = os.path.join(work, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    return hf_dir


def zt_step(zt, mpirun, ckpt, work, tp):
    """zerotron's first training step from `ckpt` (the model flags taken from it): its metrics."""
    metrics = os.path.join(work, f"m{tp}.jsonl")
    run(mpirun, "-np", str(tp), zt, "train", "--device", "cpu", "--mock-data", "--seq-length",
        str(SEQ), "--micro-batch-size", "1", "--global-batch-size", str(GB), "--lr", "1e-3",
        "--train-iters", "1", "--seed", str(SEED), "--tensor-model-parallel-size", str(tp),
        "--moe-aux-loss-coeff", "0.02", "--load", ckpt, "--metrics-file", metrics)
    return [json.loads(line) for line in open(metrics) if "lm_loss" in line][0]


def rel(a, b):
    return abs(a - b) / abs(b)


def check_loss(zt, mpirun, model, hf_dir, work, aux_loss=load_balancing_loss_func):
    """(a) and (b) at tp 1 and 2; aux_loss: the model family's load_balancing_loss_func."""
    x, y = batch()
    with torch.no_grad():
        out = model(x, output_router_logits=True)
    loss = torch.nn.functional.cross_entropy(out.logits.double().reshape(-1, VOCAB),
                                             y.reshape(-1)).item()
    # Per layer, per micro-batch (one sample each), then the mean over micro-batches.
    aux = [sum(aux_loss((logits.reshape(GB, SEQ, -1)[b],), EXPERTS, TOPK).item()
               for b in range(GB)) / GB
           for logits in out.router_logits]
    failed = 0
    for tp in (1, 2):
        ckpt = os.path.join(work, f"ckpt_tp{tp}")
        run(zt, "import", "--input", hf_dir, "--save", ckpt, "--tensor-model-parallel-size", str(tp))
        m = zt_step(zt, mpirun, ckpt, work, tp)
        ours = [layer["load_balancing_loss"] for layer in m["moe_layers"]]
        worst = max([rel(a, b) for a, b in zip(ours, aux)] + [0.0])
        print(f"tp {tp}: transformers loss {loss:.8f}, zerotron step-1 lm_loss "
              f"{m['lm_loss']:.8f} ({rel(m['lm_loss'], loss):.2e}); load-balancing losses "
              f"zerotron {ours}, transformers {aux} (worst {worst:.2e})")
        if rel(m["lm_loss"], loss) > 1e-5 or len(ours) != len(aux) or worst > 1e-5:
            print(f"FAIL (tp {tp}): the imported model does not compute transformers' losses")
            failed += 1
    return failed


def safetensors_body(directory):
    """The header without its __metadata__ (which names the checkpoint exported), and the data."""
    raw = open(os.path.join(directory, "model.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    return header, raw[8 + n:]


def check_export(zt, model, work):
    """(c): export, from_pretrained, and export -> import -> export bitwise."""
    ckpt, first, second = (os.path.join(work, d) for d in ("ckpt_tp1", "back", "again"))
    run(zt, "export", "--load", ckpt, "--output", os.path.join(first, "model.safetensors"))
    from safetensors.torch import load_file
    back = load_file(os.path.join(first, "model.safetensors"))
    orig = load_file(os.path.join(work, "hf", "model.safetensors"))
    if set(back) != set(orig) or any(not torch.equal(back[k], orig[k]) for k in orig):
        print("FAIL: the export differs from the saved model's tensors")
        return 1
    again = MixtralForCausalLM.from_pretrained(first).float().eval()
    cfg = again.config
    if (cfg.num_local_experts, cfg.num_experts_per_tok, cfg.intermediate_size,
            cfg.router_aux_loss_coef) != (EXPERTS, TOPK, FFN, 0.02):
        print(f"FAIL: the exported config.json reads back as {cfg}")
        return 1
    x, _ = batch()
    with torch.no_grad():
        if not torch.equal(model(x).logits, again(x).logits):
            print("FAIL: from_pretrained of the export computes other logits")
            return 1
    run(zt, "import", "--input", first, "--save", os.path.join(work, "ckpt_again"))
    run(zt, "export", "--load", os.path.join(work, "ckpt_again"), "--output",
        os.path.join(second, "model.safetensors"))
    if (safetensors_body(first) != safetensors_body(second)
            or open(os.path.join(first, "config.json")).read()
            != open(os.path.join(second, "config.json")).read()):
        print("FAIL: export -> import -> export changes the tensors or config.json")
        return 1
    print(f"{len(back)} tensors round-trip bitwise; from_pretrained of the export gives the same "
          "logits; export -> import -> export is bitwise")
    return 0


def greedy_matches(zt, mpirun, model, prompts):
    """Greedy continuations of `model` imported, at tp 1 and 2, against transformers' generate:
    the number that differ."""
    work = tempfile.mkdtemp()
    ckpt = os.path.join(work, "ckpt")
    run(zt, "import", "--input", save(model, work), "--save", ckpt)
    eos, failed = VOCAB - 1, 0
    for prompt in prompts:
        n = POSITIONS - len(prompt)
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False,
                                 eos_token_id=eos, pad_token_id=eos)
        want = out[0, len(prompt):].tolist()
        for tp in (1, 2):
            got = zerotron_greedy(zt, mpirun, ckpt, prompt, n, tp)
            print(f"generate, prompt {prompt} tp {tp}: {'same' if got == want else 'DIFFERENT'}"
                  f" ({len(got)} tokens){'' if got == want else f': {got} vs {want}'}")
            failed += got != want
    return failed


def refused(zt, hf_dir, work, key, value):
    """1 unless import of hf_dir with config.json's `key` set to `value` exits 2 with one line
    naming the key and writes no checkpoint."""
    cfg = json.load(open(os.path.join(hf_dir, "config.json")))
    with open(os.path.join(hf_dir, "config.json"), "w") as f:
        json.dump({**cfg, key: value}, f)
    out = os.path.join(work, "ckpt_refused")
    r = subprocess.run([zt, "import", "--input", hf_dir, "--save", out], capture_output=True,
                       text=True)
    lines = r.stderr.strip().splitlines()
    if (r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("zerotron: error:")
            or key not in lines[0] or os.path.exists(out)):
        print(f"FAIL: {key} {value} gave exit {r.returncode}, stderr {r.stderr!r}")
        return 1
    print(f"refused: {lines[0]}")
    return 0


def main():
    zt, mpirun = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    work = tempfile.mkdtemp()
    model = make_model(3)
    hf_dir = save(model, work)
    failed = check_loss(zt, mpirun, model, hf_dir, work)
    failed += check_export(zt, model, work)
    # (d): greedy continuations of a sharper model; (e): training's input noise is refused.
    failed += greedy_matches(zt, mpirun, make_model(11, std=0.2),
                             ([5, 6, 7], [40], [17, 18, 3, 4, 5, 6, 250, 1, 2]))
    failed += refused(zt, hf_dir, work, "router_jitter_noise", 0.1)
    if failed:
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
