#include "src/model/gpt.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/rng_tracker.h"
#include "src/tensor_parallel/sequence_parallel.h"
#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"
#include "src/tensor_parallel/vocab_parallel_embedding.h"

namespace zt {
bool Gpt::acquired_in_backward(const ParamSpec& p) {
  // Backward needs the weights (input gradients) and the layernorms (recomputed, and their
  // backward), not the linear biases or the position table.
  const std::string& n = p.name;
  auto ends_with = [&](std::string_view s) {
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  if (n == "embedding.position") return false;
  return !(ends_with("qkv.bias") || ends_with("attn.proj.bias") || ends_with("fc.bias") ||
           ends_with("mlp.proj.bias"));
}

int64_t Gpt::held_params_elems(const GptConfig& c, const ParamLayout& layout, int64_t max_span) {
  // The pairs held together (names sharing the module, adjacent in the layout): a norm's weight
  // and bias (HeldNorm); a linear's weight and bias where one GEMM adds the bias (not a
  // row-parallel layer's at tp > 1, whose bias is added after the reduction); the word and
  // position tables in the fused lookup (not under sequence parallelism, which looks them up
  // apart). Each only where both are whole spans: a chunked weight is held one chunk at a time.
  const auto span = [&](const ParamSpec& p) { return p.chunk_rows(max_span) * p.row_len(); };
  const auto whole = [&](const ParamSpec& p) { return span(p) == p.numel(); };
  const auto module = [](const std::string& n) { return n.substr(0, n.rfind('.')); };
  const bool tp = layout.tp_size() > 1;
  const auto& ps = layout.params();
  int64_t most = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    most = std::max(most, span(ps[k]));
    if (k + 1 == ps.size()) continue;
    const ParamSpec &a = ps[k], &b = ps[k + 1];
    if (module(a.name) != module(b.name) || !whole(a) || !whole(b)) continue;
    if (a.name == "embedding.word" && splits_sequence(c, layout.tp_size())) continue;
    if (a.split == TpSplit::InputColumns && tp) continue;
    most = std::max(most, a.numel() + b.numel());
  }
  return most;
}

size_t Gpt::kernel_scratch_bytes(const GptConfig& c, int micro_batch, int tp_size) {
  // With tensor parallelism attention runs one sample per call (transformer_layer.cpp).
  // Under context parallelism one sample per call too: by all-to-all over the whole sequence and
  // 1/cp of the heads (context_attention.h), in the ring one chunk's block (context_ring.h).
  const TpDims d = TpDims::of(c, tp_size, 0);
  const int g = c.context_parallel;
  if (g > 1 && c.context_comm == ContextComm::Ring) {  // blocks of one chunk (context_ring.h)
    const size_t per = cpu_attention_block_scratch_per_thread(c.seq_length / (2 * g), d.hidden,
                                                              d.heads, d.kv_heads, c.dtype);
    return per * static_cast<size_t>(cpu_kernel_threads());
  }
  const int kv = d.kv_heads * (g > 1 ? context_kv_replicas(c, tp_size) : 1) / g;
  const size_t per = cpu_attention_scratch_per_thread(
      tp_size > 1 || g > 1 ? 1 : micro_batch, c.seq_length, d.hidden / g, d.heads / g, kv, c.dtype);
  return per * static_cast<size_t>(cpu_kernel_threads());
}

size_t Gpt::arena_bytes(const GptConfig& c, int micro_batch, int tp_size,
                        const PipelinePart& part) {
  const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.local_seq());
  const size_t h = static_cast<size_t>(c.hidden);
  const size_t v = static_cast<size_t>(c.padded_vocab_size / tp_size);
  const size_t e = dtype_size(c.dtype);
  size_t b = Arena::aligned(n * h * e) + LayerScratch::bytes(c, micro_batch, tp_size);  // dres
  if (part.first()) b += Arena::aligned(n * h * e);  // embedding output
  if (part.last())
    b += Arena::aligned(n * h * e) * 2 + Arena::aligned(n * 4) * 3 + Arena::aligned(n * v * e) +
         (tp_size > 1 ? Arena::aligned(n * 3 * 4) : 0);
  return b;
}

