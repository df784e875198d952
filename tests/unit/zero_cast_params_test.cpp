// Stage 0 without a half working copy (--working-params cast, src/zero/cast_params.h) against the
// stored copy: the same losses, gradients, gradient norms and master parameters, bit for bit,
// over several optimizer steps — the stored copy is the master rounded by the same kernel after
// each step, the cast store rounds the same master on each acquire. And the arena is exactly
// what the model holds at once (Gpt::held_params_elems): the model fills it, never more.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "src/config/derive.h"
#include "src/core/half.h"
#include "src/core/memory_pool.h"
#include "src/data/mock_data.h"
#include "src/generate/text_sample.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/zero/cast_params.h"
#include "src/zero/zero_optimizer.h"
#include "tests/support/model_rig.h"
#include "tests/support/tiny_gpt.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

constexpr int kBatch = 2;

// One model, optimizer and activation store: the working parameters stored or cast.
struct Trained : test::ModelRig {
  Trained(const GptConfig& c, DType working, int64_t bucket, bool cast)
      : ModelRig(with_dtype(c, working), kBatch, working, 7,
                 zero_config(with_dtype(c, working), bucket, cast)) {}
  static GptConfig with_dtype(GptConfig c, DType working) {
    c.dtype = working;  // the model computes in the working precision
    return c;
  }
  static ZeroConfig zero_config(const GptConfig& c, int64_t bucket, bool cast) {
    ZeroConfig z;
    z.reduce_bucket_elems = bucket;
    z.cast_params = cast;
    if (cast) z.held_params_elems = Gpt::held_params_elems(c, ParamLayout::gpt(c), bucket);
    return z;
  }
};

std::vector<char> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const char*>(t.data());
  return {p, p + t.bytes()};
}

struct Case {
  const char* name;
  GptConfig config;
  int64_t bucket;  // the reduce bucket: the longest span the model acquires
};

std::vector<Case> cases() {
  GptConfig dropout = test::tiny_gpt(0.1f);
  return {{"gpt", test::tiny_gpt(), 500'000'000},
          {"gpt chunked", test::tiny_gpt(), 100},  // weights in chunks of whole rows
          {"gpt dropout", dropout, 500'000'000},
          {"llama", test::tiny_llama(2), 500'000'000},
          {"llama chunked", test::tiny_llama(2), 70}};
}

TEST(CastParams, BitwiseTheStoredCopy) {
  for (const Case& k : cases())
    for (DType working : {DType::BF16, DType::F16}) {
      const std::string what = std::string(k.name) + " " + std::string(dtype_name(working));
      Trained stored(k.config, working, k.bucket, false), cast(k.config, working, k.bucket, true);
      ASSERT_EQ(stored.opt.cast_stats(), nullptr);
      ASSERT_NE(cast.opt.cast_stats(), nullptr);
      const int T = k.config.seq_length;
      std::vector<int32_t> tokens(static_cast<size_t>(kBatch * T)), targets(tokens.size());
      MockData data(3, T, k.config.vocab_size);
      const float scale = working == DType::F16 ? 1024.0f : 1.0f;
      for (int step = 0; step < 4; ++step) {
        for (int b = 0; b < kBatch; ++b)
          data.sample(step * kBatch + b, tokens.data() + b * T, targets.data() + b * T);
        double loss[2];
        StepResult r[2];
        int i = 0;
        for (Trained* run : {&stored, &cast}) {
          run->opt.zero_grad();
          const DropoutSeeds rng{11, step * kBatch};
          loss[i] = run->model.forward_backward(tokens.data(), targets.data(),
                                                scale / static_cast<float>(tokens.size()), run->opt,
                                                run->acts, rng);
          ++i;
        }
        EXPECT_EQ(loss[0], loss[1]) << what << ", step " << step;
        EXPECT_EQ(bytes_of(stored.opt.working_grads()), bytes_of(cast.opt.working_grads()))
            << what << ", step " << step << ": gradients";
        r[0] = stored.opt.step(1e-2, scale);
        r[1] = cast.opt.step(1e-2, scale);
        EXPECT_EQ(r[0].grad_norm, r[1].grad_norm) << what << ", step " << step;
        EXPECT_EQ(r[0].skipped, r[1].skipped) << what << ", step " << step;
        EXPECT_EQ(bytes_of(stored.opt.master_params()), bytes_of(cast.opt.master_params()))
            << what << ", step " << step << ": master parameters";
      }
      // No working copy: the store holds the arena only, and the pool shows it.
      EXPECT_EQ(cast.pool.peak(MemCategory::Params), 0u) << what;
      EXPECT_EQ(stored.pool.peak(MemCategory::Params),
                static_cast<size_t>(stored.layout.numel()) * dtype_size(working))
          << what;
      EXPECT_EQ(cast.pool.peak(MemCategory::Buffers) - stored.pool.peak(MemCategory::Buffers),
                CastParams::arena_bytes(cast.opt.cast_stats()->arena_elems, working))
          << what;
    }
}

