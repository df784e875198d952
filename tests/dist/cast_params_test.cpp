// --working-params cast against the stored half copy under the trainer's distributed path, at
// ZeRO stage 0 with data, tensor and pipeline parallelism, sequence parallelism, checkpointed
// activations (recompute acquires the parameters a third time) and the Llama shape: losses,
// gradient norms, loss scales, skipped steps and the final master parameters bit for bit, and
// the checkpoint each writes byte for byte. Runs at 1 and 2 ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "src/comm/topology.h"
#include "src/train/trainer.h"
#include "tests/dist/dist_env.h"
#include "tests/support/step_metrics.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct Result {
  std::vector<StepMetrics> steps;
  std::vector<float> master;
};

Result run(const TrainOptions& o) {
  comm::Topology topo(dist::world(), o.tensor_model_parallel_size, o.pipeline_model_parallel_size);
  Trainer t(o, dist::pool(), topo);
  Result r;
  r.steps = t.run(false);
  r.master.resize(static_cast<size_t>(t.optimizer().layout().numel()));
  t.optimizer().gather_master(r.master.data());
  if (o.working_params == "cast") {
    const CastStats* s = t.optimizer().cast_stats();
    EXPECT_NE(s, nullptr);
    if (s != nullptr) {
      EXPECT_EQ(s->peak_elems, s->arena_elems) << "the arena is what is held";
    }
  }
  return r;
}

std::vector<char> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every file of the saved iteration, byte for byte (not the run's lock file).
void expect_same_checkpoint(const std::string& a, const std::string& b, const std::string& what) {
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file() || e.path().filename() == "zerotron.lock") continue;
    const fs::path other = fs::path(b) / fs::relative(e.path(), a);
    ASSERT_TRUE(fs::exists(other)) << what << ": " << other;
    EXPECT_TRUE(file_bytes(e.path()) == file_bytes(other)) << what << ": " << e.path();
    ++files;
  }
  EXPECT_GE(files, 2) << what;
}

struct Case {
  const char* name;
  int tp, pp;
  bool fp16, ckpt, sequence_parallel, llama;
};

TEST(CastParams, BitwiseTheStoredCopyUnderEveryLayout) {
  const int world = dist::world().size();
  const Case cases[] = {{"dp", 1, 1, false, false, false, false},
                        {"dp ckpt fp16", 1, 1, true, true, false, false},
                        {"tp", 2, 1, false, false, false, false},
                        {"tp sp ckpt", 2, 1, false, true, true, false},
                        {"tp llama fp16", 2, 1, true, false, false, true},
                        {"pp", 1, 2, false, false, false, false},
                        {"pp ckpt fp16", 1, 2, true, true, false, false}};
  for (const Case& k : cases) {
    if (world % (k.tp * k.pp) != 0) continue;
    const std::string what = std::string(k.name) + " at " + std::to_string(world) + " rank(s)";
    TrainOptions o = test::small_gpt(0.1, 5);
    o.num_layers = 2;
    o.bf16 = !k.fp16;
    o.fp16 = k.fp16;
    o.initial_loss_scale = 4194304;  // fp16: the first steps overflow and are skipped
    o.tensor_model_parallel_size = k.tp;
    o.pipeline_model_parallel_size = k.pp;
    o.sequence_parallel = k.sequence_parallel;
    o.checkpoint_activations = k.ckpt;
    o.reduce_bucket_size = 700;  // weights acquired in chunks of rows
    if (k.llama) {
      o.position_embedding_type = "rope";
      o.normalization = "RMSNorm";
      o.swiglu = true;
      o.untie_embeddings_and_output_weights = true;
      o.disable_bias_linear = true;
    }
    const std::string base = dist::scratch_dir() + "zt_cast_" + std::to_string(world) + "_";
    TrainOptions stored = o, cast = o;
    stored.save = base + "stored";
    cast.save = base + "cast";
    cast.working_params = "cast";
    if (dist::world().rank() == 0) {
      fs::remove_all(stored.save);
      fs::remove_all(cast.save);
    }
    dist::world().barrier();
    const Result a = run(stored), b = run(cast);
    ASSERT_EQ(a.steps.size(), b.steps.size()) << what;
    for (size_t i = 0; i < a.steps.size(); ++i) {
      EXPECT_EQ(a.steps[i].lm_loss, b.steps[i].lm_loss) << what << ", step " << i + 1;
      EXPECT_EQ(a.steps[i].skipped, b.steps[i].skipped) << what << ", step " << i + 1;
      EXPECT_EQ(a.steps[i].loss_scale, b.steps[i].loss_scale) << what << ", step " << i + 1;
      if (!a.steps[i].skipped) {
        EXPECT_EQ(a.steps[i].grad_norm, b.steps[i].grad_norm) << what << ", step " << i + 1;
      }
    }
    EXPECT_TRUE(a.master == b.master) << what << ": final master parameters";
    dist::world().barrier();
    expect_same_checkpoint(stored.save, cast.save, what);
    dist::world().barrier();
  }
}

}  // namespace
}  // namespace zt