Gpt::Gpt(const GptConfig& config, const ParamLayout& layout, int micro_batch,
         const DeviceContext& ctx, comm::Communicator* tp, comm::Communicator* cp,
         comm::Communicator* ep)
    : config_(config),
      be_(ctx.backend()),
      dims_(LayerDims::of(config, micro_batch, layout.tp_size(), layout.tp_rank(), tp, be_, cp)),
      part_(layout.pipeline()),
      embeds_(part_.first()),
      heads_(part_.last()),
      arena_(ctx.pool(), arena_bytes(config, micro_batch, layout.tp_size(), layout.pipeline()),
             MemCategory::Activations),
      moe_host_(config, int64_t{micro_batch} * config.local_seq()) {
  ZT_CHECK(tp::size_of(tp) == layout.tp_size() && tp::rank_of(tp) == layout.tp_rank(),
           "the layout is for tp rank {} of {} but the tensor-parallel group has rank {} of {}",
           layout.tp_rank(), layout.tp_size(), tp::rank_of(tp), tp::size_of(tp));
  ZT_CHECK(tp::size_of(ep) == layout.ep_size() && tp::rank_of(ep) == layout.ep_rank(),
           "the layout is for expert-parallel rank {} of {} but the group has rank {} of {}",
           layout.ep_rank(), layout.ep_size(), tp::rank_of(ep), tp::size_of(ep));
  if (layout.ep_size() > 1) dims_.ep = ep;
  const tp::VocabRange vr =
      tp::vocab_range(config.padded_vocab_size, layout.tp_size(), layout.tp_rank());
  vocab_begin_ = vr.begin;
  vocab_local_ = vr.local;
  layers_.resize(static_cast<size_t>(config.num_layers));
  for (int c = 0; c < part_.chunks; ++c) {
    chunk_layers_.push_back(part_.layers(config, c));
    for (int i : chunk_layers_.back()) layers_[static_cast<size_t>(i)] = LayerRefs::of(layout, i);
  }
  // The first stage's word embedding, or the last stage's copy of it for the head.
  const bool tied = !config.untie_embeddings;
  if (embeds_ || (heads_ && tied)) wte_ = ParamRef::of(layout, "embedding.word");
  if (embeds_) wpe_ = ParamRef::maybe(layout, "embedding.position");
  if (heads_) {
    lnf_w_ = ParamRef::of(layout, "final_ln.weight");
    lnf_b_ = ParamRef::maybe(layout, "final_ln.bias");
    if (!tied) out_ = ParamRef::of(layout, "output_layer.weight");
  }
  head_ = LinearRefs{tied ? wte_ : out_, ParamRef{}, config.hidden, vocab_local_};
  const int64_t n = dims_.N(), h = config.hidden;
  const DType t = config.dtype;
  auto carve = [&](int64_t elems) { return Ref(arena_.carve({elems}, t).data(), t); };
  if (embeds_) embed_out_ = carve(n * h);
  if (heads_) lnf_out_ = carve(n * h);
  dres_ = carve(n * h);
  if (heads_) {
    final_in_ = carve(n * h);
    lnf_mean_ = arena_.carve({n}, DType::F32).f32();
    lnf_rstd_ = arena_.carve({n}, DType::F32).f32();
    losses_ = arena_.carve({n}, DType::F32).f32();
    logits_ = carve(n * vocab_local_);
    if (layout.tp_size() > 1) ce_scratch_ = arena_.carve({3 * n}, DType::F32).f32();
  }
  scratch_ = LayerScratch::carve(arena_, config, micro_batch, layout.tp_size());
  scratch_.moe = &moe_host_;
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    const std::vector<T> ones(static_cast<size_t>(n), from_float<T>(1.0f));
    be_.copy_to_device(scratch_.ones.p, ones.data(), ones.size() * sizeof(T));
  });
  if (ctx.needs_staging() && heads_) {
    host_staging_ = ctx.host().allocate({n}, DType::F32, MemCategory::Buffers);
    losses_host_ = static_cast<float*>(host_staging_.data());
  }
  // The CPU kernels' scratch (the CUDA kernels keep theirs in registers and shared memory; the
  // CPU kernels behind a staging backend run unbound, as the plan of a CUDA run counts nothing).
  if (be_.device() == Device::Cpu && be_.host_accessible()) {
    const int threads = cpu_kernel_threads();
    kernel_scratch_ = ctx.pool().allocate(
        kernel_scratch_bytes(config, micro_batch, layout.tp_size()), MemCategory::Activations);
    kernel_scratch_binding_ = {kernel_scratch_.data(), kernel_scratch_.bytes() / threads, threads};
  }
}

