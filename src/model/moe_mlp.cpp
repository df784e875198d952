#include "src/model/moe_mlp.h"

#include "src/model/moe_dispatch.h"

#include <algorithm>
#include <type_traits>

#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/sequence_parallel.h"

namespace zt {

MoeHost::MoeHost(const GptConfig& c, int64_t tokens) {
  if (!c.moe()) return;
  const auto nk = static_cast<size_t>(tokens * c.moe_topk);
  const auto E = static_cast<size_t>(c.num_experts);
  slots.reserve(tokens, c.moe_topk, c.num_experts);
  experts.assign(nk, 0);
  weights.assign(nk, 0.0f);
  scores.assign(static_cast<size_t>(tokens) * E, 0.0f);
  const auto P = static_cast<size_t>(c.expert_parallel);
  rows32.assign(P > 1 ? 2 * E : E, 0);
  rows.assign(E, 0);
  first.assign(E + 1, 0);
  picks.assign(E, 0);
  if (P > 1 || c.context_parallel > 1) counts.assign(2 * E, 0.0f);
  if (P > 1) {
    cursor.assign(E, 0);
    send_elems.assign(P, 0);
    recv_elems.assign(P, 0);
  }
  dscores.assign(E, 0.0f);
  if (c.moe_shared_ffn > 0) {
    cslots.assign(static_cast<size_t>(tokens) * (c.moe_topk + 1), 0);
    cweights.assign(cslots.size(), 0.0f);
    gate.assign(static_cast<size_t>(tokens), 0.0f);
  }
  totals.assign(static_cast<size_t>(c.num_layers), {});
}

namespace {

// One of the experts' two products, experts stacked in `w` (E·out rows of `in`, this rank's
// share of each expert's rows), over rows grouped expert by expert: rows[e] of them for expert e,
// starting at first[e].
struct ExpertProduct {
  ParamRef w;
  int in = 0, out = 0;
  const int64_t* rows = nullptr;
  const int64_t* first = nullptr;
  int64_t rows_of_expert() const { return w.expert_rows; }
};

// Calls fn(e0, ne, r0, n) for the weight's chunks, highest first when `descending`: whole
// experts [e0, e0 + ne), or (ne == 0) rows [r0, r0 + n) of expert e0's out rows.
template <typename F>
void for_each_chunk(const ParamSource& src, const ExpertProduct& x, bool descending, F&& fn) {
  const int64_t step = x.w.chunk(src), er = x.rows_of_expert();
  const int64_t last = (x.w.rows - 1) / step * step;
  for (int64_t i = 0; i <= last; i += step) {
    const int64_t r = descending ? last - i : i;
    const int64_t n = std::min(step, x.w.rows - r);
    const auto e0 = static_cast<int>(r / er);
    if (n >= er)
      fn(e0, static_cast<int>(n / er), r, n);
    else
      fn(e0, 0, r % er, n);
  }
}

// y [M, out] = x [M, in] · W_eᵀ for each expert's rows.
void experts_forward(Backend& be, ParamSource& src, const ExpertProduct& p, Ref y, CRef x) {
  for_each_chunk(src, p, false, [&](int e0, int ne, int64_t r, int64_t n) {
    const Held w(src, p.w.row_span(ne > 0 ? r : e0 * p.rows_of_expert() + r, n));
    const int64_t at = p.first[e0];
    if (ne > 0) {
      be.grouped_gemm(true, p.rows + e0, ne, p.out, p.in, 1.0f, x + at * p.in, w.get(), 0.0f,
                      y + at * p.out);
    } else if (p.rows[e0] > 0) {
      be.gemm(false, true, static_cast<int>(p.rows[e0]), static_cast<int>(n), p.in, 1.0f,
              x + at * p.in, p.in, w.get(), p.in, 0.0f, y + at * p.out + r, p.out);
    }
  });
}

// dx [M, in] = dy [M, out] · W_e for each expert's rows.
void experts_backward_input(Backend& be, ParamSource& src, const ExpertProduct& p, Ref dx,
                            CRef dy) {
  for_each_chunk(src, p, true, [&](int e0, int ne, int64_t r, int64_t n) {
    const Held w(src, p.w.row_span(ne > 0 ? r : e0 * p.rows_of_expert() + r, n));
    const int64_t at = p.first[e0];
    if (ne > 0) {
      be.grouped_gemm(false, p.rows + e0, ne, p.in, p.out, 1.0f, dy + at * p.out, w.get(), 0.0f,
                      dx + at * p.in);
    } else if (p.rows[e0] > 0) {
      // Descending: an expert's highest rows come first and start its sum.
      const float beta = r + n == p.rows_of_expert() ? 0.0f : 1.0f;
      be.gemm(false, false, static_cast<int>(p.rows[e0]), p.in, static_cast<int>(n), 1.0f,
              dy + at * p.out + r, p.out, w.get(), p.in, beta, dx + at * p.in, p.in);
    }
  });
}

// dW_e += dy_eᵀ · x_e into the source's gradient spans, highest rows first.
void experts_backward_params(Backend& be, ParamSource& src, const ExpertProduct& p, CRef dy,
                             CRef x) {
  for_each_chunk(src, p, true, [&](int e0, int ne, int64_t r, int64_t n) {
    const GradSpan g(src, p.w.row_span(ne > 0 ? r : e0 * p.rows_of_expert() + r, n));
    const int64_t at = p.first[e0];
    if (ne > 0) {
      be.grouped_gemm_wgrad(p.rows + e0, ne, p.out, p.in, 1.0f, dy + at * p.out, x + at * p.in,
                            1.0f, Ref(g.get(), DType::F32));
    } else if (p.rows[e0] > 0) {
      be.gemm(true, false, static_cast<int>(n), p.in, static_cast<int>(p.rows[e0]), 1.0f,
              dy + at * p.out + r, p.out, x + at * p.in, p.in, 1.0f, Ref(g.get(), DType::F32),
              p.in);
    }
  });
}

ExpertProduct fc_product(const LayerDims& d, const MoeRefs& p, const MoeHost& h) {
  return {p.fc, d.C, d.moe_fc_width(), h.rows.data(), h.first.data()};
}

ExpertProduct proj_product(const LayerDims& d, const MoeRefs& p, const MoeHost& h) {
  return {p.proj, d.moe_ffn, d.C, h.rows.data(), h.first.data()};
}

// y [M, width] = swiglu or gelu of pre.
void activation_forward(const LayerDims& d, Ref y, CRef pre, int64_t M, int width) {
  if (d.swiglu)
    d.be->swiglu_forward(y, pre, M, width);
  else
    d.be->gelu_forward(y, pre, M * width);
}

// An fp32 logit gradient [n] in the working precision, for its two GEMMs (itself in fp32).
CRef working_copy(const LayerDims& d, float* f32, Ref half, int64_t n) {
  switch (half.t) {
    case DType::F32:
      return {f32, DType::F32};
    case DType::BF16:
      d.be->cast(static_cast<bf16*>(half.p), f32, n);
      break;
    case DType::F16:
      d.be->cast(static_cast<fp16*>(half.p), f32, n);
      break;
  }
  return half;
}

CRef router_dlogits(const LayerScratch& s) {
  return s.moe_dlogits.t == DType::F32 ? CRef(s.moe_logits, DType::F32) : CRef(s.moe_dlogits);
}

CRef gate_dlogits(const LayerScratch& s) {
  return s.moe_gate_dlogits.t == DType::F32 ? CRef(s.moe_gate_logits, DType::F32)
                                            : CRef(s.moe_gate_dlogits);
}

// dx_local [Nl, C] += dlogits [N, width] (this rank's rows) · W [width, C], W chunked by rows.
void add_logit_input_grad(const LayerDims& d, ParamSource& src, const ParamRef& w, CRef dlogits,
                          int width, Ref dx_local) {
  const int64_t step = w.chunk(src);
  for (int64_t r = (w.rows - 1) / step * step; r >= 0; r -= step) {
    const int64_t n = std::min(step, w.rows - r);
    const Held held(src, w.row_span(r, n));
    d.be->gemm(false, false, d.Nl, d.C, static_cast<int>(n), 1.0f,
               dlogits + d.first_row * width + r, width, held.get(), d.C, 1.0f, dx_local, d.C);
  }
}

// dW [width, C] += dlogitsᵀ · x over all N rows, into the source's gradient spans.
void add_logit_weight_grad(const LayerDims& d, ParamSource& src, const ParamRef& w, CRef dlogits,
                           int width, CRef x) {
  const int64_t step = w.chunk(src);
  for (int64_t r = (w.rows - 1) / step * step; r >= 0; r -= step) {
    const int64_t n = std::min(step, w.rows - r);
    const GradSpan g(src, w.row_span(r, n));
    d.be->gemm(true, false, static_cast<int>(n), d.C, d.N(), 1.0f, dlogits + r, width, x, d.C, 1.0f,
               Ref(g.get(), DType::F32), d.C);
  }
}

LinearRefs router_linear(const LayerDims& d, const MoeRefs& p) {
  return {p.router, {}, d.C, d.moe.E};
}

// The shared expert's gate: one sigmoid score per token, no renormalisation.
constexpr MoeRouting kSharedGate{1, 1, true, false};

// The MoE scratch, one walk for bytes and carving: fn(field, elements) for each.
template <typename F>
void for_each_moe_scratch(LayerScratch& s, const GptConfig& c, int micro_batch, int tp, F&& fn) {
  if (!c.moe()) return;
  const TpDims t = TpDims::of(c, tp, 0);
  const int64_t n = int64_t{micro_batch} * c.local_seq(), h = c.hidden, E = c.num_experts;
  const int64_t k = c.moe_topk, m = n * k, fe = t.moe_ffn, fs = t.moe_shared;
  const int64_t shared = fs > 0 ? n : 0, kc = c.moe_combine_width();
  const int64_t rows = moe_expert_rows_max(c, n);  // what this rank's experts run
  fn(s.moe_logits, n * E);
  fn(s.moe_dlogits, n * E);
  fn(s.moe_rows_in, rows * h);
  fn(s.moe_drows, (m + shared) * h);
  fn(s.moe_act, rows * fe);
  fn(s.moe_dact, rows * fe);
  fn(s.moe_dh, rows * (c.swiglu ? 2 * fe : fe));
  fn(s.moe_dweights, n * kc);
  if (c.expert_parallel > 1) fn(s.moe_recv, rows * h);
  if (c.expert_parallel > 1 || c.context_parallel > 1) fn(s.moe_counts, 2 * E);
  if (shared == 0) return;
  fn(s.moe_rdweights, n * k);
  fn(s.moe_shared_act, n * fs);
  fn(s.moe_shared_dact, n * fs);
  fn(s.moe_shared_dpre, n * (c.swiglu ? 2 * fs : fs));
  if (!c.moe_shared_gate) return;
  fn(s.moe_gate_logits, n);
  fn(s.moe_gate_dg, n);
  fn(s.moe_gate_dlogits, n);
}

// The shared expert's forward: its gate's values, the combine's rows and weights with its row
// as the last of every token's (host, then the device), its MLP's output rows after the routed
// ones.
void shared_forward(const LayerDims& d, ParamSource& src, const MoeRefs& p, LayerActivations& a,
                    const LayerScratch& s, CRef x, MoeHost& h) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C, k = d.moe.k, kc = k + 1;
  if (d.moe_shared_gate) {
    chunked_linear_forward(be, src, {p.shared_gate, {}, C, 1}, Ref(s.moe_gate_logits, DType::F32),
                           x, N, false);
    be.moe_route_forward(a.moe_gate, a.moe_gate_index, s.moe_gate_dg, s.moe_gate_logits, N,
                         kSharedGate);
    be.copy_to_host(h.gate.data(), a.moe_gate, static_cast<size_t>(N) * 4);
  }
  for (int t = 0; t < N; ++t) {
    const auto c = static_cast<size_t>(t) * kc, r = static_cast<size_t>(t) * k;
    for (int j = 0; j < k; ++j) {
      h.cslots[c + j] = h.slots.slots[r + j];
      h.cweights[c + j] = h.weights[r + j];
    }
    h.cslots[c + k] = N * k + t;
    h.cweights[c + k] = d.moe_shared_gate ? h.gate[static_cast<size_t>(t)] : 1.0f;
  }
  const size_t bytes = static_cast<size_t>(N) * kc * 4;
  be.copy_to_device(a.moe_cslots, h.cslots.data(), bytes);
  be.copy_to_device(a.moe_cweights, h.cweights.data(), bytes);
  chunked_linear_forward(be, src, {p.shared_fc, {}, C, d.moe_shared_fc_width()}, a.moe_shared_pre,
                         x, N, false);
  activation_forward(d, s.moe_shared_act, a.moe_shared_pre, N, d.moe_shared);
  chunked_linear_forward(be, src, {p.shared_proj, {}, d.moe_shared, C},
                         a.moe_out + int64_t{N} * k * C, s.moe_shared_act, N, false);
}

// The shared expert's backward to its input: from its rows' gradient (after the routed ones in
// s.moe_drows), its second weight's gradient; its input gradient added to dx.
void shared_backward_input(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                           const LayerActivations& a, const LayerScratch& s, Ref dx) {
  Backend& be = *d.be;
  const int N = d.N(), C = d.C, fs = d.moe_shared;
  const CRef dout = CRef(s.moe_drows) + int64_t{N} * d.moe.k * C;
  const LinearRefs proj{p.shared_proj, {}, fs, C};
  activation_forward(d, s.moe_shared_act, a.moe_shared_pre, N, fs);
  chunked_linear_backward_input(be, src, proj, s.moe_shared_dact, dout, N);
  chunked_linear_backward_params(be, src, proj, dout, s.moe_shared_act, s.ones, N);
  if (d.swiglu)
    be.swiglu_backward(s.moe_shared_dpre, s.moe_shared_dact, a.moe_shared_pre, N, fs);
  else
    be.gelu_backward(s.moe_shared_dpre, a.moe_shared_pre, s.moe_shared_dact, int64_t{N} * fs);
  // The experts' input rows are free until the first weight's gradient dispatches them again.
  chunked_linear_backward_input(be, src, {p.shared_fc, {}, C, d.moe_shared_fc_width()},
                                s.moe_rows_in, s.moe_shared_dpre, N);
  be.add_inplace(dx, s.moe_rows_in, int64_t{N} * C);
}

}  // namespace

