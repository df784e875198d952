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
#include "src/model/chunked_linear.h"
#include "src/model/layer_activations.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

// A layer's parameters as the model reaches them through a ParamSource.
struct LayerRefs {
  ParamRef ln1_w, ln1_b, ln2_w, ln2_b;
  LinearRefs qkv, proj, fc, fcproj;
  static LayerRefs of(const ParamLayout& layout, int layer);
};

struct LayerDropout {
  DropoutParams attention;  // on the softmax probabilities
  DropoutParams attn_out;   // on the attention branch before the residual add
  DropoutParams mlp_out;    // on the MLP branch before the residual add
};

// Workspace shared by all layers (one layer runs at a time). F = this rank's MLP width 4C/tp,
// Cl = its attention width C/tp, H its heads.
struct LayerScratch {
  Ref ln;                  // [N, C] a layernorm output, produced again in backward
  Ref ff;                  // [N, F] the GeLU output, produced again in backward
  Ref d_a;                 // [N, C]
  Ref d_b;                 // [N, C]
  Ref d_ff;                // [N, F]
  Ref d_qkv;               // [N, 3Cl]
  float* delta = nullptr;  // [B, H, T] attention backward workspace (rowsum(dO * O))
  Ref ones;                // [N] ones: the bias gradient beside a chunked weight (set by the model)
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

void layer_forward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                   LayerActivations& a, const LayerScratch& s, const LayerDropout& drop);
// dres [N, C]: on entry the gradient of the layer output, on return the gradient of its input.
// Parameter gradients go to the source's gradient spans, from the layer's last parameter to its
// first, and its parameters are acquired in that order too.
void layer_backward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    Ref dres);

}  // namespace zt