LayerDropout Gpt::dropout(int layer, const DropoutSeeds* rng) const {
  LayerDropout d;
  if (rng == nullptr) return d;
  // Masks are indexed by (global sample, position in the full tensor), so a sample gets the
  // same mask whatever micro-batch, data-parallel rank or tensor-parallel split it lands in
  // (tensor_parallel/rng_tracker.h).
  // The counters are of the whole sample (cp.seq tokens): the layer finds a context rank's rows
  // and heads in them.
  const tp::RngTracker rt(rng->seed, rng->first_sample);
  const auto T = static_cast<uint64_t>(dims_.cp.seq);
  const uint64_t n = T * static_cast<uint64_t>(dims_.C);
  const uint64_t att = static_cast<uint64_t>(dims_.heads_total) * T * T;
  const uint64_t site = 3 * static_cast<uint64_t>(layer);
  d.attention = rt.mask(site, config_.attention_dropout, att);
  d.attn_out = rt.mask(site + 1, config_.hidden_dropout, n);
  d.mlp_out = rt.mask(site + 2, config_.hidden_dropout, n);
  return d;
}

void Gpt::embed(const int32_t* tokens, ParamSource& params) {
  const int N = dims_.N(), C = dims_.C;
  const tp::VocabRange vr{vocab_begin_, vocab_local_};
  const int64_t step = wte_.chunk(params), pstep = position_chunk(params);
  if (dims_.sequence_parallel || (dims_.cp.active() && wpe_.present())) {
    embed_split(tokens, params);
    return;
  }
  if (step == wte_.rows && !wpe_.present()) {
    const Held e(params, wte_);
    tp::vocab_parallel_embedding_forward(be_, dims_.tp, embed_out_, tokens, e.get(),
                                         CRef(nullptr, e.get().t), dims_.B, dims_.T, C, vr);
    return;
  }
  if (step == wte_.rows && pstep == wpe_.rows) {
    const Held e(params, wte_), p(params, wpe_);
    tp::vocab_parallel_embedding_forward(be_, dims_.tp, embed_out_, tokens, e.get(), p.get(),
                                         dims_.B, dims_.T, C, vr);
    return;
  }
  // Chunk by chunk: the rows of the chunk's tokens (0 for the others), summed; then the position
  // rows. Each output element is one wte row (exact) plus one position row, rounded once: the
  // bits of the fused lookup.
  const int64_t nc = int64_t{N} * C;
  embed_word_rows(tokens, params);
  tp::reduce_from_tp_forward(be_, dims_.tp, embed_out_, nc);
  for (int64_t t0 = 0; t0 < wpe_.rows; t0 += pstep) {
    const int64_t n = std::min(pstep, wpe_.rows - t0);
    const Held p(params, wpe_.row_span(t0, n));
    for (int b = 0; b < dims_.B; ++b)
      be_.add_inplace(embed_out_ + (int64_t{b} * dims_.T + t0) * C, p.get(), n * C);
  }
}

int64_t Gpt::position_chunk(const ParamSource& params) const {
  return wpe_.present() ? wpe_.chunk(params) : 1;
}

void Gpt::embed_word_rows(const int32_t* tokens, ParamSource& params) {
  const int64_t step = wte_.chunk(params), nc = int64_t{dims_.N()} * dims_.C;
  for (int64_t r = 0; r < wte_.rows; r += step) {
    const int64_t n = std::min(step, wte_.rows - r);
    const Held e(params, wte_.row_span(r, n));
    const Ref dst = r == 0 ? embed_out_ : scratch_.d_a;
    be_.embedding_forward(dst, tokens, e.get(), CRef(nullptr, e.get().t), dims_.B, dims_.T, dims_.C,
                          vocab_begin_ + static_cast<int>(r), static_cast<int>(n));
    if (r > 0) be_.add_inplace(embed_out_, scratch_.d_a, nc);
  }
}

