#include "src/model/transformer_layer.h"

#include "src/model/context_attention.h"
#include "src/model/context_ring.h"
#include "src/model/moe_mlp.h"

#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/rng_tracker.h"
#include "src/tensor_parallel/sequence_parallel.h"

namespace zt {
namespace {

Ref carve_typed(Arena& arena, int64_t n, DType t) {
  return {arena.carve({n}, t).data(), t};
}

// Ring attention's buffers (context_ring.h) in the scratch attention leaves free, forward and
// backward: the MLP's, d_a and the layernorm output rows. Each buffer takes the first region with
// room left, in the order below; one that fits in none is carved. bytes() and carve() walk the
// same placement, so the planner's arena is the one carved.
struct RingFit {
  static constexpr int kBuffers = 5;  // kv ×2, the fp32 accumulator, dkv ×2
  size_t want[kBuffers] = {};
  int region[kBuffers] = {};  // -1: carved
  size_t offset[kBuffers] = {};
  size_t carved = 0;  // bytes carved

  RingFit(const GptConfig& c, int micro_batch, int tp_size) {
    const TpDims t = TpDims::of(c, tp_size, 0);
    const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.local_seq());
    const size_t e = dtype_size(c.dtype), kv = 2 * static_cast<size_t>(t.kv_hidden);
    const size_t h = static_cast<size_t>(c.hidden), f = static_cast<size_t>(t.ffn);
    const size_t f1 = c.swiglu ? 2 * f : f;
    const size_t sizes[kBuffers] = {n * kv * e, n * kv * e, n * static_cast<size_t>(t.hidden) * 4,
                                    n * kv * 4, n * kv * 4};
    const size_t room[] = {n * f1 * e, n * f * e, n * h * e, n * h * e};
    size_t used[std::size(room)] = {};
    for (int b = 0; b < kBuffers; ++b) {
      want[b] = Arena::aligned(sizes[b]);
      region[b] = -1;
      for (size_t r = 0; r < std::size(room); ++r)
        if (used[r] + want[b] <= room[r]) {
          region[b] = static_cast<int>(r);
          offset[b] = used[r];
          used[r] += want[b];
          break;
        }
      if (region[b] < 0) carved += want[b];
    }
  }
};

}  // namespace

LayerRefs LayerRefs::of(const ParamLayout& layout, int layer) {
  const std::string p = "layers." + std::to_string(layer) + ".";
  auto ref = [&](const char* name) { return ParamRef::of(layout, p + name); };
  auto maybe = [&](const char* name) { return ParamRef::maybe(layout, p + name); };
  auto linear = [&](const char* w, const char* b) {
    const ParamRef wr = ref(w);
    return LinearRefs{wr, maybe(b), static_cast<int>(wr.row_len), static_cast<int>(wr.rows)};
  };
  LayerRefs r{ref("ln1.weight"),
              maybe("ln1.bias"),
              ref("ln2.weight"),
              maybe("ln2.bias"),
              linear("attn.qkv.weight", "attn.qkv.bias"),
              linear("attn.proj.weight", "attn.proj.bias"),
              {},
              {},
              MoeRefs::of(layout, p)};
  if (!r.moe.present()) {
    r.fc = linear("mlp.fc.weight", "mlp.fc.bias");
    r.fcproj = linear("mlp.proj.weight", "mlp.proj.bias");
  }
  return r;
}

LayerDims LayerDims::of(const GptConfig& c, int micro_batch, int tp_size, int tp_rank,
                        comm::Communicator* tp, Backend& be, comm::Communicator* cp) {
  const TpDims t = TpDims::of(c, tp_size, tp_rank);
  LayerDims d{micro_batch, c.local_seq(), c.hidden,          t.heads, t.hidden,
              t.ffn,       c.heads,       t.heads * tp_rank, tp,      &be};
  const int64_t n = int64_t{micro_batch} * c.local_seq();
  d.sequence_parallel = splits_sequence(c, tp_size);
  d.Nl = static_cast<int>(local_rows(c, n, tp_size));
  d.first_row = d.sequence_parallel ? int64_t{d.Nl} * tp_rank : 0;
  d.KV = t.kv_heads;
  d.Ckv = t.kv_hidden;
  d.rope = c.rope();
  if (d.rope) d.rope_table = c.rope_table();
  d.rmsnorm = c.rmsnorm();
  d.norm_eps = c.norm_epsilon;
  d.swiglu = c.swiglu;
  d.cp = ContextSplit::of(c, cp);
  if (c.moe()) {
    d.moe = {c.num_experts, c.moe_topk, c.moe_sigmoid, c.moe_renormalize};
    d.moe_ffn = t.moe_ffn;
    d.moe_shared = t.moe_shared;
    d.moe_shared_gate = c.moe_shared_gate;
    d.moe_aux_coeff = c.moe_aux_loss_coeff;
    d.moe_capacity = c.moe_capacity_factor;
  }
  return d;
}

