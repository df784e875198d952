#include "src/model/transformer_layer.h"

#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/parallel_linear.h"
#include "src/tensor_parallel/rng_tracker.h"

namespace zt {
namespace {

Ref carve_typed(Arena& arena, int64_t n, DType t) {
  return {arena.carve({n}, t).data(), t};
}

}  // namespace

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

LayerParams LayerOffsets::at(CRef b) const {
  return LayerParams{b + ln1_w, b + ln1_b, b + qkv_w, b + qkv_b, b + proj_w,   b + proj_b,
                     b + ln2_w, b + ln2_b, b + fc_w,  b + fc_b,  b + fcproj_w, b + fcproj_b};
}

LayerGrads LayerOffsets::at(float* b) const {
  return LayerGrads{b + ln1_w, b + ln1_b, b + qkv_w, b + qkv_b, b + proj_w,   b + proj_b,
                    b + ln2_w, b + ln2_b, b + fc_w,  b + fc_b,  b + fcproj_w, b + fcproj_b};
}

LayerDims LayerDims::of(const GptConfig& c, int micro_batch, int tp_size, int tp_rank,
                        comm::Communicator* tp, Backend& be) {
  const TpDims t = TpDims::of(c, tp_size, tp_rank);
  return LayerDims{micro_batch, c.seq_length, c.hidden,          t.heads, t.hidden,
                   t.ffn,       c.heads,      t.heads * tp_rank, tp,      &be};
}

size_t LayerScratch::bytes(const GptConfig& c, int micro_batch, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.seq_length);
  const size_t h = static_cast<size_t>(c.hidden), hl = static_cast<size_t>(t.hidden);
  const size_t f = static_cast<size_t>(t.ffn);
  const size_t att = static_cast<size_t>(micro_batch) * static_cast<size_t>(t.heads) *
                     static_cast<size_t>(c.seq_length) * static_cast<size_t>(c.seq_length);
  const size_t e = dtype_size(c.dtype);
  return Arena::aligned(n * h * e) * 3 + Arena::aligned(n * f * e) * 2 +
         Arena::aligned(n * 3 * hl * e) + Arena::aligned(att * e);
}

LayerScratch LayerScratch::carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const int64_t n = int64_t{micro_batch} * c.seq_length, h = c.hidden, hl = t.hidden, f = t.ffn;
  const int64_t att = int64_t{micro_batch} * t.heads * c.seq_length * c.seq_length;
  LayerScratch s;
  s.ln = carve_typed(arena, n * h, c.dtype);
  s.ff = carve_typed(arena, n * f, c.dtype);
  s.d_a = carve_typed(arena, n * h, c.dtype);
  s.d_b = carve_typed(arena, n * h, c.dtype);
  s.d_ff = carve_typed(arena, n * f, c.dtype);
  s.d_qkv = carve_typed(arena, n * 3 * hl, c.dtype);
  s.d_att = carve_typed(arena, att, c.dtype);
  return s;
}

