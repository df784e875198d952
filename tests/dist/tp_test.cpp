// Tensor parallelism reproduces tp = 1: losses over 20 steps (dropout on and off, with data
// parallelism on the remaining ranks), the gathered parameter and gradient shards, the tp-group
// traffic against its formula, and the per-rank parameter memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "src/comm/topology.h"
#include "tests/dist/dist_util.h"
#include "tests/dist/tp_testing.h"

namespace zt::dist {
namespace {

constexpr int kSteps = 20;

// Every tp that divides the world (> 1), with dp = world / tp on the remaining ranks.
std::vector<int> tp_sizes() {
  std::vector<int> out;
  for (int tp = 2; tp <= world().size(); tp *= 2)
    if (world().size() % tp == 0 && tp <= 4) out.push_back(tp);
  return out;
}

std::vector<double> reference_losses(const TpRunConfig& rc) {
  MemoryPool pool(make_host_allocator());
  TpRun run(rc, nullptr, nullptr, pool);
  std::vector<double> out;
  for (int s = 0; s < kSteps; ++s) out.push_back(run.train_step(s));
  return out;
}

// max |got - want| <= rel · max |want| + abs.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, size_t count,
                  double rel, const std::string& what, double abs = 0) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < count; ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(got[i]) - want[i]));
    ref = std::max(ref, std::abs(static_cast<double>(want[i])));
  }
  EXPECT_LE(diff, rel * std::max(ref, 1e-30) + abs) << what;
}

class TensorParallel : public ::testing::TestWithParam<float> {};