void copy_rows(const LayerDims& d, Ref dst, int64_t dst_ld, CRef src, int64_t src_ld, int64_t w,
               int64_t rows) {
  d.be->copy_2d(dst.p, dst.bytes(dst_ld), src.p, src.bytes(src_ld), src.bytes(w),
                static_cast<size_t>(rows));
}

size_t LayerScratch::bytes(const GptConfig& c, int micro_batch, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.local_seq());
  const size_t h = static_cast<size_t>(c.hidden);
  const size_t qkv = static_cast<size_t>(t.hidden) + 2 * static_cast<size_t>(t.kv_hidden);
  const size_t f = static_cast<size_t>(t.ffn), f1 = c.swiglu ? 2 * f : f;
  const size_t rows = static_cast<size_t>(micro_batch) * static_cast<size_t>(t.heads) *
                      static_cast<size_t>(c.local_seq());
  const size_t e = dtype_size(c.dtype);
  // Context parallelism's buffers: the all-to-all's in the MLP's scratch where it is wide enough,
  // the ring's as RingFit places them.
  const auto a2a = static_cast<size_t>(context_qkv_width(c, tp_size));
  size_t cp = 0;
  if (c.context_parallel > 1 && c.context_comm == ContextComm::AllToAll)
    cp = (f1 < a2a ? Arena::aligned(n * a2a * e) : 0) + (f < a2a ? Arena::aligned(n * a2a * e) : 0);
  if (c.context_parallel > 1 && c.context_comm == ContextComm::Ring)
    cp = RingFit(c, micro_batch, tp_size).carved;
  return moe_scratch_bytes(c, micro_batch, tp_size) + Arena::aligned(n * h * e) * 3 +
         Arena::aligned(n * f * e) + Arena::aligned(n * f1 * e) +
         (c.swiglu ? Arena::aligned(n * f * e) : 0) + Arena::aligned(n * qkv * e) +
         Arena::aligned(rows * sizeof(float)) + Arena::aligned(n * e) +
         (splits_sequence(c, tp_size) ? Arena::aligned(2 * h * 4) : 0) + cp;
}

