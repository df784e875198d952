#include "src/model/transformer_layer.h"

#include "kernels/cpu/ops.h"

namespace zt {

LayerOffsets LayerOffsets::from(const ParamLayout& layout, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  const int64_t base =
      layout.blocks().at(static_cast<size_t>(ParamLayout::layer_block(layer))).begin;
  auto off = [&](const char* name) { return layout.find(p + name).offset - base; };
  return LayerOffsets{off("ln1.weight"),    off("ln1.bias"),         off("attn.qkv.weight"),
                      off("attn.qkv.bias"), off("attn.proj.weight"), off("attn.proj.bias"),
                      off("ln2.weight"),    off("ln2.bias"),         off("mlp.fc.weight"),
                      off("mlp.fc.bias"),   off("mlp.proj.weight"),  off("mlp.proj.bias")};
}

LayerParams LayerOffsets::at(float* b) const {
  return LayerParams{b + ln1_w, b + ln1_b, b + qkv_w, b + qkv_b, b + proj_w,   b + proj_b,
                     b + ln2_w, b + ln2_b, b + fc_w,  b + fc_b,  b + fcproj_w, b + fcproj_b};
}

size_t LayerScratch::bytes(const GptConfig& c, int micro_batch) {
  const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.seq_length);
  const size_t h = static_cast<size_t>(c.hidden);
  const size_t att = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.heads) *
                     static_cast<size_t>(c.seq_length) * static_cast<size_t>(c.seq_length);
  return Arena::aligned(n * h * 4) * 3 + Arena::aligned(n * 4 * h * 4) * 2 +
         Arena::aligned(n * 3 * h * 4) + Arena::aligned(att * 4);
}

LayerScratch LayerScratch::carve(Arena& arena, const GptConfig& c, int micro_batch) {
  const int64_t n = int64_t{micro_batch} * c.seq_length, h = c.hidden;
  const int64_t att = int64_t{micro_batch} * c.heads * c.seq_length * c.seq_length;
  LayerScratch s;
  s.ln = arena.carve({n * h}, DType::F32).f32();
  s.ff = arena.carve({n * 4 * h}, DType::F32).f32();
  s.d_a = arena.carve({n * h}, DType::F32).f32();
  s.d_b = arena.carve({n * h}, DType::F32).f32();
  s.d_ff = arena.carve({n * 4 * h}, DType::F32).f32();
  s.d_qkv = arena.carve({n * 3 * h}, DType::F32).f32();
  s.d_att = arena.carve({att}, DType::F32).f32();
  return s;
}

void layer_forward(const LayerDims& d, const LayerParams& p, const float* x, LayerActivations& a,
                   const LayerScratch& s, const LayerDropout& drop) {
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C, nf = nc * 4;
  cpu::layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, p.ln1_w, p.ln1_b, N, C);
  cpu::linear_forward(a.qkv, s.ln, p.qkv_w, p.qkv_b, N, C, 3 * C);
  cpu::attention_forward(a.atty, a.att, a.qkv, d.B, d.T, C, d.H, drop.attention);
  float* proj = s.d_a;  // backward scratch is free during forward
  cpu::linear_forward(proj, a.atty, p.proj_w, p.proj_b, N, C, C);
  cpu::dropout_add_forward(a.res2, x, proj, nc, drop.attn_out);
  cpu::layernorm_forward(s.ln, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2_w, p.ln2_b, N, C);
  cpu::linear_forward(a.fch, s.ln, p.fc_w, p.fc_b, N, C, 4 * C);
  cpu::gelu_forward(s.ff, a.fch, nf);
  cpu::linear_forward(proj, s.ff, p.fcproj_w, p.fcproj_b, N, 4 * C, C);
  cpu::dropout_add_forward(a.out, a.res2, proj, nc, drop.mlp_out);
}

void layer_backward(const LayerDims& d, const LayerParams& p, const LayerParams& g, const float* x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    float* dres) {
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C, nf = nc * 4;
  // MLP branch: out = res2 + drop(fcproj(gelu(fc(ln2(res2)))))
  cpu::dropout_backward(s.d_a, dres, nc, drop.mlp_out);
  cpu::gelu_forward(s.ff, a.fch, nf);
  cpu::linear_backward(s.d_ff, g.fcproj_w, g.fcproj_b, s.d_a, s.ff, p.fcproj_w, N, 4 * C, C, false);
  cpu::gelu_backward(s.d_ff, a.fch, s.d_ff, nf);
  // The layernorm is recomputed from the kept mean and rstd: the same bits as in forward.
  cpu::layernorm_forward(s.ln, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2_w, p.ln2_b, N, C);
  cpu::linear_backward(s.d_b, g.fc_w, g.fc_b, s.d_ff, s.ln, p.fc_w, N, C, 4 * C, false);
  cpu::layernorm_backward(dres, g.ln2_w, g.ln2_b, s.d_b, a.res2, p.ln2_w, a.ln2_mean, a.ln2_rstd, N,
                          C);
  // Attention branch: res2 = x + drop(proj(attn(ln1(x))))
  cpu::dropout_backward(s.d_a, dres, nc, drop.attn_out);
  cpu::linear_backward(s.d_b, g.proj_w, g.proj_b, s.d_a, a.atty, p.proj_w, N, C, C, false);
  cpu::attention_backward(s.d_qkv, s.d_att, s.d_b, a.qkv, a.att, d.B, d.T, C, d.H, drop.attention);
  cpu::layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, p.ln1_w, p.ln1_b, N, C);
  cpu::linear_backward(s.d_a, g.qkv_w, g.qkv_b, s.d_qkv, s.ln, p.qkv_w, N, C, 3 * C, false);
  cpu::layernorm_backward(dres, g.ln1_w, g.ln1_b, s.d_a, x, p.ln1_w, a.ln1_mean, a.ln1_rstd, N, C);
}

}  // namespace zt