TEST_P(TensorParallel, LossesMatchTp1Over20Steps) {
  TpRunConfig rc;
  rc.model = tp_test_model(GetParam());
  const std::vector<double> want = reference_losses(rc);
  EXPECT_LT(want.back(), want.front());  // it trains
  std::vector<int> layouts = tp_sizes();
  layouts.push_back(1);  // tp = 1 × dp = world: the data-parallel loop alone
  for (int tp : layouts) {
    comm::Topology topo(world(), tp);
    MemoryPool pool(make_host_allocator());
    TpRun run(rc, &topo.tp(), &topo.dp(), pool);
    for (int s = 0; s < kSteps; ++s) {
      const double loss = run.train_step(s);
      EXPECT_NEAR(loss, want[static_cast<size_t>(s)], 1e-5 * std::abs(want[static_cast<size_t>(s)]))
          << "tp=" << tp << " dp=" << topo.dp_size() << " step " << s;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dropout, TensorParallel, ::testing::Values(0.0f, 0.1f));

// After init, after one backward and after three steps, the gathered shards are the tp = 1
// tensors (init: bit for bit), and every replicated parameter is bitwise identical on all ranks.
TEST(TensorParallelShards, GatherToTheTp1Tensors) {
  TpRunConfig rc;
  rc.model = tp_test_model(0.1f);
  rc.divisible_by = 16;  // 50 -> 64 for tp 1, 2 and 4: the padded tables line up too
  MemoryPool ref_pool(make_host_allocator());
  TpRun ref(rc, nullptr, nullptr, ref_pool);
  for (int tp : tp_sizes()) {
    if (tp > 2 && world().size() % tp != 0) continue;
    comm::Topology topo(world(), tp);
    MemoryPool pool(make_host_allocator());
    TpRun run(rc, &topo.tp(), nullptr, pool);
    const auto& L = run.layout();
    ASSERT_EQ(run.config().padded_vocab_size, ref.config().padded_vocab_size);
    bool same = false;
    auto p0 =
        gather_full(&topo.tp(), run.config(), L, run.optimizer().master_params().f32(), &same);
    EXPECT_TRUE(same);
    for (size_t k = 0; k < L.params().size(); ++k) {
      const ParamSpec& s = ref.layout().params()[k];
      const float* w = ref.optimizer().master_params().f32() + s.offset;
      EXPECT_TRUE(std::equal(p0[k].begin(), p0[k].end(), w)) << "init of " << s.name;
    }
    // Gradients of one global batch (this rank's dp share is the whole batch: dp group null).
    MemoryPool scratch(make_host_allocator());
    TpRun ref1(rc, nullptr, nullptr, scratch);
    ref1.forward_backward(0);
    run.forward_backward(0);
    auto g = gather_full(&topo.tp(), run.config(), L, run.optimizer().working_grads().f32(), &same);
    EXPECT_TRUE(same) << "replicated gradients differ across tp ranks";
    for (size_t k = 0; k < L.params().size(); ++k) {
      const ParamSpec& s = ref1.layout().params()[k];
      const float* w = ref1.optimizer().working_grads().f32() + s.offset;
      expect_close(g[k], std::vector<float>(w, w + s.numel()), g[k].size(), 1e-5,
                   "gradient of " + s.name + " tp=" + std::to_string(tp));
    }
    // The global gradient norm from the shards, replicated parameters counted once.
    double split = 0, rep = 0, want = 0;
    const float* gl = run.optimizer().working_grads().f32();
    for (const auto& s : L.params())
      for (int64_t i = 0; i < s.numel(); ++i)
        (s.tp_replicated ? rep : split) += double{gl[s.offset + i]} * gl[s.offset + i];
    for (int64_t i = 0; i < ref1.layout().numel(); ++i)
      want += double{ref1.optimizer().working_grads().f32()[i]} *
              ref1.optimizer().working_grads().f32()[i];
    EXPECT_NEAR(tp_grad_sum_squares(&topo.tp(), split, rep), want, 1e-5 * want);
    // Three optimizer steps later the parameters still gather to tp = 1's. Adam divides each
    // gradient by its own magnitude, so an element whose exact gradient is 0 — the key bias:
    // softmax is invariant to q·b_k — moves by lr · noise/(|noise| + eps) with noise the
    // (tp-dependent) fp32 rounding residue (~1e-11 here, eps = 1e-8): up to ~1e-3·lr per step,
    // whatever the parameter's size. Hence an absolute term of 1e-3·lr per step on top of 1e-5
    // relative. (The losses above are what the issue bounds: they agree to 1e-5.)
    ref1.optimizer().step(rc.lr, 1.0);
    run.optimizer().step(rc.lr, 1.0);
    for (int s = 1; s < 3; ++s) {
      ref1.train_step(s);
      run.train_step(s);
    }
    auto p3 =
        gather_full(&topo.tp(), run.config(), L, run.optimizer().master_params().f32(), &same);
    EXPECT_TRUE(same) << "replicated parameters drifted apart";
    for (size_t k = 0; k < L.params().size(); ++k) {
      const ParamSpec& s = ref1.layout().params()[k];
      const float* w = ref1.optimizer().master_params().f32() + s.offset;
      expect_close(p3[k], std::vector<float>(w, w + s.numel()), p3[k].size(), 1e-5,
                   "parameter after 3 steps: " + s.name, 3 * 1e-3 * rc.lr);
    }
  }
}

// tp-group bytes of one micro-batch's forward + backward, from CommStats, against the layer
// design's count. With N = b·s tokens, h = hidden, L layers, every tp collective is an fp32
// all-reduce (bytes = 2·n·4 by the paper's convention, comm_stats.h):
//   per layer: forward  all-reduce [N, h] after attn.proj and after mlp.proj   (2·N·h)
//              backward all-reduce [N, h] before ln2 and before ln1 backward    (2·N·h)
//   embedding: forward all-reduce of the partial lookups [N, h]                  (N·h)
//   head:      backward all-reduce of d(final ln out) [N, h]                     (N·h)
//   cross-entropy: forward all-reduce (Max) of N row maxima, (Sum) of N sum-exps + N target
//              logits                                                          (3·N)
//   bytes = 2 · 4 · ((4L + 2)·N·h + 3N),  calls = 4L + 4.
TEST(TensorParallelComm, BytesPerStepMatchTheFormula) {
  for (int tp : tp_sizes()) {
    comm::Topology topo(world(), tp);
    TpRunConfig rc;
    rc.model = tp_test_model(0.1f);
    rc.global_batch = rc.micro_batch;  // one micro-batch (no dp group passed: dp = 1 here)
    MemoryPool pool(make_host_allocator());
    TpRun run(rc, &topo.tp(), nullptr, pool);
    comm::StepCommMeter meter(topo.stats());
    meter.begin_step();
    run.forward_backward(0);
    const comm::CommSnapshot s = meter.end_step();
    const uint64_t L = static_cast<uint64_t>(rc.model.num_layers);
    const uint64_t N = static_cast<uint64_t>(rc.micro_batch * rc.model.seq_length);
    const uint64_t h = static_cast<uint64_t>(rc.model.hidden);
    const uint64_t elements = (4 * L + 2) * N * h + 3 * N;
    const comm::OpCounters got = s.group(comm::GroupKind::Tp);
    EXPECT_EQ(got.bytes, 2 * 4 * elements) << "tp=" << tp;
    EXPECT_EQ(got.elements, elements) << "tp=" << tp;
    EXPECT_EQ(got.calls, 4 * L + 4) << "tp=" << tp;
    EXPECT_EQ(s.at(comm::GroupKind::Tp, comm::CommOp::AllReduce).calls, got.calls);
    EXPECT_DOUBLE_EQ(got.wire_bytes, 2.0 * (tp - 1.0) / tp * 4.0 * static_cast<double>(elements));
    EXPECT_EQ(s.group(comm::GroupKind::Dp).calls, 0u);
  }
}

// Per-rank parameter memory from the MemoryPool: the split parameters divide by tp, the
// replicated ones (position embedding, layernorms, row-parallel biases, final layernorm:
// s·h + 6h·L + 2h elements) are whole on every rank. Ψ is the model at this tp's padding.
TEST(TensorParallelMemory, ParamsArePsiOverTpPlusReplicated) {
  for (int tp : tp_sizes()) {
    comm::Topology topo(world(), tp);
    TpRunConfig rc;
    rc.model = tp_test_model(0);
    MemoryPool pool(make_host_allocator());
    TpRun run(rc, &topo.tp(), nullptr, pool);
    const GptConfig& c = run.config();
    const int64_t psi = c.num_parameters();
    const int64_t R = int64_t{c.seq_length} * c.hidden + 6 * int64_t{c.hidden} * c.num_layers +
                      2 * int64_t{c.hidden};
    EXPECT_EQ(run.layout().replicated_numel(), R);
    ASSERT_EQ((psi - R) % tp, 0);
    EXPECT_EQ(run.layout().numel(), (psi - R) / tp + R);
    EXPECT_EQ(pool.current(MemCategory::Params), static_cast<size_t>((psi - R) / tp + R) * 4)
        << "tp=" << tp;
    EXPECT_EQ(pool.current(MemCategory::Grads), static_cast<size_t>((psi - R) / tp + R) * 4);
  }
}

TEST(TensorParallelConfig, RejectsShapesThatDoNotSplit) {
  GptConfig c = tp_test_model(0);
  c.padded_vocab_size = padded_vocab_size(c.vocab_size, 8, 8);
  c.heads = 6;
  c.hidden = 48;
  try {
    (void)ParamLayout::gpt(c, 4, 0);
    ADD_FAILURE() << "heads 6 over tp 4 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--num-attention-heads 6 is not divisible by "
                                         "--tensor-model-parallel-size 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(padded_vocab_size(50257, 128, 2), 50432);  // Megatron's GPT-2 padding at tp = 2
  EXPECT_EQ(padded_vocab_size(50, 8, 1), 56);
}

}  // namespace
}  // namespace zt::dist
