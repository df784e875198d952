#!/usr/bin/env python3
"""PyTorch eager peer of zerotron's step benchmark in Llama shape: transformers'
LlamaForCausalLM (rotary embeddings, RMSNorm, SwiGLU, grouped-query attention, untied head, no
biases) on the CPU, forward + backward + AdamW step, printing one JSON object.

The model is the one zerotron builds from --position-embedding-type rope --normalization RMSNorm
--swiglu --group-query-attention --num-query-groups G --untie-embeddings-and-output-weights
--disable-bias-linear: intermediate_size defaults to Megatron's SwiGLU width (8/3·h rounded down
to a multiple of 64, zerotron's default), the vocabulary is padded to a multiple of 128 as
zerotron pads it and the loss is taken over the real vocabulary. Attention is transformers'
"sdpa" implementation (F.scaled_dot_product_attention). Training loop, optimizer, --dtype and the
JSON are torch_step.py's (time_steps).
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM

from torch_step import add_common_args, model_config, time_steps


class Llama(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.vocab = args.vocab_size
        self.model = LlamaForCausalLM(LlamaConfig(
            vocab_size=(args.vocab_size + 127) // 128 * 128,
            hidden_size=args.hidden_size,
            intermediate_size=args.ffn_hidden_size or args.hidden_size // 24 * 64,
            num_hidden_layers=args.num_layers,
            num_attention_heads=args.num_attention_heads,
            num_key_value_heads=args.num_query_groups,
            max_position_embeddings=args.seq_length,
            rms_norm_eps=args.norm_epsilon,
            rope_theta=args.rotary_base,
            tie_word_embeddings=False,
            attention_bias=False,
            mlp_bias=False,
            initializer_range=0.02,
            use_cache=False,
            attn_implementation="sdpa",
        ))

    def forward(self, tokens, targets):
        logits = self.model(input_ids=tokens).logits[..., : self.vocab]
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_args(ap)
    ap.add_argument("--num-query-groups", type=int, default=4)
    ap.add_argument("--ffn-hidden-size", type=int, default=0)
    ap.add_argument("--norm-epsilon", type=float, default=1e-5)
    ap.add_argument("--rotary-base", type=float, default=10000.0)
    args = ap.parse_args()
    cfg = model_config(args)
    cfg.update(num_query_groups=args.num_query_groups,
               ffn_hidden_size=args.ffn_hidden_size or args.hidden_size // 24 * 64)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    time_steps(Llama(args), args, cfg, "pytorch-eager-llama")


if __name__ == "__main__":
    main()