LayerScratch LayerScratch::carve(Arena& arena, const GptConfig& c, int micro_batch, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const int64_t n = int64_t{micro_batch} * c.local_seq(), h = c.hidden, f = t.ffn;
  const int64_t qkv = int64_t{t.hidden} + 2 * int64_t{t.kv_hidden}, f1 = c.swiglu ? 2 * f : f;
  const int64_t rows = int64_t{micro_batch} * t.heads * c.local_seq();
  LayerScratch s;
  s.ln = carve_typed(arena, n * h, c.dtype);
  s.ff = carve_typed(arena, n * f, c.dtype);
  s.d_a = carve_typed(arena, n * h, c.dtype);
  s.d_b = carve_typed(arena, n * h, c.dtype);
  s.d_ff = carve_typed(arena, n * f1, c.dtype);
  if (c.swiglu) s.d_sw = carve_typed(arena, n * f, c.dtype);
  s.d_qkv = carve_typed(arena, n * qkv, c.dtype);
  s.delta = arena.carve({rows}, DType::F32).f32();
  s.ones = carve_typed(arena, n, c.dtype);
  if (splits_sequence(c, tp_size)) s.ln_grads = arena.carve({2 * h}, DType::F32).f32();
  carve_moe_scratch(arena, s, c, micro_batch, tp_size);
  if (c.context_parallel > 1 && c.context_comm == ContextComm::Ring) {
    const RingFit fit(c, micro_batch, tp_size);
    void* at[RingFit::kBuffers] = {};
    unsigned char* room[] = {
        static_cast<unsigned char*>(s.d_ff.p), static_cast<unsigned char*>(s.ff.p),
        static_cast<unsigned char*>(s.d_a.p), static_cast<unsigned char*>(s.ln.p)};
    for (int b = 0; b < RingFit::kBuffers; ++b)
      at[b] = fit.region[b] >= 0
                  ? static_cast<void*>(room[fit.region[b]] + fit.offset[b])
                  : arena.carve({static_cast<int64_t>(fit.want[b] / 4)}, DType::F32).data();
    s.ring_kv[0] = {at[0], c.dtype};
    s.ring_kv[1] = {at[1], c.dtype};
    s.ring_acc = static_cast<float*>(at[2]);
    s.ring_dkv[0] = static_cast<float*>(at[3]);
    s.ring_dkv[1] = static_cast<float*>(at[4]);
  } else if (c.context_parallel > 1) {
    // Free while attention runs, forward and backward (context_attention.h): the MLP's scratch
    // and the layernorm output and input-gradient rows ([N, C], C >= Cl).
    const int64_t a2a = context_qkv_width(c, tp_size);
    s.cp_send = f1 >= a2a ? s.d_ff : carve_typed(arena, n * a2a, c.dtype);
    s.cp_recv = f >= a2a ? s.ff : carve_typed(arena, n * a2a, c.dtype);
    s.cp_out = s.d_a;
    s.cp_dout = s.ln;
  }
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
    d.be->attention_forward(out, lse, qkv, d.B, d.T, d.Cl, d.H, d.KV, drop);
    return;
  }
  const int64_t rows = int64_t{d.H} * d.T;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_forward(out + int64_t{b} * d.T * d.Cl, lse + b * rows,
                            qkv + int64_t{b} * d.T * d.qkv_width(), 1, d.T, d.Cl, d.H, d.KV,
                            tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

void attention_backward(const LayerDims& d, Ref dqkv, float* delta, CRef dout, CRef qkv, CRef out,
                        const float* lse, const DropoutParams& drop) {
  if (!tp::active(d.tp)) {
    d.be->attention_backward(dqkv, delta, dout, qkv, out, lse, d.B, d.T, d.Cl, d.H, d.KV, drop);
    return;
  }
  const int64_t rows = int64_t{d.H} * d.T, q = int64_t{d.T} * d.qkv_width();
  const int64_t o = int64_t{d.T} * d.Cl;
  for (int b = 0; b < d.B; ++b)
    d.be->attention_backward(dqkv + b * q, delta + b * rows, dout + b * o, qkv + b * q, out + b * o,
                             lse + b * rows, 1, d.T, d.Cl, d.H, d.KV,
                             tp::head_slice(drop, b, d.heads_total, d.head_begin, d.T));
}

// Calls fn(offset, n, drop) over this rank's Nl rows of the residual stream, `drop` the mask of
// rows [offset, offset + n): the mask `whole` of the micro-batch's [B, seq, C] tensor, from each
// run's place in it (context_split.h). One call where the rows are one run of the mask (no
// context parallelism, or no dropout).
template <typename F>
void for_each_mask_run(const LayerDims& d, const DropoutParams& whole, F&& fn) {
  const auto C = static_cast<uint64_t>(d.C);
  auto at = [&](int64_t whole_row) {
    DropoutParams p = whole;
    p.offset += static_cast<uint64_t>(whole_row) * C;
    return p;
  };
  if (!d.cp.active() || whole.p == 0.0f) {
    fn(int64_t{0}, int64_t{d.Nl}, at(d.first_row));
    return;
  }
  for_each_run(d.cp, d.first_row, d.Nl,
               [&](int64_t offset, int64_t n, int64_t whole_row) { fn(offset, n, at(whole_row)); });
}

// out = a + dropout(x) over this rank's Nl rows.
void residual_dropout_add(const LayerDims& d, Ref out, CRef a, CRef x, const DropoutParams& drop) {
  const int64_t C = d.C;
  for_each_mask_run(d, drop, [&](int64_t o, int64_t n, const DropoutParams& m) {
    d.be->dropout_add_forward(out + o * C, a + o * C, x + o * C, n * C, m);
  });
}

// dx = dropout's backward of dout over this rank's Nl rows.
void residual_dropout_backward(const LayerDims& d, Ref dx, CRef dout, const DropoutParams& drop) {
  const int64_t C = d.C;
  for_each_mask_run(d, drop, [&](int64_t o, int64_t n, const DropoutParams& m) {
    d.be->dropout_backward(dx + o * C, dout + o * C, n * C, m);
  });
}

// This rank's rows of a full [N, C] buffer.
Ref own_rows(const LayerDims& d, Ref full) {
  return full + d.first_row * d.C;
}

// Into a tensor-parallel region: `full` [N, C] holds this rank's rows (at own_rows()) and receives
// the others' (sequence parallelism: all-gather); without it every rank already holds all rows
// (copy-to-TP forward is the identity).
void gather_rows(const LayerDims& d, Ref full) {
  if (d.sequence_parallel)
    tp::sequence_gather_forward(*d.be, d.tp, full, own_rows(d, full), d.N(), d.C);
}

// The input gradient of a column-parallel layer, [N, C] partial sums per rank, summed over tp:
// this rank's rows into `local` (sequence parallelism: reduce-scatter), else all of them in
// place. Returns where the summed rows are.
Ref sum_input_grad(const LayerDims& d, Ref partial, Ref local) {
  if (!d.sequence_parallel) {
    tp::copy_to_tp_backward(*d.be, d.tp, partial, int64_t{d.N()} * d.C);
    return partial;
  }
  tp::sequence_gather_backward(*d.be, d.tp, local, partial, d.N(), d.C);
  return local;
}

// Row-parallel forward into `y` [N, C]: at tp = 1 the bias is fused into the GEMM; with tp it is
// added once, after the partial products are summed (added on every rank before, it would count
// tp times). With sequence parallelism the sum is a reduce-scatter into `local` [Nl, C] and the
// bias goes onto those rows. Returns where this rank's summed rows are.
Ref row_parallel_forward(const LayerDims& d, ParamSource& src, const LinearRefs& l, Ref y, CRef x,
                         Ref local) {
  if (!tp::active(d.tp)) {
    chunked_linear_forward(*d.be, src, l, y, x, d.N(), true);
    return y;
  }
  chunked_linear_forward(*d.be, src, l, y, x, d.N(), false);
  if (!d.sequence_parallel) {
    tp::reduce_from_tp_forward(*d.be, d.tp, y, int64_t{d.N()} * l.out);
    if (l.has_bias()) chunked_add_bias(*d.be, src, l, y, d.N());
    return y;
  }
  tp::sequence_reduce_scatter_forward(*d.be, d.tp, local, y, d.N(), l.out);
  if (l.has_bias()) chunked_add_bias(*d.be, src, l, local, d.Nl);
  return local;
}

// The MLP's first product and its activation: fch = ln·W1ᵀ (+ b1), then y = gelu(fch), or under
// SwiGLU y = silu(gate) * up of fch's two halves.
void mlp_in_forward(const LayerDims& d, ParamSource& src, const LinearRefs& fc, Ref y, Ref fch,
                    CRef x) {
  if (!d.swiglu) {
    chunked_linear_gelu_forward(*d.be, src, fc, y, fch, x, d.N());
    return;
  }
  chunked_linear_forward(*d.be, src, fc, fch, x, d.N(), true);
  d.be->swiglu_forward(y, fch, d.N(), d.F);
}

}  // namespace

