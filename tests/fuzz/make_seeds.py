#!/usr/bin/env python3
"""Writes tests/fuzz/regressions/<fuzzer>/: the seeds scripts/fuzz.sh starts each fuzzer from and
the inputs CTest replays through every target (fuzz.<fuzzer>, tests/fuzz/replay_main.cpp): valid
inputs made from the test fixtures, and hostile ones, each a class of bad input that once crashed
or could. The outputs are committed; rerun after changing this file:
    python3 tests/fuzz/make_seeds.py
"""
import json
import math
import os
import struct

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
fx = os.path.join(root, "tests", "fixtures")
out = os.path.join(root, "tests", "fuzz", "regressions")
DEEP = "[" * 100 + "1" + "]" * 100  # past every depth limit (at most 32), and small as a seed


def write(fuzzer, name, data):
    d = os.path.join(out, fuzzer)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# options_fuzz: JSON config, a 0 byte, flags one per line.
write("options_fuzz", "seed1",
      '{"num_layers": 2, "train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true, '
      '"loss_scale": 0}, "zero_optimization": {"stage": 2, "reduce_bucket_size": 5e8}, '
      '"data_path": ["0.7", "a", "0.3", "b"], "device_memory": "32GiB"}'
      "\0--mock-data\n--vocab-size\n64\n--hidden-size=64\n--split\n969,30,1")
write("options_fuzz", "seed2", "\0--num-layers\n4\n--global-batch-size\n8\n--lr-decay-style\ncosine")
write("options_fuzz", "deep_config", '{"num_layers": ' + DEEP + "}\0")
write("options_fuzz", "max_loss_scale", "\0--fp16\n--initial-loss-scale\n65536\n--max-loss-scale\n1024")

# tokenizer_fuzz: vocab.json, 0, merges.txt, 0, text. Every execution parses the whole
# vocabulary, so the seed is the smallest complete one: the KJV fixture's 256 byte tokens and its
# first 32 merges (2.8 kB; the fixture's 800 tokens cost about 3.5x as much per execution).
vocab = json.load(open(os.path.join(fx, "bpe_kjv", "vocab.json"), encoding="utf-8"))
lines = open(os.path.join(fx, "bpe_kjv", "merges.txt"), encoding="utf-8").read().split("\n")
keep = {t for t in vocab if len(t) == 1}
merges = [l for l in lines[1:33] if l]
keep.update(l.replace(" ", "") for l in merges)
tokens = sorted(keep, key=vocab.get)
text = open(os.path.join(fx, "bpe_train_corpus.txt"), encoding="utf-8").read()[:200]
small_vocab = json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False,
                         separators=(",", ":"))
write("tokenizer_fuzz", "kjv_min", small_vocab + "\0" + "\n".join(merges) + "\0" + text)
write("tokenizer_fuzz", "small", '{"a": 0}\0a a\0text')
write("tokenizer_fuzz", "deep_vocab", '{"a": ' + DEEP + "}\0\0")
# A token listed twice (with two ids): refused, not silently a vocabulary one smaller.
write("tokenizer_fuzz", "duplicate_token",
      small_vocab[:-1] + ',"' + tokens[0] + '":' + str(len(tokens)) + "}\0\0text")

# hf_tokenizer_fuzz: tokenizer.json, a 0 byte, text. The KJV fixture's 256 byte tokens and first
# 32 merges in each family's structure (both merge forms), and hostile shapes.
def hf_json(pre, merges, post=None, added=None, ignore_merges=False):
    return json.dumps({
        "version": "1.0", "added_tokens": added or [], "normalizer": None, "pre_tokenizer": pre,
        "post_processor": post, "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "byte_fallback": False,
                  "ignore_merges": ignore_merges, "vocab": small, "merges": merges}},
        ensure_ascii=False)


small = json.loads(small_vocab)
pairs = [m.split(" ") for m in merges]
eot = {"id": len(small), "content": "<|endoftext|>", "single_word": False, "lstrip": False,
       "rstrip": False, "normalized": False, "special": True}
llama3_re = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
             r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
              "use_regex": True}
write("hf_tokenizer_fuzz", "gpt2", hf_json(byte_level, merges, added=[eot]) + "\0" + text)
write("hf_tokenizer_fuzz", "llama3",
      hf_json({"type": "Sequence", "pretokenizers": [
          {"type": "Split", "pattern": {"Regex": llama3_re},
           "behavior": "Isolated", "invert": False},
          dict(byte_level, use_regex=False)]}, pairs,
          post={"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [], "special_tokens": {"<|endoftext|>": {
                    "id": "<|endoftext|>", "ids": [len(small)], "tokens": ["<|endoftext|>"]}}},
          added=[eot], ignore_merges=True) + "\0" + text + " <|endoftext|>1234")
