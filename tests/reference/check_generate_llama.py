#!/usr/bin/env python3
"""zerotron generate on an imported Llama against transformers' generate
(CTest: reference.generate_llama_matches_transformers).

For each case transformers makes a LlamaForCausalLM with random weights (hidden 64, 4 heads, 2
layers, SwiGLU width 172, vocabulary 300, 64 positions, rope theta 500000) with 2, 1 or 4
key/value heads and an untied or tied head, non-trivial RMSNorm weights, and a wider
initialisation than the default (std 0.2: sharp logits, so no greedy choice is a near tie that
fp32 rounding could flip). `zerotron import` turns it into a checkpoint; for several prompts the
greedy continuation of `zerotron generate --greedy --print-ids` on one rank and under tp 2
(mpirun -np 2; where the key/value heads split over 2) must equal
LlamaForCausalLM.generate(do_sample=False) token for token (both stop after the last vocabulary
id, zerotron's end of text for a checkpoint without a tokenizer).
The smallest gap between the best and second-best logit along transformers' continuations is
printed. Exits 77 (skipped; failed under CI=true) without torch and transformers.
"""
import os
import subprocess
import sys
import tempfile

from missing_package import skip_or_fail

try:
    import torch
    import transformers  # noqa: F401  (the model comes from check_import_llama)
except ImportError as e:  # pragma: no cover - depends on the machine
    skip_or_fail(e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_generate import zerotron_greedy  # noqa: E402  (the same zerotron invocation)
from check_import_llama import POSITIONS, VOCAB, make_model  # noqa: E402  (the same model shape)

STD = 0.2  # the init's standard deviation: sharp logits, no near-tie greedy choices


def check_case(zt, mpirun, kv_heads, tied, seed, rope=None):
    name = f"kv_heads {kv_heads}, {'tied' if tied else 'untied'}"
    if rope:
        name += f", rope scaling {rope}"
    work = tempfile.mkdtemp()
    model = make_model(kv_heads, tied, seed, STD, rope)
    hf_dir = os.path.join(work, "hf")
    model.save_pretrained(hf_dir, safe_serialization=True)
    ckpt = os.path.join(work, "ckpt")
    subprocess.run([zt, "import", "--input", hf_dir, "--save", ckpt], check=True,
                   stdout=subprocess.DEVNULL)
    eos = VOCAB - 1
    tps = (1, 2) if kv_heads % 2 == 0 else (1,)  # one key/value head does not split over 2

    def zerotron(prompt, n, tp):
        return zerotron_greedy(zt, mpirun, ckpt, prompt, n, tp)

    def transformers(prompt, n):
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False,
                                 eos_token_id=eos, pad_token_id=eos, output_scores=True,
                                 return_dict_in_generate=True)
        gap = min((s[0].topk(2).values[0] - s[0].topk(2).values[1]).item() for s in out.scores)
        return out.sequences[0, len(prompt):].tolist(), gap

    prompts = [[5, 6, 7], [40], [290, 291, 292, 293], [17, 18, 3, 4, 5, 6, 250, 1, 2]]
    failed = 0
    for prompt in prompts:
        n = POSITIONS - len(prompt)
        want, gap = transformers(prompt, n)
        for tp in tps:
            got = zerotron(prompt, n, tp)
            same = got == want
            failed += not same
            print(f"{name}, prompt {prompt} tp {tp}: {'same' if same else 'DIFFERENT'} "
                  f"({len(got)} tokens, smallest top-2 logit gap {gap:.3g})"
                  f"{'' if same else f': zerotron {got}, transformers {want}'}")
    return failed


def main():
    zt, mpirun = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    failed = 0
    # The last: llama3 scaling, continuations to position 63, past the 32 it scales from.
    for kv_heads, tied, seed, rope in ((2, False, 1, None), (1, True, 2, None),
                                       (4, False, 3, None), (2, True, 4, "llama3")):
        failed += check_case(zt, mpirun, kv_heads, tied, seed, rope)
    if failed:
        print(f"FAIL: {failed} continuations differ from transformers'")
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
