#pragma once
// The model's shape. Everything derived from it (parameter layout, FLOPs, memory plan) is a
// function of this struct, so the trainer, the checkpoint code and the planner agree.
// It is always the whole (unsharded) model; a tensor-parallel rank's share of it is described
// by ParamLayout::gpt(config, tp_size, tp_rank) and the local sizes below.
#include <cstdint>
#include <string_view>

#include "kernels/common/rope.h"
#include "src/core/dtype.h"

namespace zt {

// Megatron-LM's --position-embedding-type: a learned table added to the embedding (GPT-2), or
// rotary embeddings applied to q and k inside attention (no parameters).
enum class PositionEmbedding : uint8_t { LearnedAbsolute, Rope };
// Megatron-LM's --normalization: LayerNorm (weight and bias) or RMSNorm (weight only).
enum class Normalization : uint8_t { LayerNorm, RMSNorm };
// How context-parallel attention exchanges over the context ranks: Ring (Megatron's p2p: keys and
// values travel round the ranks, src/model/context_ring.h) or AllToAll (Megatron's a2a,
// DeepSpeed-Ulysses: whole sequences of 1/cp of the heads, src/model/context_attention.h).
enum class ContextComm : uint8_t { Ring, AllToAll };

struct GptConfig {
  int num_layers = 2;
  int hidden = 64;
  int heads = 4;
  int seq_length = 64;
  int vocab_size = 256;         // real vocabulary (tokens a model can see)
  int padded_vocab_size = 256;  // rows of the embedding: vocab rounded up (Megatron's padding)
  float attention_dropout = 0;
  float hidden_dropout = 0;
  // The working precision: parameters as the model reads them, activations, checkpoints and
  // tensor-parallel activation traffic (--bf16 / --fp16; fp32 by default).
  DType dtype = DType::F32;
  // Megatron's --sequence-parallel: with tp > 1, the tokens of the regions outside the
  // tensor-parallel layers (layernorms, dropouts, residuals) are split over the tp ranks
  // (src/tensor_parallel/sequence_parallel.h). No effect at tp = 1.
  bool sequence_parallel = false;
  // Megatron's --context-parallel-size: each sample's tokens are split over this many ranks
  // (src/model/context_split.h); a rank's activations hold local_seq() tokens per sample.
  int context_parallel = 1;
  // Megatron's --cp-comm-type: how attention exchanges over the context ranks.
  ContextComm context_comm = ContextComm::Ring;
  // The architecture choices (docs/design/llama.md). The defaults are GPT-2.
  PositionEmbedding position_embedding = PositionEmbedding::LearnedAbsolute;
  float rotary_base = 10000.0f;  // theta of the rotary frequencies theta^(-2i/head_dim)
  RopeScaling rope_scaling{};    // longer contexts (kernels/common/rope.h); None: theta alone
  Normalization normalization = Normalization::LayerNorm;
  float norm_epsilon = 1e-5f;
  bool swiglu = false;              // gated MLP silu(x W_gate) * (x W_up) instead of gelu(x W_fc)
  int ffn_hidden_size = 0;          // the MLP width; 0: 4·hidden (GeLU) or ffn_default() (SwiGLU)
  int num_query_groups = 0;         // key/value heads (grouped-query attention); 0: one per head
  bool untie_embeddings = false;    // a separate output layer instead of the word embedding
  bool add_bias_linear = true;      // biases in the linear layers (--disable-bias-linear: false)
  bool add_qkv_bias = false;        // a q|k|v bias even without the others (Qwen's attention)
  float init_method_std = 0.02f;    // std of the normal initialisation (Megatron's 0.02)
  int max_position_embeddings = 0;  // positions the model is made for; 0: seq_length
  // A mixture of experts (docs/design/moe.md): the MLP of every moe_layer_freq-th layer is
  // num_experts experts (0: a dense model), moe_topk of them per token.
  int num_experts = 0;
  int moe_topk = 2;
  int moe_ffn_hidden_size = 0;    // an expert's MLP width; 0: ffn_hidden()
  int moe_layer_freq = 1;         // layer i is MoE when i % moe_layer_freq == 0
  bool moe_sigmoid = false;       // router scores by sigmoid instead of softmax
  bool moe_renormalize = true;    // the k weights divided by their sum (Megatron's default)
  float moe_aux_loss_coeff = 0;   // the load-balancing loss's weight, per MoE layer
  float moe_capacity_factor = 0;  // rows an expert takes, over the even share; 0: dropless
  // A shared expert beside the routed ones (Qwen-MoE, DeepSeek): an MLP of this width every
  // token passes through (0: none), scaled by sigmoid(x · g) with moe_shared_gate.
  int moe_shared_ffn = 0;
  bool moe_shared_gate = false;
  // Megatron's --expert-model-parallel-size: ranks of the data x context group the experts are
  // split over (each holds num_experts / expert_parallel of them); tokens reach their experts by
  // all-to-all over those ranks.
  int expert_parallel = 1;