write("hf_tokenizer_fuzz", "smollm",
      hf_json({"type": "Sequence", "pretokenizers": [
          {"type": "Digits", "individual_digits": True}, dict(byte_level, add_prefix_space=True)]},
          pairs, added=[dict(eot, lstrip=True, rstrip=True)]) + "\0" + text + " <|endoftext|> 12")
write("hf_tokenizer_fuzz", "deep", '{"model": ' + DEEP + "}\0")
write("hf_tokenizer_fuzz", "types",
      '{"model": {"type": "BPE", "vocab": {"a": "0"}, "merges": 7}, "pre_tokenizer": 3}\0x')
write("hf_tokenizer_fuzz", "unigram", '{"model": {"type": "Unigram", "vocab": [["a", -1]]}}\0a')

# document_reader_fuzz: a format byte (bit 0: JSON lines, bit 1: also "title"), then the file.
corpus = open(os.path.join(fx, "bpe_train_corpus.txt"), "rb").read()[:2000]
write("document_reader_fuzz", "text", b"\0" + corpus)
write("document_reader_fuzz", "jsonl",
      '\3{"text": "a b", "title": "t"}\n\n{"text": "\\u00e9\\n", "title": ""}\n')
write("document_reader_fuzz", "deep_jsonl", '\1{"text": ' + DEEP + "}\n")

# blend_fuzz: 4 bytes of document count, --split, a 0 byte, --data-path.
write("blend_fuzz", "seed1", b"\x10\x00\x00\x00969,30,1\x000.7 data/a 0.3 data/b")
write("blend_fuzz", "seed2", b"\x03\x00\x00\x001/2\x00prefix")
write("blend_fuzz", "infinite_weights", b"\x10\x00\x00\x001e308,1e308\x001e308 a 1e308 b")


# safetensors_fuzz: config.json, a 0 byte, the safetensors file. A 1-layer GPT-2 (n_embd 4,
# vocab 8, 4 positions) as `zerotron export` writes it, in F32 and BF16, and hostile headers.
def gpt2_config(h=4, v=8, s=4, layers=1):
    return {"model_type": "gpt2", "n_embd": h, "n_layer": layers, "n_head": 2, "vocab_size": v,
            "n_positions": s, "n_inner": 4 * h, "activation_function": "gelu_new",
            "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True, "resid_pdrop": 0.1}


def gpt2_shapes(h=4, v=8, s=4, layers=1):
    shapes = {"transformer.wte.weight": [v, h], "transformer.wpe.weight": [s, h]}
    for i in range(layers):
        p = f"transformer.h.{i}."
        shapes.update({p + "ln_1.weight": [h], p + "ln_1.bias": [h],
                       p + "attn.c_attn.weight": [h, 3 * h], p + "attn.c_attn.bias": [3 * h],
                       p + "attn.c_proj.weight": [h, h], p + "attn.c_proj.bias": [h],
                       p + "ln_2.weight": [h], p + "ln_2.bias": [h],
                       p + "mlp.c_fc.weight": [h, 4 * h], p + "mlp.c_fc.bias": [4 * h],
                       p + "mlp.c_proj.weight": [4 * h, h], p + "mlp.c_proj.bias": [h]})
    shapes.update({"transformer.ln_f.weight": [h], "transformer.ln_f.bias": [h]})
    return shapes


def safetensors(header_text, body):
    header_text += b" " * (-len(header_text) % 8)
    return struct.pack("<Q", len(header_text)) + header_text + body


for dtype, size in (("F32", 4), ("BF16", 2)):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in gpt2_shapes().items():
        n = size * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    body = bytes((i * 37) % 251 for i in range(offset))
    write("safetensors_fuzz", f"gpt2_{dtype}",
          json.dumps(gpt2_config()).encode() + b"\0" + safetensors(json.dumps(header).encode(), body))
write("safetensors_fuzz", "deep_shape",
      json.dumps(gpt2_config()).encode() + b"\0" +
      safetensors(b'{"transformer.wte.weight": {"dtype": "F32", "shape": ' + DEEP.encode() +
                  b', "data_offsets": [0, 4]}}', b"\0" * 4))
write("safetensors_fuzz", "offsets_past_the_end",
      b'{"n_embd": 4}\0' +
      safetensors(b'{"t": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}', b"\0" * 8))
write("safetensors_fuzz", "huge_shape",
      b'{"n_inner": ' + DEEP.encode() + b"}\0" +
      safetensors(b'{"t": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], '
                  b'"data_offsets": [0, 0]}}', b""))
