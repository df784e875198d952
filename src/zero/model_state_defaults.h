#pragma once
// The defaults of the model-state machinery, declared once: DeepSpeed's bucket and stage-3
// sizes, Adam's betas and epsilon, Megatron's dynamic loss-scale policy. ZeroConfig, AdamConfig
// and LossScalerConfig start from them, and the training options' table (src/config/options.inc)
// takes them as its defaults, so a run from the command line and a test that builds the configs
// directly get the same numbers. Weight decay, gradient clipping and overlap are not here: the
// options choose Megatron's and DeepSpeed's values for a run, the structs keep their own.
#include <cstdint>

namespace zt::model_state_defaults {

// ZeRO (DeepSpeed's zero_optimization defaults), in elements.
inline constexpr int64_t kReduceBucketElems = 500'000'000;
inline constexpr int64_t kAllgatherBucketElems = 500'000'000;
inline constexpr int64_t kPrefetchBucketElems = 50'000'000;
inline constexpr int64_t kParamPersistenceThreshold = 100'000;
inline constexpr int64_t kMaxLiveParameters = 1'000'000'000;
// Offloaded optimizer states are stepped in chunks of this many elements (DeepSpeed's
// sub_group_size, whose own default of 10^9 it holds whole in host buffers: here three chunks
// of 4 Mi elements, 144 MiB of fp32 master, m and v, stream through the host). DeepSpeed aio's
// request size and requests in flight.
inline constexpr int64_t kSubGroupElems = int64_t{1} << 22;
inline constexpr int64_t kAioBlockBytes = int64_t{1} << 20;
inline constexpr int kAioQueueDepth = 8;

// The host chunk the model states are made in where the host cannot write the device's memory
// (initialisation from the seed), and the least size of stages 1-3's fp32 workspace: 4 MiB.
inline constexpr int64_t kHostChunkElems = int64_t{1} << 20;

// Adam.
inline constexpr double kAdamBeta1 = 0.9;
inline constexpr double kAdamBeta2 = 0.999;
inline constexpr double kAdamEps = 1e-8;

// Dynamic loss scaling (Megatron's): start at 2^32, halve after `hysteresis` overflowing steps,
// double after `window` clean ones, within [min, max].
inline constexpr double kInitialLossScale = 0x1p32;
inline constexpr int kLossScaleWindow = 1000;
inline constexpr int kHysteresis = 2;
inline constexpr double kMinLossScale = 1.0;
inline constexpr double kMaxLossScale = 0x1p32;
inline constexpr int kMaxConsecutiveSkips = 100;

}  // namespace zt::model_state_defaults
