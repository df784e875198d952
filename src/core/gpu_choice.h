#pragma once
// Which GPU a rank uses, and whether this machine should have one, as pure functions (no CUDA
// headers, no driver): the CUDA backend calls them with what the runtime reports, and the CPU
// tests check the rules on every build.
#include <string>

namespace zt {

// The device (an index among the `visible` CUDA devices) that the rank with local rank
// `local_rank` on its node uses:
//   - one visible device: device 0, whatever the local rank. Each rank then sees its own GPU
//     (SLURM --gpus-per-task=1 or --gpu-bind, Kubernetes' one-GPU pods, CUDA_VISIBLE_DEVICES
//     set per rank), or the node runs one rank;
//   - otherwise device `local_rank`, one GPU per rank (Megatron-LM and DeepSpeed call
//     torch.cuda.set_device(local_rank) the same way). A local rank that has no device of its own
//     is refused, not wrapped around: NCCL refuses two ranks of one communicator on one GPU.
// A negative local rank (a launcher that does not say) counts as 0. Throws zt::InputError when
// nothing is visible or the local rank has no device; `why_none` (what CUDA reported) ends that
// line.
int device_for_local_rank(int local_rank, int visible, const std::string& why_none = "");

// Whether GPUs are expected on this machine even though CUDA may see none: ZT_EXPECT_GPU=1 (set
// by tests/gpu/check.sh when nvidia-smi lists GPUs) says yes and ZT_EXPECT_GPU=0 no; unset, yes
// when the kernel driver lists a GPU (`gpus_dir`, /proc/driver/nvidia/gpus, is not empty) and
// CUDA_VISIBLE_DEVICES does not hide them (it is unset). `getenv_fn` is injectable for tests.
bool gpus_expected(const char* (*getenv_fn)(const char*) = nullptr,
                   const std::string& gpus_dir = "/proc/driver/nvidia/gpus");

// "13.0" for CUDA's integer versions (1000 * major + 10 * minor); "none" for 0.
std::string cuda_version_string(int version);

}  // namespace zt
