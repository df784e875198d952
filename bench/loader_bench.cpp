// Data-loader throughput on a prepared dataset, printed as JSON: GptLoader::next_batch (one DP
// rank's share of each global batch) and the trainer's BatchSource (the path training uses, with
// blending), in samples/s and tokens/s on one thread, over several epochs so the per-epoch
// shuffle is included.
//   bench_loader --data-path P --vocab-file V --merge-file M [--seq-length 128]
//                [--global-batch 32] [--seconds 1]
// Make P with launch/quickstart.sh (build/quickstart/kjv_text_document) or zerotron prepare-data.
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "src/data/gpt_dataset.h"
#include "src/train/train_data.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

static int run(int argc, char** argv) {
  zt::TrainOptions o;
  o.seq_length = 128;
  o.eval_iters = 0;
  o.split = "1,0,0";
  int64_t global = 32;
  double budget = 1.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--data-path")
      o.data_path = v;
    else if (a == "--vocab-file")
      o.vocab_file = v;
    else if (a == "--merge-file")
      o.merge_file = v;
    else if (a == "--seq-length")
      o.seq_length = std::stoi(v);
    else if (a == "--global-batch")
      global = std::stoll(v);
    else if (a == "--seconds")
      budget = std::stod(v);
  }
  if (o.data_path.empty()) {
    fmt::print(stderr, "usage: bench_loader --data-path P --vocab-file V --merge-file M\n");
    return 2;
  }
  const auto t_open = Clock::now();
  zt::TrainData data = zt::open_train_data(o);  // also checks every token id
  const double open_s = seconds_since(t_open);
  const auto ds = zt::data::IndexedDataset::open(o.data_path);
  const zt::data::GptDataset gpt(ds, {0, ds.num_documents()}, o.seq_length,
                                 static_cast<uint64_t>(o.seed));
  const auto L = static_cast<size_t>(o.seq_length);
  std::string rows;
  for (int dp : {1, 2, 4}) {
    zt::data::GptLoader loader(gpt, global, 0, dp);
    std::vector<int32_t> tokens(static_cast<size_t>(loader.local_batch()) * L), targets(tokens);
    int64_t samples = 0;
    const auto t0 = Clock::now();
    double s = 0;
    while ((s = seconds_since(t0)) < budget) {
      loader.next_batch(tokens, targets);
      samples += loader.local_batch();
    }
    rows += fmt::format(
        "{}    {{\"path\": \"GptLoader\", \"dp\": {}, \"local_batch\": {}, \"samples_per_s\": "
        "{:.0f}, \"tokens_per_s\": {:.0f}, \"stream_epochs\": {:.2f}}}",
        rows.empty() ? "" : ",\n", dp, loader.local_batch(), samples / s,
        static_cast<double>(samples) * o.seq_length / s,
        static_cast<double>(loader.consumed_samples()) / static_cast<double>(gpt.num_samples()));
  }
  {
    std::vector<int32_t> tokens(L), targets(L);
    int64_t n = 0;
    const auto t0 = Clock::now();
    double s = 0;
    while ((s = seconds_since(t0)) < budget)
      for (int k = 0; k < 256; ++k) data.train->sample(n++, tokens.data(), targets.data());
    rows += fmt::format(
        ",\n    {{\"path\": \"BatchSource\", \"samples_per_s\": {:.0f}, \"tokens_per_s\": {:.0f}}}",
        n / s, static_cast<double>(n) * o.seq_length / s);
  }
  fmt::print(
      "{{\n  \"bench\": \"loader\",\n  \"data_path\": \"{}\",\n  \"documents\": {},\n  "
      "\"tokens\": {},\n  \"seq_length\": {},\n  \"global_batch\": {},\n  \"samples_per_epoch\": "
      "{},\n  \"open_and_check_s\": {:.3f},\n  \"results\": [\n{}\n  ]\n}}\n",
      o.data_path, ds.num_documents(), ds.total_tokens(), o.seq_length, global, gpt.num_samples(),
      open_s, rows);
  return 0;
}

int main(int argc, char** argv) {
  return zt::bench::guarded([&] { return run(argc, argv); });
}
