// Offloaded optimizer states (--offload-optimizer, src/zero/optimizer_states.h) and stage 3's
// parameter partitions (--offload-param, src/zero/param_shard.h) in a world of one:
// the host tier through the CPU staging backend (device memory separate from the host's, as on
// CUDA) and the NVMe tier on both backends give the losses, gradient norms and master
// parameters of the device tier bit for bit at every ZeRO stage, fp32 and bf16, GPT and Llama,
// with chunks smaller than the shard (--sub-group-size 1024); every tier's pool holds what the
// plan says (device, host, NVMe buffers) and the swap file is the plan's size; the swap file is
// gone from --nvme-path while the run holds it; a swap file changed behind the run stops it with
// an error naming the file. The parameter tiers the same at stage 3, alone and with the
// optimizer's, with every unit gathered ahead and with two gather slots only. At stages 0 and 2
// the streamed update runs behind what follows the step, and each acquire sees its span updated.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_memory.h"
#include "src/comm/self_communicator.h"
#include "src/core/error.h"
#include "src/planner/train_plan.h"
#include "src/train/trainer.h"
#include "src/zero/zero_optimizer.h"
#include "tests/support/swap_files.h"
#include "tests/support/tiny_gpt.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

namespace fs = std::filesystem;

struct Variant {
  int stage;
  bool bf16, llama;
  bool two_slots = false;  // stage 3: no gather ahead, two slots taking turns
};

TrainOptions options(const Variant& v, const std::string& tier, const std::string& nvme_path,
                     const std::string& param_tier = "none") {
  TrainOptions o = test::small_gpt(0, 3);
  o.device = "cpu";
  o.global_batch_size = 2;
  o.zero_stage = v.stage;
  o.bf16 = v.bf16;
  o.reduce_bucket_size = 700;  // several partition units
  if (v.llama) test::set_llama_shape(o, 2);
  o.offload_optimizer = tier;
  o.offload_param = param_tier;
  if (tier == "nvme" || param_tier == "nvme") o.nvme_path = nvme_path;
  o.sub_group_size = 1024;
  if (v.two_slots) o.max_live_parameters = 1;
  return o;
}

struct Outcome {
  std::vector<double> losses, norms;
  std::vector<float> master;
};

// Trains `o` on the CPU backend, or on the staging backend with a host pool of its own; checks
// each pool against the plan of the run on that backend (CUDA's for staging).
Outcome train(const TrainOptions& o, bool staging, const std::string& what) {
  MemoryPool device(staging ? make_staging_device_allocator() : make_host_allocator());
  MemoryPool host(make_host_allocator());
  const DeviceContext ctx =
      staging ? DeviceContext(cpu_staging_backend(), device, host) : DeviceContext(device);
  comm::SelfWorld world(ctx.backend());
  Trainer t(o, ctx, world.topology());
  Outcome out;
  for (const StepMetrics& m : t.run(false)) {
    out.losses.push_back(m.lm_loss);
    out.norms.push_back(m.grad_norm);
  }
  TrainOptions planned = o;
  planned.device = staging ? "cuda" : "cpu";
  PlanInput in = plan_input_from(planned, 1);
  in.staged_half_reductions = false;  // a world of one: no MPI staging
  const MemoryPlan p = plan_memory(in);
  const size_t backend = staging ? p.backend_buffers : 0;
  EXPECT_EQ(device.peak(MemCategory::Optimizer), p.optimizer) << what;
  EXPECT_EQ(device.peak(MemCategory::Params), p.params) << what;
  EXPECT_EQ(device.peak(MemCategory::Grads), p.grads) << what;
  EXPECT_EQ(device.peak(MemCategory::Buffers) + backend, p.buffers) << what;
  MemoryPool& hp = staging ? host : device;
  EXPECT_EQ(hp.peak(MemCategory::HostOptimizer), p.host_optimizer) << what;
  EXPECT_EQ(hp.peak(MemCategory::HostParams), p.host_params) << what;
  EXPECT_EQ(hp.peak(MemCategory::HostGrads), p.host_grads) << what;
  EXPECT_EQ(hp.peak(MemCategory::NvmeBuffers), p.nvme_buffers) << what;
  EXPECT_EQ(t.optimizer().states().file_bytes() + t.optimizer().param_file_bytes() +
                t.optimizer().grad_file_bytes(),
            p.nvme_bytes)
      << what;
  if (o.offload_optimizer != "none") {
    EXPECT_EQ(p.optimizer, 0u) << what;
  }
  if (staging && o.offload_optimizer != "none" && o.zero_stage >= 2) {  // ZeRO-Offload's gradients
    EXPECT_EQ(p.grads, 0u) << what;
    const bool nvme = o.offload_optimizer == "nvme";  // ZeRO-Infinity's: on NVMe
    EXPECT_EQ(p.host_grads > 0, !nvme) << what;
    EXPECT_EQ(t.optimizer().grad_file_bytes() > 0, nvme) << what;
  }
  if (o.offload_param != "none") {
    EXPECT_EQ(p.params, 0u) << what;
    EXPECT_GT(p.host_params + p.nvme_bytes, 0u) << what;
  }
  // After the plan's check: gathering the master takes a temporary buffer of its own.
  out.master.resize(static_cast<size_t>(t.optimizer().layout().numel()));
  t.optimizer().gather_master(out.master.data());

  return out;
}