HeldNorm::HeldNorm(ParamSource& src, const ParamRef& w, const ParamRef& b, bool backward) {
  const ParamRef& a = backward && b.present() ? b : w;
  const ParamRef& z = backward && b.present() ? w : b;
  first_.emplace(src, a);
  if (z.present()) second_.emplace(src, z);
  w_ = &w == &a ? &*first_ : &*second_;
  if (b.present()) b_ = &b == &a ? &*first_ : &*second_;
}

void norm_forward(const LayerDims& d, Ref out, float* mean, float* rstd, CRef x, CRef w, CRef b,
                  int rows) {
  if (d.rmsnorm)
    d.be->rmsnorm_forward(out, rstd, x, w, rows, d.C, d.norm_eps);
  else
    d.be->layernorm_forward(out, mean, rstd, x, w, b, rows, d.C);
}

// The backward of a layernorm over this rank's rows. Under sequence parallelism the parameter
// gradients of these rows are a partial sum: they are made in scratch, summed over tp, then
// added to the gradients (the same on every rank, as the replicated parameters need).
void residual_layernorm_backward(const LayerDims& d, ParamSource& src, const ParamRef& w_ref,
                                 const ParamRef& b_ref, CRef w, Ref dx, CRef dout, CRef x,
                                 const float* mean, const float* rstd, const LayerScratch& s) {
  Backend& be = *d.be;
  if (d.rmsnorm) {
    if (!d.sequence_parallel) {
      const GradSpan gw(src, w_ref);
      be.rmsnorm_backward(dx, gw.get(), dout, x, w, rstd, d.Nl, d.C);
      return;
    }
    float* dw = s.ln_grads;
    be.fill_zero(dw, static_cast<size_t>(d.C) * 4);
    be.rmsnorm_backward(dx, dw, dout, x, w, rstd, d.Nl, d.C);
    tp::all_reduce(be, d.tp, Ref(dw, DType::F32), d.C);
    const GradSpan gw(src, w_ref);
    be.add_inplace(gw.get(), dw, d.C);
    return;
  }
  if (!d.sequence_parallel) {
    const GradSpan gb(src, b_ref), gw(src, w_ref);
    be.layernorm_backward(dx, gw.get(), gb.get(), dout, x, w, mean, rstd, d.Nl, d.C);
    return;
  }
  float* dw = s.ln_grads;
  float* db = s.ln_grads + d.C;
  be.fill_zero(dw, size_t{2} * static_cast<size_t>(d.C) * 4);
  be.layernorm_backward(dx, dw, db, dout, x, w, mean, rstd, d.Nl, d.C);
  tp::all_reduce(be, d.tp, Ref(dw, DType::F32), 2 * int64_t{d.C});
  const GradSpan gb(src, b_ref), gw(src, w_ref);
  be.add_inplace(gb.get(), db, d.C);
  be.add_inplace(gw.get(), dw, d.C);
}

