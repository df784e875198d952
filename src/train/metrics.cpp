#include "src/train/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "src/core/error.h"

namespace zt {

MetricsWriter::MetricsWriter(const std::string& path) {
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  ZT_REQUIRE(out_.good(), "cannot write --metrics-file '{}'", path);
}

void MetricsWriter::write(const StepMetrics& m) {
  if (!out_.is_open()) return;
  nlohmann::json mem;
  mem["peak"] = m.memory_total_peak;
  mem["fragmentation"] = m.memory_fragmentation;
  for (size_t c = 0; c < kNumMemCategories; ++c)
    mem[std::string(mem_category_name(static_cast<MemCategory>(c)))] = m.memory_peak[c];
  nlohmann::json j = {
      {"iteration", m.iteration},
      {"consumed_samples", m.consumed_samples},
      {"lm_loss", m.lm_loss},
      {"lr", m.lr},
      {"grad_norm", m.grad_norm},
      {"loss_scale", m.loss_scale},
      {"skipped", m.skipped},
      {"elapsed_ms", m.elapsed_ms},
      {"tokens_per_s", m.tokens_per_s},
      {"tflops_per_rank", m.tflops_per_rank},
      {"num_parameters", m.num_parameters},
      {"memory", mem},
      {"comm_bytes", {{"dp", m.comm_bytes_dp}, {"tp", m.comm_bytes_tp}, {"pp", m.comm_bytes_pp}}},
      {"comm_hidden_fraction", m.comm_hidden_fraction},
      {"comm_exposed_ms", m.comm_exposed_ms},
      {"pipeline_bubble", m.pipeline_bubble}};
  out_ << j.dump() << '\n';
  out_.flush();
}

namespace {
// Megatron caps the exponent so an untrained model's perplexity stays printable.
double perplexity(double loss) {
  return std::exp(std::min(20.0, loss));
}
}  // namespace

void MetricsWriter::write_validation(int iteration, double loss) {
  if (!out_.is_open()) return;
  const nlohmann::json j = {
      {"iteration", iteration}, {"validation_loss", loss}, {"validation_ppl", perplexity(loss)}};
  out_ << j.dump() << '\n';
  out_.flush();
}

std::string MetricsWriter::validation_line(int iteration, double loss) {
  return fmt::format(
      " validation loss at iteration {} | lm loss value: {:.6E} | lm loss PPL: {:.6E} |", iteration,
      loss, perplexity(loss));
}

std::string MetricsWriter::console_line(const StepMetrics& m) {
  return fmt::format(
      " iteration {:>8}/{:>8} | consumed samples: {:>10} | elapsed time per iteration (ms): "
      "{:.1f} | tokens/s: {:.0f} | TFLOP/s/rank: {:.3f} | learning rate: {:.3E} | lm loss: "
      "{:.6E} | loss scale: {:.1f} | grad norm: {:.3f} | peak memory (MB): {:.1f} | skipped: {} |",
      m.iteration, m.train_iters, m.consumed_samples, m.elapsed_ms, m.tokens_per_s,
      m.tflops_per_rank, m.lr, m.lm_loss, m.loss_scale, m.grad_norm,
      static_cast<double>(m.memory_total_peak) / 1e6, m.skipped ? 1 : 0);
}

}  // namespace zt