void Gpt::embed_split(const int32_t* tokens, ParamSource& params) {
  const int N = dims_.N(), C = dims_.C;
  // Each rank's vocabulary rows of every token, summed over tp (under sequence parallelism split
  // by rows in one reduce-scatter: Megatron-LM's sequence-parallel embedding), then the position
  // rows of this rank's tokens, run by run: wte row + 0 + ... + wpe row, rounded as tp = 1 rounds
  // wte row + wpe row.
  const int64_t pstep = position_chunk(params);
  embed_word_rows(tokens, params);
  const Ref local = embed_out_ + dims_.first_row * C;
  if (dims_.sequence_parallel)
    tp::sequence_reduce_scatter_forward(be_, dims_.tp, local, embed_out_, N, C);
  else
    tp::reduce_from_tp_forward(be_, dims_.tp, embed_out_, int64_t{N} * C);
  // This rank's rows of the [B, T] tokens in runs of consecutive positions, each within one chunk
  // of the position table.
  for (int64_t t0 = 0; wpe_.present() && t0 < wpe_.rows; t0 += pstep) {
    const int64_t n = std::min(pstep, wpe_.rows - t0);
    const Held p(params, wpe_.row_span(t0, n));
    for_each_run_in(dims_.cp, dims_.first_row, dims_.Nl, t0, n,
                    [&](int64_t at, int64_t pos, int64_t count) {
                      be_.add_inplace(local + at * C, CRef(p.get()) + pos * C, count * C);
                    });
  }
}

CRef Gpt::layers_forward(const std::vector<int>& layers, CRef x, ParamSource& params,
                         ActivationStore& acts, const DropoutSeeds* rng) {
  const ScopedKernelScratch scratch(kernel_scratch_binding_);
  moe_host_.recording = rng != nullptr;
  for (int i : layers) {
    LayerActivations& a = acts.begin_forward(i);
    layer_forward(dims_, params, layers_[static_cast<size_t>(i)], x, a, scratch_, dropout(i, rng),
                  i);
    acts.end_forward(i, x);
    x = a.out;
  }
  return x;
}

void Gpt::head_forward(CRef x, ParamSource& params) {
  const int N = dims_.N(), C = dims_.C, Nl = dims_.Nl;
  const int64_t first = dims_.first_row * C;
  // The final layernorm's input is kept by the model: a checkpointing store need not keep the
  // last layer's output.
  be_.copy(final_in_.p, x.p, x.bytes(int64_t{Nl} * C));
  {
    const HeldNorm n(params, lnf_w_, lnf_b_, false);
    norm_forward(dims_, lnf_out_ + first, lnf_mean_, lnf_rstd_, final_in_, n.w(), n.b(), Nl);
  }
  if (dims_.sequence_parallel)
    tp::sequence_gather_forward(be_, dims_.tp, lnf_out_, lnf_out_ + first, N, C);
  // The head tied to this rank's vocabulary shard: column-parallel, copy-to-TP on its input.
  tp::copy_to_tp_forward(be_, dims_.tp, lnf_out_, int64_t{N} * C);
  chunked_linear_forward(be_, params, head_, logits_, lnf_out_, N, false);
}

void Gpt::forward_to_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                            const DropoutSeeds* rng) {
  ZT_CHECK(part_.size == 1, "a pipeline stage runs chunk_forward / chunk_backward");
  embed(tokens, params);
  // The layers take this rank's rows of the embedding output: all of them, or with sequence
  // parallelism the N/tp that embed() made (their gradient is all-gathered in backward()).
  const CRef x = CRef(embed_out_) + dims_.first_row * dims_.C;
  head_forward(layers_forward(chunk_layers_.front(), x, params, acts, rng), params);
}

double Gpt::loss(const int32_t* targets, float dloss) {
  const int N = dims_.N();
  if (tp::active(dims_.tp))
    tp::vocab_parallel_cross_entropy(be_, dims_.tp, logits_, losses_, targets, N,
                                     {vocab_begin_, vocab_local_}, config_.vocab_size, dloss,
                                     ce_scratch_);
  else
    be_.softmax_cross_entropy(logits_, losses_, targets, N, config_.padded_vocab_size,
                              config_.vocab_size, dloss);
  const float* losses = losses_;
  if (losses_host_ != nullptr) {
    be_.copy_to_host(losses_host_, losses_, static_cast<size_t>(N) * 4);
    losses = losses_host_;
  }
  double sum = 0;
  for (int i = 0; i < N; ++i) sum += losses[i];
  return sum / N;
}

double Gpt::forward(const int32_t* tokens, const int32_t* targets, float dloss, ParamSource& params,
                    ActivationStore& acts, const DropoutSeeds* rng) {
  moe_host_.dloss = dloss;
  forward_to_logits(tokens, params, acts, rng);
  return loss(targets, dloss);
}