void layer_forward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                   LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                   int layer) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C, Nl = d.Nl;
  const int64_t nc = int64_t{N} * C;
  {
    const HeldNorm n(src, p.ln1_w, p.ln1_b, false);
    norm_forward(d, own_rows(d, s.ln), a.ln1_mean, a.ln1_rstd, x, n.w(), n.b(), Nl);
  }
  gather_rows(d, s.ln);
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  if (d.cp.active() && d.cp.comm == ContextComm::Ring) {
    chunked_linear_forward(be, src, p.qkv, a.qkv, s.ln, N, true);
    ring_attention_forward(d, s, a.qkv, a.lse, a.atty, drop.attention);
  } else if (d.cp.active()) {
    // The projection's output is this rank's tokens; a.qkv keeps the head-split whole sequences.
    chunked_linear_forward(be, src, p.qkv, s.d_qkv, s.ln, N, true);
    context_attention_forward(d, s, s.d_qkv, a.qkv, a.lse, a.atty, drop.attention);
  } else {
    chunked_linear_forward(be, src, p.qkv, a.qkv, s.ln, N, true);
    // Rotary embeddings on q and k, kept rotated: attention's backward reads them as they were.
    if (d.rope) be.rope_forward(a.qkv, d.B, d.T, d.H, d.KV, d.head_dim(), d.rope_table);
    attention_forward(d, a.atty, a.lse, a.qkv, drop.attention);
  }
  // Backward scratch is free during forward.
  Ref proj = row_parallel_forward(d, src, p.proj, s.d_a, a.atty, s.d_b);
  {
    const HeldNorm n(src, p.ln2_w, p.ln2_b, false);
    if (d.rmsnorm) {
      residual_dropout_add(d, a.res2, x, proj, drop.attn_out);
      norm_forward(d, own_rows(d, s.ln), a.ln2_mean, a.ln2_rstd, a.res2, n.w(), n.b(), Nl);
    } else {
      // res2 = x + drop(proj) and ln2(res2) in one pass (bitwise the two ops on the CPU).
      const Ref ln = own_rows(d, s.ln);
      for_each_mask_run(d, drop.attn_out, [&](int64_t o, int64_t r, const DropoutParams& m) {
        be.dropout_add_layernorm_forward(a.res2 + o * C, ln + o * C, a.ln2_mean + o, a.ln2_rstd + o,
                                         x + o * C, CRef(proj) + o * C, n.w(), n.b(),
                                         static_cast<int>(r), C, m);
      });
    }
  }
  gather_rows(d, s.ln);
  tp::copy_to_tp_forward(be, d.tp, s.ln, nc);
  if (p.moe.present()) {
    proj = moe_forward(d, src, p.moe, a, s, s.ln, s.d_a, s.d_b, layer);
  } else {
    mlp_in_forward(d, src, p.fc, s.ff, a.fch, s.ln);
    proj = row_parallel_forward(d, src, p.fcproj, s.d_a, s.ff, s.d_b);
  }
  residual_dropout_add(d, a.out, a.res2, proj, drop.mlp_out);
}