class Offload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("zt_offload_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    EXPECT_TRUE(fs::is_empty(dir_)) << "a swap file was left in --nvme-path";
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

// A run on another tier against the device tier's: the same losses, norms and master bits.
void expect_same(const Outcome& got, const Outcome& want, const std::string& run) {
  EXPECT_EQ(got.losses, want.losses) << run;
  EXPECT_EQ(got.norms, want.norms) << run;
  EXPECT_EQ(0, std::memcmp(got.master.data(), want.master.data(), want.master.size() * 4))
      << run << ": master parameters";
  EXPECT_EQ(got.losses.size(), 3u) << run;
}

TEST_F(Offload, EveryTierGivesTheDeviceTiersBits) {
  const std::vector<Variant> variants = {
      {0, false, false}, {1, true, false}, {2, false, false}, {3, true, true}};
  for (const Variant& v : variants) {
    const std::string what =
        fmt::format("stage {} {}{}", v.stage, v.bf16 ? "bf16" : "fp32", v.llama ? " llama" : "");
    const Outcome want = train(options(v, "none", ""), false, what + " device");
    struct Run {
      const char* tier;
      bool staging;
    };
    for (const Run& r :
         {Run{"nvme", false}, Run{"none", true}, Run{"cpu", true}, Run{"nvme", true}}) {
      const std::string run =
          fmt::format("{}: {} on the {} backend", what, r.tier, r.staging ? "staging" : "CPU");
      expect_same(train(options(v, r.tier, dir_.string()), r.staging, run), want, run);
    }
    if (v.stage != 0) continue;  // stage 0's update runs behind the next forward: also without
    TrainOptions o = options(v, "nvme", dir_.string());
    o.no_overlap_optimizer_step = true;
    expect_same(train(o, false, what + ": nvme, update before the forward"), want,
                what + ": nvme, update before the forward");
  }
}

// The ZeroOptimizer of the tiny GPT in fp32 at `stage` (stages 1-2 over `dp`) with its states on
// NVMe in 1024-element chunks; `hook` runs as each chunk's write-back starts.
ZeroConfig streamed(const fs::path& dir, int stage, comm::Communicator* dp, bool overlap,
                    std::function<void()> hook) {
  ZeroConfig z;
  z.stage = stage;
  z.dp = dp;
  z.reduce_bucket_elems = 700;  // several partition units
  z.optimizer_tier.tier = StateTier::Nvme;
  z.optimizer_tier.nvme_path = dir.string();
  z.optimizer_tier.chunk_elems = 1024;
  z.optimizer_tier.on_write_back = std::move(hook);
  z.overlap_offloaded_step = overlap;
  return z;
}

// fn(span) for every span the model would open, in layout order: each parameter in chunks of
// whole rows (ParamSpec::chunk_rows).
template <typename Fn>
void for_each_span(const ZeroOptimizer& opt, const ParamLayout& layout, Fn&& fn) {
  for (const ParamSpec& p : layout.params()) {
    const int64_t step = p.chunk_rows(opt.max_span()) * p.row_len();
    const int64_t block_begin = layout.blocks()[static_cast<size_t>(p.block)].begin;
    for (int64_t at = 0; at < p.numel(); at += step)
      fn(Span{p.block, p.offset - block_begin + at, std::min(step, p.numel() - at)});
  }
}

// One micro-batch's gradient, the same made-up values in both optimizers, then a step.
void step_on_made_up_grads(ZeroOptimizer& opt, const ParamLayout& layout) {
  opt.zero_grad();
  opt.begin_microbatch(true);
  for_each_span(opt, layout, [&](const Span& s) {
    float* g = opt.open_grads(s);
    for (int64_t i = 0; i < s.len; ++i)
      g[i] = 0.01f * static_cast<float>((s.offset + i) % 17) - 0.08f;
    opt.close_grads(s);
  });
  opt.step(1e-2, 1.0);
}

// What follows a step runs while its streamed update goes on: the last chunk's write-back
// waits until the first span has been acquired (were the acquire to wait for the whole update,
// the hook would time out), and each span acquired after the step holds the values of an update
// finished before the next forward. At stage 2 each acquire gathers its unit once the update
// has passed this rank's part of it.
TEST_F(Offload, TheNextForwardRunsBehindTheStreamedUpdate) {
  const GptConfig c = test::tiny_gpt();
  const ParamLayout layout = ParamLayout::gpt(c);
  for (const int stage : {0, 2}) {
    SCOPED_TRACE(fmt::format("stage {}", stage));
    comm::SelfCommunicator dp(cpu_backend()), serial_dp(cpu_backend());
    comm::Communicator* dps[2] = {stage == 0 ? nullptr : &dp, stage == 0 ? nullptr : &serial_dp};
    std::mutex mu;
    std::condition_variable cv;
    bool acquired = false, timed_out = false, armed = false;
    int64_t writes = 0;
    const int64_t chunks = (layout.numel() + 1023) / 1024;
    ASSERT_GE(chunks, 4);
    const auto hook = [&] {
      std::unique_lock lock(mu);
      if (!armed || ++writes != chunks) return;
      timed_out = !cv.wait_for(lock, std::chrono::seconds(20), [&] { return acquired; });
    };
    MemoryPool pool(make_host_allocator()), serial_pool(make_host_allocator());
    ZeroOptimizer overlapped(layout, DType::F32, AdamConfig{}, pool, 5,
                             streamed(dir_, stage, dps[0], true, hook));
    ZeroOptimizer serial(layout, DType::F32, AdamConfig{}, serial_pool, 5,
                         streamed(dir_, stage, dps[1], false, {}));
    {
      std::lock_guard lock(mu);
      armed = true;
    }
    step_on_made_up_grads(serial, layout);
    step_on_made_up_grads(overlapped, layout);
    const Span first{0, 0, 64};
    (void)overlapped.acquire(first);
    {
      std::lock_guard lock(mu);
      acquired = true;
    }
    cv.notify_all();
    for_each_span(overlapped, layout, [&](const Span& s) {
      const CRef got = overlapped.acquire(s), want = serial.acquire(s);
      EXPECT_EQ(0, std::memcmp(got.p, want.p, static_cast<size_t>(s.len) * 4))
          << "block " << s.block << " at " << s.offset;
      overlapped.release(s);
      serial.release(s);
    });
    overlapped.release(first);
    overlapped.wait_for_update();
    EXPECT_EQ(writes, chunks);
    EXPECT_FALSE(timed_out) << "the first span's acquire waited for the whole update";
  }
}

TEST_F(Offload, EveryParamTierGivesTheDeviceTiersBits) {
  for (const Variant& v :
       {Variant{3, false, false}, Variant{3, true, true}, Variant{3, true, false, true}}) {
    const std::string what = fmt::format("stage 3 {}{}{}", v.bf16 ? "bf16" : "fp32",
                                         v.llama ? " llama" : "", v.two_slots ? " two slots" : "");
    const Outcome want = train(options(v, "none", ""), false, what + " device");
    struct Run {
      const char* params;
      const char* optimizer;
      bool staging;
    };
    std::vector<Run> runs = {Run{"nvme", "none", false}, Run{"cpu", "cpu", true}};
    if (!v.two_slots)
      runs.insert(runs.end(), {Run{"nvme", "nvme", false}, Run{"nvme", "nvme", true}});
    for (const Run& r : runs) {
      const std::string run = fmt::format("{}: params {}, optimizer {} on the {} backend", what,
                                          r.params, r.optimizer, r.staging ? "staging" : "CPU");
      expect_same(train(options(v, r.optimizer, dir_.string(), r.params), r.staging, run), want,
                  run);
    }
  }
}

// Trains one step of `o`, checks that --nvme-path is empty while the run holds its swap files
// (each is unlinked as soon as it is made), overwrites the first block of the one whose name
// holds `file` through the run's own descriptor (the one /proc names after it), and expects the
// next step's read-back (or the wait for its update) to stop with an error naming the file and
// the checksum.
void expect_changed_file_stops(const TrainOptions& o, const fs::path& dir,
                               const std::string& file) {
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld world;
  Trainer t(o, pool, world.topology());
  t.run(false);
  EXPECT_TRUE(fs::is_empty(dir));
  ASSERT_TRUE(test::overwrite_first_block_of_open_file(file))
      << "no descriptor of a file named *" << file << "*";
  try {
    t.train_step();
    t.optimizer().wait_for_update();  // an update behind the next forward reports here
    FAIL() << "a changed swap file was read back";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

// The optimizer's swap file and stage 3's parameter one, each changed behind the run.
TEST_F(Offload, AChangedSwapFileStopsTheRun) {
  TrainOptions o = options({1, true, false}, "nvme", dir_.string());
  o.train_iters = 1;
  expect_changed_file_stops(o, dir_, "-optimizer-");
}

TEST_F(Offload, AChangedParameterSwapFileStopsTheRun) {
  TrainOptions o = options({3, true, false}, "none", dir_.string(), "nvme");
  o.train_iters = 1;
  expect_changed_file_stops(o, dir_, "-params-");
}

}  // namespace
}  // namespace zt