MoeRefs MoeRefs::of(const ParamLayout& layout, const std::string& prefix) {
  // The experts' chunks: whole experts, or rows of one (ParamRef::chunk keeps them apart).
  MoeRefs r;
  r.router = ParamRef::maybe(layout, prefix + "mlp.router.weight");
  if (!r.present()) return r;
  r.fc = ParamRef::of(layout, prefix + "mlp.experts.fc.weight");
  r.proj = ParamRef::of(layout, prefix + "mlp.experts.proj.weight");
  r.shared_fc = ParamRef::maybe(layout, prefix + "mlp.shared.fc.weight");
  r.shared_proj = ParamRef::maybe(layout, prefix + "mlp.shared.proj.weight");
  r.shared_gate = ParamRef::maybe(layout, prefix + "mlp.shared.gate.weight");
  return r;
}

Ref moe_forward(const LayerDims& d, ParamSource& src, const MoeRefs& p, LayerActivations& a,
                const LayerScratch& s, CRef x, Ref y, Ref local, int layer) {
  Backend& be = *d.be;
  MoeHost& h = *s.moe;
  const int N = d.N(), C = d.C, E = d.moe.E, k = d.moe.k;
  const auto nk = static_cast<size_t>(N) * static_cast<size_t>(k);
  chunked_linear_forward(be, src, router_linear(d, p), Ref(s.moe_logits, DType::F32), x, N, false);
  be.moe_route_forward(a.moe_scores, a.moe_experts, a.moe_weights, s.moe_logits, N, d.moe);
  be.copy_to_host(h.experts.data(), a.moe_experts, nk * 4);
  be.copy_to_host(h.weights.data(), a.moe_weights, nk * 4);
  h.slots.assign(h.experts, h.weights, N, k, E, MoeSlots::capacity(d.moe_capacity, N, k, E));
  count_picks(d, h, s);
  // The micro-batch's tokens: this rank's N of each of the context group's.
  const double tokens = static_cast<double>(N) * d.cp.size;
  for (int e = 0; e < E; ++e) {
    const auto i = static_cast<size_t>(e);
    h.rows32[i] = static_cast<int32_t>(h.slots.rows[i]);
    // aux = E · Σ_e (picks_e / tokens) · mean_t(s_te): its gradient on every score of e, scaled
    // as a token's loss is (dloss per token).
    h.dscores[i] = static_cast<float>(d.moe_aux_coeff * E * static_cast<double>(h.picks[i]) *
                                      h.dloss / tokens);
  }
  if (expert_parallel(d)) exchange_counts(d, h, s);
  expert_rows(d, h);
  be.copy_to_device(a.moe_slots, h.slots.slots.data(), nk * 4);
  be.copy_to_device(a.moe_rows, h.rows32.data(), h.rows32.size() * 4);
  be.copy_to_device(a.moe_dscores, h.dscores.data(), static_cast<size_t>(E) * 4);
  if (h.recording) {
    be.copy_to_host(h.scores.data(), a.moe_scores, static_cast<size_t>(N) * E * 4);
    MoeLayerTotals& t = h.totals[static_cast<size_t>(layer)];
    double aux = 0;
    int64_t most = 0;
    for (int e = 0; e < E; ++e) {
      double mass = 0;
      for (int n = 0; n < N; ++n) mass += h.scores[static_cast<size_t>(n) * E + e];
      const int64_t picks = h.picks[static_cast<size_t>(e)];
      aux += static_cast<double>(picks) / tokens * (mass / tokens);
      most = std::max(most, picks);
    }
    // A context rank holds its tokens' share of the loss: every rank of the group counts the
    // micro-batch, so each adds cp times its share (the means are over ranks' micro-batches).
    t.aux += aux * E * d.cp.size;
    t.max_load += static_cast<double>(most) * E / (tokens * k);
    t.dropped += h.slots.dropped;
    t.routed += static_cast<int64_t>(nk);
    ++t.micro_batches;
  }
  const int64_t M = h.first[static_cast<size_t>(local_experts(d))];
  rows_to_experts(d, h, s, a.moe_slots, x);
  experts_forward(be, src, fc_product(d, p, h), a.fch, s.moe_rows_in);
  activation_forward(d, s.moe_act, a.fch, M, d.moe_ffn);
  const bool ep = expert_parallel(d);
  experts_forward(be, src, proj_product(d, p, h), ep ? s.moe_recv : a.moe_out, s.moe_act);
  if (ep) rows_to_peers(d, h, s, a.moe_out);
  const bool shared = d.moe_shared > 0;
  if (shared) shared_forward(d, src, p, a, s, x, h);
  be.moe_combine(y, a.moe_out, shared ? a.moe_cslots : a.moe_slots,
                 shared ? a.moe_cweights : a.moe_weights, N, d.moe_combine_width(), C);
  if (!tp::active(d.tp)) return y;
  if (!d.sequence_parallel) {
    tp::reduce_from_tp_forward(be, d.tp, y, int64_t{N} * C);
    return y;
  }
  tp::sequence_reduce_scatter_forward(be, d.tp, local, y, N, C);
  return local;
}

