#pragma once
// One record per optimizer step: printed as a Megatron-style console line every log interval,
// written as one JSON object per line to --metrics-file and as TensorBoard scalars (Megatron-LM's
// tag names where it has them) to --tensorboard-dir.
#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "src/core/event_file.h"
#include "src/core/memory_pool.h"
#include "src/data/sample_skips.h"
#include "src/model/moe_stats.h"

namespace zt {

struct StepMetrics {
  int iteration = 0;
  int train_iters = 0;
  int64_t consumed_samples = 0;
  double lm_loss = 0;
  double lr = 0;
  double grad_norm = 0;
  double loss_scale = 1;
  bool skipped = false;
  double elapsed_ms = 0;
  double tokens_per_s = 0;
  double tflops_per_rank = 0;
  int64_t num_parameters = 0;
  // Peak bytes during this step: per category and in total (the max over ranks once there are
  // several).
  std::array<size_t, kNumMemCategories> memory_peak{};
  size_t memory_total_peak = 0;
  // Largest free block over free bytes of the device memory after the step (min over ranks);
  // 1.0 without --device-memory.
  double memory_fragmentation = 1.0;
  // Paper-convention bytes this rank sent per group in the step (CommStats; dp includes edp's).
  uint64_t comm_bytes_dp = 0, comm_bytes_tp = 0, comm_bytes_pp = 0, comm_bytes_cp = 0,
           comm_bytes_ep = 0;
  // Of data-parallel communication (gradient reductions; at stage 3 also the parameter gathers),
  // the share that ran behind compute, by each operation's observed completion.
  double comm_hidden_fraction = 0;
  double comm_exposed_ms = 0;  // time the step waited for it (after backward; stage 3 acquires)
  // Pipeline parallelism: the share of the schedule's span the stages spent not computing (1 -
  // mean stage compute time / the longest stage's schedule time: pipeline::simulate's bubble
  // fraction, measured); 0 without a pipeline.
  double pipeline_bubble = 0;
  // Wall time since the loop started, and the time left at the recent mean step time.
  double elapsed_s = 0, eta_s = 0;
  MoeStepStats moe;  // the MoE layers' routing (empty for a dense model)
};

class MetricsWriter {
 public:
  // Empty path: no JSON lines; empty tensorboard_dir: no event file.
  explicit MetricsWriter(const std::string& path, const std::string& tensorboard_dir = "");
  void write(const StepMetrics& m);  // JSON line and scalars
  static std::string console_line(const StepMetrics& m);
  // An evaluation: {"iteration", "validation_loss", "validation_ppl"} as one JSON line, and
  // Megatron's console line (the word "validation", loss and perplexity).
  void write_validation(int iteration, double loss) {
    write_evaluation("validation", iteration, loss);
  }
  static std::string validation_line(int iteration, double loss);
  // The test split's evaluation at the end: {"iteration", "test_loss", "test_ppl"}.
  void write_test(int iteration, double loss) { write_evaluation("test", iteration, loss); }
  static std::string test_line(int iteration, double loss);
  // A rewind after step `diverged`: {"event": "rewind", "iteration": diverged,
  // "resumed_iteration", "skipped_samples": [[begin, end], ...], "rewinds"} as one JSON line, and
  // TensorBoard's "rewind/skipped-samples" (how many) and "rewind/resumed-iteration" at `diverged`.
  void write_rewind(int diverged, int resumed, const data::SampleSkips& skipped, int rewinds);
  // A published checkpoint: {"iteration", "save_stall_s" (the loop's wait), "save_write_s" (the
  // shard write and fsync), "async_save"}, times the largest over ranks; also TensorBoard's.
  void write_save(int iteration, bool async, double stall_s, double write_s);

 private:
  std::ofstream out_;
  std::unique_ptr<EventFileWriter> events_;
  void write_evaluation(std::string_view split, int iteration, double loss);
};

}  // namespace zt
