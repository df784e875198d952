#pragma once
// One pre-LN GPT block with explicit forward and backward (no autograd):
//   res2 = x + drop(proj(attn(ln1(x))));   out = res2 + drop(mlp_proj(gelu(fc(ln2(res2)))))
// Megatron tensor parallelism (src/tensor_parallel): qkv and fc are column-parallel (this
// rank's heads / MLP columns), proj and mlp_proj row-parallel (all-reduce, then the bias, then
// dropout-add); copy-to-TP in front of qkv and fc all-reduces their input gradients in backward.
// So per layer forward and backward each all-reduce [N, C] twice. Layernorms, residuals and the
// row-parallel biases are replicated and stay identical on every rank without communication.
// With sequence parallelism (GptConfig::sequence_parallel) the layer's input, its residuals and
// layernorms hold this rank's N/tp rows only: the layernorm output is all-gathered into the
// column-parallel layers, the row-parallel outputs are reduce-scattered, and in backward the
// mirror images (plus one more all-gather per layernorm, to recompute its gathered output for
// the weight gradient, as Megatron-LM does); the layernorms' parameter gradients, partial sums
// over this rank's rows, are all-reduced over tp.
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/backend.h"
#include "kernels/common/dropout.h"
#include "kernels/common/moe.h"
#include "kernels/common/rope.h"
#include "src/comm/communicator.h"
#include "src/model/chunked_linear.h"
#include "src/model/context_split.h"
#include "src/model/layer_activations.h"
#include "src/model/param_layout.h"
#include "src/model/param_source.h"

namespace zt {

// A mixture-of-experts MLP's parameters (src/model/moe_mlp.h): the router [E, C] and the
// experts' two weights stacked, [E·2F/tp, C] (gate|up per expert) and [E·C, F/tp]. Empty (no
// router) in a dense layer.
struct MoeRefs {
  ParamRef router, fc, proj;
  ParamRef shared_fc, shared_proj, shared_gate;  // the shared expert (empty without one)
  bool present() const { return router.present(); }
  // `prefix`: "layers.<i>.".
  static MoeRefs of(const ParamLayout& layout, const std::string& prefix);
};

// A layer's parameters as the model reaches them through a ParamSource. The norms' biases are
// empty under RMSNorm, the linear biases under --disable-bias-linear. A MoE layer has `moe` and
// no fc / fcproj.
struct LayerRefs {
  ParamRef ln1_w, ln1_b, ln2_w, ln2_b;
  LinearRefs qkv, proj, fc, fcproj;
  MoeRefs moe;
  static LayerRefs of(const ParamLayout& layout, int layer);
};

struct LayerDropout {
  DropoutParams attention;  // on the softmax probabilities
  DropoutParams attn_out;   // on the attention branch before the residual add
  DropoutParams mlp_out;    // on the MLP branch before the residual add
};

// Workspace shared by all layers (one layer runs at a time). F = this rank's MLP width 4C/tp,
// Cl = its attention width C/tp, H its heads; N = B·T/cp tokens.
struct LayerScratch {
  Ref ln;                  // [N, C] a layernorm output, produced again in backward
  Ref ff;                  // [N, F] the GeLU (SwiGLU) output, produced again in backward
  Ref d_a;                 // [N, C]
  Ref d_b;                 // [N, C]
  Ref d_ff;                // [N, F] ([N, 2F] under SwiGLU: the gate and up gradients)
  Ref d_sw;                // [N, F] the SwiGLU output's gradient (SwiGLU only)
  Ref d_qkv;               // [N, Cl + 2Ckv]
  float* delta = nullptr;  // [B, H, T] attention backward workspace (rowsum(dO * O))
  Ref ones;                // [N] ones: the bias gradient beside a chunked weight (set by the model)
  float* ln_grads = nullptr;  // [2C] a norm's partial gradients (sequence parallelism only)
  // Context parallelism only (context_attention.h): the all-to-all's send and receive buffers
  // [N, context_qkv_width], the head-split attention output and its gradient [N, Cl]; they share
  // the scratch above, which attention leaves free (the MLP's where wide enough, d_a and ln).
  Ref cp_send, cp_recv, cp_out, cp_dout;
  // Ring attention only (context_ring.h): the keys and values at hand and arriving [N, 2Ckv]; the
  // output (forward) or the query gradient (backward) [N, Cl] fp32; the key and value gradients
  // at hand and arriving [N, 2Ckv] fp32. In the same free scratch where they fit.
  Ref ring_kv[2];
  float* ring_acc = nullptr;
  float* ring_dkv[2] = {nullptr, nullptr};
  // A mixture of experts only (moe_mlp.h; carved by moe_scratch): the router's logits and their
  // gradient, the experts' rows and intermediates, the shared expert's, the combine weights'
  // gradient; the routing's host side (set by the model).
  float* moe_logits = nullptr;     // [N, E] fp32, then their gradient
  Ref moe_dlogits;                 // [N, E] the gradient in the working precision
  Ref moe_rows_in;                 // [M, C] the experts' input rows (moe_expert_rows_max)
  Ref moe_recv;                    // [M, C] rows as the all-to-all delivers them (ep > 1)
  float* moe_counts = nullptr;     // [2E] rows per expert sent, then received (ep > 1)
  Ref moe_act, moe_dact;           // [M, F'/tp] the experts' activation output and its gradient
  Ref moe_drows;                   // [M + N_s, C] the rows' gradient (N_s = N with a shared expert)
  Ref moe_dh;                      // [M, 2F'/tp] the first product's gradient
  float* moe_dweights = nullptr;   // [N, kc] the combine weights' gradient (kc = k + shared)
  float* moe_rdweights = nullptr;  // [N, k] the routed part of it (shared expert only)
  Ref moe_shared_act, moe_shared_dact;  // [N, Fs/tp] the shared expert's activation, its gradient
  Ref moe_shared_dpre;                  // [N, 2Fs/tp] its first product's gradient
  float* moe_gate_logits = nullptr;     // [N] the shared gate's logits, then their gradient
  float* moe_gate_dg = nullptr;         // [N] the gradient of the gate's value
  Ref moe_gate_dlogits;                 // [N] the logits' gradient in the working precision
  class MoeHost* moe = nullptr;
  static size_t bytes(const GptConfig& c, int micro_batch, int tp_size = 1);
  static LayerScratch carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size = 1);
};

