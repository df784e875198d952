#pragma once
// A small training loop for the tensor-parallel tests: Gpt + stage-0 ZeroOptimizer on one
// rank's (tp, dp) share, with the data-parallel gradient all-reduce done here, so the tests
// exercise the model's tensor parallelism independently of the trainer. tp = 1, dp = 1 (both
// groups null) is the reference every layout must reproduce.
#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/common/dropout.h"
#include "src/comm/communicator.h"
#include "src/core/memory_pool.h"
#include "src/model/activation_store.h"
#include "src/model/gpt.h"
#include "src/tensor_parallel/mappings.h"
#include "src/zero/zero_optimizer.h"

namespace zt::dist {

struct TpRunConfig {
  GptConfig model;       // padded_vocab_size is recomputed for the tp size
  int divisible_by = 8;  // --make-vocab-size-divisible-by
  int micro_batch = 2;
  int global_batch = 8;
  double lr = 3e-3;
  uint64_t seed = 1234;
  bool dropout_seeds = true;  // pass DropoutSeeds (dropout applies where config has p > 0)
};

inline GptConfig tp_test_model(float dropout) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.seq_length = 16;
  c.vocab_size = 50;  // padded to 56 (tp 1), 64 (tp 2, tp 4): padding differs, the losses not
  c.attention_dropout = dropout;
  c.hidden_dropout = dropout;
  return c;
}

// Sample `index` of a deterministic learnable stream: counting runs from a random start.
inline void test_sample(int64_t index, int T, int vocab, int32_t* tokens, int32_t* targets) {
  const uint64_t s = mix64(0x7470ull, static_cast<uint64_t>(index));
  const int32_t start = static_cast<int32_t>(s % static_cast<uint64_t>(vocab));
  for (int t = 0; t < T; ++t) {
    tokens[t] = (start + t) % vocab;
    targets[t] =
        (start + t + 1 + static_cast<int32_t>(mix64(s, static_cast<uint64_t>(t)) % 4 == 0)) % vocab;
  }
}

// The squared global gradient norm of a tensor-parallel model from this rank's shares, without
// double counting: the split parameters' part summed over `tp` (host memory), the replicated
// part (the same on every rank) once. The reduction is fp32: one rounding of the sum.
inline double tp_grad_sum_squares(comm::Communicator* tp, double split_local,
                                  double replicated_local) {
  if (!tp::active(tp)) return split_local + replicated_local;
  float part = static_cast<float>(split_local);
  tp::all_reduce(cpu_backend(), tp, &part, 1);
  return static_cast<double>(part) + replicated_local;
}

class TpRun {
 public:
  // tp / dp: this rank's groups (null: size 1).
  TpRun(const TpRunConfig& rc, comm::Communicator* tp, comm::Communicator* dp, MemoryPool& pool)
      : rc_(rc),
        tp_(tp),
        dp_(dp),
        tp_size_(tp ? tp->size() : 1),
        tp_rank_(tp ? tp->rank() : 0),
        dp_size_(dp ? dp->size() : 1),
        dp_rank_(dp ? dp->rank() : 0),
        config_(with_padding(rc.model, rc.divisible_by, tp_size_)),
        layout_(ParamLayout::gpt(config_, tp_size_, tp_rank_)),
        opt_(layout_, DType::F32, adam(), pool, rc.seed),
        acts_(pool, config_, rc.micro_batch, tp_size_),
        model_(config_, layout_, rc.micro_batch, pool, tp),
        tokens_(static_cast<size_t>(rc.micro_batch * config_.seq_length)),
        targets_(tokens_.size()) {}

  static GptConfig with_padding(GptConfig c, int divisible_by, int tp) {
    c.padded_vocab_size = padded_vocab_size(c.vocab_size, divisible_by, tp);
    return c;
  }
  static AdamConfig adam() {
    AdamConfig a;
    a.weight_decay = 0.01;
    a.clip_grad = 0;  // the optimizer's own norm is per rank; clipping is tested separately
    return a;
  }

  // Forward and backward of the whole global batch (this rank's share), gradients reduced over
  // dp. Returns the global batch's mean loss (identical on every rank).
  double forward_backward(int64_t iteration) {
    const int mb = rc_.micro_batch, T = config_.seq_length;
    const int accumulation = rc_.global_batch / (mb * dp_size_);
    const float dloss = 1.0f / static_cast<float>(int64_t{rc_.global_batch} * T);
    opt_.zero_grad();
    double loss = 0;
    for (int m = 0; m < accumulation; ++m) {
      const int64_t first =
          iteration * rc_.global_batch + int64_t{m} * mb * dp_size_ + int64_t{dp_rank_} * mb;
      for (int j = 0; j < mb; ++j)
        test_sample(first + j, T, config_.vocab_size, tokens_.data() + j * T,
                    targets_.data() + j * T);
      loss += model_.forward_backward(tokens_.data(), targets_.data(), dloss, opt_, acts_,
                                      DropoutSeeds{rc_.seed, first});
    }
    loss /= accumulation;
    if (dp_ != nullptr && dp_size_ > 1) {
      dp_->all_reduce(opt_.working_grads());
      float l = static_cast<float>(loss);
      dp_->all_reduce(Tensor(&l, Shape{1}, DType::F32));
      loss = static_cast<double>(l) / dp_size_;
    }
    return loss;
  }
  double train_step(int64_t iteration) {
    const double loss = forward_backward(iteration);
    opt_.step(rc_.lr, 1.0);
    return loss;
  }

  const GptConfig& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  ZeroOptimizer& optimizer() { return opt_; }
  Gpt& model() { return model_; }

 private:
  TpRunConfig rc_;
  comm::Communicator* tp_;
  comm::Communicator* dp_;
  int tp_size_, tp_rank_, dp_size_, dp_rank_;
  GptConfig config_;
  ParamLayout layout_;
  ZeroOptimizer opt_;
  KeepAllActivations acts_;
  Gpt model_;
  std::vector<int32_t> tokens_, targets_;
};

// The full (tp = 1) tensors of a flat buffer sharded by `layout` over the tp group: every rank's
// shard is all-gathered and each element put at its full index. Also checks that replicated
// parameters are bitwise identical across ranks (returns false in `replicas_equal` otherwise).
inline std::vector<std::vector<float>> gather_full(comm::Communicator* tp, const GptConfig& c,
                                                   const ParamLayout& layout, const float* local,
                                                   bool* replicas_equal) {
  const int n = tp ? tp->size() : 1;
  const int64_t m = layout.numel();
  std::vector<float> all(static_cast<size_t>(m * n));
  std::copy_n(local, m, all.begin() + layout.tp_rank() * m);
  if (n > 1) tp->all_gather(Tensor(all.data(), Shape{m * n}, DType::F32));
  std::vector<std::vector<float>> full;
  *replicas_equal = true;
  for (size_t k = 0; k < layout.params().size(); ++k) {
    std::vector<float> f(static_cast<size_t>(layout.params()[k].full_numel()), 0.0f);
    for (int r = 0; r < n; ++r) {
      const ParamLayout lr = ParamLayout::gpt(c, n, r);
      const ParamSpec& s = lr.params()[k];
      const float* src = all.data() + r * m + s.offset;
      for (int64_t i = 0; i < s.numel(); ++i) {
        float& dst = f[static_cast<size_t>(s.full_index(i))];
        if (r > 0 && s.tp_replicated && dst != src[i]) *replicas_equal = false;
        dst = src[i];
      }
    }
    full.push_back(std::move(f));
  }
  return full;
}

}  // namespace zt::dist
