#include "src/model/gpt_config.h"

#include <limits>

#include "kernels/common/rope.h"
#include "src/core/error.h"

namespace zt {

int GptConfig::moe_layers() const {
  return moe() ? (num_layers + moe_layer_freq - 1) / moe_layer_freq : 0;
}

int64_t GptConfig::num_parameters(bool active_only) const {
  const int64_t h = hidden, f = ffn_hidden(), f1 = fc_rows(), qkv = qkv_rows();
  const int64_t norm = rmsnorm() ? h : 2 * h, bias = add_bias_linear ? 1 : 0;
  const int64_t qkv_bias_n = qkv_bias() ? qkv : 0;
  const int64_t attention = norm + (qkv * h + qkv_bias_n) + (h * h + bias * h) + norm;
  const int64_t dense_mlp = (f1 * h + bias * f1) + (h * f + bias * h);
  // An expert has no biases (docs/design/moe.md); the router is [E, h].
  const int64_t expert = (int64_t{moe_fc_rows()} + moe_ffn_hidden()) * h;
  const int64_t experts = active_only ? moe_topk : num_experts;
  const int64_t shared =
      moe() ? (int64_t{moe_shared_fc_rows()} + moe_shared_ffn) * h + (moe_shared_gate ? h : 0) : 0;
  const int64_t moe_mlp = int64_t{num_experts} * h + experts * expert + shared;
  const int64_t layers =
      num_layers * (attention + dense_mlp) + moe_layers() * (moe_mlp - dense_mlp);
  const int64_t vh = int64_t{padded_vocab_size} * h;
  return vh + (learned_positions() ? int64_t{seq_length} * h : 0) + layers + norm +
         (untie_embeddings ? vh : 0);
}

double GptConfig::flops_per_token() const {
  return 6.0 * static_cast<double>(num_parameters(true)) +
         12.0 * num_layers * static_cast<double>(hidden) * seq_length;
}

namespace {

// In 64 bits: neither the multiple (divisible_by · tp) nor the rounding up may wrap an int.
int64_t pad_vocab64(int64_t vocab_size, int64_t divisible_by) {
  return (vocab_size + divisible_by - 1) / divisible_by * divisible_by;
}

}  // namespace

int pad_vocab(int vocab_size, int divisible_by) {
  const int64_t padded = pad_vocab64(vocab_size, divisible_by);
  ZT_REQUIRE(padded <= std::numeric_limits<int>::max(),
             "padding the vocabulary of {} to a multiple of {} gives {} rows, more than {}",
             vocab_size, divisible_by, padded, std::numeric_limits<int>::max());
  return static_cast<int>(padded);
}

int padded_vocab_size(int vocab_size, int divisible_by, int tp) {
  ZT_REQUIRE(divisible_by > 0 && tp > 0,
             "--make-vocab-size-divisible-by {} and --tensor-model-parallel-size {} must be "
             "positive",
             divisible_by, tp);
  const int64_t padded = pad_vocab64(vocab_size, int64_t{divisible_by} * tp);
  ZT_REQUIRE(padded <= std::numeric_limits<int>::max(),
             "--make-vocab-size-divisible-by {} x --tensor-model-parallel-size {} pads the "
             "vocabulary of {} to {} rows, more than {}; use a smaller "
             "--make-vocab-size-divisible-by (Megatron's default is 128)",
             divisible_by, tp, vocab_size, padded, std::numeric_limits<int>::max());
  return static_cast<int>(padded);
}

std::string_view rope_scaling_name(RopeScaling::Type t) {
  switch (t) {
    case RopeScaling::Type::Linear:
      return "linear";
    case RopeScaling::Type::Llama3:
      return "llama3";
    case RopeScaling::Type::None:
      break;
  }
  return "none";
}

RopeScaling::Type rope_scaling_type(std::string_view name) {
  if (name == "linear") return RopeScaling::Type::Linear;
  if (name == "llama3") return RopeScaling::Type::Llama3;
  return RopeScaling::Type::None;
}

void validate_architecture(const GptConfig& c) {
  ZT_REQUIRE(c.heads >= 1 && c.hidden % c.heads == 0,
             "--num-attention-heads {} must divide --hidden-size {}", c.heads, c.hidden);
  ZT_REQUIRE(c.num_query_groups >= 0 && c.kv_heads() <= c.heads && c.heads % c.kv_heads() == 0,
             "--num-query-groups {} must divide --num-attention-heads {}", c.num_query_groups,
             c.heads);
  ZT_REQUIRE(c.ffn_hidden() > 0,
             "--swiglu: the default MLP width int(8/3 x --hidden-size / 64) x 64 is 0 for "
             "--hidden-size {}; give --ffn-hidden-size",
             c.hidden);
  ZT_REQUIRE(c.norm_epsilon > 0.0f, "--norm-epsilon must be positive, got {}", c.norm_epsilon);
  ZT_REQUIRE(c.rmsnorm() || c.norm_epsilon == 1e-5f,
             "--norm-epsilon {}: LayerNorm runs with epsilon 1e-5 only (RMSNorm takes any)",
             c.norm_epsilon);
  ZT_REQUIRE(c.rotary_base > 0.0f, "--rotary-base must be positive, got {}", c.rotary_base);
  const RopeScaling& r = c.rope_scaling;
  if (r.type != RopeScaling::Type::None) {
    ZT_REQUIRE(c.rope(), "--rope-scaling-type needs --position-embedding-type rope");
    ZT_REQUIRE(r.factor > 0, "--rope-scaling-factor must be positive, got {}", r.factor);
  }
  if (r.type == RopeScaling::Type::Llama3) {
    ZT_REQUIRE(r.low_freq_factor > 0 && r.low_freq_factor < r.high_freq_factor,
               "--rope-scaling-type llama3 needs 0 < --rope-scaling-low-freq-factor ({}) < "
               "--rope-scaling-high-freq-factor ({})",
               r.low_freq_factor, r.high_freq_factor);
    ZT_REQUIRE(r.original_max_positions > 0,
               "--rope-scaling-original-max-positions must be positive, got {}",
               r.original_max_positions);
  }
  ZT_REQUIRE(!c.rope() || c.head_dim() % 2 == 0,
             "--position-embedding-type rope needs an even head dimension, got {}", c.head_dim());
  ZT_REQUIRE(!c.rope() || c.head_dim() <= 2 * RopeFreqs::kMaxPairs,
             "--position-embedding-type rope takes head dimensions up to {}, got {}",
             2 * RopeFreqs::kMaxPairs, c.head_dim());
  ZT_REQUIRE(c.max_positions() >= c.seq_length,
             "--max-position-embeddings {} is below --seq-length {}", c.max_positions(),
             c.seq_length);
  ZT_REQUIRE(c.rope() || c.max_positions() == c.seq_length,
             "--max-position-embeddings {}: the learned position table has --seq-length {} rows; "
             "give the same value (or --position-embedding-type rope)",
             c.max_positions(), c.seq_length);
  ZT_REQUIRE(c.init_method_std > 0.0f, "--init-method-std must be positive, got {}",
             c.init_method_std);
}

void validate_moe(const GptConfig& c) {
  if (!c.moe()) return;
  ZT_REQUIRE(c.moe_topk >= 1 && c.moe_topk <= c.num_experts,
             "--moe-router-topk {} must be between 1 and --num-experts {}", c.moe_topk,
             c.num_experts);
  ZT_REQUIRE(c.moe_ffn_hidden() > 0, "--moe-ffn-hidden-size must be positive, got {}",
             c.moe_ffn_hidden());
  ZT_REQUIRE(c.moe_layer_freq >= 1, "--moe-layer-freq must be >= 1, got {}", c.moe_layer_freq);
  ZT_REQUIRE(c.moe_aux_loss_coeff >= 0.0f, "--moe-aux-loss-coeff must be >= 0, got {}",
             c.moe_aux_loss_coeff);
  ZT_REQUIRE(c.moe_shared_ffn >= 0, "--moe-shared-expert-intermediate-size must be >= 0, got {}",
             c.moe_shared_ffn);
  ZT_REQUIRE(!c.moe_shared_gate || c.moe_shared_ffn > 0,
             "--moe-shared-expert-gate needs --moe-shared-expert-intermediate-size");
  ZT_REQUIRE(c.expert_parallel >= 1 && c.num_experts % c.expert_parallel == 0,
             "--num-experts {} is not divisible by --expert-model-parallel-size {}", c.num_experts,
             c.expert_parallel);
  ZT_REQUIRE(c.moe_capacity_factor >= 0.0f,
             "--moe-expert-capacity-factor must be >= 0 (0: dropless), got {}",
             c.moe_capacity_factor);
}

void validate_tensor_parallel(const GptConfig& c, int tp) {
  ZT_REQUIRE(tp >= 1, "--tensor-model-parallel-size must be >= 1, got {}", tp);
  validate_architecture(c);
  validate_moe(c);
  ZT_REQUIRE(c.heads % tp == 0,
             "--num-attention-heads {} is not divisible by --tensor-model-parallel-size {}; "
             "choose a tensor-parallel size that divides the number of heads",
             c.heads, tp);
  ZT_REQUIRE(c.kv_heads() % tp == 0,
             "--num-query-groups {} is not divisible by --tensor-model-parallel-size {}; each "
             "tensor-parallel rank holds whole key/value groups (groups >= tp)",
             c.kv_heads(), tp);
  ZT_REQUIRE(c.hidden % tp == 0,
             "--hidden-size {} is not divisible by --tensor-model-parallel-size {}", c.hidden, tp);
  ZT_REQUIRE(c.ffn_hidden() % tp == 0,
             "the MLP width {} (--ffn-hidden-size) is not divisible by "
             "--tensor-model-parallel-size {}",
             c.ffn_hidden(), tp);
  ZT_REQUIRE(!c.moe() || c.moe_shared_ffn % tp == 0,
             "the shared expert's width {} (--moe-shared-expert-intermediate-size) is not "
             "divisible by --tensor-model-parallel-size {}",
             c.moe_shared_ffn, tp);
  ZT_REQUIRE(!c.moe() || c.moe_ffn_hidden() % tp == 0,
             "the experts' MLP width {} (--moe-ffn-hidden-size) is not divisible by "
             "--tensor-model-parallel-size {}",
             c.moe_ffn_hidden(), tp);
  ZT_REQUIRE(
      c.padded_vocab_size % tp == 0,
      "padded vocabulary {} is not divisible by --tensor-model-parallel-size {}; pad it with "
      "padded_vocab_size(vocab, --make-vocab-size-divisible-by, tp)",
      c.padded_vocab_size, tp);
  // Megatron-LM's rule: every sample's tokens split evenly, whatever the micro-batch.
  ZT_REQUIRE(!splits_sequence(c, tp) || c.local_seq() % tp == 0,
             "--sequence-parallel: the {} tokens of a sample on one context rank (--seq-length / "
             "--context-parallel-size) are not divisible by --tensor-model-parallel-size {}",
             c.local_seq(), tp);
  validate_context_parallel(c, tp);
}

void validate_context_parallel(const GptConfig& c, int tp) {
  const int cp = c.context_parallel;
  ZT_REQUIRE(cp >= 1, "--context-parallel-size must be >= 1, got {}", cp);
  if (cp == 1) return;
  ZT_REQUIRE(c.seq_length % (2 * cp) == 0,
             "--context-parallel-size {}: --seq-length {} is not divisible into 2 x {} = {} equal "
             "chunks; use a --seq-length that is a multiple of {}",
             cp, c.seq_length, cp, 2 * cp, 2 * cp);
  if (c.context_comm == ContextComm::Ring) return;
  const int heads = c.heads / tp, kv = c.kv_heads() / tp;
  ZT_REQUIRE(heads % cp == 0 && (kv % cp == 0 || cp % kv == 0),
             "--context-parallel-size {} --cp-comm-type a2a: a tensor-parallel rank's {} "
             "attention heads must be divisible by it and its {} key/value heads divisible by it "
             "or dividing it; use --cp-comm-type p2p or a context size that does",
             cp, heads, kv);
}

int context_kv_replicas(const GptConfig& c, int tp) {
  if (c.context_comm == ContextComm::Ring) return 1;
  const int kv = c.kv_heads() / tp;
  return c.context_parallel > kv ? c.context_parallel / kv : 1;
}

int64_t context_qkv_width(const GptConfig& c, int tp) {
  const TpDims t = TpDims::of(c, tp, 0);
  return int64_t{t.hidden} + 2 * int64_t{context_kv_replicas(c, tp)} * t.kv_hidden;
}

TpDims TpDims::of(const GptConfig& c, int tp_size, int tp_rank) {
  validate_tensor_parallel(c, tp_size);
  ZT_CHECK(tp_rank >= 0 && tp_rank < tp_size, "tp rank {} outside [0, {})", tp_rank, tp_size);
  TpDims d;
  d.size = tp_size;
  d.rank = tp_rank;
  d.heads = c.heads / tp_size;
  d.hidden = d.heads * c.head_dim();
  d.kv_heads = c.kv_heads() / tp_size;
  d.kv_hidden = d.kv_heads * c.head_dim();
  d.ffn = c.ffn_hidden() / tp_size;
  d.moe_ffn = c.moe() ? c.moe_ffn_hidden() / tp_size : 0;
  d.moe_shared = c.moe() ? c.moe_shared_ffn / tp_size : 0;
  d.vocab = c.padded_vocab_size / tp_size;
  d.vocab_begin = tp_rank * d.vocab;
  return d;
}

}  // namespace zt