// One rank's view of a layer: the full hidden size C (residual stream, layernorms), its
// tensor-parallel shares, the group it communicates on and the backend it computes on.
struct LayerDims {
  int B, T, C;                       // T: the tokens of a sample this rank holds (seq / cp)
  int H;                             // this rank's attention heads
  int Cl;                            // this rank's attention width H · head_dim (C at tp = 1)
  int F;                             // this rank's MLP width (ffn_hidden at tp = 1)
  int heads_total;                   // heads of the whole layer
  int head_begin;                    // global index of this rank's first head
  comm::Communicator* tp = nullptr;  // the tensor-parallel group; null at tp = 1
  Backend* be = nullptr;             // never null once made by of()
  comm::Communicator* ep = nullptr;  // the expert-parallel group; null at ep = 1
  // Rows of the residual stream this rank holds, [first_row, first_row + Nl) of the N: all of
  // them, or N/tp with sequence parallelism.
  bool sequence_parallel = false;
  int Nl = 0;
  int64_t first_row = 0;
  // The architecture (GptConfig): key/value heads and width of this rank (H and Cl without
  // grouped-query attention), rotary embeddings, RMSNorm and SwiGLU.
  int KV = 0;
  int Ckv = 0;
  bool rope = false;
  RopeFreqs rope_table{};  // rope: the host's inverse frequencies (kernels/common/rope.h)
  bool rmsnorm = false;
  float norm_eps = 1e-5f;
  bool swiglu = false;
  ContextSplit cp{};  // the context-parallel split of each sample (cp.seq: its whole length)
  // A mixture of experts (GptConfig): the routing, an expert's MLP width on this rank, the
  // load-balancing loss's coefficient, the capacity factor (0: dropless).
  MoeRouting moe{};
  int moe_ffn = 0;
  int moe_shared = 0;  // the shared expert's width on this rank (0: none)
  bool moe_shared_gate = false;
  float moe_aux_coeff = 0;
  double moe_capacity = 0;
  int moe_fc_width() const { return swiglu ? 2 * moe_ffn : moe_ffn; }
  int moe_shared_fc_width() const { return swiglu ? 2 * moe_shared : moe_shared; }
  int moe_combine_width() const { return moe.k + (moe_shared > 0 ? 1 : 0); }
  int N() const { return B * T; }
  int head_dim() const { return Cl / H; }
  int qkv_width() const { return Cl + 2 * Ckv; }  // a row of this rank's q|k|v
  int fc_width() const { return swiglu ? 2 * F : F; }
  static LayerDims of(const GptConfig& c, int micro_batch, int tp_size, int tp_rank,
                      comm::Communicator* tp, Backend& be, comm::Communicator* cp = nullptr);
};

// [rows, w] elements between buffers of row pitches dst_ld and src_ld (elements), on d.be (the
// context exchanges' row and column moves).
void copy_rows(const LayerDims& d, Ref dst, int64_t dst_ld, CRef src, int64_t src_ld, int64_t w,
               int64_t rows);

// A norm's parameters held whole: the weight and (LayerNorm) the bias, acquired in forward order
// (weight, bias) or backward order (bias, weight) and released in the reverse.
class HeldNorm {
 public:
  HeldNorm(ParamSource& src, const ParamRef& w, const ParamRef& b, bool backward);
  HeldNorm(const HeldNorm&) = delete;
  HeldNorm& operator=(const HeldNorm&) = delete;
  CRef w() const { return w_->get(); }
  CRef b() const { return b_ != nullptr ? b_->get() : CRef(nullptr, w().t); }

 private:
  std::optional<Held> first_, second_;
  const Held* w_ = nullptr;
  const Held* b_ = nullptr;
};

// A norm's forward over `rows` rows of C: LayerNorm (mean and rstd kept) or RMSNorm (rstd kept,
// mean not written), per d.rmsnorm. `b` is ignored under RMSNorm.
void norm_forward(const LayerDims& d, Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b,
                  int rows);

// The backward of a norm (LayerNorm or RMSNorm) of the residual stream over this rank's Nl rows:
// dx += the input gradient; the parameter gradients go to the source's spans (bias, then
// weight; RMSNorm has no bias: b_ref empty), summed over tp first under sequence parallelism,
// where this rank's rows give only a part of them (s.ln_grads is the scratch).
void residual_layernorm_backward(const LayerDims& d, ParamSource& src, const ParamRef& w_ref,
                                 const ParamRef& b_ref, CRef w, Ref dx, CRef dout, CRef x,
                                 const float* mean, const float* rstd, const LayerScratch& s);

// `layer`: the model layer (a MoE layer's statistics).
void layer_forward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                   LayerActivations& a, const LayerScratch& s, const LayerDropout& drop, int layer);
// x, the layer output and dres hold this rank's Nl rows.
// dres [Nl, C]: on entry the gradient of the layer output, on return the gradient of its input.
// Parameter gradients go to the source's gradient spans, from the layer's last parameter to its
// first, and its parameters are acquired in that order too.
void layer_backward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    Ref dres);

}  // namespace zt