void Gpt::head_backward(ParamSource& params, Ref dres) {
  const int N = dims_.N(), C = dims_.C, Nl = dims_.Nl;
  // Head: logits = lnf_out · wteᵀ, so d(lnf_out) = dlogits · wte; with tp each rank's shard gives
  // a partial d(lnf_out), all-reduced (copy-to-TP backward; under sequence parallelism
  // reduce-scattered to this rank's rows). d(wte) waits for the lookup's part.
  chunked_linear_backward_input(be_, params, head_, scratch_.d_a, logits_, N);
  // The untied output layer's gradient now, before the final norm's (the layout's order from
  // its end); the tied head's waits for the lookup's part (embedding_grads).
  if (out_.present())
    chunked_linear_backward_params(be_, params, head_, logits_, lnf_out_, scratch_.ones, N);
  Ref dlnf = scratch_.d_a;
  if (dims_.sequence_parallel) {
    tp::sequence_gather_backward(be_, dims_.tp, scratch_.d_b, scratch_.d_a, N, C);
    dlnf = scratch_.d_b;
  } else {
    tp::copy_to_tp_backward(be_, dims_.tp, scratch_.d_a, int64_t{N} * C);
  }
  const HeldNorm n(params, lnf_w_, lnf_b_, true);
  be_.fill_zero(dres.p, dres.bytes(int64_t{Nl} * C));
  residual_layernorm_backward(dims_, params, lnf_w_, lnf_b_, n.w(), dres, dlnf, final_in_,
                              lnf_mean_, lnf_rstd_, scratch_);
}

void Gpt::layers_backward(const std::vector<int>& layers, Ref dres, ParamSource& params,
                          ActivationStore& acts, const DropoutSeeds* rng) {
  const ScopedKernelScratch scratch(kernel_scratch_binding_);
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) {
    const int i = *it;
    const ActivationStore::Restored r = acts.begin_backward(i);
    if (r.recompute) {
      // The store kept only the checkpointed span's input: replay the span's forward (the same
      // dropout masks: they are a function of the sample, not of when they are drawn).
      CRef x = r.recompute_input;
      moe_host_.recording = false;
      for (int j = r.recompute_from; j <= i; ++j) {
        LayerActivations& a = acts.begin_forward(j);
        layer_forward(dims_, params, layers_[static_cast<size_t>(j)], x, a, scratch_,
                      dropout(j, rng), j);
        x = a.out;
      }
    }
    layer_backward(dims_, params, layers_[static_cast<size_t>(i)], r.input, *r.acts, scratch_,
                   dropout(i, rng), dres);
  }
}

void Gpt::backward(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                   const DropoutSeeds* rng) {
  const int N = dims_.N(), C = dims_.C;
  // The residual stream's gradient: this rank's rows of dres_ (all of them without sequence
  // parallelism), where the all-gather before the embedding's backward expects them.
  const Ref dres = dres_ + dims_.first_row * C;
  head_backward(params, dres);
  layers_backward(chunk_layers_.front(), dres, params, acts, rng);
  if (dims_.sequence_parallel) tp::sequence_scatter_backward(be_, dims_.tp, dres_, dres, N, C);
  embedding_grads(tokens, params);
}

double Gpt::chunk_forward(const ChunkIO& io, float dloss, ParamSource& params,
                          ActivationStore& acts, const DropoutSeeds* rng) {
  const int C = dims_.C;
  const int64_t rows = int64_t{dims_.Nl} * C;
  const bool first = embeds_ && io.chunk == 0, last = heads_ && io.chunk == part_.chunks - 1;
  moe_host_.dloss = dloss;
  if (first) {
    embed(io.tokens, params);
    be_.copy(io.input.p, (CRef(embed_out_) + dims_.first_row * C).p, io.input.bytes(rows));
  }
  const CRef out =
      layers_forward(chunk_layers_[static_cast<size_t>(io.chunk)], io.input, params, acts, rng);
  if (!last) {
    be_.copy(io.output.p, out.p, out.bytes(rows));
    return 0;
  }
  head_forward(out, params);
  const double l = loss(io.targets, dloss);
  if (rng == nullptr) return l;
  // The head's and the final layernorm's backward now: only the gradient of the last layer's
  // output waits for this micro-batch's backward, not the logits.
  head_backward(params, io.output);
  embedding_grads(nullptr, params);
  return l;
}

