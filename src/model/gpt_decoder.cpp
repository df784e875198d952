#include "src/model/gpt_decoder.h"

#include <algorithm>
#include <type_traits>

#include "src/tensor_parallel/mappings.h"

namespace zt {
namespace {

// The rows of every workspace tensor: T positions, their C channels, this rank's Cl query and
// Ckv key/value columns, its F MLP columns and F1 columns of the MLP's first product (2F, gate and
// up, under SwiGLU). A MoE model: E experts, k per token, M = T·k routed rows, an expert's Fe
// columns on this rank (Fe1 its first product's), the shared expert's Fs (Fs1; 0: none); the
// first product's buffer holds the wider of T·F1 and M·Fe1.
struct Sizes {
  int64_t T, C, Cl, Ckv, F, F1, V;
  size_t e;
  int64_t E = 0, k = 0, Fe = 0, Fe1 = 0, Fs = 0, Fs1 = 0;
  int64_t qkv() const { return Cl + 2 * Ckv; }
  int64_t M() const { return T * k; }
  int64_t pre() const { return std::max(T * F1, M() * Fe1); }
};

Sizes sizes_of(const GptConfig& c, int max_positions, int tp_size) {
  const TpDims t = TpDims::of(c, tp_size, 0);
  const int64_t f1 = c.swiglu ? 2 * int64_t{t.ffn} : t.ffn;
  Sizes s{max_positions,       c.hidden,           t.hidden, t.kv_hidden, t.ffn, f1,
          c.padded_vocab_size, dtype_size(c.dtype)};
  if (c.moe()) {
    const int64_t gated = c.swiglu ? 2 : 1;
    s.E = c.num_experts;
    s.k = c.moe_topk;
    s.Fe = t.moe_ffn;
    s.Fe1 = gated * s.Fe;
    s.Fs = t.moe_shared;
    s.Fs1 = gated * s.Fs;
  }
  return s;
}

// Applies fn(field, elements) to each field moe_forward reads or writes, in one order, so that
// bytes() and the constructor agree: the routing, the experts' rows, and with a shared expert
// its rows, the combine's rows and weights and its gate. The fields of backward (gradients) are
// left unset; fch is pre_.
template <typename Fn>
void for_each_moe_field(LayerActivations& a, LayerScratch& sc, const GptConfig& c, const Sizes& s,
                        Fn&& fn) {
  if (s.E == 0) return;
  const int64_t T = s.T, k = s.k, shared = s.Fs > 0 ? T : 0;
  fn(a.moe_scores, T * s.E);
  fn(sc.moe_logits, T * s.E);
  fn(a.moe_experts, T * k);
  fn(a.moe_weights, T * k);
  fn(a.moe_slots, T * k);
  fn(a.moe_rows, s.E);
  fn(a.moe_dscores, s.E);
  fn(a.moe_out, (s.M() + shared) * s.C);  // the shared expert's rows after the routed ones
  fn(sc.moe_rows_in, s.M() * s.C);
  fn(sc.moe_act, s.M() * s.Fe);
  if (shared == 0) return;
  fn(a.moe_cslots, T * (k + 1));
  fn(a.moe_cweights, T * (k + 1));
  fn(a.moe_shared_pre, T * s.Fs1);
  fn(sc.moe_shared_act, T * s.Fs);
  if (!c.moe_shared_gate) return;
  fn(a.moe_gate, T);
  fn(a.moe_gate_index, T);
  fn(sc.moe_gate_logits, T);
  fn(sc.moe_gate_dg, T);  // the gate's routing writes its unused weights here
}

// Ref fields in the working precision, the others (float, int32) 4 bytes an element.
size_t moe_bytes(const GptConfig& c, const Sizes& s) {
  LayerActivations a;
  LayerScratch sc;
  size_t total = 0;
  for_each_moe_field(a, sc, c, s, [&](auto& field, int64_t n) {
    const bool ref = std::is_same_v<std::decay_t<decltype(field)>, Ref>;
    total += Arena::aligned(static_cast<size_t>(n) * (ref ? s.e : 4));
  });
  return total;
}

// The norm the config names: RMSNorm (weight only) or LayerNorm (weight and bias).
void norm(Backend& be, const GptConfig& c, Ref out, float* mean, float* rstd, CRef x, CRef w,
          CRef b, int rows) {
  if (c.rmsnorm())
    be.rmsnorm_forward(out, rstd, x, w, rows, c.hidden, c.norm_epsilon);
  else
    be.layernorm_forward(out, mean, rstd, x, w, b, rows, c.hidden);
}

}  // namespace

size_t GptDecoder::bytes(const GptConfig& c, int max_positions, int tp_size) {
  const Sizes s = sizes_of(c, max_positions, tp_size);
  const size_t rows = static_cast<size_t>(s.T);
  auto a = [](size_t b) { return Arena::aligned(b); };
  const size_t cache = 2 * static_cast<size_t>(c.num_layers) * a(rows * s.Ckv * s.e);
  return cache + 4 * a(rows * s.C * s.e)          // x, res2, y, ln
         + a(rows * s.qkv() * s.e)                // qkv
         + a(rows * s.Cl * s.e)                   // att
         + a(rows * s.F * s.e)                    // ff
         + a(static_cast<size_t>(s.pre()) * s.e)  // pre
         + a(static_cast<size_t>(s.V) * s.e)      // logits
         + 2 * a(rows * 4) + a(rows * 4)          // mean, rstd, tokens
         + moe_bytes(c, s);
}

GptDecoder::GptDecoder(const GptConfig& config, const ParamLayout& layout, int max_positions,
                       const DeviceContext& ctx, comm::Communicator* tp)
    : config_(config),
      be_(ctx.backend()),
      tp_(tp),
      max_positions_(max_positions),
      dims_(TpDims::of(config, layout.tp_size(), layout.tp_rank())),
      rope_freqs_(config.rope_table()),
      arena_(ctx.pool(), bytes(config, max_positions, layout.tp_size()), MemCategory::KvCache),
      moe_host_(config, max_positions) {
  ZT_CHECK(max_positions > 0 && max_positions <= config.seq_length,
           "a decoder of {} positions over a position table of {}", max_positions,
           config.seq_length);
  ZT_CHECK(layout.pipeline().size == 1, "generation runs the whole model on one pipeline stage");
  ZT_CHECK(layout.ep_size() == 1, "generation runs every expert on one rank");
  ZT_CHECK(tp::size_of(tp) == layout.tp_size() && tp::rank_of(tp) == layout.tp_rank(),
           "the layout is for tp rank {} of {} but the tensor-parallel group has rank {} of {}",
           layout.tp_rank(), layout.tp_size(), tp::rank_of(tp), tp::size_of(tp));
  config_.sequence_parallel = false;
  config_.context_parallel = 1;
  config_.expert_parallel = 1;
  for (int i = 0; i < config.num_layers; ++i) layers_.push_back(LayerRefs::of(layout, i));
  // Absent by the architecture: the position table under rope, the norms' biases under RMSNorm;
  // the head is the word embedding unless the output layer is untied.
  wte_ = ParamRef::of(layout, "embedding.word");
  wpe_ = ParamRef::maybe(layout, "embedding.position");
  lnf_w_ = ParamRef::of(layout, "final_ln.weight");
  lnf_b_ = ParamRef::maybe(layout, "final_ln.bias");
  const ParamRef head_w =
      config.untie_embeddings ? ParamRef::of(layout, "output_layer.weight") : wte_;
  head_ = LinearRefs{head_w, ParamRef{}, config.hidden, dims_.vocab};
  const Sizes s = sizes_of(config, max_positions, layout.tp_size());
  const DType t = config.dtype;
  auto carve = [&](int64_t elems) { return Ref(arena_.carve({elems}, t).data(), t); };
  for (int i = 0; i < config.num_layers; ++i) {
    k_cache_.push_back(carve(s.T * s.Ckv));
    v_cache_.push_back(carve(s.T * s.Ckv));
  }
  x_ = carve(s.T * s.C);
  res2_ = carve(s.T * s.C);
  y_ = carve(s.T * s.C);
  ln_ = carve(s.T * s.C);
  qkv_ = carve(s.T * s.qkv());
  att_ = carve(s.T * s.Cl);
  ff_ = carve(s.T * s.F);
  pre_ = carve(s.pre());
  logits_ = carve(s.V);
  mean_ = arena_.carve({s.T}, DType::F32).f32();
  rstd_ = arena_.carve({s.T}, DType::F32).f32();
  // int32 ids in a 4-byte slot (the arena carves by float dtypes)
  tokens_ = static_cast<int32_t*>(arena_.carve({s.T}, DType::F32).data());
  if (config.moe()) {
    for_each_moe_field(moe_acts_, moe_scratch_, config, s, [&](auto& field, int64_t n) {
      using Field = std::decay_t<decltype(field)>;
      if constexpr (std::is_same_v<Field, Ref>)
        field = carve(n);
      else  // float and int32 fields in 4-byte slots (the arena carves by float dtypes)
        field = reinterpret_cast<Field>(arena_.carve({n}, DType::F32).data());
    });
    moe_acts_.fch = pre_;
    moe_scratch_.moe = &moe_host_;
    moe_dims_ =
        LayerDims::of(config_, 1, layout.tp_size(), layout.tp_rank(), tp, ctx.backend(), nullptr);
  }
  logits_host_.resize(static_cast<size_t>(s.V));
}

void GptDecoder::append(std::span<const int32_t> tokens, ParamSource& params) {
  const int n = static_cast<int>(tokens.size());
  ZT_CHECK(n > 0 && length_ + n <= max_positions_,
           "{} tokens after {} do not fit the decoder's {} positions", n, length_, max_positions_);
  for (int32_t id : tokens)
    ZT_CHECK(id >= 0 && id < config_.vocab_size, "token id {} outside the vocabulary [0, {})", id,
             config_.vocab_size);
  be_.copy_to_device(tokens_, tokens.data(), tokens.size_bytes());
  embed(n, params);
  for (int i = 0; i < config_.num_layers; ++i) layer(i, n, params);
  head(n, params);
  length_ += n;
}

void GptDecoder::embed(int n, ParamSource& params) {
  const int C = config_.hidden;
  const int64_t nc = int64_t{n} * C;
  // This rank's vocabulary rows of the tokens, chunk by chunk (0 for the others), summed over tp;
  // then the position rows of [length_, length_ + n): one wte row plus one position row, rounded
  // once, as the training forward's embedding.
  const int64_t step = wte_.chunk(params);
  for (int64_t r = 0; r < wte_.rows; r += step) {
    const int64_t rows = std::min(step, wte_.rows - r);
    const Held e(params, wte_.row_span(r, rows));
    const Ref dst = r == 0 ? x_ : y_;
    be_.embedding_forward(dst, tokens_, e.get(), CRef(nullptr, e.get().t), 1, n, C,
                          dims_.vocab_begin + static_cast<int>(r), static_cast<int>(rows));
    if (r > 0) be_.add_inplace(x_, y_, nc);
  }
  tp::reduce_from_tp_forward(be_, tp_, x_, nc);
  if (!wpe_.present()) return;  // rotary positions: applied to q and k in each layer
  const int64_t pstep = wpe_.chunk(params), first = length_, end = length_ + n;
  for (int64_t t0 = 0; t0 < wpe_.rows && t0 < end; t0 += pstep) {
    const int64_t rows = std::min(pstep, wpe_.rows - t0);
    const int64_t lo = std::max(first, t0), hi = std::min(end, t0 + rows);
    if (lo >= hi) continue;
    const Held p(params, wpe_.row_span(t0, rows));
    be_.add_inplace(x_ + (lo - first) * C, CRef(p.get()) + (lo - t0) * C, (hi - lo) * C);
  }
}

void GptDecoder::row_parallel(const LinearRefs& l, Ref y, CRef x, int n, ParamSource& params) {
  if (!tp::active(tp_)) {
    chunked_linear_forward(be_, params, l, y, x, n, true);
    return;
  }
  // The bias once, after the partial products are summed (as the training forward).
  chunked_linear_forward(be_, params, l, y, x, n, false);
  tp::reduce_from_tp_forward(be_, tp_, y, int64_t{n} * l.out);
  if (l.has_bias()) chunked_add_bias(be_, params, l, y, n);
}

void GptDecoder::layer(int i, int n, ParamSource& params) {
  const LayerRefs& p = layers_[static_cast<size_t>(i)];
  const int C = config_.hidden, Cl = dims_.hidden, Ckv = dims_.kv_hidden, W = Cl + 2 * Ckv;
  const DropoutParams none{};
  {
    const HeldNorm w(params, p.ln1_w, p.ln1_b, false);
    norm(be_, config_, ln_, mean_, rstd_, x_, w.w(), w.b(), n);
  }
  // This rank's q (Cl) | k (Ckv) | v (Ckv) of the new rows, as the training forward splits them.
  chunked_linear_forward(be_, params, p.qkv, qkv_, ln_, n, true);
  // Rotary positions on q and k at the rows' absolute positions, before k joins the cache (the
  // cache holds rotated keys, as the training forward's attention reads them).
  if (config_.rope())
    be_.rope_forward_at(qkv_, n, length_, dims_.heads, dims_.kv_heads, config_.head_dim(),
                        rope_freqs_);
  // The new positions' keys and values join the cache; the queries stay in qkv_ (row stride W).
  const Ref k = k_cache_[static_cast<size_t>(i)], v = v_cache_[static_cast<size_t>(i)];
  const size_t row = qkv_.bytes(Ckv), pitch = qkv_.bytes(W);
  be_.copy_2d((k + int64_t{length_} * Ckv).p, row, (qkv_ + Cl).p, pitch, row,
              static_cast<size_t>(n));
  be_.copy_2d((v + int64_t{length_} * Ckv).p, row, (qkv_ + int64_t{Cl} + Ckv).p, pitch, row,
              static_cast<size_t>(n));
  be_.attention_cached_forward(att_, qkv_, W, k, v, n, length_, Cl, dims_.heads, dims_.kv_heads);
  row_parallel(p.proj, y_, att_, n, params);
  {
    // res2 = x + proj, ln = norm(res2): fused for LayerNorm, as the training forward.
    const HeldNorm w(params, p.ln2_w, p.ln2_b, false);
    if (config_.rmsnorm()) {
      be_.dropout_add_forward(res2_, x_, y_, int64_t{n} * C, none);
      norm(be_, config_, ln_, mean_, rstd_, res2_, w.w(), w.b(), n);
    } else {
      be_.dropout_add_layernorm_forward(res2_, ln_, mean_, rstd_, x_, y_, w.w(), w.b(), n, C, none);
    }
  }
  if (p.moe.present()) {
    // The n new rows as one sample; summed over tp inside, as the dense row-parallel output.
    LayerDims d = moe_dims_;
    d.T = n;
    moe_forward(d, params, p.moe, moe_acts_, moe_scratch_, ln_, y_, y_, i);
  } else if (config_.swiglu) {
    // pre holds each row's gate | up (this rank's F columns of each).
    chunked_linear_forward(be_, params, p.fc, pre_, ln_, n, true);
    be_.swiglu_forward(ff_, pre_, n, dims_.ffn);
    row_parallel(p.fcproj, y_, ff_, n, params);
  } else {
    chunked_linear_gelu_forward(be_, params, p.fc, ff_, pre_, ln_, n);
    row_parallel(p.fcproj, y_, ff_, n, params);
  }
  be_.dropout_add_forward(x_, res2_, y_, int64_t{n} * C, none);
}

void GptDecoder::head(int n, ParamSource& params) {
  const int C = config_.hidden;
  const CRef last = CRef(x_) + int64_t{n - 1} * C;
  {
    const HeldNorm w(params, lnf_w_, lnf_b_, false);
    norm(be_, config_, ln_, mean_, rstd_, last, w.w(), w.b(), 1);
  }
  // This rank's vocabulary shard of the row, in place in the whole row, then the others'.
  chunked_linear_forward(be_, params, head_, logits_ + dims_.vocab_begin, ln_, 1, false);
  const int64_t v = config_.padded_vocab_size;
  if (tp::active(tp_)) tp_->all_gather(Tensor(logits_.p, Shape{v}, logits_.t, be_.device()));
  float* out = logits_host_.data();
  be_.copy_to_host(out, logits_.p, logits_.bytes(v));
  // Half logits land in the front of `out`; widened in place from the back (element i moves from
  // byte 2i to byte 4i, so nothing is overwritten before it is read).
  if (logits_.t != DType::F32)
    visit_dtype(logits_.t, [&](auto t) {
      const auto* h = reinterpret_cast<const decltype(t)*>(out);
      for (int64_t i = v - 1; i >= 0; --i) out[i] = to_float(h[i]);
    });
}

}  // namespace zt