void layer_backward(const LayerDims& d, ParamSource& src, const LayerRefs& p, CRef x,
                    const LayerActivations& a, const LayerScratch& s, const LayerDropout& drop,
                    Ref dres) {
  Backend& be = *d.be;
  const int N = d.N(), Nl = d.Nl;
  const int64_t nf = int64_t{N} * d.F;
  // MLP branch: out = res2 + drop(fcproj(act(fc(ln2(res2))))). The row-parallel layer's output
  // gradient: this rank's rows, all-gathered under sequence parallelism.
  residual_dropout_backward(d, own_rows(d, s.d_a), dres, drop.mlp_out);
  gather_rows(d, s.d_a);
  const bool moe = p.moe.present();
  if (moe) {
    moe_backward_input(d, src, p.moe, a, s, s.d_a, s.d_b);
  } else {
    if (d.swiglu) {
      be.swiglu_forward(s.ff, a.fch, N, d.F);
      chunked_linear_backward_input(be, src, p.fcproj, s.d_sw, s.d_a, N);
      be.swiglu_backward(s.d_ff, s.d_sw, a.fch, N, d.F);
    } else {
      be.gelu_forward(s.ff, a.fch, nf);
      chunked_linear_backward_input_gelu(be, src, p.fcproj, s.d_ff, s.d_a, a.fch, N);
    }
    chunked_linear_backward_params(be, src, p.fcproj, s.d_a, s.ff, s.ones, N);
    chunked_linear_backward_input(be, src, p.fc, s.d_b, s.d_ff, N);
  }
  // copy-to-TP backward: the all-reduce of d(ln2 out) (a reduce-scatter to this rank's rows under
  // sequence parallelism) comes before the layernorm backward, so its input gradient is
  // identical on every rank. The router's part, replicated, is added to the sum.
  const Ref dln2 = sum_input_grad(d, s.d_b, s.d_a);
  if (moe) moe_router_input_grad(d, src, p.moe, s, dln2);
  {
    // The layernorm is recomputed from the kept mean and rstd: the same bits as in forward. It is
    // held from here to its backward, so backward reaches the parameters from the last to the
    // first (bias before weight), each partition unit in one run.
    const HeldNorm n(src, p.ln2_w, p.ln2_b, true);
    norm_forward(d, own_rows(d, s.ln), a.ln2_mean, a.ln2_rstd, a.res2, n.w(), n.b(), Nl);
    gather_rows(d, s.ln);
    if (moe)
      moe_backward_params(d, src, p.moe, a, s, s.ln);
    else
      chunked_linear_backward_params(be, src, p.fc, s.d_ff, s.ln, s.ones, N);
    residual_layernorm_backward(d, src, p.ln2_w, p.ln2_b, n.w(), dres, dln2, a.res2, a.ln2_mean,
                                a.ln2_rstd, s);
  }
  // Attention branch: res2 = x + drop(proj(attn(ln1(x))))
  residual_dropout_backward(d, own_rows(d, s.d_a), dres, drop.attn_out);
  gather_rows(d, s.d_a);
  chunked_linear_backward_input(be, src, p.proj, s.d_b, s.d_a, N);
  chunked_linear_backward_params(be, src, p.proj, s.d_a, a.atty, s.ones, N);
  if (d.cp.active() && d.cp.comm == ContextComm::Ring) {
    ring_attention_backward(d, s, s.d_b, a.qkv, a.lse, a.atty, s.d_qkv, drop.attention);
  } else if (d.cp.active()) {
    context_attention_backward(d, s, s.d_b, a.qkv, a.lse, a.atty, s.d_qkv, drop.attention);
  } else {
    attention_backward(d, s.d_qkv, s.delta, s.d_b, a.qkv, a.atty, a.lse, drop.attention);
    if (d.rope) be.rope_backward(s.d_qkv, d.B, d.T, d.H, d.KV, d.head_dim(), d.rope_table);
  }
  chunked_linear_backward_input(be, src, p.qkv, s.d_a, s.d_qkv, N);
  const Ref dln1 = sum_input_grad(d, s.d_a, s.d_b);
  {
    const HeldNorm n(src, p.ln1_w, p.ln1_b, true);
    norm_forward(d, own_rows(d, s.ln), a.ln1_mean, a.ln1_rstd, x, n.w(), n.b(), Nl);
    gather_rows(d, s.ln);
    chunked_linear_backward_params(be, src, p.qkv, s.d_qkv, s.ln, s.ones, N);
    residual_layernorm_backward(d, src, p.ln1_w, p.ln1_b, n.w(), dres, dln1, x, a.ln1_mean,
                                a.ln1_rstd, s);
  }
}

}  // namespace zt
