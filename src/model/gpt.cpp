#include "src/model/gpt.h"

#include "src/tensor_parallel/mappings.h"
#include "src/tensor_parallel/parallel_linear.h"
#include "src/tensor_parallel/rng_tracker.h"
#include "src/tensor_parallel/vocab_parallel_cross_entropy.h"
#include "src/tensor_parallel/vocab_parallel_embedding.h"

namespace zt {
namespace {}  // namespace

size_t Gpt::arena_bytes(const GptConfig& c, int micro_batch, int tp_size) {
  const size_t n = static_cast<size_t>(micro_batch) * static_cast<size_t>(c.seq_length);
  const size_t h = static_cast<size_t>(c.hidden);
  const size_t v = static_cast<size_t>(c.padded_vocab_size / tp_size);
  const size_t e = dtype_size(c.dtype);
  return Arena::aligned(n * h * e) * 4 + Arena::aligned(n * 4) * 3 + Arena::aligned(n * v * e) +
         (tp_size > 1 ? Arena::aligned(n * 3 * 4) : 0) +
         LayerScratch::bytes(c, micro_batch, tp_size);
}

Gpt::Gpt(const GptConfig& config, const ParamLayout& layout, int micro_batch,
         const DeviceContext& ctx, comm::Communicator* tp)
    : config_(config),
      be_(ctx.backend()),
      dims_(LayerDims::of(config, micro_batch, layout.tp_size(), layout.tp_rank(), tp, be_)),
      arena_(ctx.pool(), arena_bytes(config, micro_batch, layout.tp_size()),
             MemCategory::Activations) {
  ZT_CHECK(tp::size_of(tp) == layout.tp_size() && tp::rank_of(tp) == layout.tp_rank(),
           "the layout is for tp rank {} of {} but the tensor-parallel group has rank {} of {}",
           layout.tp_rank(), layout.tp_size(), tp::rank_of(tp), tp::size_of(tp));
  const tp::VocabRange vr =
      tp::vocab_range(config.padded_vocab_size, layout.tp_size(), layout.tp_rank());
  vocab_begin_ = vr.begin;
  vocab_local_ = vr.local;
  for (int i = 0; i < config.num_layers; ++i) offsets_.push_back(LayerOffsets::from(layout, i));
  const auto& blocks = layout.blocks();
  wpe_offset_ =
      layout.find("embedding.position").offset - blocks[ParamLayout::kEmbeddingBlock].begin;
  lnf_b_offset_ =
      layout.find("final_ln.bias").offset - blocks[static_cast<size_t>(layout.final_block())].begin;
  const int64_t n = dims_.N(), h = config.hidden;
  const DType t = config.dtype;
  auto carve = [&](int64_t elems) { return Ref(arena_.carve({elems}, t).data(), t); };
  embed_out_ = carve(n * h);
  lnf_out_ = carve(n * h);
  dres_ = carve(n * h);
  final_in_ = carve(n * h);
  lnf_mean_ = arena_.carve({n}, DType::F32).f32();
  lnf_rstd_ = arena_.carve({n}, DType::F32).f32();
  losses_ = arena_.carve({n}, DType::F32).f32();
  logits_ = carve(n * vocab_local_);
  if (layout.tp_size() > 1) ce_scratch_ = arena_.carve({3 * n}, DType::F32).f32();
  scratch_ = LayerScratch::carve(arena_, config, micro_batch, layout.tp_size());
  if (ctx.needs_staging()) {
    const int64_t ce = layout.tp_size() > 1 ? tp::host_scratch_floats(dims_.N(), vocab_local_) : 0;
    host_staging_ = ctx.host().allocate({n + ce}, DType::F32, MemCategory::Buffers);
    losses_host_ = static_cast<float*>(host_staging_.data());
    if (ce > 0) ce_host_ = losses_host_ + n;
  }
}

LayerDropout Gpt::dropout(int layer, const DropoutSeeds* rng) const {
  LayerDropout d;
  if (rng == nullptr) return d;
  // Masks are indexed by (global sample, position in the full tensor), so a sample gets the
  // same mask whatever micro-batch, data-parallel rank or tensor-parallel split it lands in
  // (tensor_parallel/rng_tracker.h).
  const tp::RngTracker rt(rng->seed, rng->first_sample);
  const uint64_t n = static_cast<uint64_t>(dims_.T) * static_cast<uint64_t>(dims_.C);
  const uint64_t att = static_cast<uint64_t>(dims_.heads_total) * static_cast<uint64_t>(dims_.T) *
                       static_cast<uint64_t>(dims_.T);
  const uint64_t site = 3 * static_cast<uint64_t>(layer);
  d.attention = rt.mask(site, config_.attention_dropout, att);
  d.attn_out = rt.mask(site + 1, config_.hidden_dropout, n);
  d.mlp_out = rt.mask(site + 2, config_.hidden_dropout, n);
  return d;
}

void Gpt::forward_to_logits(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                            const DropoutSeeds* rng) {
  const int N = dims_.N(), C = dims_.C, L = config_.num_layers;
  const tp::VocabRange vr{vocab_begin_, vocab_local_};
  {
    const CRef e = params.acquire(ParamLayout::kEmbeddingBlock);
    tp::vocab_parallel_embedding_forward(be_, dims_.tp, embed_out_, tokens, e, e + wpe_offset_,
                                         dims_.B, dims_.T, C, vr);
    params.release(ParamLayout::kEmbeddingBlock);
  }
  CRef x = embed_out_;
  for (int i = 0; i < L; ++i) {
    const int block = ParamLayout::layer_block(i);
    const CRef base = params.acquire(block);
    LayerActivations& a = acts.begin_forward(i);
    layer_forward(dims_, offsets_[static_cast<size_t>(i)].at(base), x, a, scratch_,
                  dropout(i, rng));
    acts.end_forward(i, x);
    params.release(block);
    x = a.out;
  }
  // The final layernorm's input is kept by the model: a checkpointing store need not keep the
  // last layer's output.
  be_.copy(final_in_.p, x.p, x.bytes(int64_t{N} * C));
  const int fb = L + 1;
  const CRef lnf = params.acquire(fb);
  be_.layernorm_forward(lnf_out_, lnf_mean_, lnf_rstd_, final_in_, lnf, lnf + lnf_b_offset_, N, C);
  params.release(fb);
  // The head tied to this rank's vocabulary shard: column-parallel, copy-to-TP on its input.
  const CRef wte = params.acquire(ParamLayout::kEmbeddingBlock);
  tp::copy_to_tp_forward(be_, dims_.tp, lnf_out_, int64_t{N} * C);
  tp::column_parallel_forward(be_, logits_, lnf_out_, wte, CRef(nullptr, wte.t), N, C, vr.local);
  params.release(ParamLayout::kEmbeddingBlock);
}

double Gpt::forward(const int32_t* tokens, const int32_t* targets, float dloss, ParamSource& params,
                    ActivationStore& acts, const DropoutSeeds* rng) {
  const int N = dims_.N();
  forward_to_logits(tokens, params, acts, rng);
  if (tp::active(dims_.tp))
    tp::vocab_parallel_cross_entropy(be_, dims_.tp, logits_, losses_, targets, N,
                                     {vocab_begin_, vocab_local_}, config_.vocab_size, dloss,
                                     ce_scratch_, ce_host_);
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

void Gpt::backward(const int32_t* tokens, ParamSource& params, ActivationStore& acts,
                   const DropoutSeeds* rng) {
  const int N = dims_.N(), C = dims_.C, L = config_.num_layers;
  const tp::VocabRange vr{vocab_begin_, vocab_local_};
  const int eb = ParamLayout::kEmbeddingBlock, fb = L + 1;
  // Head: logits = lnf_out · wteᵀ, so d(lnf_out) = dlogits · wte and d(wte) += dlogitsᵀ · lnf_out;
  // with tp each rank's shard gives a partial d(lnf_out), all-reduced (copy-to-TP backward).
  {
    const CRef wte = params.acquire(eb);
    float* gwte = params.grads(eb);
    tp::column_parallel_backward(be_, dims_.tp, scratch_.d_a, gwte, nullptr, logits_, lnf_out_, wte,
                                 N, C, vr.local);
    params.release(eb);
  }
  {
    const CRef lnf = params.acquire(fb);
    float* g = params.grads(fb);
    be_.fill_zero(dres_.p, dres_.bytes(int64_t{N} * C));
    be_.layernorm_backward(dres_, g, g + lnf_b_offset_, scratch_.d_a, final_in_, lnf, lnf_mean_,
                           lnf_rstd_, N, C);
    params.grads_done(fb);
    params.release(fb);
  }
  for (int i = L - 1; i >= 0; --i) {
    const ActivationStore::Restored r = acts.begin_backward(i);
    if (r.recompute) {
      // The store kept only the checkpointed span's input: replay the span's forward (the same
      // dropout masks: they are a function of the sample, not of when they are drawn).
      CRef x = r.recompute_input;
      for (int j = r.recompute_from; j <= i; ++j) {
        const int bj = ParamLayout::layer_block(j);
        const CRef bp = params.acquire(bj);
        LayerActivations& a = acts.begin_forward(j);
        layer_forward(dims_, offsets_[static_cast<size_t>(j)].at(bp), x, a, scratch_,
                      dropout(j, rng));
        params.release(bj);
        x = a.out;
      }
    }
    const int block = ParamLayout::layer_block(i);
    const LayerOffsets& off = offsets_[static_cast<size_t>(i)];
    const LayerParams p = off.at(params.acquire(block));
    const LayerDropout drop = dropout(i, rng);
    layer_backward(dims_, p, off.at(params.grads(block)), r.input, *r.acts, scratch_, drop, dres_);
    params.grads_done(block);
    params.release(block);
  }
  float* g = params.grads(eb);
  tp::vocab_parallel_embedding_backward(be_, g, g + wpe_offset_, dres_, tokens, dims_.B, dims_.T, C,
                                        vr);
  params.grads_done(eb);
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
