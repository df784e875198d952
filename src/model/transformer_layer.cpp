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

LayerRefs LayerRefs::of(const ParamLayout& layout, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  auto ref = [&](const char* name) { return ParamRef::of(layout, p + name); };
  auto linear = [&](const char* w, const char* b) {
    const ParamRef wr = ref(w);
    return LinearRefs{wr, ref(b), static_cast<int>(wr.row_len), static_cast<int>(wr.rows)};
  };
  return LayerRefs{ref("ln1.weight"),
                   ref("ln1.bias"),
                   ref("ln2.weight"),
                   ref("ln2.bias"),
                   linear("attn.qkv.weight", "attn.qkv.bias"),
                   linear("attn.proj.weight", "attn.proj.bias"),
                   linear("mlp.fc.weight", "mlp.fc.bias"),
                   linear("mlp.proj.weight", "mlp.proj.bias")};
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
  const size_t rows = static_cast<size_t>(micro_batch) * static_cast<size_t>(t.heads) *
                      static_cast<size_t>(c.seq_length);
  const size_t e = dtype_size(c.dtype);
  return Arena::aligned(n * h * e) * 3 + Arena::aligned(n * f * e) * 2 +
         Arena::aligned(n * 3 * hl * e) + Arena::aligned(rows * sizeof(float)) +
         Arena::aligned(n * e);
}

LayerScratch LayerScratch::carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const int64_t n = int64_t{micro_batch} * c.seq_length, h = c.hidden, hl = t.hidden, f = t.ffn;
  const int64_t rows = int64_t{micro_batch} * t.heads * c.seq_length;
  LayerScratch s;
  s.ln = carve_typed(arena, n * h, c.dtype);
  s.ff = carve_typed(arena, n * f, c.dtype);
  s.d_a = carve_typed(arena, n * h, c.dtype);
  s.d_b = carve_typed(arena, n * h, c.dtype);
  s.d_ff = carve_typed(arena, n * f, c.dtype);
  s.d_qkv = carve_typed(arena, n * 3 * hl, c.dtype);
  s.delta = arena.carve({rows}, DType::F32).f32();
  s.ones = carve_typed(arena, n, c.dtype);
  return s;
}