  int head_dim() const { return hidden / heads; }
  // Tokens of each sample one rank holds: seq_length / context_parallel.
  int local_seq() const { return seq_length / context_parallel; }
  // Megatron-LM's default SwiGLU width (megatron/training/arguments.py):
  // int((4 * hidden * 2 / 3) / 64) * 64, the 8/3·h rounded DOWN to a multiple of 64.
  int ffn_default() const { return swiglu ? hidden / 24 * 64 : 4 * hidden; }
  int ffn_hidden() const { return ffn_hidden_size > 0 ? ffn_hidden_size : ffn_default(); }
  // Rows of the MLP's first weight: gate and up stacked under SwiGLU, else the fc width.
  int fc_rows() const { return swiglu ? 2 * ffn_hidden() : ffn_hidden(); }
  bool rope() const { return position_embedding == PositionEmbedding::Rope; }
  // The rotary table both backends rotate by (kernels/common/rope.h).
  RopeFreqs rope_table() const { return rope_freqs(head_dim(), rotary_base, rope_scaling); }
  bool rmsnorm() const { return normalization == Normalization::RMSNorm; }
  bool learned_positions() const { return !rope(); }
  int max_positions() const {
    return max_position_embeddings > 0 ? max_position_embeddings : seq_length;
  }
  bool moe() const { return num_experts > 0; }
  bool moe_layer(int layer) const { return moe() && layer % moe_layer_freq == 0; }
  bool qkv_bias() const { return add_bias_linear || add_qkv_bias; }
  // Rows of the shared expert's first weight (gate|up under SwiGLU); 0 without one.
  int moe_shared_fc_rows() const { return swiglu ? 2 * moe_shared_ffn : moe_shared_ffn; }
  // What a MoE layer's combine adds per token: its k routed choices and the shared expert.
  int moe_combine_width() const { return moe_topk + (moe_shared_ffn > 0 ? 1 : 0); }
  int moe_layers() const;                                              // how many layers are MoE
  int local_experts() const { return num_experts / expert_parallel; }  // experts a rank holds
  int moe_ffn_hidden() const {
    return moe_ffn_hidden_size > 0 ? moe_ffn_hidden_size : ffn_hidden();
  }
  // Rows of an expert's first weight: gate and up stacked under SwiGLU, else its fc width.
  int moe_fc_rows() const { return swiglu ? 2 * moe_ffn_hidden() : moe_ffn_hidden(); }
  int kv_heads() const { return num_query_groups > 0 ? num_query_groups : heads; }
  int kv_hidden() const { return kv_heads() * head_dim(); }
  // Rows of the fused q|k|v weight: hidden for q, kv_hidden each for k and v.
  int qkv_rows() const { return hidden + 2 * kv_hidden(); }
  // Parameters of the whole (unsharded) model, embeddings included, tied head counted once;
  // with `active_only`, a MoE layer counts its router and k of its experts (what a token meets).
  int64_t num_parameters(bool active_only = false) const;
  // Learned positions, LayerNorm, GeLU, multi-head attention, linear biases, a tied head: what
  // the GPT-2 Hugging Face format represents.
  bool gpt2_architecture() const {
    return learned_positions() && !rmsnorm() && !swiglu && kv_heads() == heads &&
           !untie_embeddings && add_bias_linear && ffn_hidden() == 4 * hidden;
  }
  // Training FLOPs per token (forward + backward): 6N over the active parameters (a MoE layer's
  // router and k experts) plus the attention score and value products, 12·L·h·s (forward
  // 2·2·s·h per layer and token, backward twice that).
  double flops_per_token() const;
};

// --rope-scaling-type's words: none, linear, llama3.
std::string_view rope_scaling_name(RopeScaling::Type t);
RopeScaling::Type rope_scaling_type(std::string_view name);  // none for any other word

// Rounds the vocabulary up to a multiple of `divisible_by` (Megatron's
// --make-vocab-size-divisible-by times the tensor-parallel size).
int pad_vocab(int vocab_size, int divisible_by);
// Megatron's rule in one place: the padded vocabulary of a run with `tp` tensor-parallel ranks,
// pad_vocab(vocab, divisible_by · tp), so every rank's vocabulary shard has the same size.
int padded_vocab_size(int vocab_size, int divisible_by, int tp);

// The checks of the architecture choices alone (query groups divide the heads, a SwiGLU width,
// positive epsilon and rotary base), as zt::InputError naming the flag.
void validate_architecture(const GptConfig& config);
// The mixture of experts' checks (top-k within the experts, a positive expert width and layer
// frequency, non-negative coefficients), as zt::InputError naming the flag.
void validate_moe(const GptConfig& config);

// The checks tensor parallelism puts on the shape, as zt::InputError naming the flag to change:
// heads, query groups, hidden, ffn hidden and padded vocabulary divisible by tp.
void validate_tensor_parallel(const GptConfig& config, int tp);

// The checks context parallelism puts on the shape, as zt::InputError naming the flag to change:
// the sequence in 2·cp equal chunks; under the all-to-all the heads of a tensor-parallel rank
// divisible by cp, and its key/value heads divisible by cp or dividing it (it hands each context
// rank whole heads: src/model/context_attention.h).
void validate_context_parallel(const GptConfig& config, int tp);
// Context ranks that take the same key/value head of a tensor-parallel rank under the all-to-all:
// cp / its key/value heads when they are fewer than cp, else 1 (always 1 in the ring).
int context_kv_replicas(const GptConfig& config, int tp);
// The width of a tensor-parallel rank's q|k|v rows as the context ranks hold them over the
// all-to-all: Cl + 2·replicas·Ckv (its own rows' width at one replica).
int64_t context_qkv_width(const GptConfig& config, int tp);

// Whether the tokens outside the tensor-parallel regions are split over the `tp_size` ranks.
inline bool splits_sequence(const GptConfig& c, int tp_size) {
  return c.sequence_parallel && tp_size > 1;
}
// Rows of an [n, hidden] activation outside the tensor-parallel regions that one of `tp_size`
// ranks keeps: n / tp_size under sequence parallelism, else n.
inline int64_t local_rows(const GptConfig& c, int64_t n, int tp_size) {
  return splits_sequence(c, tp_size) ? n / tp_size : n;
}

// One tensor-parallel rank's sizes (tp = 1: the whole model).
struct TpDims {
  int size = 1;        // tensor-parallel ranks
  int rank = 0;        // this rank
  int heads = 0;       // local attention heads
  int hidden = 0;      // local attention width, heads · head_dim
  int kv_heads = 0;    // local key/value heads (= heads without grouped-query attention)
  int kv_hidden = 0;   // local key/value width, kv_heads · head_dim
  int ffn = 0;         // local MLP width
  int moe_ffn = 0;     // local width of an expert's MLP (0: a dense model)
  int moe_shared = 0;  // local width of the shared expert's MLP (0: none)
  int vocab = 0;       // local (padded) vocabulary rows
  int vocab_begin = 0;
  static TpDims of(const GptConfig& config, int tp_size, int tp_rank);
};

}  // namespace zt
