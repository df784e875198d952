#pragma once
// Shared fixture of the trainer-level multi-rank tests: a run of zerotron train's code path
// (Trainer) under a layout, its per-step metrics and its final fp32 master parameters. The
// models they train are tests/support/train_options.h's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/comm/self_communicator.h"
#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/step_metrics.h"
#include "tests/support/train_options.h"

namespace zt::dist {

struct TrainResult {
  std::vector<StepMetrics> steps;
  std::vector<float> master;  // the rank's tensor-parallel shard, gathered over dp, layout order
};

// `distributed`: on the world (tp = o.tensor_model_parallel_size, dp = world / tp); otherwise
// this rank alone (tp = dp = 1) in its own pool — the reference a layout must reproduce. `hooks`:
// what the run calls at its hook points (a test's injected fault).
inline TrainResult train_run(const TrainOptions& o, bool distributed = true,
                             TrainerHooks hooks = {}) {
  MemoryPool local(make_host_allocator());
  comm::SelfWorld alone;
  std::unique_ptr<comm::Topology> topo;
  if (distributed) topo = std::make_unique<comm::Topology>(world(), o.tensor_model_parallel_size);
  Trainer t(o, distributed ? pool() : local, distributed ? *topo : alone.topology());
  t.set_hooks(std::move(hooks));
  TrainResult r;
  r.steps = t.run(false);
  r.master.resize(static_cast<size_t>(t.optimizer().layout().numel()));
  t.optimizer().gather_master(r.master.data());
  return r;
}

inline double rel(double a, double b) {
  return a == b ? 0.0 : std::abs(a - b) / std::abs(b);
}

// A layout's steps against the reference's: each step's loss within `loss_tol` relative, its
// gradient norm within `norm_tol` (0: not compared; skipped steps have none) and the same skips.
// Returns the largest relative loss deviation.
inline double expect_close(const std::vector<StepMetrics>& got,
                           const std::vector<StepMetrics>& want, double loss_tol, double norm_tol,
                           const std::string& where) {
  EXPECT_EQ(got.size(), want.size()) << where;
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, rel(got[i].lm_loss, want[i].lm_loss));
    EXPECT_LE(rel(got[i].lm_loss, want[i].lm_loss), loss_tol) << where << " step " << i + 1;
    if (norm_tol > 0 && !want[i].skipped) {
      EXPECT_LE(rel(got[i].grad_norm, want[i].grad_norm), norm_tol) << where << " step " << i + 1;
    }
    EXPECT_EQ(got[i].skipped, want[i].skipped) << where << " step " << i + 1;
  }
  return worst;
}

inline std::string precision_name(const TrainOptions& o) {
  return o.fp16 ? "fp16" : (o.bf16 ? "bf16" : "fp32");
}

// "tp 2 dp 2 stage 3 Pa+cpu fp16"
inline std::string layout_name(const TrainOptions& o) {
  const int tp = o.tensor_model_parallel_size;
  const char* act = !o.checkpoint_activations ? ""
                    : o.cpu_checkpointing     ? " Pa+cpu"
                    : o.partition_activations ? " Pa"
                                              : " ckpt";
  return fmt::format("tp {} dp {} stage {}{} {}", tp, world().size() / tp, o.zero_stage, act,
                     precision_name(o));
}

}  // namespace zt::dist