namespace {

// Attention over this rank's heads. At tp = 1 one call over the batch (the mask counters are the
// flat index into [B, H, T, T]). With tp > 1 one call per sample, each with the counter offset
// of its global heads (tp::head_slice), so every element draws the mask tp = 1 draws for it.
// lse and delta are [B, H, T] fp32.
void attention_forward(const LayerDims& d, Ref out, float* lse, CRef qkv,
                       const DropoutParams& drop) {
  if (!tp::active(d.tp)) {
    d.be->attention_forward(out, lse, qkv, d.B, d.T, d.Cl, d.H, drop);
    return;
  }
  const int64_t rows = int64_t{d.H} * d.T;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_forward(out + int64_t{b} * d.T * d.Cl, lse + b * rows,
                            qkv + int64_t{b} * d.T * 3 * d.Cl, 1, d.T, d.Cl, d.H,
                            tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

void attention_backward(const LayerDims& d, Ref dqkv, float* delta, CRef dout, CRef qkv, CRef out,
                        const float* lse, const DropoutParams& drop) {
  if (!tp::active(d.tp)) {
    d.be->attention_backward(dqkv, delta, dout, qkv, out, lse, d.B, d.T, d.Cl, d.H, drop);
    return;
  }
  const int64_t rows = int64_t{d.H} * d.T, q = int64_t{d.T} * 3 * d.Cl, o = int64_t{d.T} * d.Cl;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_backward(dqkv + b * q, delta + b * rows, dout + b * o, qkv + b * q, out + b * o,
                             lse + b * rows, 1, d.T, d.Cl, d.H,
                             tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

// Row-parallel forward: at tp = 1 the bias is fused into the GEMM; with tp it is added once,
// after the partial products are summed (added on every rank before, it would count tp times).
void row_parallel_forward(const LayerDims& d, ParamSource& src, const LinearRefs& l, Ref y,
                          CRef x) {
  if (!tp::active(d.tp)) {
    chunked_linear_forward(*d.be, src, l, y, x, d.N(), true);
    return;
  }
  chunked_linear_forward(*d.be, src, l, y, x, d.N(), false);
  tp::reduce_from_tp_forward(*d.be, d.tp, y, int64_t{d.N()} * l.out);
  chunked_add_bias(*d.be, src, l, y, d.N());
}

}  // namespace

void layer_forward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                   LayerActivations& a, const LayerScratch& s, const LayerDropout& drop) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C;
  {
    const Held w(src, p.ln1_w), b(src, p.ln1_b);
    be.layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, w.get(), b.get(), N, C);
  }
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  chunked_linear_forward(be, src, p.qkv, a.qkv, s.ln, N, true);
  attention_forward(d, a.atty, a.lse, a.qkv, drop.attention);
  const Ref proj = s.d_a;  // backward scratch is free during forward
  row_parallel_forward(d, src, p.proj, proj, a.atty);
  {
    // res2 = x + drop(proj) and ln2(res2) in one pass (bitwise the two ops on the CPU).
    const Held w(src, p.ln2_w), b(src, p.ln2_b);
    be.dropout_add_layernorm_forward(a.res2, s.ln, a.ln2_mean, a.ln2_rstd, x, proj, w.get(),
                                     b.get(), N, C, drop.attn_out);
  }
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  chunked_linear_gelu_forward(be, src, p.fc, s.ff, a.fch, s.ln, N);
  row_parallel_forward(d, src, p.fcproj, proj, s.ff);
  be.dropout_add_forward(a.out, a.res2, proj, nc, drop.mlp_out);
}

void layer_backward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    Ref dres) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C;
  const int64_t nc = int64_t{N} * C, nf = int64_t{N} * d.F;
  // MLP branch: out = res2 + drop(fcproj(gelu(fc(ln2(res2)))))
  be.dropout_backward(s.d_a, dres, nc, drop.mlp_out);
  be.gelu_forward(s.ff, a.fch, nf);
  chunked_linear_backward_input_gelu(be, src, p.fcproj, s.d_ff, s.d_a, a.fch, N);
  chunked_linear_backward_params(be, src, p.fcproj, s.d_a, s.ff, s.ones, N);
  // copy-to-TP backward: the all-reduce of d(ln2 out) comes before the (replicated) layernorm
  // backward, so its gradients are identical on every rank.
  chunked_linear_backward_input(be, src, p.fc, s.d_b, s.d_ff, N);
  tp::copy_to_tp_backward(be, d.tp, s.d_b, nc);
  {
    // The layernorm is recomputed from the kept mean and rstd: the same bits as in forward. It is
    // held from here to its backward, so backward reaches the parameters from the last to the
    // first (bias before weight), each partition unit in one run.
    const Held b(src, p.ln2_b), w(src, p.ln2_w);
    be.layernorm_forward(s.ln, a.ln2_mean, a.ln2_rstd, a.res2, w.get(), b.get(), N, C);
    chunked_linear_backward_params(be, src, p.fc, s.d_ff, s.ln, s.ones, N);
    const GradSpan gb(src, p.ln2_b), gw(src, p.ln2_w);
    be.layernorm_backward(dres, gw.get(), gb.get(), s.d_b, a.res2, w.get(), a.ln2_mean, a.ln2_rstd,
                          N, C);
  }
  // Attention branch: res2 = x + drop(proj(attn(ln1(x))))
  be.dropout_backward(s.d_a, dres, nc, drop.attn_out);
  chunked_linear_backward_input(be, src, p.proj, s.d_b, s.d_a, N);
  chunked_linear_backward_params(be, src, p.proj, s.d_a, a.atty, s.ones, N);
  attention_backward(d, s.d_qkv, s.delta, s.d_b, a.qkv, a.atty, a.lse, drop.attention);
  chunked_linear_backward_input(be, src, p.qkv, s.d_a, s.d_qkv, N);
  tp::copy_to_tp_backward(be, d.tp, s.d_a, nc);
  {
    const Held b(src, p.ln1_b), w(src, p.ln1_w);
    be.layernorm_forward(s.ln, a.ln1_mean, a.ln1_rstd, x, w.get(), b.get(), N, C);
    chunked_linear_backward_params(be, src, p.qkv, s.d_qkv, s.ln, s.ones, N);
    const GradSpan gb(src, p.ln1_b), gw(src, p.ln1_w);
    be.layernorm_backward(dres, gw.get(), gb.get(), s.d_a, x, w.get(), a.ln1_mean, a.ln1_rstd, N,
                          C);
  }
}

}  // namespace zt
