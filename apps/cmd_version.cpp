// zerotron --version (also `zerotron version`): what this binary is, as a bug report needs it.
// The version and commit are git's at configure time; the CPU ISA is the one oneDNN's kernels run
// with on this machine (dnnl::get_effective_cpu_isa); the CUDA lines exist when the backend was
// built.
#include <fmt/format.h>

#include "apps/commands.h"
#include "kernels/cpu/gemm_mixed.h"
#include "src/checkpoint/meta.h"
#include "src/config/command_flags.h"
#if ZT_HAVE_CUDA
#include "src/core/cuda_device.h"
#endif

#ifndef ZT_GIT_COMMIT
#define ZT_GIT_COMMIT "unknown"
#endif
#ifndef ZT_CUDA_COMPILER_VERSION
#define ZT_CUDA_COMPILER_VERSION ""
#endif

namespace zt::app {

int version(Args args) {
  if (!ParsedFlags::parse("version", {}, args)) return 0;
  fmt::print("zerotron {}\n", zerotron_version());
  fmt::print("commit: {}\n", ZT_GIT_COMMIT);
#if ZT_HAVE_CUDA
  fmt::print("backends: cpu, cuda (nvcc {})\n", ZT_CUDA_COMPILER_VERSION);
#else
  fmt::print("backends: cpu (the CUDA backend was not built)\n");
#endif
  fmt::print("cpu isa: {} (oneDNN's, on this machine)\n", cpu::detail::onednn_isa_name());
#if ZT_HAVE_CUDA
  fmt::print("cuda: {}\n", cuda::probe().line());
#endif
  return 0;
}

}  // namespace zt::app