void Gpt::chunk_backward(const ChunkIO& io, CRef dout, Ref dinput, ParamSource& params,
                         ActivationStore& acts, const DropoutSeeds& rng) {
  const int N = dims_.N(), C = dims_.C;
  const int64_t rows = int64_t{dims_.Nl} * C;
  const bool first = embeds_ && io.chunk == 0;
  const Ref dres = dres_ + dims_.first_row * C;
  be_.copy(dres.p, dout.p, dout.bytes(rows));
  layers_backward(chunk_layers_[static_cast<size_t>(io.chunk)], dres, params, acts, &rng);
  if (!first) {
    be_.copy(dinput.p, dres.p, dres.bytes(rows));
    return;
  }
  if (dims_.sequence_parallel) tp::sequence_scatter_backward(be_, dims_.tp, dres_, dres, N, C);
  embedding_grads(io.tokens, params);
}

void Gpt::embedding_grads(const int32_t* tokens, ParamSource& params) {
  const int N = dims_.N(), C = dims_.C, B = dims_.B, T = dims_.T;
  // The embedding's part (first stage): position rows first (they follow the word embedding in
  // the layout), Σ over samples. A context rank adds its tokens' positions only; the data group's
  // sum adds the others'.
  const bool positions = embeds_ && wpe_.present();
  const int64_t pstep = positions ? wpe_.chunk(params) : 1;
  for (int64_t t0 = (wpe_.rows - 1) / pstep * pstep; positions && t0 >= 0; t0 -= pstep) {
    const int64_t n = std::min(pstep, wpe_.rows - t0);
    const GradSpan g(params, wpe_.row_span(t0, n));
    if (n == T && !dims_.cp.active()) {
      be_.embedding_backward(nullptr, g.get(), dres_, tokens, B, T, C, 0, 0);
      continue;
    }
    // Run by run, sample after sample: the same order of additions.
    for_each_run_in(dims_.cp, 0, N, t0, n, [&](int64_t at, int64_t pos, int64_t count) {
      be_.embedding_backward(nullptr, g.get() + pos * C, dres_ + at * C, tokens + at, 1,
                             static_cast<int>(count), C, 0, 0);
    });
  }
  // The word embedding's gradient: the lookup's rows (first stage) and, tied, the head's
  // product (last stage). An untied head made its own in head_backward.
  const bool head = heads_ && !out_.present();
  if (!embeds_ && !head) return;
  const int64_t step = wte_.chunk(params);
  for (int64_t r = (wte_.rows - 1) / step * step; r >= 0; r -= step) {
    const int64_t n = std::min(step, wte_.rows - r);
    const GradSpan g(params, wte_.row_span(r, n));
    if (head && n == wte_.rows)
      be_.linear_backward(Ref(nullptr, logits_.t), g.get(), nullptr, logits_, lnf_out_,
                          CRef(nullptr, logits_.t), N, C, vocab_local_, false);
    else if (head)
      be_.gemm(true, false, static_cast<int>(n), C, N, 1.0f, CRef(logits_) + r, vocab_local_,
               lnf_out_, C, 1.0f, g.get(), C);
    if (embeds_)
      be_.embedding_backward(g.get(), nullptr, dres_, tokens, B, T, C,
                             vocab_begin_ + static_cast<int>(r), static_cast<int>(n));
  }
}

double Gpt::forward_backward(const int32_t* tokens, const int32_t* targets, float dloss,
                             ParamSource& params, ActivationStore& acts, const DropoutSeeds& rng) {
  const double loss = forward(tokens, targets, dloss, params, acts, &rng);
  backward(tokens, params, acts, &rng);
  return loss;
}

void Gpt::forward_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                         float* out) {
  forward_to_logits(tokens, params, acts, nullptr);
  const int64_t n = int64_t{dims_.N()} * vocab_local_;
  be_.copy_to_host(out, logits_.p, logits_.bytes(n));
  // Half logits land in the front of `out`; widen them in place from the back (element i moves
  // from byte 2i to byte 4i, so no element is overwritten before it is read).
  if (logits_.t != DType::F32)
    visit_dtype(logits_.t, [&](auto t) {
      const auto* h = reinterpret_cast<const decltype(t)*>(out);
      for (int64_t i = n - 1; i >= 0; --i) out[i] = to_float(h[i]);
    });
}

double Gpt::forward_loss(const int32_t* tokens, const int32_t* targets, ParamSource& params,
                         ActivationStore& acts) {
  return forward(tokens, targets, 0.0f, params, acts, nullptr);
}

}  // namespace zt
