// The PyTorch reference (tests/reference/make_reference.py, fp32) at tensor-parallel size 2:
// every rank loads its shards of the dumped full tensors through ParamSpec::full_index and
// compares its local logits, losses, gradient shards, the global gradient norm and the
// parameters after three AdamW steps against the same slices of the dump. Tolerances are the
// tp = 1 test's (tests/reference/reference_test.cpp): max |diff| <= 1e-4 · max |reference|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cpu/ops.h"
#include "src/comm/topology.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/zero/zero_optimizer.h"
#include "tests/dist/dist_env.h"
#include "tests/dist/tp_testing.h"
#include "tests/reference/reference_file.h"

namespace zt::dist {
namespace {

constexpr int kTp = 2;

// max over the local shard of |local[i] - full[full_index(i)]|, over max |full|.
double shard_error(const float* local, const ParamSpec& s, const std::vector<float>& full) {
  double diff = 0, ref = 0;
  for (float x : full) ref = std::max(ref, static_cast<double>(std::abs(x)));
  for (int64_t i = 0; i < s.numel(); ++i)
    diff = std::max(
        diff, std::abs(static_cast<double>(local[i]) - full[static_cast<size_t>(s.full_index(i))]));
  return diff / std::max(ref, 1e-30);
}

TEST(TensorParallelReference, Fp32MatchesPyTorchAtTp2) {
  const auto ref = test::ReferenceFile::load(ZT_REFERENCE_FILE);
  const auto& c = ref.config();
  GptConfig cfg;
  cfg.num_layers = c.at("n_layer").get<int>();
  cfg.hidden = c.at("n_embd").get<int>();
  cfg.heads = c.at("n_head").get<int>();
  cfg.seq_length = c.at("seq_len").get<int>();
  cfg.vocab_size = c.at("vocab_size").get<int>();
  cfg.padded_vocab_size = c.at("padded_vocab_size").get<int>();
  const int batch = c.at("batch_size").get<int>();
  const double lr = c.at("lr").get<double>(), clip = c.at("clip_grad").get<double>();
  AdamConfig adam;
  adam.beta1 = c.at("beta1").get<double>();
  adam.beta2 = c.at("beta2").get<double>();
  adam.eps = c.at("eps").get<double>();
  adam.weight_decay = c.at("weight_decay").get<double>();
  adam.clip_grad = 0;  // clipped here with the tensor-parallel norm (see below)

  comm::Topology topo(world(), kTp);  // dp = world / 2 replicas, each runs the same batch
  const ParamLayout layout = ParamLayout::gpt(cfg, kTp, topo.tp_rank());
  MemoryPool pool(make_host_allocator());
  ZeroOptimizer opt(layout, DType::F32, adam, pool, 0);
  float* master = opt.master_params().f32();
  for (const auto& p : layout.params()) {
    const auto t = ref.f32("param/" + p.name);
    ASSERT_EQ(t.numel(), p.full_numel()) << p.name;
    for (int64_t i = 0; i < p.numel(); ++i)
      master[p.offset + i] = t.data[static_cast<size_t>(p.full_index(i))];
  }
  KeepAllActivations acts(pool, cfg, batch, kTp);
  Gpt model(cfg, layout, batch, pool, &topo.tp());
  const auto tokens = ref.i32("input/tokens").data;
  const auto targets = ref.i32("input/targets").data;
  const int N = batch * cfg.seq_length, Vl = cfg.padded_vocab_size / kTp;

  // Local logits: columns [tp_rank·Vl, (tp_rank+1)·Vl) of the reference's.
  std::vector<float> logits(static_cast<size_t>(N) * Vl);
  model.forward_logits(tokens.data(), opt, acts, logits.data());
  const auto full_logits = ref.f32("out/logits").data;
  double diff = 0, mx = 0;
  for (int n = 0; n < N; ++n)
    for (int v = 0; v < Vl; ++v) {
      const float r = full_logits[static_cast<size_t>(n) * cfg.padded_vocab_size +
                                  static_cast<size_t>(topo.tp_rank() * Vl + v)];
      diff = std::max(diff,
                      std::abs(static_cast<double>(
                                   logits[static_cast<size_t>(n) * Vl + static_cast<size_t>(v)]) -
                               r));
      mx = std::max(mx, static_cast<double>(std::abs(r)));
    }
  EXPECT_LE(diff, 1e-4 * mx) << "logits";

  const auto losses = ref.f32("out/losses").data;
  for (size_t step = 0; step < losses.size(); ++step) {
    opt.zero_grad();
    const double loss =
        model.forward_backward(tokens.data(), targets.data(), 1.0f / N, opt, acts, DropoutSeeds{});
    EXPECT_NEAR(loss, losses[step], 1e-5 * std::abs(losses[step])) << "step " << step;
    float* g = opt.working_grads().f32();
    if (step == 0) {
      for (const auto& p : layout.params())
        EXPECT_LE(shard_error(g + p.offset, p, ref.f32("grad/" + p.name).data), 1e-4)
            << "gradient of " << p.name;
    }
    // The global norm without double counting the replicated parameters; clipping applied as
    // torch.nn.utils.clip_grad_norm_ does (the optimizer's own norm is this rank's only).
    double split = 0, rep = 0;
    for (const auto& p : layout.params())
      (p.tp_replicated ? rep : split) += cpu::Kernels::sum_squares(g + p.offset, p.numel());
    const double norm = std::sqrt(tp_grad_sum_squares(&topo.tp(), split, rep));
    if (step == 0) {
      EXPECT_NEAR(norm, ref.f32("out/grad_norm").data[0], 1e-4 * norm);
    }
    const double coef = std::min(1.0, clip / (norm + 1e-6));
    if (coef < 1.0) cpu::Kernels::scale_inplace(g, static_cast<float>(coef), layout.numel());
    ASSERT_FALSE(opt.step(lr, 1.0).skipped);
  }
  for (const auto& p : layout.params())
    EXPECT_LE(shard_error(opt.master_params().f32() + p.offset, p, ref.f32("step3/" + p.name).data),
              1e-4)
        << "parameter after 3 steps: " << p.name;
}

}  // namespace
}  // namespace zt::dist
