#pragma once
// One pre-LN GPT block with explicit forward and backward (no autograd):
//   res2 = x + drop(proj(attn(ln1(x))));   out = res2 + drop(mlp_proj(gelu(fc(ln2(res2)))))
// Megatron tensor parallelism (src/tensor_parallel): qkv and fc are column-parallel (this
// rank's heads / MLP columns), proj and mlp_proj row-parallel (all-reduce, then the bias, then
// dropout-add); copy-to-TP in front of qkv and fc all-reduces their input gradients in backward.
// So per layer forward and backward each all-reduce [N, C] twice. Layernorms, residuals and the
// row-parallel biases are replicated and stay identical on every rank without communication.
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/common/dropout.h"
#include "src/comm/communicator.h"
#include "src/model/layer_activations.h"
#include "src/model/param_layout.h"

namespace zt {

// Pointers to one layer's parameters (or gradients) inside a block region.
struct LayerParams {
  float* ln1_w;
  float* ln1_b;
  float* qkv_w;
  float* qkv_b;
  float* proj_w;
  float* proj_b;
  float* ln2_w;
  float* ln2_b;
  float* fc_w;
  float* fc_b;
  float* fcproj_w;
  float* fcproj_b;
};

// Offsets of a layer's tensors relative to its block's first element; the same for every layer.
struct LayerOffsets {
  int64_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  static LayerOffsets from(const ParamLayout& layout, int layer);
  LayerParams at(float* base) const;
};

struct LayerDropout {
  DropoutParams attention;  // on the softmax probabilities
  DropoutParams attn_out;   // on the attention branch before the residual add
  DropoutParams mlp_out;    // on the MLP branch before the residual add
};

// Workspace shared by all layers (one layer runs at a time). F = this rank's MLP width 4C/tp,
// Cl = its attention width C/tp, H its heads.
struct LayerScratch {
  float* ln = nullptr;     // [N, C] a layernorm output, produced again in backward
  float* ff = nullptr;     // [N, F] the GeLU output, produced again in backward
  float* d_a = nullptr;    // [N, C]
  float* d_b = nullptr;    // [N, C]
  float* d_ff = nullptr;   // [N, F]
  float* d_qkv = nullptr;  // [N, 3Cl]
  float* d_att = nullptr;  // [B, H, T, T]
  static size_t bytes(const GptConfig& c, int micro_batch, int tp_size = 1);
  static LayerScratch carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size = 1);
};

// One rank's view of a layer: the full hidden size C (residual stream, layernorms), its
// tensor-parallel shares, the group it communicates on and the backend it computes on.
struct LayerDims {
  int B, T, C;
  int H;                             // this rank's attention heads
  int Cl;                            // this rank's attention width H · head_dim (C at tp = 1)
  int F;                             // this rank's MLP width (4C at tp = 1)
  int heads_total;                   // heads of the whole layer
  int head_begin;                    // global index of this rank's first head
  comm::Communicator* tp = nullptr;  // the tensor-parallel group; null at tp = 1
  Backend* be = nullptr;             // never null once made by of()
  int N() const { return B * T; }
  static LayerDims of(const GptConfig& c, int micro_batch, int tp_size, int tp_rank,
                      comm::Communicator* tp, Backend& be);
};

void layer_forward(const LayerDims& d, const LayerParams& p, const float* x, LayerActivations& a,
                   const LayerScratch& s, const LayerDropout& drop);
// dres [N, C]: on entry the gradient of the layer output, on return the gradient of its input.
// Parameter gradients are added into g.
void layer_backward(const LayerDims& d, const LayerParams& p, const LayerParams& g, const float* x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    float* dres);

}  // namespace zt