void moe_backward_input(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                        const LayerActivations& a, const LayerScratch& s, CRef dy, Ref dx) {
  Backend& be = *d.be;
  MoeHost& h = *s.moe;
  const int N = d.N(), C = d.C, k = d.moe.k;
  // The row counts of this layer's forward (another layer's may have run since).
  be.copy_to_host(h.rows32.data(), a.moe_rows, h.rows32.size() * 4);
  expert_rows(d, h);
  const int64_t M = h.first[static_cast<size_t>(local_experts(d))];
  activation_forward(d, s.moe_act, a.fch, M, d.moe_ffn);
  const bool shared = d.moe_shared > 0;
  const int kc = d.moe_combine_width();
  be.moe_combine_backward(s.moe_drows, s.moe_dweights, dy, a.moe_out,
                          shared ? a.moe_cslots : a.moe_slots,
                          shared ? a.moe_cweights : a.moe_weights, N, kc, C);
  // The experts' rows are this rank's partial sums: so are the weights' inner products.
  tp::all_reduce(be, d.tp, Ref(s.moe_dweights, DType::F32), int64_t{N} * kc);
  float* dweights = s.moe_dweights;
  if (shared) {
    // The routed choices' part for the router; the shared row's for its gate.
    dweights = s.moe_rdweights;
    be.copy_2d(dweights, size_t(k) * 4, s.moe_dweights, size_t(kc) * 4, size_t(k) * 4,
               static_cast<size_t>(N));
    if (d.moe_shared_gate)
      be.copy_2d(s.moe_gate_dg, 4, s.moe_dweights + k, size_t(kc) * 4, 4, static_cast<size_t>(N));
  }
  // The rows' gradient to the experts that produced them (expert-major), and back.
  const bool ep = expert_parallel(d);
  CRef drows = s.moe_drows;
  if (ep) {
    exchange_rows(d, h, s.moe_drows, s.moe_recv, false);
    permute_rows(d, h, s.moe_rows_in, s.moe_recv, false);
    drows = s.moe_rows_in;
  }
  const ExpertProduct proj = proj_product(d, p, h);
  experts_backward_input(be, src, proj, s.moe_dact, drows);
  experts_backward_params(be, src, proj, drows, s.moe_act);
  if (d.swiglu)
    be.swiglu_backward(s.moe_dh, s.moe_dact, a.fch, M, d.moe_ffn);
  else
    be.gelu_backward(s.moe_dh, a.fch, s.moe_dact, M * d.moe_ffn);
  experts_backward_input(be, src, fc_product(d, p, h), ep ? s.moe_recv : s.moe_drows, s.moe_dh);
  if (ep) rows_to_peers(d, h, s, s.moe_drows);
  be.moe_combine(dx, s.moe_drows, a.moe_slots, nullptr, N, k, C);
  if (shared) shared_backward_input(d, src, p, a, s, dx);
  be.moe_route_backward(s.moe_logits, a.moe_scores, a.moe_experts, dweights,
                        d.moe_aux_coeff > 0 ? a.moe_dscores : nullptr, N, d.moe);
  if (d.moe_shared_gate)
    be.moe_route_backward(s.moe_gate_logits, a.moe_gate, a.moe_gate_index, s.moe_gate_dg, nullptr,
                          N, kSharedGate);
}

