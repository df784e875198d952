#!/usr/bin/env python3
"""zerotron prepare-data --tokenizer-type HuggingFaceTokenizer against Hugging Face `tokenizers`.

Builds one small tokenizer.json per byte-level BPE family with `tokenizers` itself (trained on
tests/fixtures/bpe_train_corpus.txt, then given each family's published structure):
  gpt2    ByteLevel pre-tokenizer (GPT-2 regex), <|endoftext|>; merges rewritten in the older
          "a b" string form
  llama3  Split(Llama 3 regex, Isolated) + ByteLevel(use_regex=false), ignore_merges with a vocab
          token the merges cannot reach, TemplateProcessing "<|begin_of_text|> $A", reserved
          special tokens, eos <|end_of_text|>
  qwen2   NFC normalizer, Split(Qwen2 regex) + ByteLevel(use_regex=false), <|endoftext|> <|im_start|> <|im_end|>,
          eos from a tokenizer_config.json beside it (<|im_end|>)
  neox    NFC normalizer, ByteLevel(add_prefix_space=true), non-special added tokens of runs of
          spaces, a special token with lstrip and rstrip
  smollm  Sequence(Digits(individual_digits), ByteLevel)
and compares, for each, `tokenizers`' Tokenizer.encode(text).ids (+ eos, --append-eod) with what
`zerotron prepare-data` writes, on the nasty-text cases of tests/fixtures/make_tokenizer_fixture.py,
extra cases for these rules, seeded random Unicode strings, and the King James Bible (the whole
of `bible -f -l 'Gen1:1-Rev22:21'` when bible-kjv is installed, else the fixture corpus).
Exit 77 (skip) without the `tokenizers` package; under CI=true that fails (missing_package.py).

Usage: check_hf_tokenizers.py ZEROTRON [--keep DIR] [--all-code-points]
  --all-code-points  also every Unicode scalar value c in letter, number, space and combining-mark
                     contexts (543 more documents: the class tables against Oniguruma's and the
                     NFC tables against tokenizers'; minutes on a loaded machine)
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

from missing_package import skip_or_fail

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CORPUS = os.path.join(FIXTURES, "bpe_train_corpus.txt")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
          r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

EXTRA = [
    "I'M LOUD, YOU'RE LOUD, THEY'VE, WE'LL, HE'D, SHE'S, IT'T, 'Sup 'ſ 'ſx 'Re'LL",
    "digits 1 12 123 1234 12345 1234567 ١٢٣٤ ①②③ x1y22z333",
    "crlf\r\nline\r\n\r\n  \r\n\tindent\n\n\nend \n x",
    "spaces before newline   \nand tabs\t\t\nand   trailing   ",
    "(hello) [world] 'quoted' \"double\" --dash ...dots!!!\n\n!!!x",
    "<|endoftext|>special<|endoftext|> in <|im_start|>user\nhi<|im_end|>\n",
    "<|begin_of_text|>again <|end_of_text|> and <|reserved_special_token_3|>x",
    "mask: a <mask> b  <mask>  c<mask>d",
    "runs of spaces:  two   three    four     five",
    "Jehovah Jehovah's JEHOVAH",
    "nfc: e\u0301 a\u0301\u0316 a\u0316\u0301 \u212b \u2126 \u0958 \u1100\u1161\u11a8 "
    "\uac00\u11a8 \u0344 \u0f73 \u00e9\u0301 \u0301start \u1e0b\u0323 \u0071\u0307\u0323",
]


def random_texts(n, seed=1234):
    """Strings mixing the classes the split rules distinguish, across Unicode."""
    rng = random.Random(seed)
    pools = [
        " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u3000",
        "'sStTmMdDrReEvVlL\u017f",
        "0123456789\u0660\u0966\u2460\u00bd\u2167\uff15",
        "!?.,;:-_()[]{}<>|@#$%^&*+=~`\"/\\",
        "abcXYZ\u00e9\u00df\u0391\u03c9\u0416\u05d0\u0627\u4e00\u3042\uac00",
        # combining marks of several classes, Hangul jamo, singletons: what NFC changes
        "\u0300\u0301\u0316\u0334\u0327\u05b0\u093c\u1161\u11a8\u1100\u3099\u212b\u0958",
    ]
    out = []
    for _ in range(n):
        s = []
        for _ in range(rng.randint(1, 60)):
            r = rng.random()
            if r < 0.8:
                s.append(rng.choice(rng.choice(pools)))
            else:  # any scalar value
                while True:
                    cp = rng.randint(1, 0x10FFFF)
                    if not 0xD800 <= cp < 0xE000:
                        break
                s.append(chr(cp))
        out.append("".join(s))
    return out


def build(kind, d):
    from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                            pre_tokenizers, processors, trainers)

    specials = {
        "gpt2": ["<|endoftext|>"],
        "llama3": ["<|begin_of_text|>", "<|end_of_text|>"]
        + [f"<|reserved_special_token_{i}|>" for i in range(6)],
        "qwen2": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "neox": ["<|endoftext|>"],
        "smollm": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
    }[kind]
    tok = Tokenizer(models.BPE())
    if kind in ("qwen2", "neox"):
        tok.normalizer = normalizers.NFC()
    if kind == "llama3":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    elif kind == "qwen2":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    elif kind == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=kind == "neox", use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([CORPUS], trainer)
    spec = json.loads(tok.to_str())
    model = spec["model"]
    if kind == "llama3":
        # A vocab token no merge sequence reaches: with ignore_merges a whole piece equal to it
        # is that token, without it the merges' split.
        model["ignore_merges"] = True
        for word in ["Jehovah", "\u0120Jehovah"]:
            model["vocab"][word] = len(model["vocab"])
    if kind == "gpt2":
        model["merges"] = [" ".join(m) if isinstance(m, list) else m for m in model["merges"]]
    tok = Tokenizer.from_str(json.dumps(spec))
    tok.add_special_tokens(specials)
    if kind == "neox":
        tok.add_tokens([AddedToken(" " * k, normalized=True) for k in (2, 3, 4)])
        tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True)])
    if kind == "llama3":
        bos = "<|begin_of_text|>"
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    sub = os.path.join(d, kind)
    os.makedirs(sub)
    path = os.path.join(sub, "tokenizer.json")
    tok.save(path)
    eos = {"llama3": "<|end_of_text|>", "qwen2": "<|im_end|>"}.get(kind, "<|endoftext|>")
    if kind == "qwen2":
        with open(os.path.join(sub, "tokenizer_config.json"), "w") as f:
            json.dump({"eos_token": eos, "model_max_length": 32768}, f)
    return Tokenizer.from_file(path), path, tok.token_to_id(eos)


def read_dataset(prefix, ndocs):
    idx = open(prefix + ".idx", "rb").read()
    assert idx[:9] == b"MMIDIDX\x00\x00", "not a Megatron index"
    code = idx[17]
    fmt = {1: "B", 3: "h", 4: "i", 5: "q", 8: "H"}[code]
    n, nd = struct.unpack_from("<QQ", idx, 18)
    sizes = struct.unpack_from(f"<{n}i", idx, 34)
    doc_idx = struct.unpack_from(f"<{nd}q", idx, 34 + 12 * n)
    data = open(prefix + ".bin", "rb").read()
    toks = struct.unpack(f"<{len(data) // struct.calcsize(fmt)}{fmt}", data)
    assert nd == ndocs + 1, f"{nd - 1} documents, wanted {ndocs}"
    out, pos, seq = [], 0, 0
    for k in range(ndocs):
        ids = []
        for _ in range(doc_idx[k + 1] - doc_idx[k]):
            ids += toks[pos:pos + sizes[seq]]
            pos += sizes[seq]
            seq += 1
        out.append(list(ids))
    return out


def kjv_documents():
    text = ""
    if shutil.which("bible"):
        text = subprocess.run(["bible", "-f", "-l", "Gen1:1-Rev22:21"], capture_output=True,
                              text=True).stdout
    source = "bible-kjv, Gen1:1-Rev22:21"
    if not text:
        text, source = open(CORPUS, encoding="utf-8").read(), "tests/fixtures/bpe_train_corpus.txt"
    lines = text.splitlines(keepends=True)
    return ["".join(lines[i:i + 40]) for i in range(0, len(lines), 40)], source


def train_and_generate(binary, data_prefix, model_arg, vocab, d):
    """Trains two steps on the prepared data (the vocabulary comes from the tokenizer.json) and
    generates from the checkpoint with the tokenizer its run recorded. Returns 1 on failure."""
    save = os.path.join(d, "ckpt")
    train = [binary, "train", "--device", "cpu", "--num-layers", "1", "--hidden-size", "32",
             "--num-attention-heads", "4", "--seq-length", "16", "--micro-batch-size", "2",
             "--global-batch-size", "2", "--train-iters", "2", "--eval-iters", "0",
             "--data-path", data_prefix, "--tokenizer-type", "HuggingFaceTokenizer",
             "--tokenizer-model", model_arg, "--save", save, "--save-interval", "2"]
    r = subprocess.run(train, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"train on tokenizer.json data failed ({r.returncode}): {r.stderr.strip()[-400:]}")
        return 1
    with open(os.path.join(save, "iter_0000002", "meta.json"), encoding="utf-8") as f:
        meta = json.load(f)
    if meta["model"]["vocab_size"] < vocab:
        print(f"train: vocab {meta['model']['vocab_size']} < the tokenizer's {vocab}")
        return 1
    r = subprocess.run([binary, "generate", "--load", save, "--prompt", "In the beginning",
                        "--max-new-tokens", "4", "--greedy"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith("In the beginning"):
        print(f"generate with the recorded tokenizer.json failed ({r.returncode}): "
              f"{r.stdout[:200]!r} {r.stderr.strip()[-400:]}")
        return 1
    print(f"llama3: trained 2 steps on its data (vocab {vocab}) and generated {r.stdout[:60]!r}")
    return 0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    try:
        import tokenizers  # noqa: F401
    except ImportError as e:
        skip_or_fail(e)
    sys.path.insert(0, FIXTURES)
    from make_tokenizer_fixture import CASES

    kjv, source = kjv_documents()
    texts = CASES + EXTRA + random_texts(400)
    if "--all-code-points" in sys.argv:
        cps = [c for c in range(1, 0x110000) if not 0xD800 <= c < 0xE000]
        texts += ["".join(f"{chr(c)}a{chr(c)}1 {chr(c)} {chr(c)}\u0301{chr(c)}\u0316\u0300 "
                          f"a{chr(c)}\u1161\u11a8 " for c in cps[i:i + 2048])
                  for i in range(0, len(cps), 2048)]
    docs = texts + kjv
    failed = 0
    d = tempfile.mkdtemp(prefix="zt_hf_tok_")
    try:
        src = os.path.join(d, "docs.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for t in docs:
                f.write(json.dumps({"text": t}) + "\n")
        for kind in ["gpt2", "llama3", "qwen2", "neox", "smollm"]:
            tok, path, eos = build(kind, d)
            model_arg = os.path.dirname(path) if kind == "qwen2" else path
            prefix = os.path.join(d, kind + "_out")
            r = subprocess.run([binary, "prepare-data", "--input", src, "--output-prefix", prefix,
                                "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model",
                                model_arg, "--append-eod", "--workers", "2"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{kind}: prepare-data failed ({r.returncode}): {r.stderr.strip()}")
                failed += 1
                continue
            got = read_dataset(prefix + "_text_document", len(docs))
            want = [e.ids + [eos] if e.ids else [] for e in tok.encode_batch(docs)]
            bad = [i for i in range(len(docs)) if got[i] != want[i]]
            for i in bad[:5]:
                j = next((k for k in range(min(len(got[i]), len(want[i])))
                          if got[i][k] != want[i][k]), min(len(got[i]), len(want[i])))
                print(f"{kind}: MISMATCH document {i} {docs[i][:80]!r}\n"
                      f"  first difference at id {j}: tokenizers {want[i][max(0, j - 3):j + 5]} "
                      f"zerotron {got[i][max(0, j - 3):j + 5]}\n"
                      f"  pieces {tok.pre_tokenizer.pre_tokenize_str(docs[i])[:12]}")
            n_ids = sum(len(w) for w in want)
            print(f"{kind}: {len(docs) - len(bad)}/{len(docs)} documents equal "
                  f"({n_ids} ids; {len(texts)} cases + {len(kjv)} KJV documents from {source})")
            failed += bool(bad)
            if kind == "llama3" and not bad:
                failed += train_and_generate(binary, prefix + "_text_document", model_arg,
                                             tok.get_vocab_size(), d)
        if "--keep" in sys.argv:
            keep = sys.argv[sys.argv.index("--keep") + 1]
            shutil.copytree(d, keep, dirs_exist_ok=True)
    finally:
        shutil.rmtree(d)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