namespace {

// Attention over this rank's heads. At tp = 1 one call over the batch (the mask counters are the
// flat index into [B, H, T, T]). With tp > 1 one call per sample, each with the counter offset
// of its global heads (tp::head_slice), so every element draws the mask tp = 1 draws for it.
// `scratch` [B, H, T, T]: workspace the backend may use for the dropped probabilities.
void attention_forward(const LayerDims& d, Ref out, Ref att, Ref scratch, CRef qkv,
                       const DropoutParams& drop) {
  if (!tp::active(d.tp)) {
    d.be->attention_forward(out, att, scratch, qkv, d.B, d.T, d.Cl, d.H, drop);
    return;
  }
  const int64_t tt = int64_t{d.T} * d.T;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_forward(out + int64_t{b} * d.T * d.Cl, att + b * d.H * tt,
                            scratch + b * d.H * tt, qkv + int64_t{b} * d.T * 3 * d.Cl, 1, d.T, d.Cl,
                            d.H, tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

void attention_backward(const LayerDims& d, Ref dqkv, Ref scratch, CRef dout, CRef qkv, CRef att,
                        const DropoutParams& drop) {
  if (!tp::active(d.tp)) {
    d.be->attention_backward(dqkv, scratch, dout, qkv, att, d.B, d.T, d.Cl, d.H, drop);
    return;
  }
  const int64_t tt = int64_t{d.T} * d.T, q = int64_t{d.T} * 3 * d.Cl;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_backward(dqkv + b * q, scratch + b * d.H * tt, dout + int64_t{b} * d.T * d.Cl,
                             qkv + b * q, att + b * d.H * tt, 1, d.T, d.Cl, d.H,
                             tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

}  // namespace

void layer_forward(const LayerDims& d, const LayerParams& p, CRef x, LayerActivations& a,
                   const LayerScratch& s, const LayerDropout& drop) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C, nf = int64_t{N} * d.F;
  be.layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, p.ln1_w, p.ln1_b, N, C);
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  tp::column_parallel_forward(be, a.qkv, s.ln, p.qkv_w, p.qkv_b, N, C, 3 * d.Cl);
  // The attention-gradient scratch is free during forward, like d_a below.
  attention_forward(d, a.atty, a.att, s.d_att, a.qkv, drop.attention);
  const Ref proj = s.d_a;  // backward scratch is free during forward
  tp::row_parallel_forward(be, d.tp, proj, a.atty, p.proj_w, p.proj_b, N, d.Cl, C);
  be.dropout_add_forward(a.res2, x, proj, nc, drop.attn_out);
  be.layernorm_forward(s.ln, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2_w, p.ln2_b, N, C);
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  tp::column_parallel_forward(be, a.fch, s.ln, p.fc_w, p.fc_b, N, C, d.F);
  be.gelu_forward(s.ff, a.fch, nf);
  tp::row_parallel_forward(be, d.tp, proj, s.ff, p.fcproj_w, p.fcproj_b, N, d.F, C);
  be.dropout_add_forward(a.out, a.res2, proj, nc, drop.mlp_out);
}

void layer_backward(const LayerDims& d, const LayerParams& p, const LayerGrads& g, CRef x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    Ref dres) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C, nf = int64_t{N} * d.F;
  // MLP branch: out = res2 + drop(fcproj(gelu(fc(ln2(res2)))))
  be.dropout_backward(s.d_a, dres, nc, drop.mlp_out);
  be.gelu_forward(s.ff, a.fch, nf);
  tp::row_parallel_backward(be, s.d_ff, g.fcproj_w, g.fcproj_b, s.d_a, s.ff, p.fcproj_w, N, d.F, C);
  be.gelu_backward(s.d_ff, a.fch, s.d_ff, nf);
  // The layernorm is recomputed from the kept mean and rstd: the same bits as in forward.
  be.layernorm_forward(s.ln, a.ln2_mean, a.ln2_rstd, a.res2, p.ln2_w, p.ln2_b, N, C);
  // copy-to-TP backward: the all-reduce of d(ln2 out) comes before the (replicated) layernorm
  // backward, so its gradients are identical on every rank.
  tp::column_parallel_backward(be, d.tp, s.d_b, g.fc_w, g.fc_b, s.d_ff, s.ln, p.fc_w, N, C, d.F);
  be.layernorm_backward(dres, g.ln2_w, g.ln2_b, s.d_b, a.res2, p.ln2_w, a.ln2_mean, a.ln2_rstd, N,
                        C);
  // Attention branch: res2 = x + drop(proj(attn(ln1(x))))
  be.dropout_backward(s.d_a, dres, nc, drop.attn_out);
  tp::row_parallel_backward(be, s.d_b, g.proj_w, g.proj_b, s.d_a, a.atty, p.proj_w, N, d.Cl, C);
  attention_backward(d, s.d_qkv, s.d_att, s.d_b, a.qkv, a.att, drop.attention);
  be.layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, p.ln1_w, p.ln1_b, N, C);
  tp::column_parallel_backward(be, d.tp, s.d_a, g.qkv_w, g.qkv_b, s.d_qkv, s.ln, p.qkv_w, N, C,
                               3 * d.Cl);
  be.layernorm_backward(dres, g.ln1_w, g.ln1_b, s.d_a, x, p.ln1_w, a.ln1_mean, a.ln1_rstd, N, C);
}

}  // namespace zt
