#include "src/model/param_layout.h"

#include <cmath>
#include <string_view>

#include "kernels/common/dropout.h"

namespace zt {

void ParamLayout::begin_block(std::string name) {
  blocks_.push_back(BlockRange{std::move(name), numel_, numel_});
}

void ParamLayout::add(std::string name, Shape shape, ParamInit init, float std, bool wd) {
  ParamSpec p;
  p.name = std::move(name);
  p.shape = shape;
  p.block = static_cast<int>(blocks_.size()) - 1;
  p.offset = numel_;
  p.weight_decay = wd;
  p.init = init;
  p.init_std = std;
  numel_ += shape.numel();
  blocks_.back().end = numel_;
  params_.push_back(std::move(p));
}

ParamLayout ParamLayout::gpt(const GptConfig& c) {
  ParamLayout l;
  const int64_t h = c.hidden, f = c.ffn_hidden();
  constexpr float kStd = 0.02f;
  // GPT-2 scales the residual-path projections by 1/sqrt(2L) so the residual stream's variance
  // does not grow with depth.
  const float proj_std = kStd / std::sqrt(2.0f * static_cast<float>(c.num_layers));
  l.begin_block("embedding");
  l.add("embedding.word", {c.padded_vocab_size, h}, ParamInit::Normal, kStd, true);
  l.add("embedding.position", {c.seq_length, h}, ParamInit::Normal, kStd, true);
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    l.begin_block("layers." + std::to_string(i));
    l.add(p + "ln1.weight", {h}, ParamInit::Ones, 0, false);
    l.add(p + "ln1.bias", {h}, ParamInit::Zeros, 0, false);
    l.add(p + "attn.qkv.weight", {3 * h, h}, ParamInit::Normal, kStd, true);
    l.add(p + "attn.qkv.bias", {3 * h}, ParamInit::Zeros, 0, false);
    l.add(p + "attn.proj.weight", {h, h}, ParamInit::Normal, proj_std, true);
    l.add(p + "attn.proj.bias", {h}, ParamInit::Zeros, 0, false);
    l.add(p + "ln2.weight", {h}, ParamInit::Ones, 0, false);
    l.add(p + "ln2.bias", {h}, ParamInit::Zeros, 0, false);
    l.add(p + "mlp.fc.weight", {f, h}, ParamInit::Normal, kStd, true);
    l.add(p + "mlp.fc.bias", {f}, ParamInit::Zeros, 0, false);
    l.add(p + "mlp.proj.weight", {h, f}, ParamInit::Normal, proj_std, true);
    l.add(p + "mlp.proj.bias", {h}, ParamInit::Zeros, 0, false);
  }
  l.begin_block("final_ln");
  l.add("final_ln.weight", {h}, ParamInit::Ones, 0, false);
  l.add("final_ln.bias", {h}, ParamInit::Zeros, 0, false);
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

void init_parameters(const ParamLayout& layout, uint64_t seed, float* flat) {
  for (const auto& p : layout.params()) {
    float* dst = flat + p.offset;
    const int64_t n = p.numel();
    const uint64_t stream = mix64(seed, name_hash(p.name));
    switch (p.init) {
      case ParamInit::Zeros:
        for (int64_t i = 0; i < n; ++i) dst[i] = 0.0f;
        break;
      case ParamInit::Ones:
        for (int64_t i = 0; i < n; ++i) dst[i] = 1.0f;
        break;
      case ParamInit::Normal:
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; ++i)
          dst[i] = p.init_std * normal(stream, static_cast<uint64_t>(i));
        break;
    }
  }
}

}  // namespace zt
