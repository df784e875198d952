#include "src/model/param_layout.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "kernels/common/dropout.h"
#include "src/core/error.h"

namespace zt {

void ParamLayout::begin_block(std::string name) {
  blocks_.push_back(BlockRange{std::move(name), numel_, numel_});
}

void ParamLayout::add(std::string name, Shape full, TpSplit split, ParamInit init, float std,
                      bool wd, std::vector<int64_t> group_rows) {
  ParamSpec p;
  p.name = std::move(name);
  p.full_shape = full;
  p.split = split;
  p.tp_replicated = split == TpSplit::Replicated;
  p.group_rows = std::move(group_rows);
  p.tp_size = tp_size_;
  p.tp_rank = tp_rank_;
  const int64_t n = tp_size_;
  switch (split) {
    case TpSplit::Replicated:
      p.shape = full;
      break;
    case TpSplit::OutputRows:
    case TpSplit::VocabRows:
      p.shape = full.rank() == 1 ? Shape{full[0] / n} : Shape{full[0] / n, full[1]};
      break;
    case TpSplit::InputColumns:
      p.shape = Shape{full[0], full[1] / n};
      break;
  }
  p.block = static_cast<int>(blocks_.size()) - 1;
  p.offset = numel_;
  p.weight_decay = wd;
  p.init = init;
  p.init_std = std;
  numel_ += p.shape.numel();
  blocks_.back().end = numel_;
  params_.push_back(std::move(p));
}

void ParamLayout::add_experts(std::string name, int experts, int all, Shape one, TpSplit split,
                              float std, std::vector<int64_t> group_rows) {
  // Row-split experts are row groups of one stacked tensor: each expert's groups (or its whole
  // rows) repeated, so full_index and the checkpoints' tp splits need nothing new.
  std::vector<int64_t> groups;
  if (split == TpSplit::OutputRows)
    for (int e = 0; e < experts; ++e) {
      if (group_rows.empty()) groups.push_back(one[0]);
      for (int64_t g : group_rows) groups.push_back(g);
    }
  add(std::move(name), {int64_t{experts} * one[0], one[1]}, split, ParamInit::Normal, std, true,
      std::move(groups));
  ParamSpec& p = params_.back();
  p.expert_rows = split == TpSplit::OutputRows ? one[0] / tp_size_ : one[0];
  p.expert = true;
  // full_index within this rank's experts, then past the experts of the ranks before it.
  p.full_offset = int64_t{ep_rank_} * p.full_numel();
  p.full_shape = Shape{int64_t{all} * one[0], one[1]};
}

bool ParamLayout::has_experts() const {
  return std::any_of(params_.begin(), params_.end(), [](const ParamSpec& p) { return p.expert; });
}

int64_t ParamSpec::full_index(int64_t i) const {
  if (split == TpSplit::Replicated || tp_size == 1) return full_offset + i;
  const int64_t cols = shape.rank() == 2 ? shape[1] : 1;
  const int64_t r = i / cols, c = i % cols;
  if (split == TpSplit::InputColumns)
    return full_offset + r * full_shape[1] + int64_t{tp_rank} * cols + c;
  // Rows split, in groups: local row r is row `within` of group g's shard.
  const int g = row_group_of(r, true);
  const int64_t group_local = full_group_rows(g) / tp_size;
  const int64_t within = r - full_group_begin(g) / tp_size;
  const int64_t full_row = full_group_begin(g) + int64_t{tp_rank} * group_local + within;
  return full_offset + full_row * cols + c;
}

int64_t ParamSpec::full_group_rows(int g) const {
  return group_rows.empty() ? full_shape[0] : group_rows[static_cast<size_t>(g)];
}

int64_t ParamSpec::full_group_begin(int g) const {
  int64_t b = 0;
  for (int k = 0; k < g; ++k) b += full_group_rows(k);
  return b;
}

int ParamSpec::row_group_of(int64_t r, bool local) const {
  const int64_t div = local ? tp_size : 1;
  int g = 0;
  for (int64_t end = full_group_rows(0) / div; r >= end && g + 1 < num_row_groups();)
    end += full_group_rows(++g) / div;
  return g;
}

int64_t ParamLayout::replicated_numel() const {
  int64_t n = 0;
  for (const auto& p : params_)
    if (p.tp_replicated) n += p.numel();
  return n;
}

std::vector<int> PipelinePart::layers(const GptConfig& c, int chunk) const {
  const LayerSpan span = virtual_stage_layers(split(c), rank, chunk);
  std::vector<int> out(static_cast<size_t>(span.count));
  for (int i = 0; i < span.count; ++i) out[static_cast<size_t>(i)] = span.first + i;
  return out;
}

void validate_pipeline(const GptConfig& c, const PipelinePart& part) {
  const std::string why = split_problem(part.split(c));
  ZT_REQUIRE(why.empty(), "{}", why);
  ZT_CHECK(part.rank >= 0 && part.rank < part.size, "pipeline rank {} outside [0, {})", part.rank,
           part.size);
}

int ParamLayout::block_index(const std::string& name) const {
  for (size_t b = 0; b < blocks_.size(); ++b)
    if (blocks_[b].name == name) return static_cast<int>(b);
  return -1;
}

ParamLayout ParamLayout::gpt(const GptConfig& c, int tp_size, int tp_rank, const PipelinePart& part,
                             ExpertPart ep) {
  validate_tensor_parallel(c, tp_size);
  validate_pipeline(c, part);
  ZT_CHECK(tp_rank >= 0 && tp_rank < tp_size, "tp rank {} outside [0, {})", tp_rank, tp_size);
  ZT_CHECK(ep.rank >= 0 && ep.rank < c.expert_parallel, "expert-parallel rank {} outside [0, {})",
           ep.rank, c.expert_parallel);
  ParamLayout l;
  l.tp_size_ = tp_size;
  l.tp_rank_ = tp_rank;
  l.ep_size_ = c.expert_parallel;
  l.ep_rank_ = ep.rank;
  l.part_ = part;
  const int64_t h = c.hidden, f = c.ffn_hidden(), kv = c.kv_hidden();
  const float std = c.init_method_std;
  // GPT-2 (and Megatron's scaled init) scales the residual-path projections by 1/sqrt(2L) so the
  // residual stream's variance does not grow with depth.
  const float proj_std = std / std::sqrt(2.0f * static_cast<float>(c.num_layers));
  const bool bias = c.add_bias_linear, ln_bias = !c.rmsnorm();
  using S = TpSplit;
  auto word_embedding = [&] {
    l.add("embedding.word", {c.padded_vocab_size, h}, S::VocabRows, ParamInit::Normal, std, true);
  };
  // A norm's weight, and its bias for LayerNorm (RMSNorm has none).
  auto norm = [&](const std::string& name) {
    l.add(name + ".weight", {h}, S::Replicated, ParamInit::Ones, 0, false);
    if (ln_bias) l.add(name + ".bias", {h}, S::Replicated, ParamInit::Zeros, 0, false);
  };
  if (part.first()) {
    l.begin_block("embedding");
    word_embedding();
    if (c.learned_positions())
      l.add("embedding.position", {c.seq_length, h}, S::Replicated, ParamInit::Normal, std, true);
  }
  std::vector<int> layers;
  for (int chunk = 0; chunk < part.chunks; ++chunk)
    for (int i : part.layers(c, chunk)) layers.push_back(i);
  // q|k|v stacked, each split by rows: a rank's rows are the q rows of its heads, then the k and
  // v rows of its key/value groups (what the attention kernel reads as q|k|v).
  const std::vector<int64_t> qkv_groups{h, kv, kv};
  // SwiGLU: gate|up stacked, each split by rows, so a rank holds the gate and up rows of the same
  // MLP columns.
  const std::vector<int64_t> fc_groups =
      c.swiglu ? std::vector<int64_t>{f, f} : std::vector<int64_t>{};
  for (int i : layers) {
    const std::string p = "layers." + std::to_string(i) + ".";
    l.begin_block("layers." + std::to_string(i));
    norm(p + "ln1");
    l.add(p + "attn.qkv.weight", {h + 2 * kv, h}, S::OutputRows, ParamInit::Normal, std, true,
          qkv_groups);
    if (c.qkv_bias())
      l.add(p + "attn.qkv.bias", {h + 2 * kv}, S::OutputRows, ParamInit::Zeros, 0, false,
            qkv_groups);
    l.add(p + "attn.proj.weight", {h, h}, S::InputColumns, ParamInit::Normal, proj_std, true);
    if (bias) l.add(p + "attn.proj.bias", {h}, S::Replicated, ParamInit::Zeros, 0, false);
    norm(p + "ln2");
    if (c.moe_layer(i)) {
      // The router (replicated: every tp rank routes the same tokens), then the experts stacked.
      const int64_t fe = c.moe_ffn_hidden();
      l.add(p + "mlp.router.weight", {c.num_experts, h}, S::Replicated, ParamInit::Normal, std,
            true);
      const int el = c.local_experts(), all = c.num_experts;
      l.add_experts(p + "mlp.experts.fc.weight", el, all, {c.moe_fc_rows(), h}, S::OutputRows, std,
                    c.swiglu ? std::vector<int64_t>{fe, fe} : std::vector<int64_t>{});
      l.add_experts(p + "mlp.experts.proj.weight", el, all, {h, fe}, S::InputColumns, proj_std);
      if (c.moe_shared_ffn > 0) {
        // The shared expert: a dense MLP of its own width, split as the dense MLP is; its gate
        // [1, h] replicated.
        const int64_t fs = c.moe_shared_ffn;
        l.add(p + "mlp.shared.fc.weight", {c.moe_shared_fc_rows(), h}, S::OutputRows,
              ParamInit::Normal, std, true,
              c.swiglu ? std::vector<int64_t>{fs, fs} : std::vector<int64_t>{});
        l.add(p + "mlp.shared.proj.weight", {h, fs}, S::InputColumns, ParamInit::Normal, proj_std,
              true);
        if (c.moe_shared_gate)
          l.add(p + "mlp.shared.gate.weight", {1, h}, S::Replicated, ParamInit::Normal, std, true);
      }
      continue;
    }
    l.add(p + "mlp.fc.weight", {c.fc_rows(), h}, S::OutputRows, ParamInit::Normal, std, true,
          fc_groups);
    if (bias)
      l.add(p + "mlp.fc.bias", {c.fc_rows()}, S::OutputRows, ParamInit::Zeros, 0, false, fc_groups);
    l.add(p + "mlp.proj.weight", {h, f}, S::InputColumns, ParamInit::Normal, proj_std, true);
    if (bias) l.add(p + "mlp.proj.bias", {h}, S::Replicated, ParamInit::Zeros, 0, false);
  }
  if (part.last()) {
    l.begin_block("final_ln");
    norm("final_ln");
    if (c.untie_embeddings) {
      // Its own vocab-parallel weight, on the last stage only: nothing to tie across stages.
      l.begin_block("output_layer");
      l.add("output_layer.weight", {c.padded_vocab_size, h}, S::VocabRows, ParamInit::Normal, std,
            true);
    } else if (!part.first()) {
      l.begin_block("head");
      word_embedding();
    }
  }
  return l;
}

const ParamSpec& ParamLayout::find(const std::string& name) const {
  for (const auto& p : params_)
    if (p.name == name) return p;
  throw Error("no parameter named '" + name + "'");
}

namespace {

uint64_t name_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (char ch : s) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

// Standard normal from two counter-based uniforms (Box-Muller).
float normal(uint64_t stream, uint64_t i) {
  const double u1 = (static_cast<double>(mix64(stream, 2 * i) >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(mix64(stream, 2 * i + 1) >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace

void init_parameter_range(const ParamSpec& p, uint64_t seed, int64_t first, int64_t count,
                          float* dst) {
  const uint64_t stream = mix64(seed, name_hash(p.name));
  switch (p.init) {
    case ParamInit::Zeros:
      for (int64_t i = 0; i < count; ++i) dst[i] = 0.0f;
      break;
    case ParamInit::Ones:
      for (int64_t i = 0; i < count; ++i) dst[i] = 1.0f;
      break;
    case ParamInit::Normal:
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i)
        dst[i] = p.init_std * normal(stream, static_cast<uint64_t>(p.full_index(first + i)));
      break;
  }
}

void init_parameters(const ParamLayout& layout, uint64_t seed, float* flat) {
  for (const auto& p : layout.params())
    init_parameter_range(p, seed, 0, p.numel(), flat + p.offset);
}

}  // namespace zt
