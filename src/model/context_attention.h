#pragma once
// Attention under context parallelism by all-to-all (DeepSpeed-Ulysses; Megatron-core's a2a):
// a rank holds its T/cp tokens of every sample (context_split.h) with all of its tensor-parallel
// heads; one all-to-all over the context group hands each rank every token of 1/cp of those heads,
// attention runs over whole sequences as at cp = 1, and a second all-to-all brings the output
// back to the rank's own tokens. Per layer and micro-batch forward moves the q|k|v rows and the
// output once each, backward the output (to recompute attention's D), its gradient and the q|k|v
// gradient: (N·W + N·Cl)·(cp−1)/cp elements per rank forward, (2·N·Cl + N·W)·(cp−1)/cp backward,
// N = B·T/cp, W = Cl + 2·r·Ckv. With at least cp key/value heads r = 1: each context rank takes
// 1/cp of them. With fewer (grouped-query attention, e.g. one per tensor-parallel rank) the
// r = cp/KV context ranks whose query heads read one key/value head each receive it, and their
// gradients of it are summed on its rank (context_kv_replicas).
//
// Rotary embeddings are applied on the head-split whole sequences (every position in order).
// Query head h of a context rank is global head head_begin + cp_rank·H/cp + h, and its dropout
// counters are that head's (tensor_parallel/rng_tracker.h), so cp ranks draw the masks one
// rank draws.
#include "src/model/transformer_layer.h"

namespace zt {

// From this rank's q|k|v rows `qkv` [N, Cl + 2Ckv] (not rotated): the head-split whole sequences
// into `qkv_heads` [B, seq, W/cp] (rotated under rope: what backward reads), their
// log-sum-exp into `lse` [B, H/cp, seq], and the attention output of this rank's tokens into
// `atty` [N, Cl].
void context_attention_forward(const LayerDims& d, const LayerScratch& s, CRef qkv, Ref qkv_heads,
                               float* lse, Ref atty, const DropoutParams& drop);
// The gradient of this rank's q|k|v rows into `dqkv` [N, Cl + 2Ckv] (before rope's inverse: the
// projection's output gradient) from the output's gradient `datty` [N, Cl] and the forward's
// qkv_heads, lse and atty.
void context_attention_backward(const LayerDims& d, const LayerScratch& s, CRef datty,
                                CRef qkv_heads, const float* lse, CRef atty, Ref dqkv,
                                const DropoutParams& drop);

}  // namespace zt