void moe_router_input_grad(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                           const LayerScratch& s, Ref dx_local) {
  const int64_t N = d.N();
  add_logit_input_grad(d, src, p.router, working_copy(d, s.moe_logits, s.moe_dlogits, N * d.moe.E),
                       d.moe.E, dx_local);
  if (d.moe_shared_gate)
    add_logit_input_grad(d, src, p.shared_gate,
                         working_copy(d, s.moe_gate_logits, s.moe_gate_dlogits, N), 1, dx_local);
}

void moe_backward_params(const LayerDims& d, ParamSource& src, const MoeRefs& p,
                         const LayerActivations& a, const LayerScratch& s, CRef x) {
  Backend& be = *d.be;
  MoeHost& h = *s.moe;
  // Highest parameters first: the shared expert's gate and first weight, then the experts'
  // first weight and the router (moe_router_input_grad made the logits' working copies).
  if (d.moe_shared_gate) add_logit_weight_grad(d, src, p.shared_gate, gate_dlogits(s), 1, x);
  if (d.moe_shared > 0)
    chunked_linear_backward_params(be, src, {p.shared_fc, {}, d.C, d.moe_shared_fc_width()},
                                   s.moe_shared_dpre, x, s.ones, d.N());
  rows_to_experts(d, h, s, a.moe_slots, x);
  experts_backward_params(be, src, fc_product(d, p, h), s.moe_dh, s.moe_rows_in);
  add_logit_weight_grad(d, src, p.router, router_dlogits(s), d.moe.E, x);
}

size_t moe_scratch_bytes(const GptConfig& c, int micro_batch, int tp_size) {
  LayerScratch s;
  size_t total = 0;
  for_each_moe_scratch(s, c, micro_batch, tp_size, [&](auto& field, int64_t n) {
    const size_t e = std::is_same_v<std::decay_t<decltype(field)>, Ref> ? dtype_size(c.dtype) : 4;
    total += Arena::aligned(static_cast<size_t>(n) * e);
  });
  return total;
}

void carve_moe_scratch(Arena& arena, LayerScratch& s, const GptConfig& c, int micro_batch,
                       int tp_size) {
  for_each_moe_scratch(s, c, micro_batch, tp_size, [&](auto& field, int64_t n) {
    if constexpr (std::is_same_v<std::decay_t<decltype(field)>, Ref>)
      field = Ref(arena.carve({n}, c.dtype).data(), c.dtype);
    else
      field = arena.carve({n}, DType::F32).f32();
  });
}

}  // namespace zt
