#pragma once
// Attention under context parallelism by a ring (Megatron-core's p2p; ring attention): a rank
// keeps its queries — chunks r and 2C−1−r of every sample (context_split.h) — and the keys and
// values of every rank pass it in turn, one rank further round the context group at each of the
// C steps. At step i it holds those of rank src = r − i (mod C) and computes the blocks
// ContextSplit::ring_blocks names (the same work on every rank at every step) while the next
// rank's keys and values arrive (send/receive posted before the blocks, waited after them). Each
// block's output merges into an fp32 running output through the log-sum-exp
// (attention_block_forward), which is rounded once into the output at the end.
//
// Backward keeps the whole output's lse and recomputes every block's probabilities from it
// (attention_block_backward): the query gradient accumulates here in fp32, the key and value
// gradients (fp32) travel round the ring with the keys and values they belong to, each rank adding
// its blocks' share, and a last hop brings each rank its own. The keys and values travel while
// blocks compute; the gradients' hop follows each step's blocks.
//
// Per layer and micro-batch forward moves (C−1)·N·2Ckv elements in T per rank, backward
// (C−1)·N·2Ckv in T and C·N·2Ckv in fp32, N = B·T/C, Ckv this rank's key/value width. Any head
// count works (every rank holds all of its tensor-parallel rank's heads). Rotary embeddings turn q
// and k at each token's place in the whole sample before the ring; dropout counters are those of
// the whole sequence (AttentionBlock), and of each head's global index (tp::head_slice).
#include "src/model/transformer_layer.h"

namespace zt {

// Rotates `qkv` [N, Cl + 2Ckv] (this rank's rows) in place under rope (what backward reads), then
// this rank's attention output into `atty` [N, Cl] and its log-sum-exp into `lse` [B, H, T/C].
void ring_attention_forward(const LayerDims& d, const LayerScratch& s, Ref qkv, float* lse,
                            Ref atty, const DropoutParams& drop);
// The gradient of this rank's q|k|v rows (after rope's inverse: the projection's output
// gradient) into `dqkv` from the output's gradient `datty` [N, Cl] (overwritten once read) and the
// forward's qkv, lse and atty.
void ring_attention_backward(const LayerDims& d, const LayerScratch& s, Ref datty, CRef qkv,
                             const float* lse, CRef atty, Ref dqkv, const DropoutParams& drop);

}  // namespace zt
