// gpu.nccl_timeout: an NCCL all-reduce that cannot complete ends the job through the watchdog,
// though no host thread waits on it. One process, one GPU: the compute stream is held by a 30 s
// host function, the all-reduce is ordered after it, and wait() returns at once (it only orders
// the compute stream); with --comm-timeout 1 the watchdog's monitor thread must print
//   zerotron: error: collective all_reduce on group world timed out on rank 0 ...
// abort the NCCL communicator and end the process non-zero well before the 30 s. CTest checks
// the line (PASS_REGULAR_EXPRESSION) and the time (TIMEOUT). Without a GPU it prints
// "[  SKIPPED ]" and exits 0 (CTest: Skipped).
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "src/comm/nccl_communicator.h"
#include "src/comm/runtime.h"
#include "src/core/cuda_allocator.h"
#include "src/core/cuda_check.h"
#include "src/core/cuda_device.h"
#include "src/core/gpu_choice.h"

int main(int argc, char** argv) {
  if (zt::cuda::device_count() == 0) {
    const std::string why = zt::cuda::probe().line();
    if (zt::gpus_expected()) {
      std::printf("this machine has a GPU, but CUDA sees none: %s\n", why.c_str());
      return 1;
    }
    std::printf("[  SKIPPED ] no CUDA device visible: GPU test skipped (runs on a GPU); %s\n",
                why.c_str());
    return 0;
  }
  zt::cuda::select_device(0);
  zt::comm::MpiRuntime rt(argc, argv, zt::comm::RuntimeOptions{.comm_timeout_s = 1.0});
  return rt.run_guarded([&] {
    zt::MemoryPool dev(zt::make_cuda_allocator());
    zt::cuda::Stream compute;
    zt::comm::NcclContext ctx{&rt.stats(), &rt.watchdog(), &dev, compute.get()};
    auto world = zt::comm::NcclCommunicator::world(ctx);
    zt::Buffer b = dev.allocate(1024 * sizeof(float), zt::MemCategory::Buffers);
    ZT_CUDA_CHECK(cudaLaunchHostFunc(
        compute.get(), [](void*) { std::this_thread::sleep_for(std::chrono::seconds(30)); },
        nullptr));
    const auto t0 = std::chrono::steady_clock::now();
    world->all_reduce(b.view(zt::Shape{1024}, zt::DType::F32));
    std::printf(
        "all_reduce issued and waited in %.1f ms (host not blocked)\n",
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
    compute.synchronize();  // the watchdog ends the process before this returns
    std::puts("FAIL: the all-reduce completed; the watchdog did not fire");
    return 1;
  });
}
