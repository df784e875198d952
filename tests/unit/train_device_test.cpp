// --device: the option, its resolution against this build and machine, and the CPU TrainDevice
// (the path every CPU run takes through zerotron train) giving the bits of a plain host pool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/comm/self_communicator.h"
#include "src/config/options.h"
#include "src/core/error.h"
#include "src/train/train_device.h"
#include "src/train/trainer.h"
#include "tests/support/train_options.h"

namespace zt {
namespace {

TEST(TrainDevice, DeviceFlagTakesCudaCpuOrAuto) {
  EXPECT_EQ(test::parse_options({}).device, "auto");
  EXPECT_EQ(test::parse_options({"--device", "cuda"}).device, "cuda");
  EXPECT_EQ(test::parse_options({"--device=cpu"}).device, "cpu");
  try {
    test::parse_options({"--device", "gpu"});
    ADD_FAILURE() << "--device gpu accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--device must be one of auto|cuda|cpu"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainDevice, CudaNeedsTheBackendAndAGpu) {
  EXPECT_EQ(resolve_device("cpu"), Device::Cpu);
  const bool cuda = cuda_backend_built() && visible_gpus() > 0;
  EXPECT_EQ(resolve_device("auto"), cuda ? Device::Cuda : Device::Cpu);
  if (cuda) {
    EXPECT_EQ(resolve_device("cuda"), Device::Cuda);
    return;
  }
  try {
    resolve_device("cuda");
    ADD_FAILURE() << "--device cuda accepted without the backend or a GPU";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--device cuda"), std::string::npos) << what;
    EXPECT_NE(what.find("--device cpu"), std::string::npos) << "names the way out: " << what;
  }
}

TEST(TrainDevice, CpuDeviceTrainsLikeAPlainHostPool) {
  TrainOptions o = test::small_gpt(0.1, 3);
  o.device = "cpu";
  o.make_vocab_size_divisible_by = 64;
  o.global_batch_size = 0;  // one micro-batch
  o.lr = 1e-4;
  o.log_interval = 100;
  std::vector<double> a, b;
  {
    TrainDevice device(o, nullptr);
    EXPECT_EQ(device.device(), Device::Cpu);
    EXPECT_EQ(&device.host_pool(), &device.pool()) << "the CPU stages nothing";
    EXPECT_EQ(device.topology().world_size(), 1) << "a world of one rank";
    Trainer t(o, device.context(), device.topology());
    for (const auto& m : t.run(false)) a.push_back(m.lm_loss);
  }
  MemoryPool pool(make_host_allocator());
  comm::SelfWorld alone;
  Trainer t(o, pool, alone.topology());
  for (const auto& m : t.run(false)) b.push_back(m.lm_loss);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace zt
