#include "src/train/metrics.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "src/core/error.h"
#include "src/core/progress.h"

namespace zt {

MetricsWriter::MetricsWriter(const std::string& path, const std::string& tensorboard_dir) {
  if (!tensorboard_dir.empty()) events_ = std::make_unique<EventFileWriter>(tensorboard_dir);
  if (path.empty()) return;
  out_.open(path, std::ios::out | std::ios::trunc);
  ZT_REQUIRE(out_.good(), "cannot write --metrics-file '{}'", path);
}

void MetricsWriter::write(const StepMetrics& m) {
  const nlohmann::json comm_bytes = {{"dp", m.comm_bytes_dp},
                                     {"tp", m.comm_bytes_tp},
                                     {"pp", m.comm_bytes_pp},
                                     {"cp", m.comm_bytes_cp},
                                     {"ep", m.comm_bytes_ep}};
  if (events_) {
    // Megatron-LM's tags where it has the quantity (iteration-time in seconds, throughput in
    // TFLOP/s per device); the rest named in its style.
    const int64_t it = m.iteration;
    events_->add_scalar("lm loss", m.lm_loss, it);
    events_->add_scalar("learning-rate", m.lr, it);
    events_->add_scalar("loss-scale", m.loss_scale, it);
    events_->add_scalar("grad-norm", m.grad_norm, it);
    events_->add_scalar("iteration-time", m.elapsed_ms / 1e3, it);
    events_->add_scalar("throughput", m.tflops_per_rank, it);
    events_->add_scalar("tokens-per-second", m.tokens_per_s, it);
    events_->add_scalar("mem-peak-bytes", static_cast<double>(m.memory_total_peak), it);
    for (size_t c = 0; c < kNumMemCategories; ++c)
      events_->add_scalar(
          fmt::format("mem-peak-bytes/{}", mem_category_name(static_cast<MemCategory>(c))),
          static_cast<double>(m.memory_peak[c]), it);
    for (const auto& [group, bytes] : comm_bytes.items())
      events_->add_scalar("comm-bytes/" + group, bytes.get<double>(), it);
    for (const auto& [tag, value] : m.moe.scalars()) events_->add_scalar(tag, value, it);
    events_->flush();
  }
  if (!out_.is_open()) return;
  nlohmann::json mem;
  mem["peak"] = m.memory_total_peak;
  mem["fragmentation"] = m.memory_fragmentation;
  for (size_t c = 0; c < kNumMemCategories; ++c)
    mem[std::string(mem_category_name(static_cast<MemCategory>(c)))] = m.memory_peak[c];
  nlohmann::json j = {{"iteration", m.iteration},
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
                      {"comm_bytes", comm_bytes},
                      {"comm_hidden_fraction", m.comm_hidden_fraction},
                      {"comm_exposed_ms", m.comm_exposed_ms},
                      {"pipeline_bubble", m.pipeline_bubble},
                      {"elapsed_time_s", m.elapsed_s},
                      {"eta_s", m.eta_s}};
  if (!m.moe.empty()) {
    nlohmann::json layers = nlohmann::json::array();
    for (const MoeLayerMetrics& l : m.moe.layers)
      layers.push_back({{"layer", l.layer},
                        {"load_balancing_loss", l.aux_loss},
                        {"max_load", l.max_load},
                        {"dropped_fraction", l.dropped_fraction}});
    j["load_balancing_loss"] = m.moe.aux_loss;
    j["moe_layers"] = layers;
  }
  out_ << j.dump() << '\n';
  out_.flush();
}

namespace {
// Megatron caps the exponent so an untrained model's perplexity stays printable.
double perplexity(double loss) {
  return std::exp(std::min(20.0, loss));
}

}  // namespace

void MetricsWriter::write_save(int iteration, bool async, double stall_s, double write_s) {
  if (events_) {
    events_->add_scalar("save-stall-s", stall_s, iteration);
    events_->add_scalar("save-write-s", write_s, iteration);
    events_->flush();
  }
  if (!out_.is_open()) return;
  const nlohmann::json j = {{"iteration", iteration},
                            {"save_stall_s", stall_s},
                            {"save_write_s", write_s},
                            {"async_save", async}};
  out_ << j.dump() << '\n';
  out_.flush();
}

void MetricsWriter::write_evaluation(std::string_view split, int iteration, double loss) {
  if (events_) {
    events_->add_scalar(fmt::format("lm loss {}", split), loss, iteration);
    events_->add_scalar(fmt::format("lm loss {} ppl", split), perplexity(loss), iteration);
    events_->flush();
  }
  if (!out_.is_open()) return;
  const nlohmann::json j = {{"iteration", iteration},
                            {fmt::format("{}_loss", split), loss},
                            {fmt::format("{}_ppl", split), perplexity(loss)}};
  out_ << j.dump() << '\n';
  out_.flush();
}

void MetricsWriter::write_rewind(int diverged, int resumed, const data::SampleSkips& skipped,
                                 int rewinds) {
  int64_t count = 0;
  nlohmann::json ranges = nlohmann::json::array();
  for (const data::SampleRange& r : skipped.ranges()) {
    count += r.end - r.begin;
    ranges.push_back({r.begin, r.end});
  }
  if (events_) {
    events_->add_scalar("rewind/skipped-samples", static_cast<double>(count), diverged);
    events_->add_scalar("rewind/resumed-iteration", resumed, diverged);
    events_->flush();
  }
  if (!out_.is_open()) return;
  const nlohmann::json j = {{"event", "rewind"},
                            {"iteration", diverged},
                            {"resumed_iteration", resumed},
                            {"skipped_samples", ranges},
                            {"rewinds", rewinds}};
  out_ << j.dump() << '\n';
  out_.flush();
}

std::string MetricsWriter::test_line(int iteration, double loss) {
  return fmt::format(
      " test loss at iteration {} on test set | lm loss value: {:.6E} | lm loss PPL: {:.6E} |",
      iteration, loss, perplexity(loss));
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
      "{:.6E} |{} loss scale: {:.1f} | grad norm: {:.3f} | peak memory (MB): {:.1f} | skipped: "
      "{} | elapsed time: {} | remaining time: {} |",
      m.iteration, m.train_iters, m.consumed_samples, m.elapsed_ms, m.tokens_per_s,
      m.tflops_per_rank, m.lr, m.lm_loss, m.moe.console_fields(), m.loss_scale, m.grad_norm,
      static_cast<double>(m.memory_total_peak) / 1e6, m.skipped ? 1 : 0, clock_time(m.elapsed_s),
      clock_time(m.eta_s));
}

}  // namespace zt