// The bound is exact: forward and backward hold that many elements at some point (the arena is
// not larger than it must be), and never more (acquire would throw).
TEST(CastParams, TheArenaIsWhatTheModelHoldsAtOnce) {
  for (const Case& k : cases()) {
    Trained cast(k.config, DType::BF16, k.bucket, true);
    const int T = k.config.seq_length;
    std::vector<int32_t> tokens(static_cast<size_t>(kBatch * T)), targets(tokens.size());
    MockData data(3, T, k.config.vocab_size);
    for (int b = 0; b < kBatch; ++b) data.sample(b, tokens.data() + b * T, targets.data() + b * T);
    cast.opt.zero_grad();
    cast.model.forward_backward(tokens.data(), targets.data(), 1.0f, cast.opt, cast.acts, {});
    const CastStats& s = *cast.opt.cast_stats();
    EXPECT_EQ(s.arena_elems, Gpt::held_params_elems(k.config, cast.layout, k.bucket)) << k.name;
    EXPECT_EQ(s.peak_elems, s.arena_elems) << k.name;
    // Forward acquires every parameter once (the tied word embedding twice: lookup and head),
    // backward the ones it needs again.
    EXPECT_GT(s.cast_elems, cast.layout.numel()) << k.name;
    EXPECT_LT(s.cast_elems, 3 * cast.layout.numel()) << k.name;
  }
}

// Generation during training (--sample-interval) reaches the parameters through the optimizer:
// the same text from the cast store, within its arena.
TEST(CastParams, SamplesTheSameText) {
  const GptConfig c = test::tiny_gpt();
  Trained stored(c, DType::BF16, 100, false), cast(c, DType::BF16, 100, true);
  TrainOptions o = test::small_gpt(0, 1);
  const TextSample sample(o);
  const std::string a =
      sample.run(stored.config, stored.layout, stored.opt, stored.pool, nullptr, [] {});
  const std::string b = sample.run(cast.config, cast.layout, cast.opt, cast.pool, nullptr, [] {});
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_LE(cast.opt.cast_stats()->peak_elems, cast.opt.cast_stats()->arena_elems);
}

// Spans are released in any order (the room frees once every later span is released), and
// holding more than the arena fails with a message rather than writing past it.
TEST(CastParams, ReleasesInAnyOrderAndRefusesMoreThanItsArena) {
  const GptConfig c = test::tiny_gpt();
  const ParamLayout layout = ParamLayout::gpt(c);
  MemoryPool pool(make_host_allocator());
  std::vector<float> master(static_cast<size_t>(layout.numel()));
  for (size_t i = 0; i < master.size(); ++i) master[i] = 0.001f * static_cast<float>(i);
  CastParams store(layout, DType::BF16, pool, 100, master.data());
  const Span a{0, 0, 40}, b{0, 40, 50}, big{0, 0, 101};
  const CRef pa = store.acquire(a);
  const CRef pb = store.acquire(b);
  EXPECT_EQ(static_cast<const bf16*>(pb.p)[3].bits, to_bf16(master[43]).bits);
  EXPECT_THROW(store.acquire(Span{0, 90, 20}), Error);  // 90 held, 20 more
  store.release(a);                                     // below b: its room stays taken
  EXPECT_THROW(store.acquire(Span{0, 90, 20}), Error);
  store.release(b);
  const CRef pc = store.acquire(Span{0, 90, 20});
  EXPECT_EQ(pc.p, pa.p);  // all free again: from the start
  store.release(Span{0, 90, 20});
  EXPECT_THROW(store.acquire(big), Error);
  EXPECT_THROW(store.release(a), Error);  // not held
  EXPECT_EQ(store.cast_stats()->peak_elems, 90);
}

TEST(CastParams, RefusedWhereItMeansNothing) {
  TrainOptions o = test::small_gpt(0, 1);
  o.working_params = "cast";
  EXPECT_THROW(validate_train_options(o, 1), InputError);  // fp32
  o.bf16 = true;
  validate_train_options(o, 1);
  for (int stage = 1; stage <= 3; ++stage) {
    o.zero_stage = stage;
    EXPECT_THROW(validate_train_options(o, 1), InputError) << "stage " << stage;
  }
}

}  // namespace
}  // namespace zt
